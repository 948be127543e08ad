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

All multiplications by G1/G2 go through the backend's fixed-base kernels. :func:`setup` makes
the key in host memory (to be written to a key file); :func:`device_setup` makes the same key
with its five large sections (A, B1, B2, L, H) straight in the backend's device memory, for a
key too large to store (porep-32g: 70 GiB against a 64 GiB disk). Both compute the scalars in
the same order, section by section, so on a GPU the fixed-base kernels of one section run while
the host computes the next section's scalars.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.groth16.keyfile import ProvingKey
from engine.groth16.qap import combine, domain_log, geometric, lagrange_at, transposed_product
from engine.groth16.r1cs import R1CS
from kernels.backend import Backend
from kernels.constants import G1_GEN, G2_GEN, R_MOD
from kernels.cpu.convert import g1_to_storage, g2_to_storage, to_mont_fr

INSECURE_LABEL = "INSECURE TEST PARAMETERS"
BIG_SECTIONS = ("h", "a", "b_g1", "b_g2", "l")  # the order device_setup makes them in
# A query keeps all its rows when at least this share of them are used (its points not at
# infinity): the MSMs then read it whole, with no row index (engine.groth16.prove).
DENSE_ENOUGH = 0.9


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


def _scalars(r1cs: R1CS, t: dict[str, int], log_n: int,
             say: Callable[[str], None]) -> Iterator[tuple[str, str, np.ndarray]]:
    """(section, group, scalars) for ic and the five large sections, H first (it needs no
    matrix), then A, B (G1 and G2) and L/IC as the matrices' transposed products come in. Each
    vector is dropped by the caller once its points are made, so at most u, v, w and one more
    vector are alive on the host."""
    n = 1 << log_n
    tau, alpha, beta, gamma, delta = t["tau"], t["alpha"], t["beta"], t["gamma"], t["delta"]
    nv, ni = r1cs.num_vars, r1cs.num_inputs
    delta_inv = pow(delta, -1, R_MOD)

    def timed(what: str, fn: Callable[..., Any], *args: Any) -> Any:
        t0 = time.perf_counter()
        out = fn(*args)
        say(f"QAP at tau, {what} ({time.perf_counter() - t0:.2f} s)")
        return out

    z_tau = (pow(tau, n, R_MOD) - 1) % R_MOD
    yield "h", "g1", timed(f"H scalars: {n - 1} powers", geometric, z_tau * delta_inv % R_MOD, tau, n - 1)
    lag = timed(f"Lagrange basis: domain 2^{log_n}", lagrange_at, tau, log_n)
    u = timed(f"u = A^T L: {nv} variables", transposed_product, r1cs.A, lag, nv)
    yield "a", "g1", u
    v = timed(f"v = B^T L: {nv} variables", transposed_product, r1cs.B, lag, nv)
    yield "b_g1", "g1", v
    yield "b_g2", "g2", v
    w = timed(f"w = C^T L: {nv} variables", transposed_product, r1cs.C, lag, nv)
    del lag
    ic = timed(f"IC: {ni} inputs", combine, u[:ni], v[:ni], w[:ni], alpha, beta, pow(gamma, -1, R_MOD))
    yield "ic", "g1", ic
    del ic
    l_s = timed(f"L: {r1cs.num_aux} aux", combine, u[ni:], v[ni:], w[ni:], alpha, beta, delta_inv)
    del u, v, w
    yield "l", "g1", l_s


def _singles(t: dict[str, int], backend: Backend) -> dict[str, np.ndarray]:
    g1 = g1_to_storage([G1_GEN])[0]
    g2 = g2_to_storage([G2_GEN])[0]
    s1 = np.ascontiguousarray(backend.fixed_base_g1(g1, to_mont_fr([t["alpha"], t["beta"], t["delta"]])), dtype=np.uint64).reshape(-1, 12)
    s2 = np.ascontiguousarray(backend.fixed_base_g2(g2, to_mont_fr([t["beta"], t["gamma"], t["delta"]])), dtype=np.uint64).reshape(-1, 24)
    return {"alpha_g1": s1[0:1], "beta_g1": s1[1:2], "delta_g1": s1[2:3],
            "beta_g2": s2[0:1], "gamma_g2": s2[1:2], "delta_g2": s2[2:3]}


def _key(r1cs: R1CS, log_n: int, sections: dict[str, Any]) -> ProvingKey:
    return ProvingKey(
        num_inputs=r1cs.num_inputs,
        num_aux=r1cs.num_aux,
        num_constraints=r1cs.num_constraints,
        log_n=log_n,
        digest=r1cs.digest(),
        insecure=True,
        **sections,
    )


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
    t = toxic_waste(seed, log_n)
    g1 = g1_to_storage([G1_GEN])[0]
    g2 = g2_to_storage([G2_GEN])[0]
    sections = _singles(t, backend)
    for name, group, s in _scalars(r1cs, t, log_n, say):
        t1 = time.perf_counter()
        if group == "g1":
            out = np.ascontiguousarray(backend.fixed_base_g1(g1, s), dtype=np.uint64).reshape(-1, 12)
        else:
            out = np.ascontiguousarray(backend.fixed_base_g2(g2, s), dtype=np.uint64).reshape(-1, 24)
        sections[name] = out
        say(f"{group.upper()} {name}: {len(s)} points ({time.perf_counter() - t1:.2f} s)")
    del t
    pk = _key(r1cs, log_n, sections)
    pk.check()
    return pk


