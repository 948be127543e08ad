"""What an operator watches a running engine through, besides its recording: the Prometheus
exporter (``--metrics``) and the attach socket (``sealtop attach`` and ``sealtop serve``).

Both are sinks of the stream's one tap. The headless verbs and the console start them the same
way, here, and close them when the run ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.address import Address
from engine.attach import AttachServer, Controllable

if TYPE_CHECKING:  # the exporter needs prometheus-client, imported only when --metrics is given
    from engine.exporter import Exporter, MetricsServer

Take = Callable[[list[dict[str, Any]]], None]


def _each(handle: Callable[[dict[str, Any]], None]) -> Take:
    """A tap sink that hands every event of a batch to ``handle``."""

    def take(batch: list[dict[str, Any]]) -> None:
        for e in batch:
            handle(e)

    return take


@dataclass(frozen=True)
class Watch:
    """What the operator asked to watch a run through (``--metrics``, ``--no-attach``)."""

    metrics: Address | None = None
    attach: bool = False
    metrics_linger: float = 0.0  # s /metrics stays up after the run, until a scrape (headless run)


@dataclass
class Watchers:
    exporter: Exporter | None = None
    metrics: MetricsServer | None = None
    attach: AttachServer | None = None
    lines: list[str] = field(default_factory=list)  # what to tell the operator
    linger_s: float = 0.0  # see Watch.metrics_linger

    def sinks(self) -> list[tuple[str, Take]]:
        """(name, take) for the tap; both essential: a scrape's counters and a late console's
        history must hold every event."""
        out: list[tuple[str, Take]] = []
        if self.exporter is not None:
            out.append(("metrics", _each(self.exporter.handle)))
        if self.attach is not None:
            out.append(("attach", _each(self.attach.handle)))
        return out

    def close(self) -> None:
        from engine import signals

        if self.metrics is not None:
            if self.linger_s > 0 and not signals.received():  # an interrupted run stops now
                self.metrics.linger(self.linger_s)
            self.metrics.close()
            self.metrics = None
        if self.attach is not None:
            self.attach.close()
            self.attach = None


def job_from_fields(fields: dict[str, Any], cfg: Any) -> Any:
    """The job an attached console submits: the running config's preset, partitions and seed
    unless the command names others; ValueError (one line) on a malformed request."""
    from engine.pipeline.engine import Job

    if not fields.get("preset") and getattr(cfg, "c1", None):  # the running config's C1 output
        from engine.c2.job import config_job

        return config_job(cfg, 0)
    preset = fields.get("preset") or cfg.preset
    partitions = fields.get("partitions") or cfg.partitions
    seed = fields.get("seed") or cfg.seed
    if not isinstance(preset, str) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in (partitions, seed)):
        raise ValueError("submit: preset must be a name, partitions and seed integers")
    return Job(preset, partitions, seed)


def start_watchers(engine: Controllable, watch: Watch, cfg: Any = None) -> Watchers:
    """Start what was asked for (``cfg``: the running config, for jobs an attached console
    submits); raises engine.address.AddressError (one line) when the metrics address cannot be
    bound, having started nothing."""
    w = Watchers(linger_s=watch.metrics_linger)
    if watch.metrics is not None:
        from engine.exporter import Exporter, MetricsServer

        w.exporter = Exporter()
        w.metrics = MetricsServer(w.exporter, watch.metrics)
        w.lines.append(f"metrics: {w.metrics.url}")
    if watch.attach:
        try:
            make_job = (lambda f: job_from_fields(f, cfg)) if cfg is not None else None
            w.attach = AttachServer(engine, make_job=make_job)
        except OSError as exc:
            w.lines.append(f"attach socket unavailable: {exc.strerror or exc}")
        else:
            w.lines.append(f"attach: sealtop attach --engine {w.attach.path} "
                           "(or sealtop serve)")
    return w
