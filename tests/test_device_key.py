"""The device-made key's logic on the CPU: device_setup makes the very key setup makes (same seed,
every section equal), says INSECURE first and last, and reports each large section once with its
time; a different seed gives a different key. The engine's choice of where a key comes from
(engine.pipeline.proving.key_source) with the disk and GPU free-memory probes patched: no disk
room on cuda gives a device source, a GPU without room refuses in one line, a stored key or a
disk with room keeps the key file; and the prover's make_device_key on the cpu backend."""

from __future__ import annotations

import random
import re
import secrets
import shutil
from collections import namedtuple
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from engine_events import drain
from engine_faults import signal_worker_at

from engine.groth16 import compact, examples
from engine.groth16.keyfile import SECTIONS, KeyRoomError, key_file_size, room_needed
from engine.groth16.setup import BIG_SECTIONS, INSECURE_LABEL, device_key, device_setup, setup
from engine.pipeline import proving
from engine.pipeline.circuits import resolve
from kernels.backend import get_backend


def test_device_setup_equals_setup_on_the_cpu_backend() -> None:
    cpu = get_backend("cpu")
    circuit = examples.chain_for_constraints(1 << 9)
    seed = secrets.token_hex(8)
    lines: list[str] = []
    made = device_setup(circuit.r1cs, seed, cpu, lines.append)
    want = setup(circuit.r1cs, seed, cpu)
    for name in SECTIONS:
        assert np.array_equal(getattr(made, name), getattr(want, name)), name
    assert made.digest == want.digest and made.insecure
    assert lines[0].startswith(INSECURE_LABEL) and lines[-1].startswith(INSECURE_LABEL)
    for name in BIG_SECTIONS:
        hits = [ln for ln in lines if ln.split(":")[0] in (f"G1 {name}", f"G2 {name}")]
        assert len(hits) == 1 and hits[0].endswith(" s, cpu)"), (name, hits)
    other = device_setup(circuit.r1cs, seed + "x", cpu)
    assert not np.array_equal(other.a, made.a) and not np.array_equal(other.h, made.h)


# ---------------------------------------------------------------------------- the engine's choice

PRESET = "chain-64"
_Usage = namedtuple("_Usage", "total used free")


def _disk_free(monkeypatch, free: int) -> None:
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: _Usage(10 * free + 1, 9 * free + 1, free))


def _no_setup(monkeypatch) -> None:
    def refuse(*_a, **_k):
        raise AssertionError("setup ran although the key cannot be stored")

    monkeypatch.setattr("engine.groth16.setup.setup", refuse)


def _need(circuit, slots: int = 1) -> int:
    key, per = proving.device_bytes(circuit.r1cs, slots, kept=proving.kept_rows(circuit.r1cs))
    return key + per + proving.DEVICE_ALLOWANCE


def test_no_disk_room_on_cuda_gives_a_device_source(tmp_path: Path, monkeypatch) -> None:
    circuit = resolve(PRESET)
    r = circuit.r1cs
    _disk_free(monkeypatch, random.randrange(0, room_needed(key_file_size(r.num_inputs, r.num_aux, r.num_constraints))))
    _no_setup(monkeypatch)
    asked: list[int] = []
    monkeypatch.setattr(proving, "_nvml_free", lambda d: asked.append(d) or _need(circuit, 2))
    lines: list[str] = []
    source, vk = proving.key_source(circuit, tmp_path / "p", "cuda", lines.append, devices=[0, 1], slots=2)
    assert vk is None and asked == [0, 1]
    src = proving.parse_device_source(source)
    assert src == proving.DeviceSource(PRESET, str(tmp_path / "p" / "circuits"), r.digest()[:8].hex())
    assert proving.parse_device_source(str(tmp_path / "x.pk")) is None
    assert len(lines) == 1 and "cannot be stored" in lines[0] and "GPU memory" in lines[0]
    assert "INSECURE" in lines[0]
    assert not list((tmp_path / "p").glob("*.pk"))


