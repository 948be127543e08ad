"""bench pipeline --one-engine: each job's progress line sits under its own variant's header
(the warm-up job under the warm-up's), though the lines are printed by the run's progress
thread behind the stream and the headers by the plan."""

from __future__ import annotations

import io
import random
import re
import threading
import time

import pytest

from engine.verbs.bench_pipeline import _SaidJobs


def test_said_jobs_waits_for_the_lines_of_the_jobs_asked():
    out = io.StringIO()
    said = _SaidJobs(out)
    jobs = random.sample(range(1, 50), random.randint(1, 4))

    def late() -> None:
        for j in jobs:
            time.sleep(0.05)
            said.write(f"[ {random.uniform(0, 99):7.2f}s] job {j} done in 0.10 s: verified\n")

    threading.Thread(target=late).start()
    assert said.wait_for(jobs)
    assert sorted(int(m) for m in re.findall(r"job (\d+) ", out.getvalue())) == sorted(jobs)
    said.WAIT_S = 0.2
    said.write("  a note about job 999 from the engine\n")  # not a job's end line
    assert said.wait_for([999]) is False


@pytest.mark.slow
def test_one_engine_progress_lines_sit_under_their_variants(tmp_path, monkeypatch, capsys):
    """On a loaded machine the progress thread lags the stream: made so here (each batch of
    lines held back a moment), the headers must still come above their variants' lines."""
    import engine.verbs.runner as runner
    from engine.verbs.bench_pipeline import Bench, bench_matrix

    take = runner._Progress.take

    def lagging(self, batch):  # the progress thread behind the plan, as under load
        time.sleep(0.3)
        take(self, batch)

    monkeypatch.setattr(runner._Progress, "take", lagging)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    jobs = random.randint(1, 3)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[engine]\nbackend = "cpu"\npartition_workers = 1\n[paths]\n'
                   f'param_cache = "{tmp_path / "params"}"\n[jobs]\npartitions = 1\n')
    code = bench_matrix("dealloc", Bench("chain-256", jobs, config_path=str(cfg), one_engine=True))
    err = capsys.readouterr().err
    assert code == 0, err
    under: dict[str, list[int]] = {}
    header = None
    for line in err.splitlines():
        if line.startswith("--- "):
            header = line[4:].split(":")[0].split(" (")[0]
            under[header] = []
        elif m := re.match(r"^\[\s*[0-9.]+s\] job (\d+) done", line):
            assert header is not None, err
            under[header].append(int(m.group(1)))
    assert under == {"warm-up": [1],
                     "dealloc=async": list(range(2, 2 + jobs)),
                     "dealloc=sync": list(range(2 + jobs, 2 + 2 * jobs))}, err
