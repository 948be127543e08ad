"""The farm client's merge, without Dask: re-based clocks, host tags, job ids, a job run again
elsewhere, a proof reported once, and the hosts fold the console's hosts view draws."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from engine.cluster.hosts import fold_hosts
from engine.cluster.jobs import JobResult, JobSpec, host_resources, host_slots
from engine.cluster.merge import TAG, Merge, wall_seconds
from engine.stream import schema
from engine.stream.fold import fold
from engine.stream.schema import check_event
from engine.stream.summary import final_counters, render_all

SESSION = "c0ffee00"
CLIENT_WALL = 1_800_000_000.0  # the client's session start (epoch seconds)


def iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def host_start(wall: float, t: float = 0.0, backend: str = "cpu", gpus: int = 0,
               budget: int = 0) -> dict:
    cfg = {"backend_in_use": backend, "memory_budget": budget, "partition_workers": 1}
    g = [{"index": i, "name": "NVIDIA H200", "memory_total": 141 * 2**30} for i in range(gpus)]
    return schema.session_start(t, cfg, {"cpus": 16, "ram_bytes": 2**37}, g, iso(wall))


def tagged(ev: dict, job: int, session: str = SESSION) -> dict:
    return {**ev, TAG: [session, job]}


def job_events(local: int, gid: int, t0: float, parts: int = 2, prover: str = "cpu0",
               session: str = SESSION, upto: str = "done") -> list[dict]:
    """A host engine's events for one job (local id ``local``), tagged as client job ``gid``."""
    evs = [tagged(schema.job_submitted(t0, local, "tiny", parts, 1000), gid, session)]
    t = t0
    for p in range(parts):
        for st in schema.STAGES:
            t += 0.1
            evs.append(tagged(schema.stage(t, local, p, st, prover if st == "gpu" else "synth-0"),
                              gid, session))
            if st == upto:
                break
        if upto == "done":
            evs.append(tagged(schema.partition_timings(t, local, p, {"gpu_call": 50.0}, 96000),
                              gid, session))
    if upto == "done":
        evs.append(tagged(schema.proof_done(t, local, "ab" * 192 * parts, True, 900.0), gid,
                          session))
    return evs


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def feed(m: Merge, batches: list[tuple[str, list[dict]]]) -> list[dict]:
    """Hand the merge the hosts' events one at a time in the order of their re-based times, as
    they would arrive from hosts working at the same time."""
    items = [(e["t"] + m.hosts[h].offset_s, i, h, e) for h, evs in batches
             for i, e in enumerate(evs)]
    out: list[dict] = []
    for _, _, h, e in sorted(items, key=lambda x: (x[0], x[1])):
        out += m.take(h, [e])
    return out


def farm_session() -> list[dict]:
    """A small farm session built through the merge: hosts hA (cpu) and hB (one GPU), three
    jobs, hB's clock 5 s ahead of the client's, then hA lost while proving job 3, which hB
    proves again; an error on hB. Deterministic, for the view's tests and snapshot."""
    clock = Clock()
    m = Merge(SESSION, CLIENT_WALL, clock)
    out = [m.stamp(lambda t: schema.session_start(t, {"backend_in_use": "farm"},
                                                 {"cpus": 2, "ram_bytes": 2**33}, [],
                                                 iso(CLIENT_WALL)))]
    # hA's engine started 100 s before the client; hB's 5 s after (its t is 5 s behind ours)
    out += m.join("hA", "tcp://10.0.0.1:40001", host_start(CLIENT_WALL - 100.0), {"slots": 2})
    out += m.join("hB", "tcp://10.0.0.2:40002",
                  host_start(CLIENT_WALL + 5.0, backend="cuda", gpus=1, budget=64 * 2**30),
                  {"slots": 2, "cuda_slots": 2})
    clock.t = 6.0
    out += feed(m, [("hA", job_events(1, 1, 106.0)), ("hB", job_events(1, 2, 1.0, prover="gpu0"))])
    out += m.take("hA", [schema.sample(107.0, [{"pid": 1, "role": "orchestrator",
                                                 "rss_anon": 300 * 2**20}], 2**20, {}, [])])
    clock.t = 8.0
    out.append(m.proof(1, "hA", "ab" * 384, True, 2000.0))
    out.append(m.proof(2, "hB", "ab" * 384, True, 1500.0))
    clock.t = 9.0
    out += m.take("hA", job_events(2, 3, 109.0, upto="gpu"))
    clock.t = 10.0
    out += m.leave("hA", "host hA (tcp://10.0.0.1:40001) left the farm")
    out += m.take("hB", job_events(2, 3, 6.0, prover="gpu0"))
    out += m.take("hB", [schema.error(7.5, "gpu0", "ECC error count rising")])
    out += m.take("hB", [schema.sample(7.6, [{"pid": 2, "role": "orchestrator",
                                               "rss_anon": 2 * 2**30}], 2**30, {},
                                       [{"index": 0, "util": 90}])])
    clock.t = 12.0
    out.append(m.proof(3, "hB", "ab" * 384, True, 3000.0))
    return out


