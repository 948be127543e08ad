"""Summaries under their old name: everything lives in engine/stream/summary.py."""

from engine.stream.summary import *  # noqa: F401,F403
from engine.stream.summary import (  # noqa: F401
    HOLDING,
    TABLE_COLUMNS,
    TERMINAL,
    JobRecord,
    PartitionRecord,
    RunSummary,
)
