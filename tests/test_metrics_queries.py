"""The host-overhead query that docs/METRICS.md gives operators, evaluated by Prometheus's own
promtool on synthetic series of the exporter's phase histogram: the serial slots' wait for
their turn comes out of the wrapper, a session without that phase still gets a figure, and the
unsummed form (series of different `phase` labels divided) gives nothing."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed")
METRICS = Path(__file__).parent.parent / "docs" / "METRICS.md"


def _overhead_query() -> str:
    text = " ".join(METRICS.read_text().split())
    m = re.search(r"host overhead share `([^`]+)`", text)
    assert m, "docs/METRICS.md gives no host overhead query"
    return m.group(1)


def _series(name: str, phase: str, per_min: int) -> str:
    return f"      - series: '{name}{{phase=\"{phase}\"}}'\n        values: '0+{per_min}x10'\n"


def _run(tmp_path: Path, series: str, expr: str, want: float | None) -> subprocess.CompletedProcess[str]:
    exp = f"\n          - labels: '{{}}'\n            value: {want}" if want is not None else " []"
    (tmp_path / "rules.yml").write_text("groups: []\n")
    (tmp_path / "t.yml").write_text(
        "rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n"
        + series
        + f"    promql_expr_test:\n      - expr: '{expr}'\n        eval_time: 10m\n        exp_samples:{exp}\n")
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, "test", "rules", str(tmp_path / "t.yml")], capture_output=True, text=True,
                          timeout=60)


H = "sealtop_phase_duration_seconds_sum"


def test_the_overhead_query_leaves_the_turn_wait_out(tmp_path: Path) -> None:
    q = _overhead_query()
    # per second: wrapper 2, wait 1, kernels 0.5: (2 - 1) / 0.5 - 1 = 1
    serial = _series(H, "gpu_wrapper", 120) + _series(H, "gpu_wait", 60) + _series(H, "gpu_kernels", 30)
    r = _run(tmp_path, serial, q, 1.0)
    assert r.returncode == 0, r.stdout + r.stderr
    # no wait recorded (one slot, or a session before it): wrapper 1.5, kernels 1: 0.5
    plain = _series(H, "gpu_wrapper", 90) + _series(H, "gpu_kernels", 60)
    r = _run(tmp_path, plain, q, 0.5)
    assert r.returncode == 0, r.stdout + r.stderr
    # the check sees a wrong figure: the same series, 1.0 expected
    assert _run(tmp_path, plain, q, 1.0).returncode != 0


def test_the_unsummed_ratio_matches_no_series(tmp_path: Path) -> None:
    old = f"rate({H}{{phase=\"gpu_wrapper\"}}[5m]) / rate({H}{{phase=\"gpu_kernels\"}}[5m]) - 1"
    series = _series(H, "gpu_wrapper", 90) + _series(H, "gpu_kernels", 60)
    r = _run(tmp_path, series, old, None)
    assert r.returncode == 0, r.stdout + r.stderr
