"""The event schema under its old name: everything lives in engine/stream/schema.py."""

from engine.stream.schema import *  # noqa: F401,F403
from engine.stream.schema import (  # noqa: F401 - names the star import leaves out
    ALL_STAGES,
    CANCELLED,
    CONSOLE_LEVELS,
    FAILED,
    HOLDING,
    KERNEL_GROUPS,
    KERNEL_KEYS,
    KINDS,
    REQUIRED,
    SCHEMA_VERSION,
    STAGES,
    SUPPORTED_SCHEMAS,
    TERMINAL,
    TIMER_KEYS,
    Event,
    check_event,
)