def test_a_gpu_without_room_for_the_key_refuses_in_one_line(tmp_path: Path, monkeypatch) -> None:
    """A second engine on a GPU that the first one's key fills: free vs needed bytes, one line."""
    circuit = resolve(PRESET)
    _disk_free(monkeypatch, 0)
    _no_setup(monkeypatch)
    need = _need(circuit)
    free = random.randrange(0, need)
    monkeypatch.setattr(proving, "_nvml_free", lambda d: free if d == 1 else need)
    with pytest.raises(KeyRoomError) as info:
        proving.key_source(circuit, tmp_path, "cuda", devices=[0, 1])
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("GPU 1 ") and f"{need} bytes needed" in msg and f"{free} free" in msg
    # exactly enough free: no refusal
    monkeypatch.setattr(proving, "_nvml_free", lambda d: need)
    assert proving.key_source(circuit, tmp_path, "cuda", devices=[0, 1])[1] is None
    # NVML cannot say: the prover's own check decides later
    monkeypatch.setattr(proving, "_nvml_free", lambda d: None)
    assert proving.key_source(circuit, tmp_path, "cuda", devices=[0])[1] is None


def test_room_or_a_stored_key_keeps_the_key_file(tmp_path: Path, monkeypatch) -> None:
    circuit = resolve(PRESET)
    path, vk = proving.ensure_key(circuit, tmp_path)  # made on the cpu
    _disk_free(monkeypatch, 0)
    monkeypatch.setattr(proving, "_nvml_free", lambda d: 0)  # never asked: the file is there
    assert proving.key_source(circuit, tmp_path, "cuda") == (str(path), vk)
    with pytest.raises(KeyRoomError):  # the cpu backend has no device path
        proving.key_source(circuit, tmp_path / "other", "cpu")


# Filecoin's porep-32g circuit as the H200 run printed it (130,278,869 constraints, 130,170,221
# variables, 328 public inputs, 722,388,891 nonzeros) and B's used variables as a pipeline traced
# them (33,112,282; scripts/msm_profile.py)
PorepShape = namedtuple("PorepShape", "num_inputs num_aux num_constraints num_vars nnz")
POREP_32G = PorepShape(328, 130_170_221 - 328, 130_278_869, 130_170_221, 722_388_891)
POREP_32G_KEPT = {"b_g1": 33_112_282, "b_g2": 33_112_282}


def test_device_bytes_at_porep_32g_are_the_plans() -> None:
    """The key as device_key makes it (B's used rows alone), the compact matrices beside it, and
    a call's working set of z and six domain vectors: one slot fits an 80 GB card, not a 48 GB
    one; the full sections (no kept rows) are docs/PLAN-32G.md's 70 GiB."""
    r, n = POREP_32G, 1 << 27
    key, slot = proving.device_bytes(r, 1, kept=POREP_32G_KEPT)  # type: ignore[arg-type]
    points = 96 * (r.num_vars + r.num_aux + n - 1) + (96 + 192) * 33_112_282  # A, L, H; B1, B2
    singles = 96 * r.num_inputs + 3 * 96 + 3 * 192
    assert key == points + singles + compact.resident_bytes_bound(r)  # type: ignore[arg-type]
    assert slot == 32 * r.num_vars + 6 * 32 * n
    assert 44 << 30 < points < 45 << 30 and 27 << 30 < slot < 28 << 30
    full, _ = proving.device_bytes(r, 1)  # type: ignore[arg-type]
    assert full - key == (96 + 192) * (r.num_vars - 33_112_282)
    assert proving.device_bytes(r, 2, kept=POREP_32G_KEPT)[1] == 2 * slot  # type: ignore[arg-type]
    need = key + slot + proving.DEVICE_ALLOWANCE
    circuit = SimpleNamespace(name="porep-32g", r1cs=r)
    h100_free = (81_559 - 600) << 20  # an H100 80GB HBM3: 81,559 MiB, the context's share off
    proving.check_device_room(circuit, [0], 1, lambda _d: h100_free, kept=POREP_32G_KEPT)
    assert need <= h100_free
    with pytest.raises(KeyRoomError, match="GPU 0 cannot hold"):
        proving.check_device_room(circuit, [0], 1, lambda _d: 48 << 30, kept=POREP_32G_KEPT)