def test_host_clocks_are_rebased_to_the_client_session():
    evs = farm_session()
    a_sub = next(e for e in evs if e["kind"] == "job_submitted" and e["host"] == "hA")
    b_sub = next(e for e in evs if e["kind"] == "job_submitted" and e["host"] == "hB")
    assert a_sub["t"] == pytest.approx(6.0) and a_sub["host_t"] == 106.0
    assert b_sub["t"] == pytest.approx(6.0) and b_sub["host_t"] == 1.0
    hosts = {e["host"]: e for e in evs if e["kind"] == "host" and e["state"] == "joined"}
    assert hosts["hA"]["offset_s"] == pytest.approx(-100.0)
    assert hosts["hB"]["offset_s"] == pytest.approx(5.0)
    assert hosts["hB"]["session_start"]["gpus"][0]["name"] == "NVIDIA H200"
    ts = [e["t"] for e in evs]
    assert ts == sorted(ts)  # stream order is t order
    assert all(check_event(e) is None for e in evs), [check_event(e) for e in evs]


def test_job_ids_are_the_clients_and_stage_workers_name_their_host():
    evs = farm_session()
    subs = [(e["job"], e["host"]) for e in evs if e["kind"] == "job_submitted"]
    assert subs == [(1, "hA"), (2, "hB"), (3, "hA"), (3, "hB")]
    workers = {e["worker"] for e in evs if e["kind"] == "stage"}
    assert "hB/gpu0" in workers and "hA/cpu0" in workers and "gpu0" not in workers
    assert not any(TAG in e for e in evs)


def test_a_job_run_again_elsewhere_is_one_job_proven_once():
    evs = farm_session()
    f = fold(evs)
    assert sorted(f.jobs) == [1, 2, 3]
    assert f.proofs_done == 3 and f.proofs_verified == 3
    assert all(j.outcome == "verified" for j in f.jobs.values())
    assert f.jobs[3].parts[0].worker == "hB/finalize" or f.jobs[3].parts[0].stage == "done"
    # every partition ended exactly once, none counted for the lost host
    assert f.counts["done"] == 6 and f.holding() == 0
    left = [e for e in evs if e["kind"] == "host" and e["state"] == "left"]
    assert [e["host"] for e in left] == ["hA"]
    requeued = [e for e in evs if e["kind"] == "stage" and e["worker"] == "farm"]
    assert {(e["job"], e["stage"]) for e in requeued} == {(3, "queued")}
    assert "3 verified" in render_all(evs)


def test_a_proof_is_reported_once_and_stale_attempts_are_dropped():
    m = Merge(SESSION, CLIENT_WALL, Clock())
    m.join("hA", "a", host_start(CLIENT_WALL), {})
    m.join("hB", "b", host_start(CLIENT_WALL), {})
    m.take("hA", job_events(1, 7, 1.0, upto="gpu"))
    m.take("hB", job_events(4, 7, 2.0, upto="gpu"))  # run again on hB: hB is current
    assert m.current[7] == "hB"
    late = m.take("hA", [tagged(schema.stage(3.0, 1, 0, "finalizing", "x"), 7)])
    assert late == []  # the superseded attempt's word no longer counts
    first = m.proof(7, "hB", "00" * 192, True, 10.0)
    assert first is not None and first["host"] == "hB" and first["job"] == 7
    assert m.proof(7, "hA", "00" * 192, True, 10.0) is None
    # a job already reported that starts again somewhere is ignored too
    assert m.take("hA", job_events(9, 7, 5.0, upto="queued")) == []


def test_events_of_other_sessions_and_before_ours_are_dropped():
    m = Merge(SESSION, CLIENT_WALL, Clock())
    m.join("hA", "a", host_start(CLIENT_WALL - 50.0), {})
    other = job_events(1, 1, 60.0, session="someone-else")
    before = [schema.sample(10.0, [], 0, {}, []), schema.knob(20.0, "x", 1, 2, "config")]
    assert m.take("hA", other + before) == []
    assert m.dropped == len(other) + 2
    assert m.take("hA", [schema.sample(51.0, [], 0, {}, [])])[0]["t"] == pytest.approx(1.0)


