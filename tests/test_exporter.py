"""The Prometheus exporter: its scrape parses, its counters equal the session's, the names follow
Prometheus's rules, and a value NVML could not read is absent rather than zero."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")  # the device machine has none; every install does

from prometheus_client import generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from engine.address import AddressError, parse_address  # noqa: E402
from engine.exporter import Exporter  # noqa: E402

DATA = Path(__file__).parent / "data"
GRAFANA = Path(__file__).parent.parent / "docs" / "grafana" / "sealtop.json"


def _events(name: str) -> list[dict]:
    lines = (DATA / name).read_text().splitlines()[1:]  # the first line is the file header
    return [json.loads(x) for x in lines if x.strip()]


def _scrape(x: Exporter) -> dict[str, dict[tuple, float]]:
    """name of each sample -> {sorted label items: value}, parsed by prometheus-client."""
    out: dict[str, dict[tuple, float]] = {}
    for fam in text_string_to_metric_families(generate_latest(x.registry).decode()):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


@pytest.mark.parametrize("fixture", ["session_fixture.jsonl", "session_fixture_b.jsonl"])
def test_counters_equal_the_session(fixture: str) -> None:
    evs = _events(fixture)
    x = Exporter()
    for e in evs:
        x.handle(e)
    m = _scrape(x)
    done = [e for e in evs if e["kind"] == "proof_done"]
    assert m["sealtop_proofs_total"][(("outcome", "verified"),)] == sum(e["verified"] for e in done)
    assert m["sealtop_proofs_total"][(("outcome", "failed"),)] == sum(not e["verified"] for e in done)
    assert m["sealtop_jobs_submitted_total"][()] == sum(e["kind"] == "job_submitted" for e in evs)
    stages = [e["stage"] for e in evs if e["kind"] == "stage"]
    assert m["sealtop_partitions_done_total"][()] == stages.count("done")
    assert m["sealtop_partition_failures_total"][()] == stages.count("failed")
    timings = [e for e in evs if e["kind"] == "partition_timings"]
    assert m["sealtop_phase_duration_seconds_count"][(("phase", "gpu_wrapper"),)] == sum(
        "gpu_wrapper" in e["ms"] for e in timings)
    want_sum = sum(e["ms"]["gpu_wrapper"] for e in timings if "gpu_wrapper" in e["ms"]) / 1000
    assert m["sealtop_phase_duration_seconds_sum"][(("phase", "gpu_wrapper"),)] == pytest.approx(
        want_sum)
    # Every partition reached a terminal stage, so none is counted in a live stage at the end.
    assert all(v == 0 for v in m["sealtop_partitions"].values())
    last = [e for e in evs if e["kind"] == "sample"][-1]
    assert m["sealtop_shared_memory_bytes"][()] == last["shm_bytes"]
    assert m["sealtop_memory_bytes"][()] == last["shm_bytes"] + sum(
        p["rss_anon"] for p in last["processes"])
    for e in evs:
        if e["kind"] == "error":
            assert m["sealtop_errors_total"][(("where", e["where"]),)] >= 1


@pytest.mark.parametrize("fixture", ["session_fixture.jsonl", "session_fixture_b.jsonl"])
def test_stage_gauge_follows_partitions_at_every_point_of_a_run(fixture: str) -> None:
    """After every event, the gauge holds each live partition's stage as the events say it."""
    x = Exporter()
    last: dict[tuple, str] = {}
    for e in _events(fixture):
        x.handle(e)
        if e["kind"] == "job_submitted":  # a submitted partition is queued before its event
            for p in range(e["partitions"]):
                last[(e["job"], p)] = "queued"
        if e["kind"] == "stage":
            last[(e["job"], e["partition"])] = e["stage"]
        if e["kind"] not in ("stage", "job_submitted"):
            continue
        m = _scrape(x)
        for stage in ("queued", "synthesizing", "synthesized", "waiting_gpu", "gpu", "deallocating",
                      "finalizing"):
            assert m["sealtop_partitions"][(("stage", stage),)] == list(last.values()).count(
                stage), (e, stage)


def test_gpu_metrics_absent_without_nvml_and_budget_absent_when_unlimited() -> None:
    x = Exporter()
    x.handle({"t": 0.0, "kind": "session_start", "schema": 1, "config": {"memory_budget": 0},
              "host": {}, "gpus": [], "wall_start": "2026-12-01T00:00:00Z"})
    gpu = {"index": 0, "util": None, "mem_used": None, "mem_total": None, "power_w": None,
           "temp_c": None, "sm_clock_mhz": None}
    x.handle({"t": 0.1, "kind": "sample", "processes": [], "shm_bytes": 0, "counters": {},
              "gpus": [gpu]})
    m = _scrape(x)
    assert not any(name.startswith("sealtop_gpu_") for name in m)
    assert "sealtop_memory_budget_bytes" not in m
    # A reading that arrives is shown in base units; one that goes away again disappears.
    x.handle({"t": 0.2, "kind": "sample", "processes": [], "shm_bytes": 0, "counters": {},
              "gpus": [{**gpu, "util": 87.0, "sm_clock_mhz": 1980}]})
    x.handle({"t": 0.3, "kind": "knob", "name": "memory_budget", "old": 0, "new": 1 << 30,
              "source": "operator"})
    m = _scrape(x)
    assert m["sealtop_gpu_utilization_ratio"][(("gpu", "0"),)] == pytest.approx(0.87)
    assert m["sealtop_gpu_sm_clock_hertz"][(("gpu", "0"),)] == 1.98e9
    assert m["sealtop_memory_budget_bytes"][()] == 1 << 30
    x.handle({"t": 0.4, "kind": "sample", "processes": [], "shm_bytes": 0, "counters": {},
              "gpus": [gpu]})
    x.handle({"t": 0.5, "kind": "knob", "name": "memory_budget", "old": 1 << 30, "new": 0,
              "source": "operator"})
    m = _scrape(x)
    assert "sealtop_gpu_utilization_ratio" not in m
    assert "sealtop_memory_budget_bytes" not in m


