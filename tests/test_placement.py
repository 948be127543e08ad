"""NUMA placement of each GPU's synthesis workers, on fake sysfs trees (tmp_path) of 1, 2 and 4
GPUs over 1 and 2 nodes, with what sysfs leaves out; the worker's pin on this machine; and the
engine with two device provers on it (placement and each prover's own key, made at once)."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
from engine_events import drain

from engine.pipeline.placement import (
    cpulist_text,
    gpu_node,
    node_cpus,
    parse_cpulist,
    pin,
    plan,
    sysfs_pci,
)


def _ranges(cpus: list[int]) -> str:
    """A sysfs CPU list for ``cpus`` written the kernel's way (runs as a-b)."""
    out, run = [], [cpus[0]]
    for c in cpus[1:]:
        if c == run[-1] + 1:
            run.append(c)
        else:
            out.append(run)
            run = [c]
    out.append(run)
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in out)


def _host(root: Path, nodes: list[list[int]], gpus: dict[str, int | None]) -> None:
    """A fake sysfs: node<N>/cpulist for each node, and per PCI address its numa_node (None:
    the file says -1, as a VM's does) and local_cpulist."""
    for n, cpus in enumerate(nodes):
        d = root / "sys/devices/system/node" / f"node{n}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(_ranges(cpus) + "\n")
    (root / "sys/devices/system/node/possible").write_text(f"0-{len(nodes) - 1}\n")
    for pci, node in gpus.items():
        d = root / "sys/bus/pci/devices" / pci
        d.mkdir(parents=True)
        (d / "numa_node").write_text(f"{-1 if node is None else node}\n")
        local = nodes[node] if node is not None else sorted(c for ns in nodes for c in ns)
        (d / "local_cpulist").write_text(_ranges(local) + "\n")


def _pci(i: int) -> str:
    return f"0000:{0x17 + 0x20 * i:02x}:00.0"


def _nvml_id(i: int) -> str:
    return f"00000000:{0x17 + 0x20 * i:02X}:00.0"  # NVML's form: 8-digit domain, upper case


def test_cpulists_parse_as_the_kernel_writes_them():
    rng = random.Random()
    for _ in range(50):
        cpus = sorted(rng.sample(range(256), rng.randint(1, 40)))
        assert parse_cpulist(_ranges(cpus) + "\n") == tuple(cpus)
        assert cpulist_text(tuple(cpus)) == _ranges(cpus)  # and written back the same way
    assert cpulist_text(()) == "none"
    assert parse_cpulist("") == ()
    for bad in ("a-b", "3-1", "1,,x", "-4"):
        with pytest.raises(ValueError):
            parse_cpulist(bad)


def test_nvml_bus_ids_name_the_sysfs_directory():
    assert sysfs_pci("00000000:17:00.0") == "0000:17:00.0"
    assert sysfs_pci("00000000:9A:00.0") == "0000:9a:00.0"
    assert sysfs_pci("0000:9a:00.0") == "0000:9a:00.0"


