"""The memory panel's words and order, without a terminal: the budget bar with its % and a
clear "unlimited", and process rows that keep their places whatever their RSS does; the proof
detail's legend, layered timers and kernel line at a 32 GiB sector's figures; the event log at
its newest line when a replay opens at its end."""

from __future__ import annotations

import random
import re
from collections import deque
from pathlib import Path

import pytest

pytest.importorskip("textual")  # the widgets import Textual (absent on the GPU machine)

from rich.console import Console

from app.state import DashboardState, fmt_bytes, fmt_ms, proc_label
from app.widgets.gantt import GANTT_STAGES, TIMER_COLUMNS, layered_timers, legend_lines
from app.widgets.memory import MemoryPanel, budget_line, proc_order
from app.widgets.render import STAGE_GLYPH, Palette
from engine.stream.fold import JobRecord, PartitionRecord

MiB = 2**20
FIXTURE = Path(__file__).parent / "data" / "session_fixture.jsonl"


def _state(held: int, budget: int | None) -> DashboardState:
    s = DashboardState()
    s.stage_bytes = lambda: {"synthesizing": held // 2, "gpu": held - held // 2}  # type: ignore[method-assign]
    s.knobs["memory_budget"] = budget or 0
    return s


def test_budget_line_draws_what_the_budget_counts_with_its_percent():
    budget = random.randint(1, 64) * 1024 * MiB
    held = random.randint(0, 2 * budget)
    state = _state(held, budget)
    assert state.memory_budget == budget
    width = random.randint(30, 60)
    head, bar = budget_line(state, Palette(), width)
    assert head.plain == f"held {fmt_bytes(held)} / {fmt_bytes(budget)} {100 * held / budget:.0f} %"
    full = round(min(1.0, held / budget) * width)
    assert bar.plain == "█" * full + "░" * (width - full)


def test_budget_line_fits_a_narrow_panel():
    """Under 30 cells (the 80x24 memory panel is 26) the head keeps within the width: the
    percent loses its space, then goes (the bar shows it), rather than wrapping onto the bar's
    line (a 32 GiB sector's 62.35 GiB / 62.40 GiB read "100" with "%" on the next line)."""
    for _ in range(50):
        budget = random.randint(1, 999 * 1024) * MiB
        held = random.randint(0, budget)
        width = random.randint(20, 29)
        head, _ = budget_line(_state(held, budget), Palette(), width)
        figures = f"{fmt_bytes(held)} / {fmt_bytes(budget)}"
        pct = f"{100 * held / budget:.0f}"
        assert head.plain in (f"{figures} {pct} %", f"{figures} {pct}%", figures)
        assert head.cell_len <= width or head.plain == figures
        if head.plain == figures:
            assert len(figures) + len(pct) + 2 > width  # the percent really did not fit
        elif head.plain.endswith(f" {pct}%"):
            assert len(figures) + len(pct) + 3 > width


def test_budget_line_says_unlimited_and_draws_no_bar():
    held = random.randint(0, 8 * 1024) * MiB
    head, bar = budget_line(_state(held, None), Palette(), 40)
    assert head.plain == f"held {fmt_bytes(held)}  budget unlimited"
    assert "█" not in bar.plain and "░" not in bar.plain and "no budget" in bar.plain


def test_process_rows_keep_their_order_when_rss_changes():
    procs = [{"role": r, "pid": p, "rss_anon": 0}
             for r, p in [("synth-0", 41), ("synth-1", 42), ("console", 7), ("gpu0", 50)]]
    expected = sorted(procs, key=lambda p: (p["role"], p["pid"]))
    for _ in range(20):
        for p in procs:
            p["rss_anon"] = random.choice((100 * MiB, 200 * MiB))  # often equal, often swapped
        random.shuffle(procs)
        assert sorted(procs, key=proc_order) == expected


def test_process_history_fills_its_column_and_is_never_cut():
    """Each process row's history takes exactly the cells its column has: no row ends in "…"."""
    state = DashboardState()
    state.processes = [{"role": r, "pid": random.randint(100, 99999),
                        "rss_anon": random.randint(1, 40 * 1024) * MiB, "cpu_pct": 3.5}
                       for r in ("orchestrator", "synth-0", "gpu0")]
    for p in state.processes:
        state.proc_hist[proc_label(p)] = deque(random.randint(0, 9) for _ in range(300))
    state.shm_hist.extend(random.randint(0, 9) for _ in range(300))
    for width in (40, random.randint(41, 120)):
        lines = MemoryPanel().render_state(state, Palette(), width).plain.split("\n")
        rows = [ln for ln in lines if ln.startswith(("shm", "orchestr", "synth-0", "gpu0"))]
        assert len(rows) == 4 and all("…" not in ln for ln in lines)
        # the history ends at the panel's edge: the last cell is a spark glyph, not a blank
        assert all(len(ln) == width and ln[-1] in "▁▂▃▄▅▆▇█" for ln in rows)


def test_legend_breaks_between_entries_never_inside_one():
    pal = Palette()
    for width in [30, 72, 74, 200] + [random.randint(30, 120) for _ in range(5)]:
        lines = [t.plain for t in legend_lines(pal, width)]
        assert all(len(ln) <= width for ln in lines)
        text = " ".join(lines)
        expected = [f"{STAGE_GLYPH[s]} {s}" for s in GANTT_STAGES + ("failed",)]
        # every glyph stays beside its word, in order, each entry once
        found = re.findall("|".join(re.escape(e) for e in expected), text)
        assert found == expected
        assert sum(ln.count(e) for ln in lines for e in expected) == len(expected)


def _sector_job(parts: int) -> JobRecord:
    """A proof with a 32 GiB sector's magnitudes: timers from 0.1 ms to minutes."""
    job = JobRecord(job=1, preset="porep-32g", partitions=parts, constraints=130_987_381,
                    submitted=0.0)
    for i in range(parts):
        ms = {k: random.choice((0.1, 1.0, 10.0, 100.0, 1000.0, 10_000.0, 100_000.0))
              * random.uniform(1, 9.9)
              for k in ("queue", "witness", "eval", "channel_wait", "b2", "finalize", "dealloc",
                        "ntt", "msm_h", "msm_a", "msm_b1", "msm_l", "upload")}
        ms["gpu_call"] = sum(ms[k] for k in ("ntt", "msm_h", "msm_a", "msm_b1", "msm_l",
                                             "upload")) + random.uniform(0, 50)
        ms["gpu_wrapper"] = ms["gpu_call"] + random.uniform(0, 50)
        job.parts[i] = PartitionRecord(job=1, index=i, ms=ms)
    return job


def test_layered_timers_keep_whole_labels_and_numbers_at_any_width():
    """The columns kept fit the width as Rich draws them: labels and figures whole (never "…"),
    by priority, and the next column by priority would not have fitted."""
    for width in [74, 156, 196] + [random.randint(40, 200) for _ in range(4)]:
        job = _sector_job(10)
        console = Console(width=width, record=True, color_system=None)
        console.print(layered_timers(job, Palette(), width=width))
        out = console.export_text().rstrip("\n").split("\n")
        assert all(len(ln) <= width for ln in out) and not any("…" in ln for ln in out)
        bars = "wrapper ▕ call ▕ kernels"  # the bars' own header, when they fit
        kept = out[0].split(bars)[0].split()
        assert kept[0] == "part" and len(kept) >= 2
        assert set(kept) == set(TIMER_COLUMNS[:len(kept)])  # a prefix of the priority order
        rows = [ln.split()[:len(kept)] for ln in out[1:]]
        assert [r[0] for r in rows] == [f"p{i}" for i in range(10)]
        keys = {"queue": "queue", "witness": "witness", "eval": "eval", "chan": "channel_wait",
                "wrapper": "gpu_wrapper", "call": "gpu_call", "b2": "b2", "final": "finalize",
                "dealloc": "dealloc"}
        for i, r in enumerate(rows):
            for j, c in enumerate(kept):
                if c in keys:
                    assert r[j] == fmt_ms(job.parts[i].ms[keys[c]])
        if len(kept) < len(TIMER_COLUMNS):  # the next one would not fit beside them
            nxt = TIMER_COLUMNS[len(kept)]
            cells = [len(nxt)] + [len(fmt_ms(job.parts[i].ms.get(keys.get(nxt, ""))))
                                  for i in range(10)]
            used = sum(max(len(c), max(len(r[j]) for r in rows)) + 2
                       for j, c in enumerate(kept))
            assert used + max(cells) + 2 > width


def test_the_32g_detail_at_80x24_keeps_synthesis_before_the_gpu_layers():
    """At a 32 GiB sector synthesis is the long pole (witness + eval ~28 s against ~3.5 s on the
    GPU): the 80x24 detail (74 cells for the table) shows witness and eval for every partition,
    with the GPU's wrapper, call and kernels, rather than dropping them for the layers' gaps."""
    from engine.stream.fold import fold
    from engine.stream.reader import read_recording

    path = Path(__file__).parents[1] / "docs" / "sessions" / "porep-32g-h200.jsonl.gz"
    job = fold(read_recording(path).events).jobs[1]
    console = Console(width=74, record=True, color_system=None)
    console.print(layered_timers(job, Palette(), width=74))
    out = console.export_text().rstrip("\n").split("\n")
    head = out[0].split()
    assert head[:1] == ["part"] and {"witness", "eval", "wrapper", "call", "kernels"} <= set(head)
    col = {c: i for i, c in enumerate(head)}
    for i, line in enumerate(out[1:]):
        cells = line.split()
        for c, key in (("witness", "witness"), ("eval", "eval"), ("wrapper", "gpu_wrapper")):
            assert cells[col[c]] == fmt_ms(job.parts[i].ms[key])
        assert job.parts[i].ms["witness"] + job.parts[i].ms["eval"] > job.parts[i].ms["gpu_wrapper"]


def test_the_serial_32g_detail_at_80x24_shows_the_turn_wait_apart():
    """The five-job porep-32g session with two slots taking turns: at 80x24 the detail's
    kernel lines show each job's mean wait for the turn beside the prover's own host time, the
    figures the fold gives, every line within 74 cells."""
    from app.widgets.gantt import kernel_split
    from engine.stream.fold import fold
    from engine.stream.reader import read_recording

    path = Path(__file__).parents[1] / "docs" / "sessions" / "porep-32g-h200-5jobs.jsonl.gz"
    job = fold(read_recording(path).events).jobs[3]
    console = Console(width=74, record=True, color_system=None)
    console.print(kernel_split(job, Palette(), width=74))
    text = console.export_text()
    assert all(len(line) <= 74 for line in text.split("\n"))
    flat = " ".join(text.split())
    wait, host = job.mean_ms("gpu_wait"), job.mean_ms("gpu_host")
    assert wait is not None and host is not None and host < wait
    assert f"turn wait {fmt_ms(wait)}" in flat and f"prover host {fmt_ms(host)}" in flat
    assert "verified ✓" in flat


def test_kernel_line_breaks_between_groups_never_inside_one():
    """Each kernel group's name and figure (and the wrapper's layers) stay on one line, and no
    line passes the width the detail gives."""
    from app.widgets.gantt import HANDOFF_KEYS, kernel_split
    from engine.stream.schema import KERNEL_KEYS

    job = _sector_job(10)
    for p in job.parts.values():
        p.ms.update({k: random.uniform(0.1, 9.9) for k, _ in HANDOFF_KEYS})
    pairs = [f"{k} {fmt_ms(job.mean_ms(k))}" for k in KERNEL_KEYS if job.mean_ms(k) is not None]
    pairs += [f"{label} {fmt_ms(job.mean_ms(k))}" for k, label in HANDOFF_KEYS]
    for width in [74, 196] + [random.randint(40, 120) for _ in range(4)]:
        lines = kernel_split(job, Palette(), width).plain.split("\n")
        assert all(len(ln.rstrip()) <= width for ln in lines)
        assert all(sum(pair in ln for ln in lines) == 1 for pair in pairs)
        assert lines[0].startswith(" kernels (mean ms): ")
        assert any(ln.startswith(" wrapper outside the call (mean ms): ") for ln in lines)
    assert kernel_split(job, Palette()).plain.count("\n") == 1  # no width: one break, as before


async def test_event_log_opens_at_its_newest_line():
    """A replay opened at its end (sealtop replay --paused) at 80x24: the two-line log shows
    the session's last lines, not its first."""
    from app.console import SealtopApp
    from app.session_io import load_session
    from app.widgets.eventlog import EventLog

    app = SealtopApp("replay", session=load_session(FIXTURE), autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        log = app.screen.query_one(EventLog)
        for _ in range(100):  # under load the follow scroll lands a refresh after the last line
            if log.scroll_y == log.max_scroll_y:
                break
            await pilot.pause(0.05)
        assert len(app.state.log) > log.size.height > 0
        assert log.follow and log.scroll_y == log.max_scroll_y > 0
        last = log.render_line(log.size.height - 1).text
        assert app.state.log[-1].text[:40] in last


async def test_proofs_title_names_the_timers_unit_when_the_bar_is_left_out():
    """At 80x24 the breakdown bar, whose header says "mean ms per partition", does not fit: the
    table's title says it instead; at 200x60 the bar's header does, and the title does not."""
    from app_pilot import wait_for

    from app.console import SealtopApp
    from app.session_io import load_session
    from app.widgets.proofs import ProofsTable

    app = SealtopApp("replay", session=load_session(FIXTURE), autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one(ProofsTable)
        # columns and title come with the first refresh (and the wider ones with the redraw
        # after the resize), which a loaded machine runs later than a fixed pause: wait for them
        await wait_for(pilot, lambda: table.row_count > 0)
        assert "bar" not in [k for k, _, _ in table.columns]
        assert str(table.border_title).endswith("  timers: mean ms per partition")
        await pilot.resize_terminal(200, 60)
        await pilot.pause(0.3)
        app.request_render()
        # the resize fits the columns at once, the title follows at the next redraw
        await wait_for(pilot, lambda: "bar" in [k for k, _, _ in table.columns]
                       and "ms" not in str(table.border_title))
        assert "bar" in [k for k, _, _ in table.columns]
        assert "ms" not in str(table.border_title)
        assert "breakdown (mean ms per partition)" in table.render_line(0).text
