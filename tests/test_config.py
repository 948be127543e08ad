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
session_dir = "/s"
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
