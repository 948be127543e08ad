"""The console's embedded engine is watched like a headless run: --metrics serves /metrics from
the same stream the dashboard folds, the engine offers its attach socket, and quitting closes
both."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("textual")
engine_mod = pytest.importorskip("engine.pipeline.engine")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from app.console import SealtopApp  # noqa: E402
from engine.address import Address  # noqa: E402
from engine.attach import RemoteEngine  # noqa: E402
from engine.config import EngineConfig  # noqa: E402
from engine.watchers import Watch  # noqa: E402


def _verified(url: str) -> float:
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "sealtop_proofs_total" and s.labels.get("outcome") == "verified":
                return s.value
    raise AssertionError("no sealtop_proofs_total in the scrape")


async def test_console_serves_metrics_and_its_socket_until_it_quits(tmp_path: Path,
                                                                     monkeypatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    cfg = EngineConfig(backend="cpu", partition_workers=1, gpu_channel_capacity=1,
                       preset="chain-256", partitions=1, param_cache=str(tmp_path / "params"),
                       sample_interval_s=0.2)
    app = SealtopApp("live", engine_factory=lambda: engine_mod.Engine(cfg), config=cfg,
                     autofeed=1, watch=Watch(metrics=Address("127.0.0.1", 0), attach=True))
    async with app.run_test(size=(160, 48)) as pilot:
        waited = 0.0
        while not any(j.outcome == "verified" for j in app.state.fold.jobs.values()):
            assert waited < 240, [e.text for e in list(app.state.log)[-8:]]
            await pilot.pause(0.2)
            waited += 0.2
        watchers = app._watchers
        assert watchers is not None and watchers.metrics is not None
        url, sock = watchers.metrics.url, watchers.attach.path
        assert _verified(url) >= 1
        remote = RemoteEngine(sock)
        first = remote.subscribe().get(timeout=30)
        assert first is not None and first["kind"] == "session_start"
        remote.stop()
        # The console says where it serves, in its own log (so a replay shows it too).
        assert any("metrics: http://127.0.0.1:" in e.text for e in app.state.log)
        await pilot.press("q")
    assert not Path(sock).exists(), "the attach socket outlived the console"
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(url, timeout=5)