@dataclass(frozen=True)
class DeviceKey:
    """:func:`device_key`'s result: the key, its sparse sections holding only their used rows.

    ``kept`` maps each such section (fewer than DENSE_ENOUGH of its rows used; at porep-32g B
    in G1 and G2, 33 M of 130 M variables) to the numbers of the rows it holds; the points of the
    others (scalar 0, so at infinity) were never made. Every other section is whole."""

    pk: ProvingKey
    kept: dict[str, np.ndarray]


def device_setup(
    r1cs: R1CS,
    seed: bytes | str | int,
    backend: Backend,
    progress: Callable[[str], None] | None = None,
) -> ProvingKey:
    """The key :func:`setup` makes, with A, B1, B2, L and H generated straight into the
    backend's device memory (each section's scalars uploaded once, the points never copied to
    the host); IC and the six single points, which the verifier and the proof's assembly read,
    stay in host memory. On the cpu backend every section is a host array (the same key).

    Progress: one line per host phase and per section with its time on the device (CUDA events
    around the section's kernels; the kernels of one section run while the host computes the
    next section's scalars, so a section's line comes once the next host phase is done)."""
    made = _device_key(r1cs, seed, backend, progress, dense_enough=None)
    made.pk.check()
    return made.pk


def device_key(
    r1cs: R1CS,
    seed: bytes | str | int,
    backend: Backend,
    progress: Callable[[str], None] | None = None,
) -> DeviceKey:
    """:func:`device_setup`'s key as a prover holds it: a sparse section's points at infinity
    are never made (their scalars are 0), so the card holds the points the MSMs read and no
    full section beside them (at porep-32g 44 GiB against 70; B's fixed-base multiplications
    on a quarter of the rows)."""
    made = _device_key(r1cs, seed, backend, progress, dense_enough=DENSE_ENOUGH)
    made.pk.check({k: len(v) for k, v in made.kept.items()})
    return made


def _device_key(
    r1cs: R1CS,
    seed: bytes | str | int,
    backend: Backend,
    progress: Callable[[str], None] | None,
    dense_enough: float | None,
) -> DeviceKey:
    say = progress or (lambda _msg: None)
    log_n = domain_log(r1cs.num_constraints)
    t0 = time.perf_counter()
    say(f"{INSECURE_LABEL}: generating the proving key of {r1cs.num_constraints} constraints "
        f"(domain 2^{log_n}) in {backend.name} memory from the seed")
    r1cs.check()
    say(f"R1CS checked: {r1cs.num_vars} variables, {r1cs.nnz} nonzeros ({time.perf_counter() - t0:.2f} s)")
    t = toxic_waste(seed, log_n)
    g1 = g1_to_storage([G1_GEN])[0]
    g2 = g2_to_storage([G2_GEN])[0]
    sections: dict[str, Any] = _singles(t, backend)
    kept: dict[str, np.ndarray] = {}
    pending: list[tuple[str, str, str, Any, Any]] = []

    def report() -> None:
        for name, group, rows, m0, m1 in pending:
            say(f"{group.upper()} {name}: {rows} points ({backend.elapsed_ms(m0, m1) / 1e3:.2f} s, {backend.name})")
        pending.clear()

    def say_and_report(msg: str) -> None:  # after each host phase, the sections done meanwhile
        say(msg)
        report()

    for name, group, s in _scalars(r1cs, t, log_n, say_and_report):
        if name == "ic":  # 274 points at porep-32g: the verifier's, kept on the host
            sections[name] = np.ascontiguousarray(backend.fixed_base_g1(g1, s), dtype=np.uint64).reshape(-1, 12)
            continue
        rows = f"{len(s)}"
        if dense_enough is not None:
            used = np.flatnonzero(s.any(axis=1))  # a zero scalar's point is at infinity
            if len(used) < dense_enough * len(s):
                rows = f"{len(used)} used of {len(s)}"
                kept[name], s = used, s[used]
        m0 = backend.mark()
        placed = backend.place(s)
        mul = backend.fixed_base_g1 if group == "g1" else backend.fixed_base_g2
        sections[name] = mul(g1 if group == "g1" else g2, placed)  # device in, device out
        del placed  # the device pool reuses it after the kernel, in stream order
        pending.append((name, group, rows, m0, backend.mark()))
    del t
    report()
    pk = _key(r1cs, log_n, sections)
    say(f"{INSECURE_LABEL}: proving key ready in {backend.name} memory, "
        f"{pk.nbytes() / 2**30:.2f} GiB ({time.perf_counter() - t0:.2f} s)")
    return DeviceKey(pk, kept)
