"""NUMA placement of each GPU's synthesis workers, on fake sysfs trees (tmp_path) of 1, 2 and 4
GPUs over 1 and 2 nodes, with what sysfs leaves out; and the worker's pin on this machine."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from engine.pipeline.placement import (
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
# Every other engine test runs with the default numa_placement = "auto" too; the engine runs here
# cost ~20 s each on 2 cores, so one is in CI and the other two behind SEALTOP_HEAVY=1.

heavy = pytest.mark.skipif(not os.environ.get("SEALTOP_HEAVY"),
                           reason="set SEALTOP_HEAVY=1 (about 20 s each on 2 cores)")


@pytest.fixture(scope="module")
def params(tmp_path_factory):
    return str(tmp_path_factory.mktemp("params"))


def _prove_tiny(params: str, **cfg_kw):
    """Run one tiny job of two partitions on the cpu backend; (engine, events, progress lines,
    each synthesis worker's CPUs read from the live process)."""
    import queue as _queue

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
    evs = []
    while True:
        try:
            evs.append(q.get_nowait())
        except _queue.Empty:
            break
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


def test_workers_are_bound_to_their_gpus_node(params, monkeypatch, tmp_path):
    """A two-node host with one CPU per node (of this machine's CPUs): worker 0 runs on the
    first, worker 1 on the second, the engine says so, and the job still verifies."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two CPUs to place two workers apart")
    a, b = allowed[0], allowed[1]
    _host(tmp_path, [[a], [b]], {_pci(0): 0, _pci(1): 1})
    fake = plan([0, 1], {0: _nvml_id(0), 1: _nvml_id(1)}, tmp_path, tuple(allowed))
    import engine.pipeline.engine as engine_mod

    monkeypatch.setattr(engine_mod, "host_plan", lambda devices, mode: fake)
    eng, evs, lines, affinity = _prove_tiny(params)
    assert _verified(evs) == [True]
    assert affinity == {"synth-0": (a,), "synth-1": (b,)}
    assert "placement over 2 NUMA node(s): gpu0 node 0 1 CPUs, gpu1 node 1 1 CPUs" in lines


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
