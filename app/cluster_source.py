"""The console on a farm (`sealtop --cluster ADDR`): the farm's client behind the Engine API the
console drives, and the App that opens on its hosts view.

* :class:`FarmEngine` wraps engine.cluster.farm.Farm: its merged stream of every host is the
  one stream the console's tap reads (recorded, replayed like any session); ``submit`` sends a
  job to the farm; knobs, pause and resume go to the hosts in :attr:`FarmEngine.target` (one,
  or all) through Dask (Farm.control), in the order given and off the UI thread, each host's
  Engine confirming with its own ``knob`` event, a refusal being an ``error`` event.
* :class:`app.farm_fold.FarmFold` folds the merged stream per host for the hosts view and its
  drill-down (it lives apart, so the hosts view does not import this module).
* :func:`build_farm_app` makes the App, the hosts view its home.

Plain Python except build_farm_app (which imports Textual through the screens).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.farm_fold import FarmFold
from engine.stream.schema import Event

FARM_AUTOFEED = 4  # jobs the console keeps in flight on a farm (2 on one machine)


@dataclass(frozen=True)
class _Control:
    """An operator's control for the farm, queued for the one thread that applies them in
    order: ``action`` is one of engine.cluster.hostengine.CONTROLS; ``hosts`` None = every host."""

    action: str
    name: str
    value: Any
    hosts: list[str] | None


class FarmEngine:
    """A farm behind the Engine API (subscribe, start, submit, set_knob, pause, resume, stop,
    hurry); knobs go to :attr:`target` (host names; None = every host)."""

    def __init__(self, address: str, config: Any) -> None:
        from engine.cluster.farm import Farm

        self.farm = Farm(address, config)  # ClusterError (one line) where dask is missing
        self.address = address
        self.config = config
        self.target: list[str] | None = None
        self._controls: queue.Queue[_Control | None] = queue.Queue()
        self._controller: threading.Thread | None = None

    @property
    def progress(self) -> Callable[[str], None] | None:
        return self.farm.progress

    @progress.setter
    def progress(self, fn: Callable[[str], None] | None) -> None:
        self.farm.progress = fn

    def subscribe(self) -> queue.Queue:
        return self.farm.subscribe()

    def start(self) -> None:
        self.farm.start()
        self._controller = threading.Thread(target=self._control_loop,
                                            name="sealtop-farm-controls", daemon=True)
        self._controller.start()

    def submit(self, job: Any) -> int:
        from engine.cluster import ClusterError

        if self.farm.error is not None:
            raise ClusterError(self.farm.error)
        return self.farm.submit(job.preset, job.partitions, job.seed, job.source)

    # ---- the operator's controls: queued, applied in order by one thread ------------------

    def set_knob(self, name: str, value: Any, hosts: list[str] | None = None) -> None:
        """Ask the target hosts (or ``hosts``) to change a knob; a bad value is refused here
        at once (ValueError), a host's refusal arrives as an error event."""
        from engine.config import check_knob

        value = check_knob(name, value)
        self._queue("set_knob", name, value, hosts)

    def pause(self, hosts: list[str] | None = None) -> None:
        self._queue("pause", "", None, hosts)

    def resume(self, hosts: list[str] | None = None) -> None:
        self._queue("resume", "", None, hosts)

    def _queue(self, action: str, name: str, value: Any, hosts: list[str] | None) -> None:
        from engine.cluster import ClusterError

        if self.farm.error is not None:
            raise ClusterError(self.farm.error)
        chosen = hosts if hosts is not None else self.target
        self._controls.put(_Control(action, name, value, None if chosen is None else list(chosen)))

    def _control_loop(self) -> None:
        while True:
            c: _Control | None = self._controls.get()
            if c is None:
                return
            try:
                self.farm.control(c.action, c.name, c.value, c.hosts)
            except Exception as exc:  # noqa: BLE001 - a gone scheduler: the farm says so
                self._failed(f"{c.action} {c.name}".strip(), exc)

    def _failed(self, what: str, exc: BaseException) -> None:
        if self.farm.error is not None:
            return  # the scheduler went away: the farm's one line says so
        text = str(exc).strip().splitlines()
        self.farm.report("farm", f"{what} failed: {text[0] if text else type(exc).__name__}")

    # ---- lifecycle ------------------------------------------------------------------------

    def stop(self, drain: bool = True, timeout: float | None = None) -> None:
        self._controls.put(None)
        if self._controller is not None:
            self._controller.join(5)
        self.farm.stop(drain=drain, timeout=timeout)

    def hurry(self) -> None:
        self.farm.hurry()


def build_farm_app(address: str, config: Any, *, config_path: str | None, readonly: bool,
                   record: str | None, refresh: float, theme: str | None, autofeed: bool,
                   watch: Any) -> Any:
    """The console on the farm at ``address``: live, the hosts view its home. Raises
    ValueError (one line) where dask is missing."""
    from app.console import SealtopApp
    from app.screens.hosts import HostsScreen
    from engine.cluster import ClusterError, require

    try:
        require()
    except ClusterError as exc:
        raise ValueError(str(exc)) from None
    from engine.cluster.serve import quiet_dask

    quiet_dask()  # Dask's own logging would write over the screen
    fold = FarmFold()
    app = SealtopApp(
        "live", engine_factory=lambda: FarmEngine(address, config), config=config,
        config_path=config_path, readonly=readonly, record=record, refresh=refresh, theme=theme,
        autofeed=FARM_AUTOFEED if autofeed else 0, watch=watch,
        home=lambda: HostsScreen(fold=fold, home=True),
    )
    app.listeners.append(fold.take)

    def gone(events: list[Event]) -> None:
        """The scheduler went away (the farm's one error line): stop feeding it jobs, which
        would each fail, and say so where the operator looks; so too a farm that never
        started (no scheduler there), whose stream ends with the line saying why."""
        error = getattr(getattr(app.engine, "farm", None), "error", None)
        if error and app.autofeed:
            app.autofeed = 0
            app.notice = f"{error}; q quits"
        for ev in events:
            if ev.get("kind") == "console" and ev.get("engine_state") == "stopped" \
                    and str(ev.get("text", "")).startswith("engine failed to start"):
                app.notice = str(ev["text"]).replace("engine failed", "the farm console failed")

    app.listeners.append(gone)
    app.notice = f"connecting to the farm at {address}…"
    return app
