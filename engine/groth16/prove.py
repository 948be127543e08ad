"""The Groth16 prover, split where the pipeline splits it.

- :func:`evaluate` (synthesis side, CPU): a = A·z, b = B·z, c = C·z, one Fr value per constraint.
- :func:`prove_start` (GPU side): H with NTTs on a coset, then the G1 MSMs for H, A, B1 and L.
  a, b and c are not needed after it returns, so the caller may free them.
- :func:`prove_finish` (finalize side): the G2 MSM for B, assembly with random r and s, and the
  192-byte proof.

H: with a(X), b(X), c(X) interpolating a, b, c on <omega> (size n), h = (a·b − c)/Z where
Z(X) = X^n − 1. On the coset g·<omega>, Z is the constant g^n − 1, so h's coefficients are the
inverse coset NTT of (a·b − c) evaluated on the coset, times 1/(g^n − 1). That last constant is
folded into the assembly (it scales the H MSM's result), which keeps every bulk step a plain
backend operation. Proof assembly likewise uses tiny MSMs instead of separate curve code:

    A = alpha + Σ z_j A_j + r·delta
    B = beta + Σ z_j B_j + s·delta                 (in G2, and in G1 as B1 for C)
    C = Σ_aux z_j L_j + Σ h_i H_i + s·A + r·B1 − r·s·delta
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.groth16.examples import ONE_MONT, check_evaluations, check_witness
from engine.groth16.keyfile import ProvingKey
from engine.groth16.r1cs import R1CS
from engine.groth16.serialize import encode_proof_rows
from engine.groth16.setup import BIG_SECTIONS, DENSE_ENOUGH
from engine.groth16.sparse import matvec

# Kernel groups of prove_start, timed on the backend's own timeline (CUDA events on a GPU):
# upload (a, b, c and z to the device), ntt (H on the coset), then the four G1 MSMs.
from engine.stream.schema import KERNEL_GROUPS as START_GROUPS  # named once, in the schema
from kernels.backend import Backend
from kernels.constants import FR_COSET_SHIFT, R_MOD
from kernels.cpu.convert import to_mont_fr

TIMER_GROUPS = (*START_GROUPS, "b2")
# The witness MSMs' order in the GPU half, after H's (B2's with prove_start's b2). With the MSM
# ends beside (SEALTOP_MSM_ENDS=side) each MSM's bucket sums and window reduction run beside the
# next one's work, H's ~30 ms (porep-32g) beside the first. SEALTOP_MSM_ORDER sets it per process.
MSM_ORDER = tuple(os.environ.get("SEALTOP_MSM_ORDER", "msm_a,msm_b1,b2,msm_l").split(","))
if sorted(MSM_ORDER) != ["b2", "msm_a", "msm_b1", "msm_l"]:
    raise ValueError(f"SEALTOP_MSM_ORDER is {','.join(MSM_ORDER)}: it orders msm_a, msm_b1, b2 and msm_l")
# Where the GPU half's MSM results are read: "call", at the end of prove_start, which then waits
# for the MSM ends still running beside (the last MSM's bucket sums, window reduction and finish:
# ~10 ms a porep-32g partition on the H200); "finish", by prove_finish (the finalize half), so
# prove_start returns once its own stream is done and those ends run beside the next call.
# SEALTOP_MSM_RESULTS sets it per process.
RESULTS = os.environ.get("SEALTOP_MSM_RESULTS", "call")
if RESULTS not in ("call", "finish"):
    raise ValueError(f"SEALTOP_MSM_RESULTS is {RESULTS}: it is call or finish")
# The groups each input path runs: a, b, c uploaded, or (abc_eval = "gpu") the compact witness
# uploaded and a, b, c evaluated where H runs ("abc", right after "upload").
_PLAIN_GROUPS: tuple[str, ...] = ("upload", "ntt")
_COMPACT_GROUPS = ("upload", "abc", "ntt")


class KeyMismatchError(ValueError):
    """The proving key was made for a different circuit or has the wrong shape."""


@dataclass
class ProveHandle:
    """What prove_start leaves for prove_finish: accumulated G1 points, r, s, and timings."""

    pk: ProvingKey
    backend: Backend
    z: np.ndarray
    r: int
    s: int
    h_scale: int  # 1 / (g^n − 1): the constant folded out of the H coefficients
    acc_a: np.ndarray  # Σ z_j A_j (G1 row)
    acc_b1: np.ndarray
    acc_l: np.ndarray
    acc_h: np.ndarray  # Σ h'_i H_i, to be scaled by h_scale
    tables: dict[str, Query]
    timings_ms: dict[str, float] = field(default_factory=dict)
    z_placed: Any = None  # z where ``placed_on`` computes, reused by the B2 MSM
    placed_on: str = ""
    acc_b2: Any = None  # Σ z_j B2_j (G2 row) when prove_start made it (b2=True)
    # RESULTS = "finish": the backend that still holds the acc_* above (the handle's may be the
    # CPU's by then) and what reading them waits for (Backend.detach); settle() reads them
    results_on: Any = None
    pending: Any = None

    @property
    def unread(self) -> bool:
        return self.results_on is not None


def settle(handle: ProveHandle) -> None:
    """Read the GPU half's results where prove_start left them on the device (RESULTS =
    "finish"), on the calling thread; nothing when they were read already."""
    hd = handle
    if not hd.unread:
        return
    names = ["acc_h", "acc_a", "acc_b1", "acc_l"] + (["acc_b2"] if hd.acc_b2 is not None else [])
    got = hd.results_on.fetch_detached(hd.pending, [getattr(hd, k) for k in names])
    for k, v in zip(names, got):
        setattr(hd, k, np.asarray(v))
    hd.results_on = hd.pending = None


def evaluate(r1cs: R1CS, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A·z, B·z, C·z): each uint64[num_constraints, 4] (not yet padded to the domain)."""
    if z.shape != (r1cs.num_vars, 4):
        raise ValueError(f"witness has shape {list(z.shape)}, the circuit needs [{r1cs.num_vars}, 4]")
    return matvec(r1cs.A, z), matvec(r1cs.B, z), matvec(r1cs.C, z)


