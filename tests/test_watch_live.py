"""The exporter and the attach socket on a real engine: /metrics scraped over HTTP while proofs
run parses and ends equal to the session's own counts; `sealtop run --metrics` serves it and
offers the socket a console attaches to."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")  # the device machine has none; every install does

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from engine.address import Address  # noqa: E402
from engine.config import EngineConfig  # noqa: E402
from engine.exporter import Exporter, MetricsServer  # noqa: E402
from engine.stream.fold import Fold  # noqa: E402
from engine.stream.tap import Tap  # noqa: E402


def _text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def _scrape(url: str) -> dict[str, dict[tuple, float]]:
    text = _text(url)
    out: dict[str, dict[tuple, float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def _config(params: Path) -> EngineConfig:
    cfg = EngineConfig()
    cfg.backend, cfg.preset, cfg.partitions = "cpu", "tiny", 2
    cfg.partition_workers, cfg.gpu_channel_capacity, cfg.sample_interval_s = 2, 1, 0.05
    cfg.param_cache = str(params)
    return cfg


@pytest.fixture(scope="module")
def params(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("params")


def test_scrapes_during_a_run_parse_and_end_equal_to_the_session(params: Path) -> None:
    from engine.pipeline.engine import Engine, Job

    eng = Engine(_config(params))
    events: list[dict] = []
    ex = Exporter()
    tap = Tap(eng.subscribe())
    tap.add("events", events.extend, essential=True)
    tap.add("metrics", lambda b: [ex.handle(e) for e in b], essential=True)
    server = MetricsServer(ex, Address("127.0.0.1", 0))
    scrapes: list[dict] = []
    stop = threading.Event()

    def scraper() -> None:
        while not stop.is_set():
            scrapes.append(_scrape(server.url))
            time.sleep(0.2)

    th = threading.Thread(target=scraper, daemon=True)
    jobs = 3
    try:
        tap.start()
        eng.start()
        th.start()
        for i in range(jobs):
            eng.submit(Job("tiny", 2, 100 + i))
        assert eng.wait_idle(240)
        eng.stop(drain=True)
        tap.close()
        stop.set()
        th.join(timeout=10)
        final = _scrape(server.url)
        final_text = _text(server.url)
    finally:
        stop.set()
        server.close()
    assert len(scrapes) >= 2, "no scrape happened while proofs ran"
    verified = [m.get("sealtop_proofs_total", {}).get((("outcome", "verified"),), 0)
                for m in scrapes]
    assert verified == sorted(verified), "a counter went backwards between scrapes"
    fold = Fold()
    for e in events:
        fold.apply(e)
    outcomes = [j.outcome for j in fold.jobs.values()]
    assert outcomes.count("verified") == jobs
    proofs = final["sealtop_proofs_total"]
    for outcome in ("verified", "failed", "cancelled"):
        assert proofs[(("outcome", outcome),)] == outcomes.count(outcome)
    assert final["sealtop_jobs_submitted_total"][()] == jobs
    done = sum(1 for e in events if e["kind"] == "stage" and e["stage"] == "done")
    assert final["sealtop_partitions_done_total"][()] == done == jobs * 2
    timed = sum(1 for e in events if e["kind"] == "partition_timings")
    assert final["sealtop_phase_duration_seconds_count"][(("phase", "gpu_wrapper"),)] == timed
    assert all(v == 0 for v in final["sealtop_partitions"].values())
    # No NVML on the CPU backend: GPU gauges are absent, not zero.
    assert not any(k.startswith("sealtop_gpu_") for k in final)
    if shutil.which("promtool"):  # Prometheus's own linter, on the live scrape too
        res = subprocess.run(["promtool", "check", "metrics"], input=final_text, text=True,
                             capture_output=True, timeout=60)
        assert res.returncode == 0, res.stdout + res.stderr


def test_run_with_metrics_serves_them_and_offers_its_socket(params: Path, tmp_path: Path) -> None:
    from engine.attach import RemoteEngine

    cfg = tmp_path / "c.toml"
    cfg.write_text("\n".join([
        "[engine]", 'backend = "cpu"', "partition_workers = 1", "[paths]",
        f'param_cache = "{params}"', "[telemetry]", "sample_interval_s = 0.05", "[jobs]",
        'preset = "tiny"', "partitions = 1"]) + "\n")
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "--config", str(cfg), "--jobs", "3",
         "--metrics", "127.0.0.1:0", "--metrics-linger", "0"],  # nothing scrapes it after the end
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    url = sock = None
    assert proc.stderr is not None
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line)
            if m := re.search(r"metrics: (http://\S+/metrics)", line):
                url = m.group(1)
            if m := re.search(r"attach --engine (\S+)", line):
                sock = m.group(1)
            if url and sock:
                break
        assert url and sock, "".join(lines)
        m = _scrape(url)
        assert "sealtop_jobs_submitted_total" in m and "sealtop_partitions" in m
        remote = RemoteEngine(sock)
        first = remote.subscribe().get(timeout=30)
        assert first is not None and first["kind"] == "session_start"
        remote.stop()
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "final counters:" in out
    assert not Path(sock).exists(), "the socket outlived the run"


def test_bad_metrics_address_is_one_line_before_any_work(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "engine", "run", "--config", "nothing.toml",
                          "--metrics", "localhost:notaport"], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "--metrics" in res.stderr
