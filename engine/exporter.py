"""The Prometheus exporter: one more sink of the event stream, served at /metrics.

Proving farms are watched through Prometheus and Grafana, so the engine's stream is also kept as
metric families that a scrape reads. Nothing here asks the engine anything: every value comes
from the events the tap hands over, the same events the recorder writes, so a scrape at the end
of a run agrees with the session's own summary.

Naming follows Prometheus's rules: base units (seconds, bytes, ratios), ``_total`` on counters
only, and no job or partition ids as labels (their number grows without bound). A GPU reading
that NVML could not give (``None`` in the sample) is absent from the scrape, never zero.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import start_http_server

from engine.address import Address, AddressError
from engine.settings import find, live_settings
from engine.stream.fold import Fold, JobRecord, StageChange
from engine.stream.schema import CANCELLED, FAILED, KERNEL_GROUPS, STAGES

prometheus_client.disable_created_metrics()

# Phases of a partition, as histogram label values, and the timer keys each one sums (ms).
PHASES: dict[str, tuple[str, ...]] = {
    "queue": ("queue",),
    "synthesis": ("witness", "eval"),
    "witness": ("witness",),
    "eval": ("eval",),
    "channel_wait": ("channel_wait",),
    "gpu_wrapper": ("gpu_wrapper",),
    "gpu_wait": ("gpu_wait",),
    "gpu_host": ("gpu_host",),
    "gpu_call": ("gpu_call",),
    "gpu_kernels": KERNEL_GROUPS,
    "b2": ("b2",),
    "finalize": ("finalize",),
    "dealloc": ("dealloc",),
}
# From a millisecond to five minutes: a tiny partition's finalize to a 32 GiB sector's proof.
BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0,
             60.0, 120.0, 300.0)
LIVE_STAGES = tuple(s for s in STAGES if s != "done")
OUTCOMES = ("verified", "failed", "cancelled")
# GPU sample fields: (metric suffix, help, scale from the sample's unit to the base unit).
GPU_FIELDS: dict[str, tuple[str, str, float]] = {
    "util": ("utilization_ratio", "GPU utilization as NVML reports it (0 to 1)", 0.01),
    "mem_used": ("memory_used_bytes", "GPU memory in use", 1.0),
    "mem_total": ("memory_total_bytes", "GPU memory in all", 1.0),
    "power_w": ("power_watts", "GPU board power draw", 1.0),
    "temp_c": ("temperature_celsius", "GPU core temperature", 1.0),
    "sm_clock_mhz": ("sm_clock_hertz", "GPU SM clock", 1e6),
}


def process_kind(role: str) -> str:
    """The label for a process's role: its kind, without the worker's number."""
    if role.startswith("synth"):
        return "synthesis"
    if role.startswith("gpu") or role.startswith("prover"):
        return "prover"
    return "orchestrator"


GAUGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "sealtop_partitions": ("Partitions now in each stage", ("stage",)),
    "sealtop_process_memory_bytes": ("Anonymous resident memory (RssAnon) by process kind",
                                     ("kind",)),
    "sealtop_processes": ("Live processes by kind", ("kind",)),
    "sealtop_shared_memory_bytes": ("Live shared-memory segments, counted once", ()),
    "sealtop_memory_bytes": ("RssAnon of every process plus shared memory counted once", ()),
    # a live knob with a gauge of its own (the settings table says which), else one labelled
    **{s.knob.gauge: (s.knob.gauge_help, ()) for s in live_settings() if s.knob and s.knob.gauge},
    "sealtop_knob_value": ("Live knob values (paused: 1 or 0)", ("knob",)),
    "sealtop_gpu_info": ("One per GPU of the session, with its name", ("gpu", "name")),
    "sealtop_session_start_time_seconds": ("Wall-clock start of the session (Unix time)", ()),
    **{f"sealtop_gpu_{suffix}": (help_, ("gpu",)) for suffix, help_, _ in GPU_FIELDS.values()},
}
PROCESS_KINDS = ("orchestrator", "synthesis", "prover")


class _Gauges:
    """Gauge values kept as plain dicts and turned into families at scrape time, so that a value
    nobody could read is absent rather than a stale number or a zero."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self.values: dict[str, dict[tuple[str, ...], float]] = {n: {} for n in GAUGES}

    def set(self, name: str, value: float, *labels: str) -> None:
        self.values[name][labels] = float(value)

    def add(self, name: str, delta: float, *labels: str) -> None:
        cur = self.values[name]
        cur[labels] = cur.get(labels, 0.0) + delta

    def drop(self, name: str, *labels: str) -> None:
        self.values[name].pop(labels, None)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:
            snapshot = {n: dict(v) for n, v in self.values.items()}
        for name, (help_, labelnames) in GAUGES.items():
            fam = GaugeMetricFamily(name, help_, labels=list(labelnames))
            for labels, value in sorted(snapshot[name].items()):
                fam.add_metric(list(labels), value)
            yield fam


