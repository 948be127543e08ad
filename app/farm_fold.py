"""The farm's merged stream folded per host, for the hosts view (app.screens.hosts) and its
drill-down: a DashboardState of each host's own events (its session_start from its ``host``
event, its partitions, samples, knobs and errors, and the console's lines), and the hosts fold
(engine.cluster.hosts) for the table. Plain Python; apart from app.cluster_source so the hosts
view reads it without importing the console that opens that view.
"""

from __future__ import annotations

from app.state import DashboardState, apply
from engine.cluster.hosts import HostsState
from engine.stream.schema import Event


class FarmFold:
    """The merged stream folded per host (see this module's docstring); fed batch by batch."""

    def __init__(self) -> None:
        self.hosts = HostsState()
        self.states: dict[str, DashboardState] = {}

    def take(self, events: list[Event]) -> None:
        for ev in events:
            self.apply(ev)

    def apply(self, ev: Event) -> None:
        try:
            self.hosts.apply(ev)
        except (KeyError, TypeError, ValueError):
            pass
        kind = ev.get("kind")
        if kind == "host":
            name = str(ev.get("host", ""))
            state = self.states.setdefault(name, DashboardState())
            start = ev.get("session_start") or {}
            if ev.get("state") == "joined" and start:
                # the host's own session_start: its GPUs, CPUs, config and knobs
                apply(state, {**start, "t": ev.get("t", state.t), "kind": "session_start"})
            else:
                apply(state, ev)
            return
        if kind == "console":  # the console's lines (actions, notices) in every host's log
            for state in self.states.values():
                apply(state, ev)
            return
        host = ev.get("host")
        if isinstance(host, str) and host:
            apply(self.states.setdefault(host, DashboardState()), ev)

    def state_of(self, host: str) -> DashboardState:
        return self.states.setdefault(host, DashboardState())
