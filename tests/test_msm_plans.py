"""scripts/msm_plans.py's plan grammar and its settings' restoration (no GPU needed: the
settings are module attributes of kernels/cuda/msm.py and msm_tree.py)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import msm_plans  # noqa: E402

from kernels.cuda import msm, msm_fold, msm_layout, msm_sort2, msm_tree  # noqa: E402


def test_plan_options_each_set_their_field() -> None:
    rng = random.Random()
    w = rng.randint(1, 24)
    sl = 1 << rng.randint(0, 7)
    slack, per, heavy = rng.randint(1, 8), rng.randint(1, 32), rng.randint(1, 4096)
    opts = [f"w{w}", "bw", rng.choice(["runs", "runs1"]), "sl2", f"s{sl}", "fx", "gf", f"m{slack}", f"p{per}", f"h{heavy}", "nf"]
    rng.shuffle(opts)
    plan = msm_plans.parse_plan("+".join(opts))
    assert plan.window == w and plan.by_window and plan.slice_levels == 2 and plan.gpu_finish and plan.slice_len == sl
    assert plan.runs_slack == slack and plan.sort_windows == per and plan.fold_items == heavy
    assert plan.fold_exact and plan.no_prefold
    assert plan.sort_runs is True and plan.two_pass == ("runs" in opts)
    assert msm_plans.parse_plan("default") == msm_plans.Plan("default")


def test_the_accumulation_option_names_a_rounds_mode_msm_accepts() -> None:
    from kernels.cuda import msm_rounds

    n = random.randint(1, 4096)
    assert msm_plans.parse_plan("w20+r").accumulate == "rounds"
    assert msm_plans.parse_plan("x+sl2").accumulate == "xyzz"
    plan = msm_plans.parse_plan(f"r{n}+fx")
    assert plan.accumulate == f"rounds-l{n}" and plan.fold_exact
    assert msm_rounds.mode(plan.accumulate)["length"] == n


@pytest.mark.parametrize("bad", ["w0", "w25", "wide", "runs2", "w20+", "sl3", "s12", "s0", "s256", "r0", "r4097", "rx",
                                 "m0", "m9", "p0", "p33", "mx", "h0", "h4097", "hx"])
def test_unknown_options_are_refused_by_name(bad: str) -> None:
    with pytest.raises(ValueError, match="unknown option"):
        msm_plans.parse_plan(bad)


def test_settings_apply_inside_and_are_restored_after_an_error() -> None:
    def now() -> tuple[object, ...]:
        return (msm.SORT_BY_WINDOW, msm.SORT_BY_WINDOW_BUCKETS, msm.HOST_FINISH, msm.FOLD_EXACT, msm.RUNS_SLACK,
                msm.FOLD_ITEMS, msm_fold.PREFOLD, msm_sort2.WINDOWS_PER_PASS, msm_tree.SLICE_LEVELS, msm_tree.SLICE_LEN)

    before = now()
    with pytest.raises(RuntimeError):
        with msm_plans.settings(msm_plans.parse_plan("bw+sl2+s8+fx+gf+m3+p5+h48+nf")):
            assert now() == (True, 0, False, True, 3.0, 48, False, 5, 2, 8)
            raise RuntimeError("a plan that failed")
    assert now() == before


def test_without_a_gpu_it_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from kernels.cuda.backend import CudaBackend

    monkeypatch.setattr(CudaBackend, "unavailable_reason", staticmethod(lambda: "no CUDA device present"))
    monkeypatch.setattr(sys, "argv", ["msm_plans.py", "--log", "12", "--plans", "default", "w8+sl2"])
    assert msm_plans.main() == 2
    err = capsys.readouterr().err.strip()
    assert err == "msm_plans.py: needs a GPU: no CUDA device present"


def test_runs_slack_decides_whether_2_24_in_window_20_gets_runs() -> None:
    """At 2^24 scalars in 20-bit windows the runs hold ~2.79 times the exact sort's entries: the
    default bound turns them down, a slack of 3 takes them (and the layout then covers every
    window's buckets, each run at least its mean count)."""
    m, c, nwin = 1 << 24, 20, 13
    bound = msm.R_MOD - 1
    assert msm_layout.bucket_runs(m, c, nwin, bound) is None
    runs = msm_layout.bucket_runs(m, c, nwin, bound, 3.0)
    assert runs is not None
    wbase, wcap, wnb, total = runs
    assert 2 * nwin * m < total <= 3 * nwin * m
    assert int(wbase[-1]) + int(wnb[-1]) * int(wcap[-1]) == total
    assert all(int(cap) * int(nb) >= m for cap, nb in zip(wcap, wnb))
