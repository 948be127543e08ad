"""A C1 output as an engine job (engine/c2/job.py): the job a config names, its checks in one
line, the farm's job spec carrying the file's bytes once, and the C2 preset filling a partition
from the file exactly as the command line does."""

from __future__ import annotations

import base64
import dataclasses
import secrets
import zlib

import numpy as np
import pytest

from engine.c2.c1file import C1JobError
from engine.c2.job import c1_job, config_job
from engine.c2.public import Statement, public_inputs
from engine.cluster.jobs import JobSpec
from engine.config import EngineConfig
from engine.pipeline.circuits import resolve
from engine.pipeline.records import Job
from engine.seal.c1json import write_c1
from engine.seal.registry import seal_proof
from engine.seal.sealer import seal_sector
from engine.verbs.cli import main


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    d = tmp_path_factory.mktemp("c1job")
    proof = seal_proof("StackedDrg2KiBV1_1")
    prover, sector = secrets.token_bytes(31) + b"\0", secrets.randbelow(1 << 40)
    c1 = seal_sector(proof, None, prover, sector, secrets.token_bytes(32), secrets.token_bytes(32)).c1
    write_c1(d / "c1.json", c1)
    return d, c1, prover, sector


def test_a_config_naming_a_c1_output_submits_its_sector(sealed):
    d, c1, prover, sector = sealed
    cfg = dataclasses.replace(EngineConfig(), c1=str(d / "c1.json"), prover_id=prover.hex(), sector_id=sector)
    job = config_job(cfg, 5)
    assert job.preset == "c2-2KiB" and job.partitions == 1 and job.source is not None
    assert (job.source.prover_id, job.source.sector_id) == (prover.hex(), sector)
    assert config_job(EngineConfig(), 5) == Job("chain-64", 2, 5)
    with pytest.raises(C1JobError, match="64 hex digits"):
        c1_job(str(d / "c1.json"), "12", sector)
    with pytest.raises(C1JobError, match="cannot read C1 output"):
        c1_job(str(d / "missing.json"), prover.hex(), sector)