def test_kept_rows_count_the_variables_a_and_b_use() -> None:
    """kept_rows: the columns of B that hold an entry (bellman's density of B), for B1 and B2
    alike; A and L whole where (nearly) every variable is used. device_key keeps no more."""
    from engine.groth16.bellman import query_density

    circuit = resolve(PRESET)
    r = circuit.r1cs
    kept = proving.kept_rows(r)
    dens = query_density(r)
    assert kept["b_g1"] == kept["b_g2"] == dens.count("b") < 0.9 * r.num_vars
    assert ("a" in kept) == (dens.count("a") < 0.9 * r.num_vars)
    cpu = get_backend("cpu")
    seed = secrets.token_hex(4)
    made = device_key(r, seed, cpu)
    assert {k: len(v) for k, v in made.kept.items()} == kept
    full = setup(r, seed, cpu)  # the same key with every row: the kept ones are its finite points
    for name in BIG_SECTIONS:
        want = getattr(full, name)
        if name in made.kept:
            assert np.array_equal(made.kept[name], np.flatnonzero(want.any(axis=1))), name
            want = want[made.kept[name]]
        assert np.array_equal(getattr(made.pk, name), want), name


def test_make_device_key_proves_like_the_key_file(tmp_path: Path) -> None:
    """The prover's side on the cpu backend: the key generated from the device source equals the
    file key (its verifying key too), its proofs verify, and a source naming another circuit
    build or a too-small device is refused."""
    from engine.groth16.keyfile import KeyFileError
    from engine.groth16.prove import evaluate

    cpu = get_backend("cpu")
    circuit = resolve(PRESET)
    path, vk_file = proving.ensure_key(circuit, tmp_path)
    source = proving.device_source(circuit, str(tmp_path / "circuits"))
    lines: list[str] = []
    key, vk = proving.make_device_key(source, cpu, progress=lines.append)
    assert key.device_made and vk == vk_file
    # one line per step of the load, each with its seconds, the setup's own lines between
    steps = ("circuit chain-64: ", "circuit digest ", INSECURE_LABEL, "R1CS checked: ",
             "resident tables: 5 sections", "verifying key: 2 inputs")
    at = [next(i for i, line in enumerate(lines) if line.startswith(step)) for step in steps]
    assert at == sorted(at) and at[:4] == [0, 1, 2, 3] and at[-1] == len(lines) - 1
    assert all(re.search(r"\(\d+\.\d\d s\)$", lines[i]) for i in at if i != 2), lines
    filed = proving.load_key(str(path), cpu)
    for name in ("a", "b_g1", "b_g2", "l", "h"):
        got, want = key.tables[name], filed.tables[name]
        assert np.array_equal(np.asarray(got.points), np.asarray(want.points)), name
        assert (got.index is None) == (want.index is None), name
        if got.index is not None:  # compacted: the full section is gone, the kept rows stay
            assert getattr(key.pk, name).shape[0] == 0 and np.array_equal(got.index, want.index)
    seed = random.randrange(1 << 30)
    z = circuit.witness(seed, 0, 1)
    a, b, c = evaluate(circuit.r1cs, z)
    proof = proving.finish(proving.start(key, a, b, c, z, cpu), "cpu", key)
    assert proving.verify(vk, circuit.public_inputs(seed, 0, 1), proof)
    assert not proving.verify(vk, circuit.public_inputs(seed + 1, 0, 1), proof)
    with pytest.raises(KeyFileError, match="another build"):
        proving.make_device_key(source.replace(source.split(":")[1], "00" * 8, 1), cpu)
    need = _need(circuit)
    monkeypatch_free = need - 1
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(proving, "device_free", lambda _b: monkeypatch_free)
        with pytest.raises(KeyRoomError, match=f"{need} bytes needed, {need - 1} free"):
            proving.make_device_key(source, cpu)


