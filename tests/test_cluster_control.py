"""The operator's controls on a farm host, without a farm: hostengine.host_control (what Dask's
Client.run calls on a worker) on a host plugin whose engine records what it is asked (checking
values with the engine's own check_knob), and the slot resizing that keeps Dask's placement in
step with a knob. A real Engine reached through a real scheduler and workers, confirming with
its own knob events, is tests/test_cluster.py's test_the_console_on_the_farm."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

pytest.importorskip("distributed")

from engine.cluster.hostengine import PLUGIN, HostEngine, host_control  # noqa: E402
from engine.config import EngineConfig, check_knob  # noqa: E402


@dataclass
class _State:
    nthreads: int
    total_resources: dict = field(default_factory=dict)


class _Worker:
    """What host_control reads of a Dask worker: its plugins, name, state, set_resources."""

    def __init__(self, plugin, nthreads: int, resources: dict) -> None:
        self.plugins = {PLUGIN: plugin} if plugin is not None else {}
        self.name = "w1"
        self.state = _State(nthreads, dict(resources))
        self.resized: list[dict] = []

    async def set_resources(self, **res: float) -> None:
        self.resized.append(res)
        self.state.total_resources.update(res)


class _Engine:
    """The Engine calls host_control makes, recorded; values checked as the Engine checks."""

    def __init__(self, cfg: EngineConfig) -> None:
        self.config = cfg
        self.calls: list[tuple] = []

    def set_knob(self, name: str, value: object) -> None:
        value = check_knob(name, value)
        setattr(self.config, name, value)
        self.calls.append(("set_knob", name, value))

    def pause(self) -> None:
        self.calls.append(("pause",))

    def resume(self) -> None:
        self.calls.append(("resume",))


@pytest.fixture
def host() -> HostEngine:
    cfg = EngineConfig(backend="cpu", devices=[], partition_workers=1, gpu_channel_capacity=1)
    plugin = HostEngine(cfg, "hX")
    plugin.engine = _Engine(cfg)
    return plugin


def _run(action: str, w: _Worker, name: str = "", value: object = None) -> dict:
    return asyncio.run(host_control(action, name, value, dask_worker=w))


def test_a_knob_reaches_the_engine_and_resizes_the_slots(host):
    w = _Worker(host, nthreads=4, resources={"slots": 2.0, "cpu_slots": 2.0})
    assert _run("set_knob", w, "partition_workers", 3) == {"host": "hX", "error": ""}
    assert host.engine.calls == [("set_knob", "partition_workers", 3)]
    # 3 workers + 1 channel = 4 jobs at once, within the worker's 4 threads
    assert w.resized == [{"slots": 4.0, "cpu_slots": 4.0}]
    # capped at the Dask threads: 3 + 5 would be 8, so nothing to change
    _run("set_knob", w, "gpu_channel_capacity", 5)
    assert len(w.resized) == 1
    _run("set_knob", w, "partition_workers", 1)
    _run("set_knob", w, "gpu_channel_capacity", 1)
    assert w.resized[-1] == {"slots": 2.0, "cpu_slots": 2.0}
    # a memory budget leaves the slots alone; host_slots set in the config: never resized
    _run("set_knob", w, "memory_budget", 2**30)
    host.config.host_slots = 2
    _run("set_knob", w, "partition_workers", 3)
    assert len(w.resized) == 2 and host.engine.config.partition_workers == 3


def test_pause_resume_and_refusals(host):
    w = _Worker(host, nthreads=2, resources={"slots": 2.0})
    assert _run("pause", w)["error"] == "" and _run("resume", w)["error"] == ""
    assert host.engine.calls == [("pause",), ("resume",)]
    bad = _run("set_knob", w, "partition_workers", 0)
    assert bad["host"] == "hX" and "partition_workers" in bad["error"]
    assert "\n" not in bad["error"]
    assert host.engine.config.partition_workers == 1  # unchanged
    assert "unknown knob 'turbo'" in _run("set_knob", w, "turbo", 1)["error"]
    assert _run("reboot", w)["error"] == "unknown control 'reboot'"
    assert host.engine.calls == [("pause",), ("resume",)]  # a refusal changes nothing
    assert w.resized == []
    assert _run("pause", _Worker(None, 2, {})) == {"host": "w1",
                                                   "error": "no sealtop engine runs on this worker"}