def test_cancelled_jobs_count_apart_from_failed_and_once() -> None:
    x = Exporter()
    x.handle({"t": 0.5, "kind": "job_submitted", "job": 7, "preset": "tiny", "partitions": 3,
              "constraints": 100})
    for p in range(3):
        m = _scrape(x)
        # The job ends (and is counted) only when its last partition is cancelled.
        assert m["sealtop_proofs_total"][(("outcome", "cancelled"),)] == 0
        x.handle({"t": 1.0, "kind": "stage", "job": 7, "partition": p, "stage": "cancelled",
                  "worker": "scheduler"})
    m = _scrape(x)
    assert m["sealtop_proofs_total"][(("outcome", "cancelled"),)] == 1
    assert m["sealtop_proofs_total"][(("outcome", "failed"),)] == 0
    assert m["sealtop_partitions"][(("stage", "queued"),)] == 0


def test_no_unbounded_labels_and_names_follow_the_rules() -> None:
    x = Exporter()
    for e in _events("session_fixture.jsonl"):
        x.handle(e)
    text = generate_latest(x.registry).decode()
    for fam in text_string_to_metric_families(text):
        assert fam.name.startswith("sealtop_")
        for s in fam.samples:
            assert not {"job", "partition", "pid"} & set(s.labels), s
        if fam.type == "counter":
            assert all(s.name.endswith("_total") for s in fam.samples)


def test_promtool_finds_the_scrape_clean() -> None:
    """Prometheus's own linter (Debian's prometheus package, which .ci/run installs)."""
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    x = Exporter()
    for e in _events("session_fixture.jsonl") + _events("session_fixture_b.jsonl"):
        x.handle(e)
    text = generate_latest(x.registry).decode()
    res = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                         capture_output=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    # The linter itself must be able to fail: a counter without _total is a finding.
    bad = "# HELP x_bytes x\n# TYPE x_bytes counter\nx_bytes 1\n"
    res = subprocess.run(["promtool", "check", "metrics"], input=bad, text=True,
                         capture_output=True, timeout=60)
    assert res.returncode != 0


def test_every_metric_in_the_grafana_dashboard_is_exported() -> None:
    import re

    x = Exporter()
    for e in _events("session_fixture.jsonl"):
        x.handle(e)
    names = set(_scrape(x))
    dash = json.loads(GRAFANA.read_text())
    used = {n for p in dash["panels"] for t in p["targets"]
            for n in re.findall(r"\bsealtop_[a-z_]+", t["expr"])}
    assert used, "the dashboard queries no sealtop metric"
    assert used <= names, f"dashboard names metrics no scrape has: {sorted(used - names)}"


@pytest.mark.parametrize(
    "text,host,port",
    [("9100", "127.0.0.1", 9100), (":9100", "127.0.0.1", 9100), ("0.0.0.0:80", "0.0.0.0", 80),
     ("localhost:0", "localhost", 0), ("[::1]:9100", "::1", 9100)],
)
def test_parse_address(text: str, host: str, port: int) -> None:
    a = parse_address(text)
    assert (a.host, a.port) == (host, port)


@pytest.mark.parametrize("text", ["", "host:", "a:b", "1:2:3", "99999", "-1", "x y:1"])
def test_parse_address_refuses_in_one_line(text: str) -> None:
    with pytest.raises(AddressError) as exc:
        parse_address(text)
    assert "\n" not in str(exc.value) and "--metrics" in str(exc.value)


def test_the_turn_wait_is_a_phase_of_its_own() -> None:
    """The recorded five-job porep-32g session with two slots taking turns: gpu_wait and
    gpu_host are observed once a partition with the sums the timers give, so a dashboard can take
    the wait out of the wrapper's host overhead; a session without them observes neither."""
    from engine.stream.reader import read_recording

    evs = read_recording(Path(__file__).parent.parent / "docs" / "sessions" / "porep-32g-h200-5jobs.jsonl.gz").events
    x = Exporter()
    for e in evs:
        x.handle(e)
    m = _scrape(x)
    timings = [e["ms"] for e in evs if e["kind"] == "partition_timings"]
    for phase in ("gpu_wait", "gpu_host"):
        assert m["sealtop_phase_duration_seconds_count"][(("phase", phase),)] == len(timings) == 50
        assert m["sealtop_phase_duration_seconds_sum"][(("phase", phase),)] == pytest.approx(
            sum(ms[phase] for ms in timings) / 1000)
    old = Exporter()
    for e in _events("session_fixture.jsonl"):
        old.handle(e)
    assert (("phase", "gpu_wait"),) not in _scrape(old).get("sealtop_phase_duration_seconds_count", {})
