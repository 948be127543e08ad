"""The device-made proving key on the GPU: generated straight into device memory, it equals the key
file setup writes for the same seed byte for byte (medium always; large with SEALTOP_HEAVY=1, a
few minutes on the H200), and proofs made with it are byte-identical to the file key's with r and
s fixed and verify under the oracle's pairing against the file key's verification key."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import numpy as np
import pytest
from engine_events import drain
from engine_faults import signal_worker_at

from kernels.backend import cuda_unavailable_reason, get_backend

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]

PRESETS = ["medium"] + (["large"] if os.environ.get("SEALTOP_HEAVY") == "1" else [])


@pytest.mark.parametrize("preset", PRESETS)
def test_device_key_equals_setup_key_file_and_proves(preset: str, tmp_path: Path) -> None:
    import cupy as cp

    from engine.groth16.keyfile import SECTIONS, load_proving_key, save_proving_key
    from engine.groth16.prove import prove
    from engine.groth16.setup import BIG_SECTIONS, INSECURE_LABEL, device_key, device_setup, setup
    from engine.groth16.verify import verify
    from engine.groth16.vkey import verifying_key
    from engine.pipeline.circuits import circuit_cache_dir, resolve
    from kernels.constants import R_MOD

    params = Path(os.environ.get("SEALTOP_PARAMS") or tmp_path)
    circuit = resolve(preset, circuit_cache_dir(params))
    gpu = get_backend("cuda")
    seed = secrets.token_hex(8)
    path = tmp_path / f"{preset}.pk"
    save_proving_key(setup(circuit.r1cs, seed, gpu), path)
    filed = load_proving_key(path, verify="always")

    lines: list[str] = []
    dev = device_setup(circuit.r1cs, seed, gpu, lines.append)
    assert INSECURE_LABEL in lines[0] and INSECURE_LABEL in lines[-1]
    for name in BIG_SECTIONS:
        assert isinstance(getattr(dev, name), cp.ndarray), name  # in device memory
        assert sum(line.startswith(("G1 " + name + ":", "G2 " + name + ":")) for line in lines) == 1, name
    for name in SECTIONS:
        got = getattr(dev, name)
        want = getattr(filed, name)
        assert got.shape == want.shape, name
        step = 1 << 22  # rows at a time: large's B2 is 2.4 GB
        for lo in range(0, want.shape[0], step):
            part = cp.asnumpy(got[lo:lo + step]) if isinstance(got, cp.ndarray) else got[lo:lo + step]
            assert np.array_equal(part, want[lo:lo + step]), (name, lo)
    assert (dev.digest, dev.insecure, dev.log_n) == (filed.digest, True, filed.log_n)

    z = circuit.witness(seed_int := secrets.randbelow(1 << 30), 0, 1)
    r, s = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    proof_dev = prove(dev, circuit.r1cs, z, gpu, r=r, s=s)
    assert proof_dev == prove(filed, circuit.r1cs, z, gpu, r=r, s=s)
    vk = verifying_key(filed)
    public = circuit.public_inputs(seed_int, 0, 1)
    assert verify(vk, public, proof_dev)
    tampered = bytearray(proof_dev)
    tampered[100] ^= 0x01
    assert not verify(vk, public, bytes(tampered))
    del dev
    # as a prover makes it: the sparse sections' finite points alone, the others whole
    made = device_key(circuit.r1cs, seed, gpu)
    assert made.kept, "no sparse section"
    for name in BIG_SECTIONS:
        want = getattr(filed, name)
        if name in made.kept:
            assert np.array_equal(made.kept[name], np.flatnonzero(want.any(axis=1))), name
            want = want[made.kept[name]]
        assert np.array_equal(cp.asnumpy(getattr(made.pk, name)), want), name


def test_engine_prover_generates_its_key_on_the_device_and_again_after_a_death(tmp_path: Path, monkeypatch) -> None:
    """The engine on the cuda backend with a disk that cannot hold the key (free-space probe
    patched): the prover generates the key on its GPU (progress lines through the engine, the
    INSECURE label first), every proof verifies; SIGKILL of the prover after the first proof:
    the restarted prover generates the key again (with progress) and the job's remaining
    partitions verify (the job's proof event says so)."""
    import shutil
    import signal
    from collections import namedtuple

    from engine.config import EngineConfig
    from engine.pipeline.engine import Engine, Job
    from engine.warmup import ensure_warm

    ensure_warm()  # the engine's first-run compile makes a small key on disk: before the patch
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: usage(1 << 20, 1 << 20, 0))
    lines: list[str] = []
    cfg = EngineConfig(backend="cuda", devices=[0], partition_workers=2, gpu_channel_capacity=2,
                       gpu_slots_per_device=1, b_g2="gpu", param_cache=str(tmp_path), sample_interval_s=0.1)
    eng = Engine(cfg, progress=lines.append)
    q = eng.subscribe()
    eng.start()
    try:
        eng.submit(Job("chain-4096", 4))
        # SIGKILL of the prover once the first partition is proven
        killed, evs = signal_worker_at(eng, q, "gpu0", "done", signal.SIGKILL, 300)
        assert eng.wait_idle(300)
    finally:
        eng.stop()
    evs += drain(q)
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert len(done) == 1 and all(e["verified"] for e in done), done  # one per job
    assert not list(tmp_path.glob("*.pk"))  # no key file was written
    starts = [ln for ln in lines if "generating the proving key" in ln and "INSECURE" in ln]
    readies = [ln for ln in lines if "proving key ready in cuda memory" in ln]
    assert len(starts) == 2 and len(readies) == 2, lines  # once, then again after the kill
    assert any("cannot be stored" in ln and "GPU memory" in ln for ln in lines), lines