@dataclass(frozen=True)
class Query:
    """A key query placed where the backend's MSMs run, without its points at infinity.

    Like bellman's density tracking: a variable whose query point is infinity (in the chain
    circuit, almost every B point) contributes nothing, so neither it nor its scalar goes to the
    MSM. ``index`` lists the kept rows (None: all rows are kept).
    """

    points: Any
    index: Any  # int64 row numbers, placed where the backend computes; None: all rows
    rows: int  # rows in the key before dropping

    def scalars(self, s: Any) -> Any:
        """The kept rows of a scalar vector (host or placed; gathered where it lives)."""
        return s if self.index is None else s[self.index]


def _query(table: Any, backend: Backend, endo: bool = False, pairs: bool = False,
           kept: Any | None = None, rows: int = 0) -> Query:
    """The table's query; ``table`` is a host array or, for a key made in device memory, a device
    array (the kept rows are then found and gathered where it lives: one module's methods).
    ``kept``: the table holds only these rows of ``rows`` already, the rest at infinity."""
    if kept is None:
        keep = table.any(axis=1).nonzero()[0]
        if len(keep) >= DENSE_ENOUGH * len(table):
            return Query(backend.resident(table, endo=endo, pairs=pairs), None, len(table))
        table, kept, rows = table[keep], keep, len(table)  # a contiguous copy
    return Query(backend.resident(table, endo=endo, pairs=pairs), backend.place(kept), rows)


def resident_table(pk: ProvingKey, section: str, backend: Backend, kept: Any | None = None) -> Query:
    """One of the key's queries placed where the backend's MSMs run. H's scalars are full-length
    field elements, so its table is made ready for the GLV split; the others' are the witness,
    mostly 0 and 1, so a backend may keep their pairs' sums. ``kept``: the section holds only
    these rows already (engine.groth16.setup.device_key), the rest at infinity."""
    return _query(getattr(pk, section), backend, endo=section == "h", pairs=section != "h",
                  kept=kept, rows=pk.expected_rows()[section])


def resident_tables(pk: ProvingKey, backend: Backend) -> dict[str, Query]:
    """The key's queries placed where the backend's MSMs run (once per key, then reused)."""
    # in device_setup's order, H first: its GLV images are worth more than any other table's
    # extra (pairs, where a backend keeps them, take what room is left)
    return {k: resident_table(pk, k, backend) for k in BIG_SECTIONS}


def _scalar_rows(values: list[int]) -> np.ndarray:
    return to_mont_fr([v % R_MOD for v in values])


def _rows(points: list[np.ndarray]) -> np.ndarray:
    """A few point rows stacked into one small table for an assembly MSM."""
    return np.ascontiguousarray(np.stack([np.asarray(p) for p in points]), dtype=np.uint64)


