"""The farm console (`sealtop --cluster ADDR`) where it needs no farm hosts: the scheduler
going away (a real one, SIGTERMed) is one line, not a hang; a host's dashboard at 80x24 over a
replayed farm session (a snapshot); no dask is one line. The console on a real farm with two
hosts is tests/test_cluster.py's test_the_console_on_the_farm (its farm, its keys made).
"""

from __future__ import annotations

import signal
import threading
import time

import pytest

pytest.importorskip("textual")
pytest.importorskip("distributed")

from app_pilot import redrawn, wait_for  # noqa: E402
from processes import threads_left  # noqa: E402
from test_cluster import Proc, _free_port, _until  # noqa: E402
from test_cluster_hosts_view import _text, farm_replay, open_hosts, snapshot  # noqa: E402, F401

from app.main import build_app  # noqa: E402
from app.screens.hosts import HostDashboardScreen  # noqa: E402
from app.widgets.proofs import ProofsTable  # noqa: E402


async def test_the_scheduler_going_away_is_one_line_in_the_console(tmp_path, monkeypatch):
    """A real scheduler (no workers needed: the console's jobs wait for one), then SIGTERM:
    the console says so in one error line and its notice, stops feeding jobs, and q exits at
    once, leaving no thread of the farm client behind."""
    import engine.cluster.farm as farm_mod

    monkeypatch.setattr(farm_mod, "GONE_AFTER_S", 1.0)
    port = _free_port()
    sched = Proc(["cluster", "scheduler", "--host", "127.0.0.1", "--port", str(port)],
                 tmp_path / "scheduler.log")
    try:
        sched.wait_for("scheduler at", 30)
        app = build_app(["--cluster", f"tcp://127.0.0.1:{port}", "--no-attach"])
        before = {t.ident for t in threading.enumerate()}
        async with app.run_test(size=(100, 30)) as pilot:
            home = app.screen
            await _until(pilot, lambda: app.engine is not None and not app.engine.farm.idle(),
                         30, "the console connected, a job submitted (waiting for a host)")
            assert "no farm hosts yet" in _text(home.query_one("#hosts-table"))
            n = len(app.state.log)
            sched.p.send_signal(signal.SIGTERM)
            await _until(pilot, lambda: any("went away" in e.text for e in app.state.log), 30,
                         "the scheduler's going away in the log")
            await pilot.pause(1.0)  # what else it would say (failed submits...) would be here
            errors = [e.text for e in list(app.state.log)[n:] if e.level == "error"]
            assert len(errors) == 1 and "went away" in errors[0], errors
            await _until(pilot, lambda: "went away" in _text(home.query_one("#hosts-title")), 30,
                         "the notice in the hosts view's title (its next redraw)")
            assert "went away" in _text(home.query_one("#hosts-title"))  # the notice too
            assert app.autofeed == 0
            t0 = time.monotonic()
            await pilot.press("q")
        assert time.monotonic() - t0 < 15
        assert threads_left(before) == []
    finally:
        assert sched.end() is not None


def test_host_drill_down_snapshot(snap_compare, tmp_path):
    """hB's dashboard over a replayed farm session, at 80x24."""
    app = farm_replay(tmp_path)

    async def run_before(pilot) -> None:
        await open_hosts(pilot, app, 0.2)
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, HostDashboardScreen)
                       and app.screen.is_mounted
                       and app.screen.query_one(ProofsTable).row_count == 2)  # hB's jobs 2, 3
        await redrawn(pilot, app)
        # the one-line log at its newest line, as it follows once laid out (on a loaded machine
        # the shot could catch it before its last relayout)
        from app.widgets.eventlog import EventLog

        log = app.screen.query_one(EventLog)
        log.action_log_edge(1)
        await wait_for(pilot, lambda: log.scroll_y == log.max_scroll_y)
        await pilot.pause(0.2)  # the layout pass before the shot
        assert isinstance(app.screen, HostDashboardScreen) and app.screen.host == "hB"

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_no_dask_is_one_line(monkeypatch, capsys):
    import engine.cluster as cluster

    def missing() -> None:
        raise cluster.ClusterError("the farm needs dask and distributed: pip install "
                                   "'sealtop[cluster]'")

    monkeypatch.setattr(cluster, "require", missing)
    from app.main import main

    assert main(["--cluster", "tcp://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["sealtop: console: the farm needs dask and distributed: pip install 'sealtop[cluster]'"]


async def test_drill_down_keys_over_a_replay(tmp_path):
    """enter opens the marked host's dashboard (its jobs alone), h that host's history, Esc
    back to it, Esc back to the hosts; a maximized panel is restored by Esc first."""
    from app.screens.history import HistoryScreen

    app = farm_replay(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_hosts(pilot, app, 0.2)
        hosts = app.screen
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, HostDashboardScreen))
        d = app.screen
        assert isinstance(d, HostDashboardScreen) and d.host == "hB"
        # hB proved job 2 and job 3 (run again after hA left); hA's job 1 is not here
        assert sorted(d.host_state.jobs) == [2, 3]
        assert sorted(hosts.fold.state_of("hA").jobs) == [1, 3]
        assert [g.name for g in d.host_state.gpus.values()] == ["NVIDIA H200"]
        before = dict(d.host_state.knobs)
        await pilot.press("W", "p")  # no tuning in a replay: nothing asked, nothing changes
        await pilot.pause(0.1)  # time for a change that must not come (the keys are handled)
        assert d.host_state.knobs == before and not d.host_state.paused
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen))
        assert isinstance(app.screen, HistoryScreen) and app.screen.host == "hB"
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is d)
        assert app.screen is d
        await pilot.press("4")  # the proofs panel maximized: Esc restores it, then goes back
        await wait_for(pilot, lambda: d.maximized is not None)
        assert d.maximized is not None
        await pilot.press("escape")
        await wait_for(pilot, lambda: d.maximized is None)
        assert app.screen is d and d.maximized is None
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is hosts)
        assert app.screen is hosts


async def test_no_scheduler_is_a_notice_not_a_hang(monkeypatch):
    import engine.cluster.farm as farm_mod

    monkeypatch.setattr(farm_mod, "CONNECT_TIMEOUT_S", 1.0)
    app = build_app(["--cluster", f"tcp://127.0.0.1:{_free_port()}", "--no-attach"])
    async with app.run_test(size=(100, 30)) as pilot:
        title = app.screen.query_one("#hosts-title")
        await _until(pilot, lambda: "no scheduler at tcp://127.0.0.1:" in " ".join(
            _text(title).split()), 20, "the notice on the hosts view")
        assert [e.text for e in app.state.log if e.level == "error"] == []  # a notice, once
        assert app.engine is None
        await pilot.press("W")  # nothing to tune: says so, changes nothing
        t0 = time.monotonic()
        await pilot.press("q")
    assert time.monotonic() - t0 < 5