def test_the_porep_32g_sample_config_follows_the_plan() -> None:
    """sample-configs/porep-32g-h200.toml: two slots taking turns at the GPU, B2 on the GPU, a
    memory budget that holds 4 partitions of porep-32g (z + a + b + c from its counts) but not a
    fifth; the device-made key and the slots fit an H200 as the config shares it."""
    from engine.config import load_config

    cfg = load_config(Path(__file__).resolve().parents[1] / "sample-configs" / "porep-32g-h200.toml")
    part = (3 * 130_987_381 + 130_105_147) * 32  # docs/PLAN-32G.md: 16,738,153,280
    assert (cfg.backend, cfg.gpu_slots_per_device, cfg.gpu_calls, cfg.b_g2, cfg.partition_workers) == (
        "cuda", 2, "serial", "gpu", 2)
    assert 4 * part <= cfg.memory_budget < 5 * part
    assert cfg.preset == "porep-32g" and cfg.partitions == 10
    # Filecoin's circuit, the H200's free memory before the key (143,771 MiB total): two slots
    # taking turns fit with room to spare for H's GLV images and the pair tables (40 GiB left
    # after each, kernels/cuda/pairs.py)
    circuit = SimpleNamespace(name="porep-32g", r1cs=POREP_32G)
    h200_free = (143_771 - 600) << 20
    key, slots = proving.device_bytes(POREP_32G, 2, cfg.gpu_calls, None, POREP_32G_KEPT)  # type: ignore[arg-type]
    proving.check_device_room(circuit, [0], cfg.gpu_slots_per_device, lambda _d: h200_free, cfg.gpu_calls,
                              POREP_32G_KEPT)
    assert h200_free - key - slots > 40 << 30


def test_the_engine_regenerates_a_device_key_after_its_prover_dies(tmp_path: Path, monkeypatch) -> None:
    """The engine path of a device source, on the cpu backend with the choice patched to the
    device source (what key_source gives on cuda when the disk cannot hold the key): the prover
    generates the key itself (progress lines through the engine, INSECURE first), the verifying
    key comes back with its answer and the proofs verify against it; SIGKILL of the prover
    after the first partition: the restarted prover generates the key again and the job's
    proof verifies. No key file is written."""
    import signal

    from engine.config import EngineConfig
    from engine.pipeline.engine import Engine, Job

    def device_choice(circuit, cache_dir, backend_name="cpu", progress=None, damaged="refuse",
                      devices=None, slots=1, params="", gpu_calls="parallel"):
        return proving.device_source(circuit, str(proving.circuit_dir(cache_dir))), None

    monkeypatch.setattr(proving, "key_source", device_choice)
    lines: list[str] = []
    cfg = EngineConfig(backend="cpu", devices=[], partition_workers=1, gpu_channel_capacity=1,
                       param_cache=str(tmp_path), sample_interval_s=0.1)
    eng = Engine(cfg, progress=lines.append)
    q = eng.subscribe()
    eng.start()
    try:
        eng.submit(Job("chain-256", 3))
        killed, evs = signal_worker_at(eng, q, "cpu0", "done", signal.SIGKILL, 120)
        assert eng.wait_idle(120), lines[-12:]
        eng.submit(Job("chain-256", 1))  # a later job learns the verifying key at submission
        assert eng.wait_idle(120), lines[-12:]
    finally:
        eng.stop(timeout=30)  # a failed wait above must fail the test, not hang it in the drain
    evs += drain(q)
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert len(done) == 2 and all(e["verified"] for e in done), done
    assert any(e["kind"] == "error" and f"pid {killed} died" in e["message"] for e in evs)
    starts = [ln for ln in lines if ln.startswith("cpu0: " + INSECURE_LABEL + ": generating")]
    made = [ln for ln in lines if "proving key for chain-256 generated in memory" in ln]
    assert len(starts) == 2 and len(made) == 2, lines
    assert not list(tmp_path.rglob("*.pk"))
