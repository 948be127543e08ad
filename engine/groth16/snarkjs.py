"""Export to snarkjs JSON, so that `snarkjs groth16 verify` can check our proofs independently.

snarkjs's encoding: decimal strings; G1 as [x, y, "1"]; G2 as [[x.c0, x.c1], [y.c0, y.c1],
["1", "0"]]; infinity as ["0", "1", "0"] (G2: [["0","0"],["1","0"],["0","0"]]). public.json is
the list of public inputs. The verification key needs vk_alpha_1, vk_beta_2, vk_gamma_2,
vk_delta_2, IC and nPublic; snarkjs's verifier does not read vk_alphabeta_12 (it checks the four
pairings directly), so it is left out rather than computed with our own arithmetic.
"""

from __future__ import annotations

from engine.groth16.serialize import decode_proof, g1_decompress, g2_decompress
from engine.groth16.vkey import VerifyingKey
from kernels.cpu.convert import G1Int, G2Int


def g1_json(p: G1Int) -> list[str]:
    if p is None:
        return ["0", "1", "0"]
    return [str(p[0]), str(p[1]), "1"]


def g2_json(p: G2Int) -> list[list[str]]:
    if p is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    (x0, x1), (y0, y1) = p
    return [[str(x0), str(x1)], [str(y0), str(y1)], ["1", "0"]]


def vk_json(vk: VerifyingKey) -> dict:
    """snarkjs's verification_key.json for ``vk``."""
    return {
        "protocol": "groth16",
        "curve": "bls12381",
        "nPublic": vk.n_public,
        "vk_alpha_1": g1_json(g1_decompress(vk.alpha_g1, "verification key alpha")),
        "vk_beta_2": g2_json(g2_decompress(vk.beta_g2, "verification key beta")),
        "vk_gamma_2": g2_json(g2_decompress(vk.gamma_g2, "verification key gamma")),
        "vk_delta_2": g2_json(g2_decompress(vk.delta_g2, "verification key delta")),
        "IC": [g1_json(g1_decompress(p, f"verification key IC[{i}]")) for i, p in enumerate(vk.ic)],
    }


def proof_json(proof: bytes) -> dict:
    """snarkjs's proof.json for our 192-byte proof (decoded and validated first)."""
    p = decode_proof(proof)
    return {
        "pi_a": g1_json(p.a),
        "pi_b": g2_json(p.b),
        "pi_c": g1_json(p.c),
        "protocol": "groth16",
        "curve": "bls12381",
    }


def public_json(public_inputs: list[int]) -> list[str]:
    """snarkjs's public.json: the public inputs as decimal strings."""
    return [str(int(x)) for x in public_inputs]
