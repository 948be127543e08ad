"""The key registry: which proving key each job uses, and which prover holds which key.

The protocol with the provers: when a job is submitted (and when a prover is restarted) every
prover is sent a :class:`~engine.pipeline.messages.LoadKey` for the job's key, once per prover
and source; it answers :class:`~engine.pipeline.messages.KeyLoaded` or ``KeyFailed``. A slot
takes nothing from the GPU channel until its prover holds the key of every unfinished job
(:meth:`KeyRegistry.holds_all`), so no GPU wrapper contains a key upload. A prover that dies
loses what it held (:meth:`KeyRegistry.forget`); its replacement is asked again.

A key's ``source`` is where the prover gets it from; today that is always the path of the key
file that :func:`engine.pipeline.proving.ensure_key` made or found (once per preset).

State is guarded by the Engine's state lock, which the caller holds for every method here
except :meth:`KeyRegistry.ensure` (which reads or writes a key file, for seconds).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.pipeline import proving
from engine.pipeline.messages import KeyFailed, KeyLoaded, LoadKey
from engine.pipeline.partition import PartitionCircuit
from engine.pipeline.records import JobRecord


@dataclass(frozen=True)
class KeyFile:
    """A preset's proving key as the provers get it (``source``) and its verifying key."""

    source: str
    vk: Any


class KeyRegistry:
    """Key sources per preset, and per prover the keys it holds and the loads in flight."""

    def __init__(self) -> None:
        self._files: dict[str, KeyFile] = {}
        self._loaded: dict[str, set[str]] = {}  # prover → sources it holds
        self._requested: dict[str, dict[str, str]] = {}  # prover → source → preset, in flight
        self._lock = threading.Lock()  # one ensure() at a time per registry

    def ensure(
        self,
        preset: str,
        circuit: PartitionCircuit,
        cache: Path,
        backend: str,
        progress: Callable[[str], None] | None,
        damaged: str,
        devices: list[int] | None = None,
        slots: int = 1,
        params: str = "",
        gpu_calls: str = "parallel",
    ) -> KeyFile:
        """The key of ``preset``, made (setup), read from the parameter cache or imported from
        Filecoin's parameter files (``params``) once per preset: reading a large key takes
        seconds."""
        with self._lock:
            if preset not in self._files:
                source, vk = proving.key_source(circuit, cache, backend, progress, damaged,
                                                devices, slots, params, gpu_calls)
                self._files[preset] = KeyFile(source, vk)
            return self._files[preset]

    def learn_vk(self, source: str, vk: Any) -> Any:
        """The verifying key a prover sent with a key it generated (a device source); the
        first one is kept and returned (the engine checks later ones against it). Under the
        Engine's state lock, not the ensure lock (a setup in flight must not hold this up)."""
        for preset, kf in list(self._files.items()):
            if kf.source == source:
                if kf.vk is None:
                    self._files[preset] = KeyFile(source, vk)
                return self._files[preset].vk
        return vk

    # -- per prover (under the Engine's state lock) --------------------------------------------
    def add_prover(self, prover: str) -> None:
        """A new prover process holds nothing yet."""
        self._loaded[prover] = set()
        self._requested[prover] = {}

    def forget(self, prover: str) -> bool:
        """A prover died: it holds nothing any more. True if it was loading a key then."""
        loading = bool(self._requested.get(prover))
        self.add_prover(prover)
        return loading

    def request(self, prover: str, source: str, preset: str, send: Callable[[LoadKey], None],
                compact: tuple[str, str] | None = None) -> bool:
        """Send ``prover`` a load of ``source`` unless it holds it or is loading it; True if
        a load was sent. ``compact``: see LoadKey."""
        if source in self._loaded[prover] or source in self._requested[prover]:
            return False
        self._requested[prover][source] = preset
        send(LoadKey(source, compact))
        return True

    def settle(self, msg: KeyLoaded | KeyFailed) -> str:
        """Record a prover's answer to a load; returns the preset the load was for (its source
        if no load was asked)."""
        preset = self._requested[msg.worker].pop(msg.source, None) or msg.source
        if isinstance(msg, KeyLoaded):
            self._loaded[msg.worker].add(msg.source)
        return preset

    def loading(self, prover: str) -> bool:
        """Whether ``prover`` has a load in flight."""
        return bool(self._requested.get(prover))

    def holds(self, prover: str, source: str) -> bool:
        return source in self._loaded.get(prover, ())

    def holds_all(self, prover: str, jobs: Iterable[JobRecord]) -> bool:
        """Whether ``prover`` holds the key of every job in ``jobs`` whose key did not fail."""
        loaded = self._loaded.get(prover, set())
        return all(js.key_error is not None or js.key_path in loaded for js in jobs)
