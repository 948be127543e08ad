"""/metrics as an operator's Prometheus sees it at the edges of a run: sealtop_knob_value
{knob="paused"} reads 0 from the session's start (not only after the first pause), and once
the run has ended the server stays up until one more scrape has read the final counters."""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from engine.address import Address  # noqa: E402
from engine.exporter import Exporter, MetricsServer  # noqa: E402
from engine.stream import schema as E  # noqa: E402
from engine.watchers import Watch, Watchers  # noqa: E402

FIXTURE = Path(__file__).parent / "data" / "session_fixture.jsonl"


def _events() -> list[dict]:
    return [json.loads(x) for x in FIXTURE.read_text().splitlines()[1:] if x.strip()]


def _get(url: str) -> dict[str, dict[tuple, float]]:
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    out: dict[str, dict[tuple, float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def _served(x: Exporter) -> MetricsServer:
    return MetricsServer(x, Address("127.0.0.1", 0))


def test_paused_reads_0_from_the_start_and_follows_the_knob():
    x = Exporter()
    server = _served(x)
    try:
        x.handle(_events()[0])  # session_start only: no pause yet
        assert _get(server.url)["sealtop_knob_value"][(("knob", "paused"),)] == 0
        x.handle(E.knob(1.0, "paused", False, True, "operator"))
        assert _get(server.url)["sealtop_knob_value"][(("knob", "paused"),)] == 1
        x.handle(E.knob(2.0, "paused", True, False, "operator"))
        assert _get(server.url)["sealtop_knob_value"][(("knob", "paused"),)] == 0
    finally:
        server.close()


def test_after_the_run_the_next_scrape_reads_the_final_counters():
    evs = _events()
    x = Exporter()
    server = _served(x)
    cut = random.randint(len(evs) // 3, len(evs) // 2)
    for e in evs[:cut]:
        x.handle(e)
    before = _get(server.url)  # a scrape during the run
    for e in evs[cut:]:
        x.handle(e)  # the run's last events, after that scrape
    lines: list[str] = []
    out: list[bool] = []
    cap = random.uniform(20, 30)
    t0 = time.monotonic()
    w = threading.Thread(target=lambda: out.append(server.linger(cap, tell=lines.append)))
    w.start()
    try:
        time.sleep(random.uniform(0.2, 0.6))  # the scraper's next turn comes after the end
        after = _get(server.url)
    finally:
        w.join(cap + 5)
        server.close()
    done = sum(e["kind"] == "proof_done" and e["verified"] for e in evs)
    assert after["sealtop_proofs_total"][(("outcome", "verified"),)] == done
    assert before["sealtop_proofs_total"][(("outcome", "verified"),)] < done
    assert out == [True] and time.monotonic() - t0 < cap  # it ended at the scrape
    assert len(lines) == 1 and server.url in lines[0] and "--metrics-linger 0" in lines[0]


def test_with_no_scrape_it_waits_its_cap_then_stops():
    server = _served(Exporter())
    cap = random.uniform(0.3, 0.8)
    t0 = time.monotonic()
    try:
        assert server.linger(cap, tell=lambda _: None) is False
        assert cap <= time.monotonic() - t0 < cap + 2
        assert server.linger(0, tell=lambda _: pytest.fail("no linger asked")) is False
    finally:
        server.close()


def test_run_lingers_by_default_and_the_console_does_not():
    from engine.exporter import DEFAULT_LINGER_S
    from engine.verbs.cli import build_parser
    from engine.verbs.run import watch

    p = build_parser()
    run = p.parse_args(["run", "--config", "c.toml", "--metrics", "0"])
    assert watch(run).metrics_linger == DEFAULT_LINGER_S > 0
    s = random.choice([0, 1.5, 60])
    assert watch(p.parse_args(["run", "--config", "c.toml", "--metrics", "0",
                               "--metrics-linger", str(s)])).metrics_linger == s
    assert watch(p.parse_args(["run", "--config", "c.toml"])).metrics_linger == 0
    assert Watch().metrics_linger == 0 and Watchers().linger_s == 0  # the console's


def test_closing_the_watchers_lingers_then_stops_serving():
    server = _served(Exporter())
    url = server.url
    cap = random.uniform(0.3, 0.6)
    t0 = time.monotonic()
    Watchers(metrics=server, linger_s=cap).close()
    assert time.monotonic() - t0 >= cap
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=2)
