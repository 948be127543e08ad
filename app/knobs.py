"""The console's side of the live knobs, derived from the settings table (engine/settings.py):
their key bindings, one key step, the prompt's reading of a typed value, how a value is shown
(header strip, notices, log) and the list ctrl+s saves.

Adding a knob to the table gives it keys on the dashboard (and a farm host's dashboard, and the
hosts view where the knob says so), a palette prompt, a place in the header and in the save.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from app.state import budget_bytes
from engine.settings import Setting, find, format_size, knob_of, live_settings, parse_size
from kernels.textfmt import fmt_bytes

if TYPE_CHECKING:
    from textual.binding import Binding


def knob_names() -> tuple[str, ...]:
    """The live knobs, in the table's order."""
    return tuple(s.name for s in live_settings())


def _setting(name: str) -> Setting:
    s = find(name)
    if s is None or s.knob is None:
        raise KeyError(name)
    return s


def is_size(name: str) -> bool:
    """Whether the knob is a number of bytes (stepped in whole units, 0 meaning unlimited)."""
    return _setting(name).unit == "bytes"


def step_text(name: str) -> str:
    """One key step as the keys' texts say it: "1", "1 GiB"."""
    step = knob_of(name).step
    if is_size(name):
        return re.sub(r"(\d)([A-Za-z])", r"\1 \2", format_size(step))
    return str(step)


def _text(name: str, direction: int) -> str:
    k = knob_of(name)
    return f"{k.label} {'+' if direction > 0 else '−'}{step_text(name)}"


def bindings(action: str, id_prefix: str = "", up_first: bool = False, hosts_view: bool = False,
             footer: bool = True) -> list[Binding]:
    """Two bindings per live knob, ``action('NAME', ±1)``, ids ``{prefix}{label}-up/-down``.

    ``footer``: only the up key of a knob marked ``footer`` shows in the footer (as "Label+",
    with the full text as tooltip), every other key is hidden; else every key shows with its
    full text. ``hosts_view``: only the knobs the hosts view binds."""
    from textual.binding import Binding  # the rest of this module serves the reducer too

    out: list[Binding] = []
    for s in live_settings():
        k = s.knob
        assert k is not None
        if hosts_view and not k.hosts_view:
            continue
        stem = f"{id_prefix}{k.label.lower()}"
        pair = []
        for direction, key, suffix in ((-1, k.keys[0], "down"), (1, k.keys[1], "up")):
            act = f"{action}('{s.name}', {direction})"
            text = _text(s.name, direction)
            bid = f"{stem}-{suffix}"
            if not footer:
                pair.append(Binding(key, act, text, id=bid))
            elif direction > 0 and k.footer:
                pair.append(Binding(key, act, f"{k.label}+", tooltip=text, id=bid))
            else:
                pair.append(Binding(key, act, text, show=False, id=bid))
        out.extend(reversed(pair) if up_first else pair)
    return out


def knob_keys() -> set[str]:
    """Every key a live knob is bound to."""
    return {key for s in live_settings() if s.knob for key in s.knob.keys}


def next_value(name: str, current: Any, direction: int, mem_total: int) -> int:
    """One key step of a knob from its current value: ±step, never below its least. A size
    with no limit becomes one just above the memory in use (``mem_total`` bytes); either key
    does so."""
    k = knob_of(name)
    if is_size(name):
        b = budget_bytes(current)
        if b is None:
            b = (mem_total // k.step + 2) * k.step
            direction = min(direction, 0)
        return max(k.least, (b // k.step + direction) * k.step)
    return max(k.least, int(current or k.least) + direction * k.step)


def least_text(name: str) -> str:
    """What a key at the knob's end says is its least."""
    k = knob_of(name)
    if is_size(name):
        least = re.sub(r"(\d)([A-Za-z])", r"\1 \2", format_size(k.least))
        return f"{least} (0 in the palette's Set {name}: none)"
    return str(k.least)


def show(name: str, value: Any) -> str:
    """A knob's value for the header, a notice or the log: a size as bytes or "unlimited"."""
    if is_size(name):
        b = budget_bytes(value)
        return fmt_bytes(b) if b else "unlimited"
    return str(value)


def parse_answer(name: str, answer: str) -> Any:
    """The prompt's typed value for the knob; ValueError with the line to show."""
    if is_size(name):
        try:  # a typo must not read as 0, which is no budget at all
            return parse_size(answer)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}; 0 or unlimited for none") from None
    try:
        return int(answer)
    except ValueError:
        raise ValueError(f"{name} needs a whole number") from None


def header_text(name: str, knobs: dict[str, Any]) -> str:
    """The knob in the header strip: "workers 2", "budget unlimited", "channel –" (unknown)."""
    label = knob_of(name).label.lower()
    if is_size(name):
        return f"{label} {show(name, knobs.get(name))}"
    return f"{label} {knobs.get(name, '–')}"
