"""The farm's hosts table: one row per host of a farm session (engine.cluster.hosts)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from app.state import fmt_bytes
from app.widgets.render import Palette
from engine.cluster.hosts import HostsState

# the stages a row counts, in the pipeline's order, with a short heading each (synthesized,
# waiting for the key or for room, under its timeline glyph: a word would squeeze the last
# error out of the 160-column table)
STAGE_COLUMNS = (("queued", "queue"), ("synthesizing", "synth"), ("synthesized", "▚"),
                 ("waiting_gpu", "chan"),
                 ("gpu", "gpu"), ("deallocating", "dealloc"), ("finalizing", "final"))


WIDE = 130  # below this many columns the table is drawn compact (hosts_table_compact)


def hosts_table(state: HostsState, pal: Palette, selected: str | None = None,
                width: int = WIDE) -> Table:
    """The hosts as a Rich table; ``selected`` is marked. Under WIDE columns, the compact
    form."""
    if width < WIDE:
        return hosts_table_compact(state, pal, selected)
    table = Table(expand=True, header_style=pal.title, pad_edge=False)
    table.add_column("host", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("GPUs", no_wrap=True)
    table.add_column("busy", justify="right")
    for _, head in STAGE_COLUMNS:
        table.add_column(head, justify="right")
    table.add_column("proofs", justify="right")
    table.add_column("s/proof", justify="right")
    table.add_column("memory / budget", justify="right", no_wrap=True)
    table.add_column("last error", overflow="ellipsis", no_wrap=True, ratio=1)
    for row in state.rows():
        busy = row.busy_pct(state.t)
        spp = row.s_per_proof(state.t)
        gpus = f"{len(row.gpus)}× {row.gpus[0]}" if row.gpus else f"none ({row.backend or '?'})"
        budget = fmt_bytes(row.memory_budget) if row.memory_budget else "unlimited"
        mark = "▸ " if row.name == selected else "  "
        table.add_row(
            Text(mark + row.name, style=pal.accent if row.name == selected else ""),
            Text("up", style=pal.ok) if row.present else Text("left", style=pal.bad),
            gpus,
            "-" if busy is None else f"{busy:.0f}%",
            *(str(row.stages.get(s, 0)) for s, _ in STAGE_COLUMNS),
            str(row.proofs),
            "-" if spp is None else f"{spp:.2f}",
            f"{fmt_bytes(row.memory)} / {budget}",
            Text(row.last_error or "", style=pal.bad if row.last_error else ""),
        )
    return table


def hosts_table_compact(state: HostsState, pal: Palette, selected: str | None = None) -> Table:
    """The hosts in 80 columns: the stages' counts in one column (queue/synth/to chan/chan/
    gpu/dealloc/final), memory with its share of the budget where there is one, no box."""
    table = Table(expand=True, header_style=pal.title, pad_edge=False, box=None,
                  padding=(0, 1))
    table.add_column("host", no_wrap=True, overflow="ellipsis", max_width=14)
    table.add_column("", no_wrap=True)  # up / left
    table.add_column("GPUs", no_wrap=True, overflow="ellipsis", max_width=12)
    table.add_column("busy", justify="right", no_wrap=True)
    table.add_column("q/s/t/c/g/d/f", no_wrap=True)
    table.add_column("proofs", justify="right", no_wrap=True)
    table.add_column("s/pf", justify="right", no_wrap=True)
    table.add_column("memory", justify="right", no_wrap=True)
    table.add_column("last error", overflow="ellipsis", no_wrap=True, ratio=1)
    for row in state.rows():
        busy = row.busy_pct(state.t)
        spp = row.s_per_proof(state.t)
        gpus = f"{len(row.gpus)}×{_short_gpu(row.gpus[0])}" if row.gpus else row.backend or "?"
        mem = fmt_bytes(row.memory) + (f" {100 * row.memory / row.memory_budget:.0f}%"
                                       if row.memory_budget else "")
        mark = "▸" if row.name == selected else " "
        table.add_row(
            Text(mark + row.name, style=pal.accent if row.name == selected else ""),
            Text("up", style=pal.ok) if row.present else Text("left", style=pal.bad),
            gpus,
            "-" if busy is None else f"{busy:.0f}%",
            "/".join(str(row.stages.get(s, 0)) for s, _ in STAGE_COLUMNS),
            str(row.proofs),
            "-" if spp is None else f"{spp:.1f}",
            mem,
            Text(row.last_error or "", style=pal.bad if row.last_error else ""),
        )
    return table


def _short_gpu(name: str) -> str:
    """The GPU's model without its vendor (NVIDIA H200 -> H200), for a narrow column."""
    return name.removeprefix("NVIDIA ").removeprefix("GeForce ").strip() or name


def farm_line(state: HostsState, pal: Palette) -> Text:
    """The farm's totals: hosts up, proofs, its rate."""
    up = sum(1 for r in state.hosts.values() if r.present)
    spp = state.s_per_proof()
    t = Text()
    t.append(" farm ", style="bold reverse")
    t.append(f"  {up} of {len(state.hosts)} host(s) up  {state.proofs} proof(s)")
    t.append("  rate " + ("-" if spp is None else f"{spp:.2f} s/proof ({3600 / spp:.0f}/h)"),
             style=pal.accent)
    return t
