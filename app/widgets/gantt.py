"""Proof detail renderables: the per-partition stage Gantt and the layered timers.

Plain Rich renderables (the detail screen wraps them in Statics), so a snapshot of the screen is
a picture of these functions' output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.cells import cell_len
from rich.console import Group
from rich.table import Table
from rich.text import Text

from app.state import ALL_STAGES, STAGES, JobState, fmt_ms, fmt_s
from app.widgets.render import STAGE_GLYPH, Palette
from engine.stream.schema import KERNEL_KEYS

GANTT_STAGES = STAGES[:-1]  # `done` ends the bar


def gantt(job: JobState, now: float, width: int, pal: Palette) -> Group:
    """One line per partition: each cell is the stage the partition was in at that time."""
    start = job.submitted
    end = job.done_t or max([now] + [max(p.entered.values()) for p in job.parts.values() if p.entered])
    span = max(end - start, 1e-6)
    bar_w = max(10, width - 12)
    lines = []
    axis = Text(" " * 9)
    axis.append(f"{0:<.2f}s".ljust(bar_w // 2))
    axis.append(f"{span / 2:.2f}s".ljust(bar_w - bar_w // 2 - 8))
    axis.append(f"{span:.2f}s".rjust(8))
    lines.append(axis)
    for idx in sorted(job.parts):
        p = job.parts[idx]
        order = {s: i for i, s in enumerate(ALL_STAGES)}
        # ties (a stage passed through in the same instant) resolve in pipeline order
        marks = sorted((t, order.get(s, 0), s) for s, t in p.entered.items())
        row = Text(f" p{idx:<3}", style="bold")
        row.append(" │ ")
        for c in range(bar_w):
            tc = start + (c + 0.5) / bar_w * span
            cur = None
            for t, _, s in marks:
                if t <= tc:
                    cur = s
            if cur is None or cur == "done":
                row.append(" ")
            else:
                row.append(STAGE_GLYPH.get(cur, "?"), style=pal.stage_style(cur))
        if p.attempts > 1:
            row.append(f" retry×{p.attempts - 1}", style=pal.warn)
        lines.append(row)
    lines.extend(legend_lines(pal, width - 4))
    return Group(*lines)


def legend_lines(pal: Palette, width: int) -> list[Text]:
    """The stages' glyphs and words, on as many lines of ``width`` cells as they need: a line
    breaks between entries, never between a glyph and its word (a wrapped "▓" alone at a line's
    end no longer says what it stands for)."""
    entries = [((f" {STAGE_GLYPH[s]}", pal.stage_style(s)), (f" {s}", ""))
               for s in GANTT_STAGES + ("failed",)]
    return _flow(entries, width, indent="   ")


Piece = tuple[str, str]  # text and its style ("" for the line's own)


def _flow(entries: Sequence[Sequence[Piece]], width: int | None, indent: str,
          first: str | None = None) -> list[Text]:
    """``entries`` on lines of at most ``width`` cells (no limit for None), each line starting
    with ``indent`` (the first with ``first``, where given): a line breaks between entries,
    never inside one, so a name keeps its glyph or its figure. An entry wider than a line has
    a line of its own rather than being cut."""
    lines = [Text(indent if first is None else first)]
    for entry in entries:
        n = sum(cell_len(text) for text, _ in entry)
        used = lines[-1].cell_len
        if width is not None and used > cell_len(indent) and used + n > width:
            lines.append(Text(indent))
        for text, style in entry:
            lines[-1].append(text, style=style)
    return lines


# The layered timers' columns, in the order a narrow screen keeps them (never cut to "…"):
# synthesis (witness, eval) before the GPU's layers, since at a 32 GiB sector it is the long pole
# (20 s against 3.5 s on the GPU) and 80x24 dropped it; the waits (queue, chan) after the layers,
# as the timeline above draws them too.
# "input" (the part of queue spent making or reading the job's input) comes last: a wide screen's
# detail, where a first partition's queue needs explaining.
TIMER_COLUMNS = ("part", "witness", "eval", "wrapper", "call", "kernels", "wrap−call",
                 "call−kern", "queue", "chan", "b2", "final", "dealloc", "input")
_TIMER_ORDER = ("part", "queue", "input", "witness", "eval", "chan", "wrapper", "call", "kernels",
                "wrap−call", "call−kern", "b2", "final", "dealloc")


def timer_columns(width: int, bar_w: int = 30,
                  cell_w: Mapping[str, int] | None = None) -> tuple[list[str], bool]:
    """The timer columns that fit ``width`` cells, and whether the bars fit beside them.

    A column takes what the table gives it: its widest cell (``cell_w``, the label at least;
    6 where not given) and one blank on each side. Counting less let five-digit timers (a
    partition's 13 s witness) push the table past its width, and Rich then cut labels to "…"."""
    used = 0
    kept: list[str] = []
    for label in TIMER_COLUMNS:
        w = max(len(label), (cell_w or {}).get(label, 6)) + 2
        if used + w > width and kept:
            break
        kept.append(label)
        used += w
    return [c for c in _TIMER_ORDER if c in kept], used + bar_w + 2 <= width


def layered_timers(job: JobState, pal: Palette, bar_w: int = 30, width: int = 200) -> Table:
    """Per partition: wrapper, call and kernel side by side, with the gaps between layers; on
    a narrow screen the columns that fit, by priority."""
    top = max((p.ms.get("gpu_wrapper", 0.0) for p in job.parts.values()), default=0.0) or 1.0
    rows: list[tuple[dict[str, Text], Text]] = []
    for idx in sorted(job.parts):
        p = job.parts[idx]
        wrap, call, kern = p.ms.get("gpu_wrapper"), p.ms.get("gpu_call"), p.kernel_ms
        g1 = wrap - call if wrap is not None and call is not None else None
        g2 = call - kern if call is not None and kern is not None else None
        bars = Text()
        for v, style in ((wrap, pal.seg_style("gpu")), (call, pal.accent), (kern, pal.ok)):
            n = int(round((v or 0) / top * (bar_w // 3 - 1)))
            bars.append(("█" if not pal.mono else "▓") * n, style=style)
            bars.append(" " * (bar_w // 3 - 1 - n) + "▕")
        cells = {
            "part": Text(f"p{idx}"), "queue": Text(fmt_ms(p.ms.get("queue"))),
            "input": Text(fmt_ms(p.ms.get("inputs"))),
            "witness": Text(fmt_ms(p.ms.get("witness"))), "eval": Text(fmt_ms(p.ms.get("eval"))),
            "chan": Text(fmt_ms(p.ms.get("channel_wait"))),
            "wrapper": Text(fmt_ms(wrap)), "call": Text(fmt_ms(call)), "kernels": Text(fmt_ms(kern)),
            "wrap−call": Text(fmt_ms(g1), style=pal.warn if g1 and wrap and g1 > 0.1 * wrap else ""),
            "call−kern": Text(fmt_ms(g2), style=pal.warn if g2 and call and g2 > 0.1 * call else ""),
            "b2": Text(fmt_ms(p.ms.get("b2"))), "final": Text(fmt_ms(p.ms.get("finalize"))),
            "dealloc": Text(fmt_ms(p.ms.get("dealloc"))),
        }
        rows.append((cells, bars))
    cell_w = {c: max((r[c].cell_len for r, _ in rows), default=0) for c in TIMER_COLUMNS}
    columns, bars_fit = timer_columns(width, bar_w, cell_w)
    t = Table(expand=True, box=None, padding=(0, 1), header_style=pal.title)
    for label in columns:
        t.add_column(label, justify="right", no_wrap=True)
    if bars_fit:
        t.add_column("wrapper ▕ call ▕ kernels", no_wrap=True, min_width=bar_w)
    for cells, bars in rows:
        t.add_row(*[cells[c] for c in columns], *([bars] if bars_fit else []))
    return t


def kernel_split(job: JobState, pal: Palette, width: int | None = None) -> Text:
    """Mean kernel time by group across partitions: NTT, MSM H, A, B1, L. Within ``width``
    cells a line breaks between groups, never between a name and its figure (a lone "0.7" at
    the start of a line no longer says whose it is)."""
    entries: list[Sequence[Piece]] = [((" kernels (mean ms): ", pal.dim),)]
    for k in KERNEL_KEYS:
        if k == "abc" and job.mean_ms(k) is None:  # a group of abc_eval = "gpu" only
            continue
        entries.append(((f"{k} ", pal.dim), (f"{fmt_ms(job.mean_ms(k))}  ", "bold")))
    status = job.status
    if status == "done":
        entries.append((("  proof ", pal.dim), ("verified ✓", pal.ok)))
    elif status in ("bad", "failed"):
        entries.append((("  proof ", pal.dim), ("FAILED ✗", pal.bad)))
    else:
        entries.append((("  proof ", pal.dim), (status, "")))
    if job.total_ms is not None:
        entries.append(((f"  total {fmt_s(job.total_ms)}", "bold"),))
    reasons = [p.reason for p in job.parts.values() if p.reason]
    if reasons:
        entries.append(((f"  reason: {reasons[0]}", pal.bad),))
    lines = _flow(entries, width, indent=" ", first="")
    handoff = [(label, job.mean_ms(key)) for key, label in HANDOFF_KEYS
               if key not in OPTIONAL_HANDOFF or job.mean_ms(key) is not None]
    if any(v is not None for _, v in handoff):
        # the wrapper's time outside the prover's call, on a line of its own (sessions
        # recorded before these layers existed simply do not show it)
        layers: list[Sequence[Piece]] = [(("wrapper outside the call (mean ms): ", pal.dim),)]
        layers += [((f"{label} ", pal.dim), (f"{fmt_ms(v)}  ", "bold")) for label, v in handoff]
        lines += _flow(layers, width, indent=" ")
    out = Text(style=pal.dim)  # the line's base style, as it always was: dim, figures bold
    for i, line in enumerate(lines):
        out.append("\n" if i else "")
        out.append(line)
    return out


# The wrapper's layers outside the prover's call (engine/events.py), as the detail view names them.
HANDOFF_KEYS = (("gpu_dispatch", "dispatch"), ("gpu_host", "prover host"), ("gpu_wait", "turn wait"),
                ("gpu_return", "return"))
# layers a session may not have recorded (gpu_wait: before the gpu_calls setting), left off then
OPTIONAL_HANDOFF = frozenset(("gpu_wait",))


__all__ = ["gantt", "layered_timers", "kernel_split", "ALL_STAGES"]