def _host(backend: Backend) -> Backend:
    """Where the assembly's MSMs of 3 to 5 points run: on the host. On a GPU each took 20-150 ms
    of tiny kernels beside the next partition's call (the H200, docs/BENCHMARKS.md); on the CPU
    backend the four take ~2 ms."""
    if not getattr(backend, "is_device", False):
        return backend
    from kernels.backend import get_backend

    return get_backend("cpu")


def prove_start(
    pk: ProvingKey,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    z: np.ndarray,
    backend: Backend,
    r: int | None = None,
    s: int | None = None,
    tables: dict[str, Query] | None = None,
    compact: tuple[Any, Any] | None = None,
    b2: bool = False,
) -> ProveHandle:
    """H on a coset, then the G1 MSMs (H, A, B1, L), and with ``b2`` the G2 MSM of B too (then
    prove_finish has only the assembly left). r and s default to fresh randomness.
    a, b, c and z may be numpy arrays or kernels.stored.StoredArray (read by backend.place).

    ``compact`` = (resident compact matrices, compact witness) (engine.groth16.resident;
    abc_eval = "gpu") takes the place of a, b and c (None): the witness is uploaded (unless
    resident.place_witness placed it already: its "upload" group then measures ~0), z expanded
    and a, b, c evaluated on the backend straight into H's input (the "abc" group); ``z`` is
    then None, or the host z when B2 is to run on another backend."""
    n = pk.domain_size
    if compact is not None:
        rows = compact[1].num_vars
        if rows != pk.num_vars or compact[0].num_constraints > n:
            raise KeyMismatchError(f"compact witness has {rows} values, the proving key expects {pk.num_vars}")
    else:
        if z.shape != (pk.num_vars, 4):
            raise KeyMismatchError(f"witness has {z.shape[0]} values, the proving key expects {pk.num_vars}")
        for name, v in (("a", a), ("b", b), ("c", c)):
            if v.ndim != 2 or v.shape[1] != 4 or v.shape[0] > n:
                raise KeyMismatchError(f"evaluation vector {name} has shape {list(v.shape)}, domain is {n}")
    tables = tables if tables is not None else resident_tables(pk, backend)
    ni = pk.num_inputs

    # a, b, c and z go to the device once; H stays there for its MSM, and a, b, c are dropped
    # as soon as H is done. Each group is bracketed by marks on the backend's timeline.
    marks = [backend.mark()]
    if compact is None:
        groups = _PLAIN_GROUPS
        z_d = backend.place(z)
        a_d, b_d, c_d = backend.place(a), backend.place(b), backend.place(c)
        marks.append(backend.mark())
        h = backend.h_coefficients(a_d, b_d, c_d, n)
        del a_d, b_d, c_d
    else:
        from engine.groth16.resident import abc_and_h

        groups = _COMPACT_GROUPS
        z_d, h = abc_and_h(compact[0], compact[1], n, backend, marks)
    marks.append(backend.mark())

    spans: dict[str, tuple[Any, Any]] = {}  # each MSM's marks (the groups before them: marks)

    def msm(name: str, q: Query, s: Any, g2: bool = False) -> Any:
        start = backend.mark()
        out = (backend.msm_g2 if g2 else backend.msm_g1)(q.points, q.scalars(s))
        spans[name] = (start, backend.mark())
        return out

    acc = {"msm_h": msm("msm_h", tables["h"], h[: n - 1])}
    del h
    witness_msms = {"msm_a": (tables["a"], z_d), "msm_b1": (tables["b_g1"], z_d), "msm_l": (tables["l"], z_d[ni:])}
    if b2:
        witness_msms["b2"] = (tables["b_g2"], z_d)
    for name in MSM_ORDER:
        if name in witness_msms:
            acc[name] = msm(name, *witness_msms[name], g2=name == "b2")
    del witness_msms
    z_d = None if b2 else z_d  # B2 was its last reader
    unread = RESULTS == "finish"
    # read now, fetch joining any MSM ends still beside; or left for settle()
    got = acc if unread else {name: np.asarray(backend.fetch(x)) for name, x in acc.items()}
    tm = {g: backend.elapsed_ms(t0, t1) for g, t0, t1 in zip(groups, marks, marks[1:])}
    tm.update({name: backend.elapsed_ms(t0, t1) for name, (t0, t1) in spans.items()})
    acc_h, acc_a, acc_b1, acc_l = got["msm_h"], got["msm_a"], got["msm_b1"], got["msm_l"]
    acc_b2 = got["b2"] if b2 else None
    g_n = pow(FR_COSET_SHIFT, n, R_MOD)
    return ProveHandle(
        pk=pk,
        backend=backend,
        z=z,
        r=secrets.randbelow(R_MOD) if r is None else r % R_MOD,
        s=secrets.randbelow(R_MOD) if s is None else s % R_MOD,
        h_scale=pow((g_n - 1) % R_MOD, -1, R_MOD),
        acc_a=acc_a,
        acc_b1=acc_b1,
        acc_l=acc_l,
        acc_h=acc_h,
        tables=tables,
        timings_ms=tm,
        z_placed=z_d,
        placed_on=backend.name,
        acc_b2=acc_b2,
        results_on=backend if unread else None,
        pending=backend.detach() if unread else None,
    )


