"""engine/config.py: defaults, validation, errors that name file, line and key; fuzzing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.config import (
    ConfigError,
    EngineConfig,
    check_knob,
    format_size,
    load_config,
    parse_config,
    parse_size,
)

ROOT = Path(__file__).resolve().parents[1]
FUZZ_EXAMPLES = int(os.environ.get("SEALTOP_FUZZ_EXAMPLES", "300"))


def test_defaults_from_empty_file():
    cfg = parse_config("")
    assert cfg == EngineConfig()
    assert cfg.b_g2 == "auto"  # B2 where the MSMs run unless the operator says otherwise


@pytest.mark.parametrize("choice", ["auto", "cpu", "gpu"])
def test_b_g2_choices(choice):
    assert parse_config(f'[engine]\nb_g2 = "{choice}"\n').b_g2 == choice


def test_abc_eval_defaults_to_cpu_and_takes_gpu():
    assert parse_config("").abc_eval == "cpu"
    assert parse_config('[engine]\nabc_eval = "gpu"\n').abc_eval == "gpu"
    with pytest.raises(ConfigError, match=r"^f.toml:2: engine.abc_eval: must be one of cpu, gpu, got 'both'$"):
        parse_config('[engine]\nabc_eval = "both"\n', "f.toml")


def test_gpu_calls_defaults_to_parallel_and_takes_serial():
    assert parse_config("").gpu_calls == "parallel"
    assert parse_config('[engine]\ngpu_calls = "serial"\n').gpu_calls == "serial"
    with pytest.raises(ConfigError,
                       match=r"^f.toml:2: engine.gpu_calls: must be one of parallel, serial, got 'turns'$"):
        parse_config('[engine]\ngpu_calls = "turns"\n', "f.toml")
    with pytest.raises(ConfigError, match=r"^f.toml:2: engine.gpu_calls: must be one of parallel, serial, got 2$"):
        parse_config('[engine]\ngpu_calls = 2\n', "f.toml")


def test_full_file_round_trip():
    cfg = parse_config(
        """