class Exporter:
    """Keeps the metric families up to date from events; ``handle`` is the sink."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self._lock = threading.Lock()
        self.fold = Fold()  # the stream's one fold: stages and outcomes as the summaries see them
        self._ended_jobs: set[int] = set()  # each job's outcome is counted once
        self.gauges = _Gauges(self._lock)
        r.register(self.gauges)

        self.events_total = Counter("sealtop_events", "Events seen on the stream, by kind",
                                    ["kind"], registry=r)
        self.jobs_submitted = Counter("sealtop_jobs_submitted", "Jobs (sector proofs) submitted",
                                      registry=r)
        self.proofs = Counter("sealtop_proofs", "Jobs (sector proofs) ended, by outcome",
                              ["outcome"], registry=r)
        self.partition_failures = Counter(
            "sealtop_partition_failures", "Partition attempts that failed (each may be retried)",
            registry=r)
        self.partitions_done = Counter("sealtop_partitions_done", "Partitions proven",
                                       registry=r)
        self.phase = Histogram("sealtop_phase_duration_seconds",
                               "Time of each phase of a partition", ["phase"], buckets=BUCKETS_S,
                               registry=r)
        self.proof_duration = Histogram("sealtop_proof_duration_seconds",
                                        "Time from a job's submission to its proof",
                                        buckets=BUCKETS_S, registry=r)
        self.errors = Counter("sealtop_errors", "Error events, by where they arose", ["where"],
                              registry=r)
        for s in LIVE_STAGES:
            self.gauges.set("sealtop_partitions", 0, s)
        for o in OUTCOMES:
            self.proofs.labels(o)

    def handle(self, e: dict[str, Any]) -> None:
        """Fold one event into the metrics (thread-safe; an event it does not know is counted)."""
        kind = str(e.get("kind", ""))
        with self._lock:
            self.events_total.labels(kind).inc()
            try:
                change = self.fold.apply(e)
            except (KeyError, TypeError, ValueError):
                change = None  # an event the fold cannot place: counted above, nothing more
            fn = _HANDLERS.get(kind)
            if fn is not None:
                fn(self, e, change)

    __call__ = handle

    # -- one method per event kind ---------------------------------------------------------

    def _session_start(self, e: dict[str, Any], change: object = None) -> None:
        try:
            wall = str(e.get("wall_start", "")).replace("Z", "+00:00")
            self.gauges.set("sealtop_session_start_time_seconds",
                            datetime.fromisoformat(wall).timestamp())
        except ValueError:
            pass
        for g in e.get("gpus", []):
            self.gauges.set("sealtop_gpu_info", 1, str(g.get("index")), str(g.get("name")))
        cfg = e.get("config", {})
        for s in live_settings():
            self._set_knob(s.name, cfg.get(s.name))
        # an engine starts running: paused reads 0 from the first scrape, not only after a pause
        self.gauges.set("sealtop_knob_value", 0, "paused")

    def _job_submitted(self, e: dict[str, Any], change: object) -> None:
        self.jobs_submitted.inc()
        self.gauges.set("sealtop_partitions", self.fold.counts["queued"], "queued")

    def _stage(self, e: dict[str, Any], change: object) -> None:
        for stage in LIVE_STAGES:
            self.gauges.set("sealtop_partitions", self.fold.counts[stage], stage)
        if not isinstance(change, StageChange) or change.old == change.new:
            return
        if change.new == "done":
            self.partitions_done.inc()
        elif change.new == FAILED:
            self.partition_failures.inc()
        elif change.new == CANCELLED:
            job = change.job
            if job.job not in self.fold.active and job.outcome == "cancelled":
                self._end(job, "cancelled")

    def _partition_timings(self, e: dict[str, Any], change: object = None) -> None:
        ms = e.get("ms", {})
        for phase, keys in PHASES.items():
            vals = [ms[k] for k in keys if ms.get(k) is not None]
            if vals:
                self.phase.labels(phase).observe(sum(vals) / 1000.0)

    def _proof_done(self, e: dict[str, Any], change: object) -> None:
        if isinstance(change, JobRecord):
            if self._end(change, "verified" if change.outcome == "verified" else "failed"):
                self.proof_duration.observe(float(e.get("total_ms", 0.0)) / 1000.0)

    def _end(self, job: JobRecord, outcome: str) -> bool:
        if job.job in self._ended_jobs:
            return False
        self._ended_jobs.add(job.job)
        self.proofs.labels(outcome).inc()
        return True

    def _sample(self, e: dict[str, Any], change: object = None) -> None:
        rss: dict[str, int] = dict.fromkeys(PROCESS_KINDS, 0)
        count: dict[str, int] = dict.fromkeys(PROCESS_KINDS, 0)
        for p in e.get("processes", []):
            k = process_kind(str(p.get("role", "")))
            rss[k] += int(p.get("rss_anon") or 0)
            count[k] += 1
        for k in PROCESS_KINDS:
            self.gauges.set("sealtop_process_memory_bytes", rss[k], k)
            self.gauges.set("sealtop_processes", count[k], k)
        shm = int(e.get("shm_bytes") or 0)
        self.gauges.set("sealtop_shared_memory_bytes", shm)
        self.gauges.set("sealtop_memory_bytes", sum(rss.values()) + shm)
        for g in e.get("gpus", []):
            gpu = str(g.get("index"))
            for field, (suffix, _, scale) in GPU_FIELDS.items():
                v = g.get(field)
                if v is None:
                    self.gauges.drop(f"sealtop_gpu_{suffix}", gpu)
                else:
                    self.gauges.set(f"sealtop_gpu_{suffix}", float(v) * scale, gpu)

    def _knob(self, e: dict[str, Any], change: object = None) -> None:
        self._set_knob(str(e.get("name")), e.get("new"))

    def _error(self, e: dict[str, Any], change: object = None) -> None:
        self.errors.labels(str(e.get("where", "unknown"))).inc()

    def _set_knob(self, name: str, value: Any) -> None:
        """A knob's value into its gauge: one of its own (absent while 0, e.g. an unlimited
        budget), else sealtop_knob_value{knob=NAME} (paused: 1 or 0; a count as it is)."""
        s = find(name)
        own = s.knob.gauge if s is not None and s.knob is not None else ""
        if own:
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                self.gauges.set(own, value)
            else:
                self.gauges.drop(own)
        elif isinstance(value, bool):
            self.gauges.set("sealtop_knob_value", 1 if value else 0, name)
        elif isinstance(value, (int, float)):
            self.gauges.set("sealtop_knob_value", value, name)


_HANDLERS: dict[str, Callable[[Exporter, dict[str, Any], object], None]] = {
    "session_start": Exporter._session_start,
    "job_submitted": Exporter._job_submitted,
    "stage": Exporter._stage,
    "partition_timings": Exporter._partition_timings,
    "proof_done": Exporter._proof_done,
    "sample": Exporter._sample,
    "knob": Exporter._knob,
    "error": Exporter._error,
}


# How long `run --metrics` keeps serving once the run has ended, by default: until the next
# scrape, at most this long. Two 15 s scrape intervals, so a scrape lands within it.
DEFAULT_LINGER_S = 30.0
SERVED_AFTER_S = 0.5  # the scrape's reply is written after its collect: let it go out


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class _Scrapes:
    """A collector that yields nothing and counts the scrapes that read the registry."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def describe(self) -> list[Any]:
        return []  # registering it must not count as a scrape

    def collect(self) -> Iterator[Any]:
        with self.changed:
            self.count += 1
            self.changed.notify_all()
        return iter(())