def test_counters_are_the_sessions_summed_over_hosts():
    """Each host's long-lived engine counts from its start: the session's counters are its last
    sample less its counters when the session began there, summed over the hosts."""
    rng = random.Random()
    names = ("partitions_submitted", "proofs_done", "retries")
    base = {h: {k: rng.randrange(0, 1000) for k in names} for h in ("hA", "hB")}
    grown = {h: {k: base[h][k] + rng.randrange(0, 50) for k in names} for h in ("hA", "hB")}
    m = Merge(SESSION, CLIENT_WALL, Clock())
    events = [m.stamp(lambda t: schema.session_start(t, {}, {}, [], iso(CLIENT_WALL)))]
    events += m.join("hA", "a", host_start(CLIENT_WALL), {}, base["hA"])
    events += m.join("hB", "b", host_start(CLIENT_WALL), {}, base["hB"])
    early = {k: base["hA"][k] + 1 for k in names}
    for h, c, t in (("hA", early, 1.0), ("hB", grown["hB"], 2.0), ("hA", grown["hA"], 3.0)):
        holding = rng.randrange(0, 4)
        events += m.take(h, [schema.sample(t, [], 0, {**c, "holding_abc": holding}, [])])
    c = final_counters(events)
    for k in names:
        assert c[k] == sum(grown[h][k] - base[h][k] for h in ("hA", "hB")), (k, c)
    # a gauge is a level, not a count: its value is the hosts' own, summed
    assert c["holding_abc"] == sum(e["counters"]["holding_abc"] for e in events[-2:])
    # a host seen with no starting counters counts from zero
    m2 = Merge(SESSION, CLIENT_WALL, Clock())
    m2.join("hA", "a", host_start(CLIENT_WALL), {})
    assert m2.take("hA", [schema.sample(1.0, [], 0, grown["hA"], [])])[0]["counters"] == grown["hA"]


def test_events_before_a_host_joined_wait_for_its_offset():
    m = Merge(SESSION, CLIENT_WALL, Clock())
    assert m.take("hA", job_events(1, 1, 1.0, upto="queued")) == []
    out = m.join("hA", "a", host_start(CLIENT_WALL), {})
    assert [e["kind"] for e in out] == ["host", "job_submitted", "stage", "stage"]


def test_a_stop_cancels_what_is_unfinished():
    m = Merge(SESSION, CLIENT_WALL, Clock())
    m.join("hA", "a", host_start(CLIENT_WALL), {})
    m.take("hA", job_events(1, 1, 1.0, upto="gpu"))
    out = m.cancel(1, "farm session stopped")
    assert {(e["partition"], e["stage"]) for e in out} == {(0, "cancelled"), (1, "cancelled")}
    assert m.cancel(1, "again") == []


def test_host_event_is_checked():
    ok = schema.host(1.0, "hA", "joined", "a", {k: 0 for k in schema.REQUIRED["session_start"]},
                     {"slots": 2}, 0.5)
    assert check_event(ok) is None
    assert check_event({**ok, "state": "gone"}) is not None
    assert check_event({**ok, "session_start": {}}) is not None  # joined needs the start
    assert check_event({**ok, "resources": {"slots": "two"}}) is not None
    assert check_event({**schema.error(1.0, "w", "m"), "host": 3}) is not None
    with pytest.raises(ValueError):
        schema.host(1.0, "hA", "gone", "a", {}, {}, 0.0)


def test_job_spec_and_result_travel_as_bytes_and_dicts():
    spec = JobSpec(SESSION, 3, "tiny", 2, 11, "cuda")
    assert JobSpec.from_bytes(spec.to_bytes()) == spec
    assert len(spec.to_bytes()) < 200  # a job, never a buffer
    assert spec.resources() == {"slots": 1.0, "cuda_slots": 1.0}
    assert JobSpec(SESSION, 3, "tiny", 2, 11).resources() == {"slots": 1.0}
    for bad in (b"[]", b'{"job": 1}', JobSpec(SESSION, 1, "tiny", 0, 1).to_bytes()):
        with pytest.raises(ValueError):
            JobSpec.from_bytes(bad)
    res = JobResult(SESSION, 3, "hA", 9, "verified", "ab" * 384, 10.0, 1.0, 1.5, 2.0)
    assert JobResult(**res.to_dict()) == res and len(res.proofs()) == 2
    assert host_slots(2, 3) == 5 and host_slots(2, 3, configured=8) == 8
    assert host_resources("cuda", 5) == {"slots": 5.0, "cuda_slots": 5.0}


def test_hosts_fold():
    evs = farm_session()
    st = fold_hosts(evs)
    a, b = st.hosts["hA"], st.hosts["hB"]
    assert not a.present and b.present
    assert a.proofs == 1 and b.proofs == 2 and st.proofs == 3
    assert b.gpus == ["NVIDIA H200"] and a.gpus == [] and a.backend == "cpu"
    assert b.memory == 2 * 2**30 + 2**30 and b.memory_budget == 64 * 2**30
    assert b.last_error == "ECC error count rising"
    assert a.last_error.startswith("host hA")
    assert b.active() == 0 and b.stages["done"] == 4  # jobs 2 and 3, two partitions each
    assert a.stages["done"] == 2 and a.stages["gpu"] == 0  # job 3's partitions left hA
    busy = b.busy_pct(st.t)
    assert busy is not None and 0 < busy < 100
    last_proof = [e["t"] for e in evs if e["kind"] == "proof_done"][-1]
    assert st.first_job_t == pytest.approx(6.0) and st.t == last_proof
    assert st.s_per_proof() == pytest.approx((last_proof - 6.0) / 3)
    assert wall_seconds(iso(CLIENT_WALL)) == CLIENT_WALL
