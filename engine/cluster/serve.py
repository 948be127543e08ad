"""``sealtop cluster scheduler`` and ``sealtop cluster worker``: Dask's own scheduler and
worker, started in this process with the farm's settings.

The scheduler is Dask's Scheduler as it is (no dashboard). A worker is Dask's Worker run in
this process (no nanny), with

* ``distributed.worker.daemon: False`` set, so that a nanny-started worker could start
  children too (Dask's worker processes are daemonic by default, and a daemonic process cannot
  start the Engine's synthesis and prover processes);
* the :class:`~engine.cluster.hostengine.HostEngine` plugin: one Engine for the worker's life;
* one Dask thread per slot, and resources ``slots`` and ``<backend>_slots`` (engine.cluster.jobs),
  so the scheduler never sends more jobs than the host takes at once;
* no Dask memory limit: the Engine keeps its own budget (memory_budget) and Dask must not
  pause or kill a worker for memory the Engine accounts for.

Stop signals (SIGINT, SIGTERM, SIGHUP) follow engine/signals.py's rules: the first closes the
worker cleanly (its Engine is stopped, Dask runs its jobs elsewhere), a second one hurries the
Engine's stop (its workers are killed instead of awaited); a signal ignored at start stays
ignored. A worker that cannot reach its scheduler, or whose scheduler goes away, says so in one
line and exits 2.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from engine.cluster import ClusterError, require
from engine.cluster.jobs import host_resources, host_slots
from engine.config import EngineConfig
from engine.signals import STOP_SIGNALS

CONNECT_TIMEOUT_S = 15.0
EXIT_OK, EXIT_GONE = 0, 2


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def quiet_dask() -> None:
    """Dask logs every connection at INFO; the farm's own lines say what matters."""
    if not os.environ.get("SEALTOP_DEBUG"):
        for name in ("distributed", "tornado"):
            logging.getLogger(name).setLevel(logging.CRITICAL)


def _on_signals(loop: asyncio.AbstractEventLoop, first: Callable[[], object],
                again: Callable[[], object]) -> None:
    """First stop signal -> ``first``; every later one -> ``again``. Signals ignored at start
    stay ignored."""
    seen: list[int] = []

    def handler(signum: int) -> None:
        seen.append(signum)
        (first if len(seen) == 1 else again)()

    for s in STOP_SIGNALS:
        if signal.getsignal(s) != signal.SIG_IGN:
            loop.add_signal_handler(s, handler, s)


def pin_threads() -> int | None:
    """A worker pinned to some cores (taskset, cgroups cpusets) sizes numba's thread pool to
    them: the Engine's processes share os.cpu_count(), which counts every core of the machine.
    Sets NUMBA_NUM_THREADS (inherited by the Engine's spawned processes, which cap their
    threads at it) unless already set; returns the cores, or None when not pinned."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    if cores >= (os.cpu_count() or cores):
        return None
    os.environ.setdefault("NUMBA_NUM_THREADS", str(cores))
    return cores


def backend_of(cfg: EngineConfig) -> str:
    """The backend the host's Engine will use (as Engine picks it)."""
    from kernels.backend import BackendUnavailable, pick_backend

    try:
        return pick_backend(cfg.backend)
    except BackendUnavailable:  # the Engine refuses it, with the reason; it is still this one
        return cfg.backend


def run_scheduler(host: str, port: int, out: Any = sys.stdout) -> int:
    """Run Dask's scheduler until a stop signal; prints its address."""
    require()
    quiet_dask()
    from distributed import Scheduler

    async def main() -> int:
        try:
            # its HTTP routes (health, metrics) on a free port: Dask's fixed 8787 would warn
            # (a line on stderr) wherever a second scheduler or anything else holds it
            sched = Scheduler(host=host, port=port, dashboard=False,
                              dashboard_address=f"{host}:0")
            await sched
        except OSError as exc:
            raise ClusterError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        loop = asyncio.get_running_loop()
        _on_signals(loop, lambda: loop.create_task(sched.close()), lambda: None)
        print(f"scheduler at {sched.address}", file=out, flush=True)
        await sched.finished()
        return EXIT_OK

    return asyncio.run(main())


def run_worker(scheduler: str, cfg: EngineConfig, name: str | None = None,
               out: Any = sys.stdout) -> int:
    """Run one farm host: a Dask worker holding one Engine, until a stop signal or until the
    scheduler goes away."""
    require()
    quiet_dask()
    import dask
    from distributed import Worker

    from engine.cluster.hostengine import HostEngine

    dask.config.set({"distributed.worker.daemon": False})
    pinned = pin_threads()
    backend = backend_of(cfg)
    slots = host_slots(cfg.partition_workers, cfg.gpu_channel_capacity, cfg.host_slots)
    host = name or socket.gethostname()
    plugin = HostEngine(cfg, host)

    async def main() -> int:
        worker = Worker(scheduler, nthreads=slots, name=host, memory_limit=0,
                        resources=host_resources(backend, slots), plugins=(plugin,),
                        dashboard=False, death_timeout=CONNECT_TIMEOUT_S)
        stopping = False

        def first() -> None:
            nonlocal stopping
            stopping = True
            asyncio.get_running_loop().create_task(worker.close())

        _on_signals(asyncio.get_running_loop(), first, plugin.hurry)
        # the Engine first (warm-up, worker processes, seconds), so the connect timeout below
        # counts only the connection and no job can arrive before the Engine is ready
        try:
            await asyncio.get_running_loop().run_in_executor(None, plugin.start)
        except Exception as exc:
            plugin.stop()
            raise ClusterError(f"the engine did not start: {_why(exc)}") from None
        if stopping:
            plugin.stop()
            return EXIT_OK
        try:
            await worker
        except (OSError, TimeoutError, RuntimeError, ValueError) as exc:
            plugin.stop()
            if stopping:
                return EXIT_OK
            cause = exc.__cause__ or exc
            if isinstance(cause, (OSError, TimeoutError)):
                raise ClusterError(f"no scheduler at {scheduler} ({_why(cause)})") from None
            raise ClusterError(f"worker {host} did not start: {_why(cause)}") from None
        cores = f", pinned to {pinned} core(s)" if pinned else ""
        print(f"worker {host} joined {scheduler}: {slots} slot(s), backend {backend}{cores}",
              file=out, flush=True)
        await worker.finished()
        plugin.stop()  # already stopped by the worker's close; a no-op then
        if not stopping:
            raise ClusterError(f"the scheduler at {scheduler} went away; worker {host} closed")
        return EXIT_OK

    return asyncio.run(main())


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