[engine]
backend = "cuda"
devices = [0, 1]
partition_workers = 8
gpu_channel_capacity = 3
gpu_slots_per_device = 2
memory_budget = "64GiB"
permit_release = "synthesized"
dealloc = "sync"
b_g2 = "gpu"
[paths]
param_cache = "/p"
[telemetry]
sample_interval_s = 0.25
[jobs]
preset = "chain-64"
partitions = 10
seed = 7
"""
    )
    assert cfg.devices == [0, 1]
    assert cfg.memory_budget == 64 * 2**30
    assert cfg.permit_release == "synthesized" and cfg.dealloc == "sync" and cfg.b_g2 == "gpu"
    assert cfg.sample_interval_s == 0.25 and cfg.partitions == 10 and cfg.seed == 7


@pytest.mark.parametrize("name", ["cpu-only.toml", "single-h200.toml", "dual-gpu.toml"])
def test_sample_configs_load(name):
    cfg = load_config(ROOT / "sample-configs" / name)
    assert cfg.partition_workers >= 1


def test_cpu_backend_defaults_to_no_devices():
    assert parse_config('[engine]\nbackend = "cpu"\n').devices == []


@pytest.mark.parametrize(
    "text, line, key",
    [
        ("[engine]\npartition_workers = 0\n", 2, "engine.partition_workers"),
        ("[engine]\n\n\npartition_workers = \"two\"\n", 4, "engine.partition_workers"),
        ("[engine]\npermit_release = \"early\"\n", 2, "engine.permit_release"),
        ("[engine]\ndealloc = \"later\"\n", 2, "engine.dealloc"),
        ("[engine]\nb_g2 = \"tpu\"\n", 2, "engine.b_g2"),
        ("[engine]\nmemory_budget = \"lots\"\n", 2, "engine.memory_budget"),
        ("[engine]\ndevices = [0, 0]\n", 2, "engine.devices"),
        ("[engine]\nparition_workers = 2\n", 2, "engine.parition_workers"),
        ("[telemetry]\nsample_interval_s = 0\n", 2, "telemetry.sample_interval_s"),
        ("[jobs]\nx = 1\n[engine]\n", 2, "jobs.x"),
        ("[gpu]\nfoo = 1\n", 1, "gpu"),
        ("[jobs]\npartitions = true\n", 2, "jobs.partitions"),
    ],
)
def test_bad_values_name_key_and_line(text, line, key):
    with pytest.raises(ConfigError) as info:
        parse_config(text, "c.toml")
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"c.toml:{line}: {key}:"), msg


def test_the_old_session_dir_key_is_an_unknown_key():
    """paths.session_dir was read by nothing (recordings go where --record says): a config that
    still names it gets the one-line unknown-key error listing the keys [paths] has."""
    with pytest.raises(ConfigError) as info:
        parse_config('[paths]\nparam_cache = "/p"\nsession_dir = "/s"\n', "old.toml")
    msg = str(info.value)
    assert "\n" not in msg
    assert msg == "old.toml:3: paths.session_dir: unknown key (keys of [paths]: param_cache, filecoin_params, damaged_key)"
    assert not hasattr(EngineConfig(), "session_dir")


def test_syntax_error_names_line():
    with pytest.raises(ConfigError) as info:
        parse_config("[engine]\npartition_workers = = 2\n", "c.toml")
    assert str(info.value).startswith("c.toml:2: not valid TOML")


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "nope.toml")
    p = tmp_path / "bin.toml"
    p.write_bytes(b"[engine]\n\xff\xfe = 1\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(p)


def test_sizes():
    assert parse_size("512MiB") == 512 * 2**20
    assert parse_size("2 GB") == 2 * 10**9
    assert parse_size(0) == 0 and parse_size("unlimited") == 0
    assert format_size(64 * 2**30) == "64GiB" and format_size(0) == "unlimited"
    for bad in (-1, True, "12 parsecs", [1]):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_knob_check():
    assert check_knob("partition_workers", 3) == 3
    assert check_knob("memory_budget", "1GiB") == 2**30
    with pytest.raises(ValueError):
        check_knob("partition_workers", 0)
    with pytest.raises(ValueError):
        check_knob("dealloc", "sync")  # not a live knob


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(max_size=300))
def test_fuzz_arbitrary_text_is_config_or_one_line_error(text):
    try:
        cfg = parse_config(text, "f.toml")
    except ConfigError as exc:
        msg = str(exc)
        assert msg.startswith("f.toml") and "\n" not in msg
    else:
        assert isinstance(cfg, EngineConfig)


_values = st.one_of(
    st.integers(-5, 300),
    st.floats(allow_nan=True),
    st.booleans(),
    st.text(max_size=12),
    st.lists(st.integers(-2, 3), max_size=4),
)
_keys = st.sampled_from(
    ["backend", "devices", "partition_workers", "gpu_channel_capacity", "memory_budget",
     "permit_release", "dealloc", "b_g2", "sample_interval_s", "partitions", "preset", "bogus"]
)


def _toml_value(v) -> str:
    import json
    import math

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, (int, list)):
        return json.dumps(v)
    return json.dumps(v)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["engine", "telemetry", "jobs", "paths"]), _keys, _values)
def test_fuzz_structured_values(table, key, value):
    text = f"[{table}]\n{key} = {_toml_value(value)}\n"
    try:
        parse_config(text, "f.toml")
    except ConfigError as exc:
        msg = str(exc)
        assert "\n" not in msg
        assert msg.startswith("f.toml:2: ") or msg.startswith("f.toml:1: "), msg


# -- one validation for every way a value enters --------------------------------------------
_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
_INTS = {"partition_workers": (1, 256), "gpu_channel_capacity": (1, 256),
         "gpu_slots_per_device": (1, 16), "partitions": (1, 1024), "seed": (0, 2**63 - 1),
         "host_slots": (0, 4096), "sector_id": (0, 2**64 - 1)}
_CHOICES = {"backend": ("auto", "cpu", "cuda"), "permit_release": ("delivered", "synthesized"),
            "dealloc": ("async", "sync"), "b_g2": ("auto", "cpu", "gpu"), "abc_eval": ("cpu", "gpu"),
            "stall_action": ("report", "retry"), "damaged_key": ("refuse", "regenerate"),
            "needs": ("any", "cpu", "cuda"), "numa_placement": ("auto", "off"),
            "gpu_calls": ("parallel", "serial")}
_SECONDS = {"sample_interval_s": (0.01, 3600), "stall_after_s": (1, 86400)}
_STRINGS = ("param_cache", "preset")


def _bad(key: str, how: str):
    """A strategy of values for ``key`` that are wrong in the way ``how`` names."""
    if key in ("c1", "filecoin_params"):  # "" is "none" and any path a value: only the type is wrong
        return st.one_of(st.integers(-5, 5), st.booleans(), st.lists(_word, max_size=2))
    if key == "prover_id":  # "" is its "none"; a value is 64 hex digits
        if how == "type":
            return st.one_of(st.integers(-5, 5), st.booleans(), st.lists(_word, max_size=2))
        return st.one_of(_word.filter(lambda w: len(w) != 64), st.just("0x" + "g" * 64))
    if key == "scheduler":  # "" is its "none"; a bad one is not an address with a port
        if how == "type":
            return st.one_of(st.integers(-5, 5), st.booleans(), st.lists(_word, max_size=2))
        return st.one_of(_word, _word.map(lambda w: f"{w}:0"), _word.map(lambda w: f"{w}:99999"))
    if how == "empty":
        return st.just("")
    if key in _INTS:
        lo, hi = _INTS[key]
        if how == "type":
            return st.one_of(_word, st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
                             st.lists(st.integers(0, 3), max_size=2))
        return st.one_of(st.integers(-100, lo - 1), st.integers(hi + 1, hi + 1000)
                         if hi < 2**63 - 1 else st.integers(-100, lo - 1))
    if key in _CHOICES:
        if how == "type":
            return st.one_of(st.integers(-5, 5), st.booleans(), st.lists(_word, max_size=2))
        return _word.filter(lambda w: w not in _CHOICES[key])
    if key in _SECONDS:
        lo, hi = _SECONDS[key]
        if how == "type":
            return st.one_of(_word, st.booleans(), st.lists(st.integers(0, 3), max_size=2))
        below = st.floats(-1e6, lo, exclude_max=True).filter(lambda v: v != 0 or key == "sample_interval_s")
        return st.one_of(below, st.floats(hi, 1e9, exclude_min=True), st.just(float("nan")),
                         st.just(float("inf")))
    if key == "memory_budget":
        if how == "type":
            return st.one_of(st.booleans(), st.lists(st.integers(0, 3), max_size=2),
                             st.floats(0.5, 1e6), _word.filter(lambda w: w not in
                                                                 ("none", "unlimited", "off")))
        return st.integers(-10**12, -1)
    if key == "devices":
        if how == "type":
            return st.one_of(_word, st.integers(0, 3), st.lists(_word, min_size=1, max_size=2))
        return st.one_of(st.lists(st.integers(-50, -1), min_size=1, max_size=3),
                         st.integers(0, 3).map(lambda d: [d, d]))
    assert key in _STRINGS, key
    if how == "type":
        return st.one_of(st.integers(-5, 5), st.booleans(), st.lists(_word, max_size=2))
    return st.just("")  # a string setting has no range: empty is its one bad value


def _table_of(key: str) -> str:
    from engine.config import _LAYOUT

    return next(t for t, keys in _LAYOUT.items() if key in keys)


@st.composite
def _bad_setting(draw):
    from engine.config import KEYS

    key = draw(st.sampled_from(KEYS))
    how = draw(st.sampled_from(("type", "range", "empty")))
    return key, how, draw(_bad(key, how))


_ENGINE_FOR_KNOBS = None


def _unstarted_engine(tmp_path_factory=None):
    global _ENGINE_FOR_KNOBS
    if _ENGINE_FOR_KNOBS is None:
        from engine.pipeline.engine import Engine

        _ENGINE_FOR_KNOBS = Engine(EngineConfig(backend="cpu", devices=[]))
    return _ENGINE_FOR_KNOBS


def test_every_key_is_covered_by_the_bad_value_table():
    from engine.config import KEYS

    assert set(KEYS) == set(_INTS) | set(_CHOICES) | set(_SECONDS) | set(_STRINGS) | {
        "memory_budget", "devices", "scheduler", "c1", "prover_id", "filecoin_params"}


@settings(max_examples=max(60, FUZZ_EXAMPLES // 3), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(_bad_setting())
def test_a_bad_value_is_one_line_through_toml_set_and_set_knob(monkeypatch_session, bad):
    """Every key × {wrong type, out of range, empty}: the config file, `bench pipeline --set`
    and the Engine's set_knob (what the console's prompts call) each refuse it in one line,
    and --set refuses before any work starts."""
    import contextlib
    import io

    from engine.config import KNOBS
    from engine.verbs import cli

    key, how, value = bad
    text = f"[{_table_of(key)}]\n{key} = {_toml_value(value)}\n"
    with pytest.raises(ConfigError) as info:
        parse_config(text, "f.toml")
    assert "\n" not in str(info.value) and f"{_table_of(key)}.{key}:" in str(info.value)

    arg = "" if value == "" else _toml_value(value)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(["bench", "pipeline", "--set", f"{key}={arg}"])
    assert code == 2, (key, value)
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and "--set" in lines[0] and key in lines[0], lines

    with pytest.raises(ValueError) as info:
        _unstarted_engine().set_knob(key, value)
    msg = str(info.value)
    assert "\n" not in msg and (key in msg if key in KNOBS else "unknown knob" in msg)


@pytest.fixture(scope="module")
def monkeypatch_session():
    """--set must refuse before a run starts: a run reaching the runner fails the test."""
    import engine.verbs.bench_pipeline as runner

    mp = pytest.MonkeyPatch()

    def no_run(*a, **k):
        raise AssertionError("a bad --set value reached the runner")

    mp.setattr(runner, "bench_pipeline", no_run)
    mp.setattr(runner, "bench_matrix", no_run)
    yield mp
    mp.undo()


def test_good_values_pass_the_same_check_everywhere():
    from engine.config import validate
    from engine.verbs.bench import _overrides

    assert _overrides(["partition_workers=3", "permit_release=synthesized",
                           "memory_budget=2GiB", "stall_after_s=0"]) == {
        "partition_workers": 3, "permit_release": "synthesized", "memory_budget": 2 * 2**30,
        "stall_after_s": 0.0}
    assert validate("sample_interval_s", 0.5) == 0.5
    with pytest.raises(ValueError, match="unknown setting"):
        validate("parition_workers", 2)


def test_a_config_built_in_code_is_checked_by_the_engine():
    from engine.pipeline.engine import Engine

    with pytest.raises(ConfigError, match="permit_release: must be one of"):
        Engine(EngineConfig(backend="cpu", devices=[], permit_release="bogus"))
    with pytest.raises(ConfigError, match="partition_workers: expected an integer"):
        Engine(EngineConfig(backend="cpu", devices=[], partition_workers="abc"))