def test_run_refuses_a_bad_c1_config_in_one_line(sealed, tmp_path, capsys):
    d, *_ = sealed
    (tmp_path / "c.toml").write_text(f'[engine]\nbackend = "cpu"\n[jobs]\nc1 = "{d / "c1.json"}"\n')
    assert main(["run", "--config", str(tmp_path / "c.toml"), "--jobs", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "prover id" in err[-1] and "Traceback" not in "\n".join(err)
    (tmp_path / "c.toml").write_text('[jobs]\nprover_id = "xyz"\n')
    assert main(["run", "--config", str(tmp_path / "c.toml"), "--jobs", "1"]) == 2
    assert "prover_id" in capsys.readouterr().err


def test_the_preset_fills_a_partition_from_the_file(sealed):
    d, c1, prover, sector = sealed
    job = c1_job(str(d / "c1.json"), prover.hex(), sector)
    pc = resolve(job.preset, None)
    statement = Statement(seal_proof(c1.registered_proof), prover, sector, c1.ticket, c1.seed,
                          c1.comm_d, c1.comm_r)
    assert pc.public_inputs(0, 0, 1, job.source) == public_inputs(statement, 0)
    z = pc.witness(0, 0, 1, None, job.source)
    from engine.groth16.examples import check_witness

    check_witness(pc.r1cs, z)
    other = dataclasses.replace(job.source, sector_id=sector + 1)
    with pytest.raises(ValueError, match="not the one derived"):
        pc.witness(0, 0, 1, np.empty_like(z), other)


def test_a_farm_spec_carries_the_c1_bytes_once(sealed):
    d, *_ = sealed
    raw = (d / "c1.json").read_bytes()
    spec = JobSpec("s", 3, "c2-2KiB", 1, 0, "any", base64.b64encode(zlib.compress(raw)).decode(),
                   "ab" * 32, 9)
    back = JobSpec.from_bytes(spec.to_bytes())
    assert back == spec and zlib.decompress(base64.b64decode(back.c1)) == raw


def test_a_farm_host_writes_the_c1_bytes_once_and_proves_that_file(sealed, tmp_path):
    """engine.cluster.hostengine: the spec's bytes land in the host's own param cache, named by
    their digest (a second job of the same file writes nothing), and the job is that file's."""
    pytest.importorskip("distributed")
    from engine.cluster.hostengine import HostEngine

    d, c1, prover, sector = sealed
    raw = (d / "c1.json").read_bytes()
    cfg = dataclasses.replace(EngineConfig(), param_cache=str(tmp_path / "pc"))
    host = HostEngine(cfg, "h1")
    spec = JobSpec("s", 1, "c2-2KiB", 1, 0, "any", base64.b64encode(zlib.compress(raw)).decode(),
                   prover.hex(), sector)
    job = host._c1_job(spec)
    written = list((tmp_path / "pc" / "c1").iterdir())
    assert len(written) == 1 and written[0].read_bytes() == raw
    assert job.source.c1 == str(written[0]) and job.preset == "c2-2KiB" and job.partitions == 1
    mtime = written[0].stat().st_mtime_ns
    assert host._c1_job(spec) == job and written[0].stat().st_mtime_ns == mtime


def test_the_console_and_an_attached_console_submit_the_configs_c1_output(sealed):
    """The console's submit key (app.live.make_job) and an attached console's submit
    (engine.watchers.job_from_fields) take the config's C1 output when it names one."""
    from app.live import make_job
    from engine.watchers import job_from_fields

    d, c1, prover, sector = sealed
    cfg = dataclasses.replace(EngineConfig(), c1=str(d / "c1.json"), prover_id=prover.hex(), sector_id=sector)
    want = c1_job(str(d / "c1.json"), prover.hex(), sector)
    assert make_job(None, cfg) == want
    assert job_from_fields({}, cfg) == want
    assert job_from_fields({"preset": "tiny", "partitions": 1, "seed": 3}, cfg) == Job("tiny", 1, 3)
    assert make_job(None, EngineConfig(preset="tiny", partitions=1, seed=2)) == Job("tiny", 1, 2)


def test_a_worker_is_sent_its_partition_not_the_file(sealed, tmp_path):
    """The dispatcher's share of a C1 job (PartitionCircuit.inputs) is all a worker needs: the
    witness from it, pickled as a SynthTask carries it, equals the one read from the file, with
    the file gone; a share checked against another sector's statement is refused."""
    import pickle
    import shutil

    d, c1, prover, sector = sealed
    shutil.copy(d / "c1.json", tmp_path / "c1.json")
    job = c1_job(str(tmp_path / "c1.json"), prover.hex(), sector)
    pc = resolve(job.preset, None)
    assert pc.inputs is not None
    want = pc.witness(0, 0, 1, None, job.source)
    share = pickle.loads(pickle.dumps(pc.inputs(0, 0, 1, job.source)))
    (tmp_path / "c1.json").unlink()
    assert np.array_equal(pc.witness(0, 0, 1, None, job.source, share), want)
    other = dataclasses.replace(share.statement, sector_id=sector + 1)
    with pytest.raises(ValueError, match="not the one derived"):
        pc.witness(0, 0, 1, None, job.source, dataclasses.replace(share, statement=other))


def test_the_dispatcher_fails_a_partition_whose_input_cannot_be_read(sealed, tmp_path):
    """engine.pipeline.job_inputs: a C1 file gone before dispatch is one line for the partition;
    the look-ahead makes a synthetic job's input once, which the dispatcher then finds made."""
    import shutil

    from engine.pipeline.job_inputs import JobInputs, one_line
    from engine.pipeline.records import JobRecord

    d, c1, prover, sector = sealed
    shutil.copy(d / "c1.json", tmp_path / "c1.json")
    job = c1_job(str(tmp_path / "c1.json"), prover.hex(), sector)
    (tmp_path / "c1.json").unlink()
    js = JobRecord(1, job, resolve(job.preset, None), "", None, 0.0)
    inputs = JobInputs()
    with pytest.raises(C1JobError) as err:
        inputs.partition(js, 0)
    assert one_line(err.value).startswith("C1JobError: cannot read C1 output")
    seed = secrets.randbelow(1 << 30)
    synthetic = JobRecord(2, Job("c2-2KiB", 1, seed), resolve("c2-2KiB", None), "", None, 0.0)
    inputs.look_ahead(synthetic)
    inputs.look_ahead(synthetic)  # once per job: the second call starts nothing
    share = inputs.partition(synthetic, 0)
    assert share.part.k == 0 and share.statement.prover_id != prover
    assert inputs.partition(synthetic, 0) == share
    assert np.array_equal(synthetic.circuit.witness(seed, 0, 1, None, None, share),
                          synthetic.circuit.witness(seed, 0, 1))


def test_a_job_of_more_partitions_than_a_sector_has_is_refused_in_one_line(tmp_path, capsys):
    pc = resolve("c2-2KiB", None)
    pc.check_partitions(1)
    with pytest.raises(ValueError, match="at most 1 partition a job, not 2"):
        pc.check_partitions(2)
    with pytest.raises(ValueError, match="at least one"):
        pc.check_partitions(0)
    resolve("tiny", str(tmp_path)).check_partitions(64)  # the engine's own presets: any number
    # the bench's default of two partitions a job, before any engine starts
    assert main(["bench", "pipeline", "--preset", "c2-2KiB", "--jobs", "1", "--set", 'backend="cpu"']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("c2-2KiB proves at most 1 partition a job, not 2") and len(err) == 1