class MetricsServer:
    """/metrics over HTTP for one registry, in a daemon thread, until ``close``."""

    def __init__(self, exporter: Exporter, address: Address) -> None:
        self.scrapes = _Scrapes()
        exporter.registry.register(self.scrapes)
        try:
            self._server, self._thread = start_http_server(
                address.port, addr=address.host, registry=exporter.registry)
        except OSError as exc:
            raise AddressError(f"--metrics: cannot listen on {address}: {exc.strerror}") from None
        self.address = Address(address.host, self._server.server_port)

    @property
    def url(self) -> str:
        host = f"[{self.address.host}]" if ":" in self.address.host else self.address.host
        return f"http://{host}:{self.address.port}/metrics"

    def linger(self, seconds: float, tell: Callable[[str], None] = _stderr) -> bool:
        """Keep serving after the run ended until one more scrape has read the final counters,
        at most ``seconds``: a server that stopped with the run left the last scrape before
        its end as the run's last word. True when a scrape came; Ctrl-C ends the wait."""
        if seconds <= 0:
            return False
        with self.scrapes.changed:
            seen = self.scrapes.count
        tell(f"metrics: the run has ended; {self.url} serves its final counters until the next "
             f"scrape, at most {seconds:g} s (Ctrl-C ends the wait; --metrics-linger 0 skips it)")
        deadline = time.monotonic() + seconds
        try:
            with self.scrapes.changed:
                while self.scrapes.count == seen:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self.scrapes.changed.wait(min(left, 0.5))
            time.sleep(SERVED_AFTER_S)
        except KeyboardInterrupt:
            return False
        return True

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
