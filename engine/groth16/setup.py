"""Groth16 setup from a seed: INSECURE TEST PARAMETERS, reproducible by anyone with the seed.

The toxic waste (tau, alpha, beta, gamma, delta) is derived from the seed with blake2b, so the
same seed gives the same key; that is what makes these parameters insecure, and the key header,
the verification key and the CLI all say so. The secrets live only in this function's locals and
are never written anywhere; the key holds only group elements:

    alpha, beta, delta in G1;  beta, gamma, delta in G2
    A_j  = u_j(tau)·G1,  B_j = v_j(tau)·G1 and ·G2          (every variable j)
    IC_j = (beta·u_j + alpha·v_j + w_j)(tau) / gamma · G1    (inputs)
    L_j  = (beta·u_j + alpha·v_j + w_j)(tau) / delta · G1    (aux)
    H_i  = tau^i · Z(tau) / delta · G1                       (i < n − 1, Z(X) = X^n − 1)

All multiplications by G1/G2 go through the backend's fixed-base kernels.
"""

from __future__ import annotations

import hashlib
import time
from typing import Callable

import numpy as np

from engine.groth16.keyfile import ProvingKey
from engine.groth16.qap import combine, domain_log, geometric, uvw_at
from engine.groth16.r1cs import R1CS
from kernels.backend import Backend
from kernels.constants import G1_GEN, G2_GEN, R_MOD
from kernels.cpu.convert import g1_to_storage, g2_to_storage, to_mont_fr

INSECURE_LABEL = "INSECURE TEST PARAMETERS"


def _secret(seed: bytes, label: str, counter: int = 0) -> int:
    h = hashlib.blake2b(b"sealtop-insecure-setup\0" + label.encode() + b"\0" + seed + counter.to_bytes(4, "little"))
    return int.from_bytes(h.digest(), "little") % R_MOD


def toxic_waste(seed: bytes | str | int, log_n: int) -> dict[str, int]:
    """Deterministic nonzero secrets; tau avoids the domain. Only for tests and benchmarks."""
    raw = str(seed).encode() if not isinstance(seed, bytes) else seed
    out = {}
    for label in ("tau", "alpha", "beta", "gamma", "delta"):
        counter = 0
        while True:
            v = _secret(raw, label, counter)
            bad = v == 0 or (label == "tau" and pow(v, 1 << log_n, R_MOD) == 1)
            if not bad:
                break
            counter += 1
        out[label] = v
    return out


def setup(
    r1cs: R1CS,
    seed: bytes | str | int,
    backend: Backend,
    progress: Callable[[str], None] | None = None,
) -> ProvingKey:
    """Make the proving key (in memory) for ``r1cs``; the verification key is inside it."""
    r1cs.check()
    say = progress or (lambda _msg: None)
    log_n = domain_log(r1cs.num_constraints)
    n = 1 << log_n
    t = toxic_waste(seed, log_n)
    tau, alpha, beta, gamma, delta = t["tau"], t["alpha"], t["beta"], t["gamma"], t["delta"]
    del t

    t0 = time.perf_counter()
    u, v, w = uvw_at(r1cs, tau, log_n)
    ni = r1cs.num_inputs
    gamma_inv, delta_inv = pow(gamma, -1, R_MOD), pow(delta, -1, R_MOD)
    ic_s = combine(u[:ni], v[:ni], w[:ni], alpha, beta, gamma_inv)
    l_s = combine(u[ni:], v[ni:], w[ni:], alpha, beta, delta_inv)
    z_tau = (pow(tau, n, R_MOD) - 1) % R_MOD
    h_s = geometric(z_tau * delta_inv % R_MOD, tau, n - 1)
    say(f"QAP at tau: {r1cs.num_vars} variables, domain 2^{log_n} ({time.perf_counter() - t0:.2f} s)")

    g1 = g1_to_storage([G1_GEN])[0]
    g2 = g2_to_storage([G2_GEN])[0]

    def g1mul(s: np.ndarray, what: str) -> np.ndarray:
        t1 = time.perf_counter()
        out = np.ascontiguousarray(backend.fixed_base_g1(g1, s), dtype=np.uint64).reshape(-1, 12)
        say(f"G1 {what}: {len(s)} points ({time.perf_counter() - t1:.2f} s)")
        return out

    def g2mul(s: np.ndarray, what: str) -> np.ndarray:
        t1 = time.perf_counter()
        out = np.ascontiguousarray(backend.fixed_base_g2(g2, s), dtype=np.uint64).reshape(-1, 24)
        say(f"G2 {what}: {len(s)} points ({time.perf_counter() - t1:.2f} s)")
        return out

    singles_g1 = g1mul(to_mont_fr([alpha, beta, delta]), "alpha, beta, delta")
    singles_g2 = g2mul(to_mont_fr([beta, gamma, delta]), "beta, gamma, delta")
    pk = ProvingKey(
        num_inputs=ni,
        num_aux=r1cs.num_aux,
        num_constraints=r1cs.num_constraints,
        log_n=log_n,
        digest=r1cs.digest(),
        insecure=True,
        alpha_g1=singles_g1[0:1],
        beta_g1=singles_g1[1:2],
        delta_g1=singles_g1[2:3],
        beta_g2=singles_g2[0:1],
        gamma_g2=singles_g2[1:2],
        delta_g2=singles_g2[2:3],
        ic=g1mul(ic_s, "IC"),
        a=g1mul(u, "A"),
        b_g1=g1mul(v, "B"),
        b_g2=g2mul(v, "B"),
        l=g1mul(l_s, "L"),
        h=g1mul(h_s, "H"),
    )
    pk.check()
    return pk