def prove_b2(handle: ProveHandle) -> Any:
    """The G2 MSM for B (the finalize half's one large piece of GPU work), fetched; the one
    prove_start made, where it did."""
    hd, be = handle, handle.backend
    settle(hd)
    if hd.acc_b2 is not None:
        return hd.acc_b2
    m0 = be.mark()
    q = hd.tables["b_g2"]
    z = hd.z_placed if hd.z_placed is not None and hd.placed_on == be.name else be.place(hd.z)
    acc_b2 = be.fetch(be.msm_g2(q.points, q.scalars(z)))
    del z
    hd.z_placed = None  # the device copy of z is not needed after B2
    hd.timings_ms["b2"] = be.elapsed_ms(m0, be.mark())
    return acc_b2


def prove_finish(handle: ProveHandle, acc_b2: Any = None) -> bytes:
    """The G2 MSM for B (unless ``acc_b2``, prove_b2's result, is given), assembly with r and s,
    and the 192-byte compressed proof."""
    hd, pk = handle, handle.pk
    settle(hd)
    if acc_b2 is None:
        acc_b2 = prove_b2(handle)
    r, s = hd.r, hd.s
    be = _host(handle.backend)

    proof_a = be.msm_g1(_rows([pk.alpha_g1[0], hd.acc_a, pk.delta_g1[0]]), _scalar_rows([1, 1, r]))
    proof_b = be.msm_g2(_rows([pk.beta_g2[0], acc_b2, pk.delta_g2[0]]), _scalar_rows([1, 1, s]))
    b1 = be.msm_g1(_rows([pk.beta_g1[0], hd.acc_b1, pk.delta_g1[0]]), _scalar_rows([1, 1, s]))
    proof_c = be.msm_g1(
        _rows([hd.acc_l, hd.acc_h, proof_a, b1, pk.delta_g1[0]]),
        _scalar_rows([1, hd.h_scale, s, r, -r * s]),
    )
    return encode_proof_rows(np.asarray(proof_a), np.asarray(proof_b), np.asarray(proof_c))


def prove(
    pk: ProvingKey,
    r1cs: R1CS,
    z: np.ndarray,
    backend: Backend,
    precheck: bool = True,
    r: int | None = None,
    s: int | None = None,
    timings: dict[str, float] | None = None,
) -> bytes:
    """One whole proof. Checks the key matches the circuit, and (unless precheck=False) that z
    satisfies every constraint. ``timings`` (if given) receives the per-group milliseconds."""
    if bytes(pk.digest) != r1cs.digest():
        raise KeyMismatchError("the proving key was made for a different circuit (digest mismatch)")
    if (pk.num_inputs, pk.num_aux, pk.num_constraints) != (r1cs.num_inputs, r1cs.num_aux, r1cs.num_constraints):
        raise KeyMismatchError("the proving key's circuit shape does not match the R1CS")
    if z.shape != (r1cs.num_vars, 4) or (precheck and not np.array_equal(z[0], ONE_MONT)):
        check_witness(r1cs, z)  # raises with the reason
    t = time.perf_counter()
    a, b, c = evaluate(r1cs, z)
    eval_ms = (time.perf_counter() - t) * 1e3
    if precheck:
        check_evaluations(a, b, c)
    handle = prove_start(pk, a, b, c, z, backend, r=r, s=s)
    del a, b, c
    proof = prove_finish(handle)
    if timings is not None:
        timings.update(handle.timings_ms)
        timings["eval"] = eval_ms
    return proof
