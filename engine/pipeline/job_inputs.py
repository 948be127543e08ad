"""Each job's input read or made once, where its partitions are dispatched, and the next job's
made ahead on a thread of its own.

A C2 job's input is a whole sector's C1 output: a 32 GiB sector's is 38 MB of JSON (2.5 s to
read) or, for a preset's synthetic sector, 2.7 s of hashing to make. Every synthesis worker that
took one of the job's partitions used to read or make all of it, for the one partition it needed:
four workers paid ~10 s of a 10-partition job's ~40 s of synthesis for it. Now the dispatcher
asks the circuit (PartitionCircuit.inputs, which caches the job's input) for the partition's
share, a few hundred KB that travel in the SynthTask; and when a job's first partition is
dispatched, the next job's input is made on a look-ahead thread, so that the dispatcher seldom
waits for it. The orchestrator needed the job's input anyway: the verifier's statement comes
from it.
"""

from __future__ import annotations

import threading
from typing import Any

from engine.pipeline.records import JobRecord


def one_line(exc: BaseException) -> str:
    """An exception as the one line a failed partition reports."""
    text = f"{type(exc).__name__}: {exc}"
    return text.splitlines()[0] if text else type(exc).__name__


class JobInputs:
    """The dispatcher's side: a partition's share of its job's input, and the look-ahead."""

    def __init__(self) -> None:
        self._ahead: set[int] = set()
        self._lock = threading.Lock()

    def partition(self, js: JobRecord, index: int) -> Any:
        """Partition ``index``'s share of job ``js``'s input, or None where the circuit has no
        inputs (its witness needs nothing of the job but the seed). Raises what reading or
        making the input raises (a C1 file that cannot be read, a partition it does not hold)."""
        make = js.circuit.inputs
        if make is None:
            return None
        return make(js.job.seed, index, js.job.partitions, js.job.source)

    def look_ahead(self, js: JobRecord | None) -> None:
        """Start making job ``js``'s input on a daemon thread, once per job. Errors are left to
        the dispatcher, which meets them again and fails the partition with them."""
        if js is None or js.circuit.inputs is None:
            return
        with self._lock:
            if js.id in self._ahead:
                return
            self._ahead.add(js.id)

        def make() -> None:
            try:
                self.partition(js, 0)
            except Exception:  # the dispatcher reports it, for the partition it fails
                pass

        threading.Thread(target=make, name=f"sealtop-inputs-{js.id}", daemon=True).start()
