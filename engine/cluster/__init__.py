"""The proving farm: many hosts, one stream, on Dask distributed.

Dask's scheduler places jobs and keeps membership; nothing here is a scheduler, a transport or
a membership protocol of our own. Each farm host runs a Dask worker holding one long-lived
Engine (:mod:`engine.cluster.hostengine`); a job travels as a few bytes (:mod:`engine.cluster.jobs`)
and its 192-byte partition proofs come back as the task's result. Every host forwards its
event stream through Dask's structured events; the client (:mod:`engine.cluster.farm`) merges
them into one stream, re-based to its own session clock (:mod:`engine.cluster.merge`), that
records, replays and summarizes like a local one. :mod:`engine.cluster.serve` starts the
scheduler and the workers (``sealtop cluster scheduler|worker``).

dask and distributed are an optional extra (``pip install sealtop[cluster]``): :func:`require`
says so in one line where they are missing.
"""

from __future__ import annotations


class ClusterError(RuntimeError):
    """A farm that cannot be used (no scheduler, the scheduler went away, dask missing); str()
    is one line."""


def require() -> None:
    """Raise ClusterError (one line) unless dask.distributed can be imported."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ClusterError(
            "the farm needs dask and distributed: pip install 'sealtop[cluster]'"
        ) from None