@pytest.mark.parametrize("n_gpus,n_nodes", [(1, 1), (2, 1), (4, 1), (1, 2), (2, 2), (4, 2)])
def test_each_gpu_gets_its_own_nodes_cpus_split_among_the_gpus_there(tmp_path, n_gpus, n_nodes):
    rng = random.Random()
    per_node = rng.randint(n_gpus, 24)
    nodes = [list(range(n * per_node, (n + 1) * per_node)) for n in range(n_nodes)]
    gpu_nodes = [i * n_nodes // n_gpus for i in range(n_gpus)]  # GPUs spread over the nodes in order
    _host(tmp_path, nodes, {_pci(i): gpu_nodes[i] for i in range(n_gpus)})
    allowed = tuple(c for ns in nodes for c in ns)
    p = plan(list(range(n_gpus)), {i: _nvml_id(i) for i in range(n_gpus)}, tmp_path, allowed)

    assert p.nodes == n_nodes
    assert [g.node for g in p.gpus] == gpu_nodes
    for node in range(n_nodes):
        on = [g for g in p.gpus if g.node == node]
        if not on:
            continue
        shares = [set(g.cpus) for g in on]
        assert set().union(*shares) == set(nodes[node])  # the node's cores, all given out
        assert sum(len(s) for s in shares) == len(nodes[node])  # and none twice
        sizes = [len(s) for s in shares]
        assert max(sizes) - min(sizes) <= 1
    # a prover runs on its whole node; unbound (None) where that node is every allowed CPU
    for g in p.gpus:
        assert g.node_cpus == tuple(nodes[g.node])
        assert p.prover_cpus(g.device) == (None if n_nodes == 1 else tuple(nodes[g.node]))
    assert p.prover_cpus(99) is None
    # worker N of the pool runs on GPU N mod the number of GPUs
    for w in range(3 * n_gpus):
        assert p.worker_cpus(w) == p.gpus[w % n_gpus].cpus
    assert "NUMA node" in p.describe() and all(f"gpu{i}" in p.describe() for i in range(n_gpus))


def test_two_nodes_with_interleaved_cpu_numbers(tmp_path):
    # many two-socket hosts number CPUs alternately: node0 = evens, node1 = odds
    nodes = [list(range(0, 32, 2)), list(range(1, 32, 2))]
    _host(tmp_path, nodes, {_pci(0): 0, _pci(1): 1})
    p = plan([0, 1], {0: _nvml_id(0), 1: _nvml_id(1)}, tmp_path, tuple(range(32)))
    assert p.gpus[0].cpus == tuple(range(0, 32, 2))
    assert p.gpus[1].cpus == tuple(range(1, 32, 2))


def test_what_sysfs_does_not_say_gives_every_allowed_cpu(tmp_path):
    nodes = [list(range(8)), list(range(8, 16))]
    _host(tmp_path, nodes, {_pci(0): None, _pci(1): 1})
    allowed = tuple(range(16))
    p = plan([0, 1, 2], {0: _nvml_id(0), 1: _nvml_id(1), 2: None}, tmp_path, allowed)
    # gpu0: numa_node -1 but a local_cpulist (every CPU); gpu1 on node 1; gpu2: no PCI address
    assert p.gpus[0].node is None and p.gpus[0].cpus == allowed
    assert p.gpus[1].cpus == tuple(range(8, 16))
    assert p.gpus[2].node is None and p.gpus[2].cpus == allowed
    assert gpu_node(None, tmp_path) == (None, ())
    assert gpu_node("0000:ff:00.0", tmp_path) == (None, ())  # no such device


def test_no_sysfs_at_all_is_one_unknown_node(tmp_path):
    assert node_cpus(tmp_path) == {}
    p = plan([None], {}, tmp_path, (0, 1, 2))
    assert p.nodes == 0 and p.gpus[0].cpus == (0, 1, 2) and p.worker_cpus(5) == (0, 1, 2)
    assert "node N/A" in p.describe()


def test_a_cgroup_that_allows_fewer_cpus_bounds_the_share(tmp_path):
    nodes = [list(range(8)), list(range(8, 16))]
    _host(tmp_path, nodes, {_pci(0): 0, _pci(1): 1})
    allowed = (2, 3, 4, 5)  # none of node 1
    p = plan([0, 1], {0: _nvml_id(0), 1: _nvml_id(1)}, tmp_path, allowed)
    assert p.gpus[0].cpus == allowed
    assert p.gpus[1].cpus == allowed  # its node lies outside the set: the whole set, not nothing


def test_a_memory_only_node_and_a_garbled_list_are_skipped(tmp_path):
    _host(tmp_path, [list(range(4))], {})
    d = tmp_path / "sys/devices/system/node/node1"
    d.mkdir()
    (d / "cpulist").write_text("\n")
    d = tmp_path / "sys/devices/system/node/node2"
    d.mkdir()
    (d / "cpulist").write_text("zz\n")
    assert node_cpus(tmp_path) == {0: (0, 1, 2, 3)}


def test_pin_binds_this_process_within_its_affinity_and_refuses_nothing_silently():
    before = os.sched_getaffinity(0)
    try:
        one = min(before)
        assert pin([one]) == (one,)
        assert os.sched_getaffinity(0) == {one}
        assert pin([]) == (one,)  # nothing asked: unchanged
        assert pin([10_000]) == (one,)  # outside the current set: unchanged
    finally:
        os.sched_setaffinity(0, before)


# -- the engine on this machine (one node, no GPU): placement on, real workers, real proofs ---
# Every other engine test runs with the default numa_placement = "auto" too; an engine run here
# costs ~20-30 s on 2 cores, so these three (two GPUs: placement and keys; one node; off) run
# with SEALTOP_HEAVY=1 (CI's default run was over its ten minutes).

heavy = pytest.mark.skipif(not os.environ.get("SEALTOP_HEAVY"),
                           reason="set SEALTOP_HEAVY=1 (about 20 s each on 2 cores)")


@pytest.fixture(scope="module")
def params(tmp_path_factory):
    return str(tmp_path_factory.mktemp("params"))


def _prove_tiny(params: str, **cfg_kw):
    """Run one tiny job of two partitions on the cpu backend; (engine, events, progress lines,
    each synthesis worker's CPUs read from the live process)."""

    from engine.config import EngineConfig
    from engine.pipeline.engine import Engine, Job
    from engine.pipeline.shm import list_ours, prefix_for

    cfg = EngineConfig(backend="cpu", devices=[], partition_workers=2, gpu_channel_capacity=1,
                       param_cache=params, sample_interval_s=0.05, **cfg_kw)
    lines: list[str] = []
    eng = Engine(cfg, progress=lines.append)
    q = eng.subscribe()
    eng.start()
    try:
        pids = {n: p for n, p in eng.worker_pids().items() if n.startswith("synth-")}
        affinity = {n: tuple(sorted(os.sched_getaffinity(p))) for n, p in pids.items()}
        eng.submit(Job("tiny", 2, seed=random.randrange(1, 2**31)))
        assert eng.wait_idle(240), "the job did not finish"
    finally:
        eng.stop(drain=True)
    evs = drain(q)
    assert list_ours(prefix_for(os.getpid())) == []  # nothing left in /dev/shm
    return eng, evs, lines, affinity


def _verified(evs: list[dict]) -> list[bool]:
    return [e["verified"] for e in evs if e["kind"] == "proof_done"]


def test_this_hosts_plan_is_one_node_and_every_allowed_cpu():
    from engine.pipeline.placement import host_plan

    allowed = tuple(sorted(os.sched_getaffinity(0)))
    p = host_plan([None], "auto")  # the cpu backend's one prover; NVML finds no GPU here
    assert p is not None and p.nodes <= 1 and [g.cpus for g in p.gpus] == [allowed]
    assert host_plan([None], "off") is None


@heavy
def test_a_two_gpu_host_binds_workers_apart_and_makes_both_keys_at_once(tmp_path, monkeypatch):
    """Two GPUs on two NUMA nodes, as far as this 2-core machine can show it.

    The engine runs one prover per listed device only on a device backend (on the cpu backend
    ``devices`` collapses to the one ``cpu0``), and no machine here has two GPUs. So a
    cpu-backend Engine is given two device provers through its core's ``devices`` (``gpu0``,
    ``gpu1``: real processes whose cpu backend ignores the device number), the device key
    source that the cuda backend picks when the disk cannot hold the key (each prover generates
    its key itself, in its own process), and a fake two-node sysfs with one of this machine's
    CPUs per node.
    Then: synthesis worker 0 runs on the first CPU and worker 1 on the second, the engine says
    the placement, both keys are made concurrently with progress lines naming their prover, and
    the job's proof verifies."""

    from engine.config import EngineConfig
    from engine.groth16.setup import INSECURE_LABEL
    from engine.pipeline import proving
    from engine.pipeline.engine import Engine, Job
    from engine.pipeline.shm import list_ours, prefix_for

    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two CPUs to place two workers apart")
    a, b = allowed[0], allowed[1]
    sysfs = tmp_path / "host"
    _host(sysfs, [[a], [b]], {_pci(0): 0, _pci(1): 1})
    fake = plan([0, 1], {0: _nvml_id(0), 1: _nvml_id(1)}, sysfs, tuple(allowed))
    import engine.pipeline.engine as engine_mod

    seen: list[list] = []

    def host_plan(devices, mode):
        seen.append(list(devices))
        return fake

    def device_choice(circuit, cache_dir, backend_name="cpu", progress=None, damaged="refuse",
                      devices=None, slots=1, params="", gpu_calls="parallel"):
        return proving.device_source(circuit, str(proving.circuit_dir(cache_dir))), None

    monkeypatch.setattr(engine_mod, "host_plan", host_plan)
    monkeypatch.setattr(proving, "key_source", device_choice)
    preset = "chain-256"
    lines: list[tuple[float, str]] = []
    cfg = EngineConfig(backend="cpu", devices=[], partition_workers=2, gpu_channel_capacity=1,
                       param_cache=str(tmp_path / "params"), sample_interval_s=0.1)
    eng = Engine(cfg, progress=lambda line: lines.append((time.monotonic(), line)))
    eng._core.devices = [0, 1]  # the seam described above
    q = eng.subscribe()
    eng.start()
    try:
        pids = eng.worker_pids()
        assert {"gpu0", "gpu1"} <= set(pids)
        affinity = {n: tuple(sorted(os.sched_getaffinity(p))) for n, p in pids.items()
                    if n.startswith("synth-")}
        threads = {n: {tuple(sorted(os.sched_getaffinity(int(t))))
                       for t in os.listdir(f"/proc/{pids[n]}/task")} for n in ("gpu0", "gpu1")}
        eng.submit(Job(preset, 4, seed=random.randrange(1, 2**31)))
        assert eng.wait_idle(240), "the job did not finish"
    finally:
        eng.stop()
    evs = drain(q)
    assert list_ours(prefix_for(os.getpid())) == []  # nothing left in /dev/shm
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert len(done) == 1 and done[0]["verified"], done

    # placement: planned for both devices, worker N on GPU N's node, said once
    assert seen == [[0, 1]]
    assert affinity == {"synth-0": (a,), "synth-1": (b,)}
    assert threads == {"gpu0": {(a,)}, "gpu1": {(b,)}}  # every thread of each prover, on its node
    said = [ln for _, ln in lines if ln.startswith("placement over")]
    assert said == ["placement over 2 NUMA node(s): gpu0 node 0 1 CPUs, gpu1 node 1 1 CPUs"]

    # keys per device: one making each, named by its prover, overlapping in time
    spans = {}
    for prover in ("gpu0", "gpu1"):
        mine = [(t, ln) for t, ln in lines if ln.startswith(f"{prover}: ")]
        start = [t for t, ln in mine if INSECURE_LABEL in ln and "generating" in ln]
        made = [t for t, ln in mine if f"proving key for {preset} generated in memory" in ln]
        assert len(start) == 1 and len(made) == 1, lines
        spans[prover] = (start[0], made[0])
    (s0, e0), (s1, e1) = spans["gpu0"], spans["gpu1"]
    assert s0 < e1 and s1 < e0, spans  # each began before the other ended
    key_lines = [ln for _, ln in lines if "generat" in ln]
    assert key_lines and all(ln.split(":")[0] in ("gpu0", "gpu1") for ln in key_lines), key_lines
    provers = {e["worker"].split("/")[0] for e in evs if e["kind"] == "stage" and e["stage"] == "gpu"}
    assert provers and provers <= {"gpu0", "gpu1"}, provers
    assert not list(tmp_path.rglob("*.pk"))  # no key file: each prover made its own


@heavy
def test_the_engine_proves_tiny_with_placement_on_this_host(params):
    eng, evs, lines, affinity = _prove_tiny(params, numa_placement="auto")
    assert _verified(evs) == [True]
    allowed = tuple(sorted(os.sched_getaffinity(0)))
    assert eng.placement is not None and [g.cpus for g in eng.placement.gpus] == [allowed]
    assert affinity and all(cpus == allowed for cpus in affinity.values())
    assert not any(line.startswith("placement over") for line in lines)  # one node: quiet


@heavy
def test_placement_off_leaves_workers_unbound(params):
    eng, evs, lines, affinity = _prove_tiny(params, numa_placement="off")
    assert _verified(evs) == [True] and eng.placement is None
    assert all(cpus == tuple(sorted(os.sched_getaffinity(0))) for cpus in affinity.values())
