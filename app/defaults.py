"""The console's defaults that more than its entry point reads: the config file a plain
`sealtop` uses and ctrl+s writes, and the refresh interval's range. Kept apart from app.main so
the live source and `sealtop serve` read them without importing the entry point that imports them.
"""

from __future__ import annotations

import argparse
import math

REFRESH_RANGE_S = (0.05, 60.0)
# The config a plain `sealtop` reads when it is in the current folder, and the file ctrl+s
# writes when the console was started without --config: so saved knobs are used next time.
DEFAULT_CONFIG = "sealtop.toml"


def refresh_seconds(text: str) -> float:
    """--refresh: seconds between redraws, a number in REFRESH_RANGE_S (0 would divide by
    zero, a negative value would stop the timer)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds as a number, got {text!r}") from None
    lo, hi = REFRESH_RANGE_S
    if math.isnan(value) or not lo <= value <= hi:
        raise argparse.ArgumentTypeError(f"must be between {lo:g} and {hi:g} seconds, got {text}")
    return value
