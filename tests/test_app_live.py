"""Pilot tests of the console on the real embedded engine (CPU backend, the smallest preset).

They need engine.pipeline.engine; where it is absent they skip. Key generation happens once per
test session in a shared parameter cache.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

pytest.importorskip("textual")  # the device machine has no Textual
engine_mod = pytest.importorskip("engine.pipeline.engine")

from engine_faults import Faults, engine  # noqa: E402

from app.console import SealtopApp  # noqa: E402
from app.replay import ReplayController  # noqa: E402
from app.session_io import load_session  # noqa: E402
from app.widgets.proofs import ProofsTable  # noqa: E402
from engine.config import EngineConfig  # noqa: E402

SIZE = (160, 48)
TIMEOUT = 240.0  # first run: JIT compilation and key generation on a 2-core machine


def _preset() -> str:
    """`tiny` (the console's default without --config), where the porep presets exist; else the
    smallest example."""
    from engine.pipeline.circuits import resolve

    try:
        resolve("tiny")
        return "tiny"
    except Exception:  # noqa: BLE001
        return "chain-64"


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory) -> Path:
    """One parameter cache for the module: keys are made once."""
    return tmp_path_factory.mktemp("sealtop")


@pytest.fixture
def config(base_dir) -> EngineConfig:
    # A fresh config per test (tests below change fields of it before building the engine).
    base = base_dir
    return EngineConfig(
        backend="cpu", partition_workers=1, gpu_channel_capacity=1, preset=_preset(),
        partitions=2, param_cache=str(base / "params"),
        sample_interval_s=0.2,
    )


def live(config: EngineConfig, faults=None, **kw) -> SealtopApp:
    def factory():
        return engine(config, faults)

    kw.setdefault("autofeed", 0)
    return SealtopApp("live", engine_factory=factory, config=config, **kw)


async def wait_for(pilot, cond, timeout: float = TIMEOUT) -> None:
    waited = 0.0
    while not cond():
        if waited > timeout:
            app = pilot.app
            log = [e.text for e in list(app.state.log)[-8:]]
            raise AssertionError(f"condition not reached in time; knobs {app.state.knobs}; log {log}")
        await pilot.pause(0.1)
        waited += 0.1


def row_marks(app: SealtopApp) -> dict[int, str]:
    t = app.screen.query_one(ProofsTable)
    return {int(t.get_row_at(i)[0].plain): t.get_row_at(i)[1].plain for i in range(t.row_count)}


@pytest.mark.slow
async def test_dashboard_on_the_embedded_engine_shows_a_verified_proof(config):
    app = live(config)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        await pilot.press("n")
        await wait_for(pilot, lambda: app.state.proofs_done >= 1)
        app.request_render()
        await wait_for(pilot, lambda: row_marks(app).get(1) == "✓", 30)  # the next redraw
        assert app.state.jobs[1].verified is True
        assert row_marks(app)[1] == "✓"


@pytest.mark.slow
async def test_corrupted_proof_shows_a_cross(config):
    faults = Faults(corrupt_proof={(1, 0)})
    app = live(config, faults=faults)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        await pilot.press("n")
        await wait_for(pilot, lambda: app.state.proofs_done >= 1)
        app.request_render()
        await wait_for(pilot, lambda: row_marks(app).get(1) == "✗", 30)  # the next redraw
        assert app.state.jobs[1].verified is False
        assert row_marks(app)[1] == "✗"


@pytest.mark.slow
async def test_partition_workers_key_changes_the_engine(config):
    app = live(config)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        eng = app.engine
        before = eng.admission.limit
        await pilot.press("W")
        await wait_for(pilot, lambda: app.state.knobs.get("partition_workers") == before + 1, 20)
        assert eng.admission.limit == before + 1
        assert any("partition_workers" in e.text and "→" in e.text for e in app.state.log)


@pytest.mark.slow
async def test_save_config_keeps_comments(config, tmp_path):
    cfg = tmp_path / "sealtop.toml"
    cfg.write_text(
        "# operator's prover\n[engine]\nbackend = \"cpu\"\n"
        "partition_workers = 1  # one synthesis at a time\n\n"
        f"[paths]\nparam_cache = \"{config.param_cache}\"  # shared key cache\n"
    )
    app = live(config, config_path=str(cfg))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        await pilot.press("W")
        await wait_for(pilot, lambda: app.state.knobs.get("partition_workers") == 2, 20)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("saved knobs to" in e.text for e in app.state.log), 30)
    text = cfg.read_text()
    assert "partition_workers = 2  # one synthesis at a time" in text
    assert "# operator's prover" in text and "# shared key cache" in text
    assert tomllib.loads(text)["engine"]["partition_workers"] == 2


@pytest.mark.slow
async def test_replay_of_a_recorded_live_run_ends_in_the_same_state(config, tmp_path):
    rec = tmp_path / "run.jsonl"
    app = live(config, record=str(rec))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        await pilot.press("n", "n")
        await wait_for(pilot, lambda: app.state.proofs_done >= 2)
        app.live.stop_engine(True)
        await wait_for(pilot, lambda: app.state.stopped, 60)
        live_counters = app.state.final_counters()
    session = load_session(rec)
    rc = ReplayController(session.events)
    rc.to_end()
    assert rc.state.final_counters() == live_counters
    assert live_counters["proofs_done"] == 2


@pytest.mark.slow
async def test_first_run_preparation_shows_progress(config, tmp_path, monkeypatch):
    """A fresh install's first start (compile stamp absent) and a missing key report progress
    in the console's log and notice, not in silence."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    config.param_cache = str(tmp_path / "fresh-params")  # no key yet: setup runs
    app = live(config)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine is not None and app.state.started)
        assert any("first run: compiled in" in e.text for e in app.state.log)
        await pilot.press("n")
        await wait_for(pilot, lambda: any("QAP at tau" in e.text for e in app.state.log))
        await wait_for(pilot, lambda: "✓" in row_marks(app).values())


async def test_quitting_while_the_engine_starts_stops_it(config, tmp_path):
    """q before the engine has started (the console quit found no engine to stop): the starting
    thread stops it once start() returns, so no worker outlives the console and the recording
    ends with the console's line."""
    import threading
    import time

    from processes import alive

    gate, built, pids = threading.Event(), [], []

    def factory():
        eng = engine(config)
        real_start = eng.start

        def start() -> None:  # held until the console has quit
            assert gate.wait(60)
            real_start()
            pids.extend(w.process.pid for w in eng._workers.workers())

        eng.start = start
        built.append(eng)
        return eng

    rec = tmp_path / "quit.jsonl"
    app = SealtopApp("live", engine_factory=factory, config=config, autofeed=0, record=str(rec))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: bool(built), 60)
        assert app.engine is None  # still starting
        await pilot.press("q")
        gate.set()
    deadline = time.monotonic() + 60
    while not (pids and built[0]._core.closed) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids and built[0]._core.closed
    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in pids)

    def ended() -> bool:
        """The console's line is in the recording: the starting thread writes it once stop()
        has returned, a while after the engine marks itself closed (its workers, sampler and
        threads are stopped in between), so a read right after _closed can find it missing."""
        try:
            events = load_session(rec).events
        except Exception:  # noqa: BLE001 - the recording still being written
            return False
        return any(e["kind"] == "console" and "console closed while" in e.get("text", "")
                   for e in events)

    deadline = time.monotonic() + 30
    while not ended() and time.monotonic() < deadline:
        time.sleep(0.1)
    last = load_session(rec).events[-1]
    assert last["kind"] == "console" and "console closed while the engine started" in last["text"]
