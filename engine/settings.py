"""Every setting of the engine, declared once: its name, TOML table, default, check, unit and doc;
a live knob also with how the engine applies it and how the console steps it.

The declaration is the :class:`EngineConfig` dataclass itself: each field's ``setting(...)``
carries the rest in the field's metadata, so the field's name and type are written once and the
type checker still sees an ordinary dataclass. Everything that lists settings is derived from it
(:data:`SETTINGS`, :data:`KNOBS`): the config file's tables and checks (engine/config.py), the
dispatch of ``Engine.set_knob``, the exporter's knob gauges, the farm's slot resize, and in the
console its knob keys, prompts, save list and header (app/knobs.py).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# ---- the checks a value goes through wherever it comes from ------------------------------------

BACKENDS = ("auto", "cpu", "cuda")
PERMIT_RELEASE = ("delivered", "synthesized")
DEALLOC = ("async", "sync")
B_G2 = ("auto", "cpu", "gpu")  # auto: where the MSMs run (on an H200, GPU B2 is 18 ms at 2^20)
# where a = A·z, b = B·z, c = C·z are evaluated: "cpu" in the synthesis workers (a, b, c and z
# sent); "gpu" in the prover, where H runs, from a compact witness (bitmaps + general values,
# engine.groth16.compact) -- on the cpu backend that prover evaluates on the CPU, and says so
ABC_EVAL = ("cpu", "gpu")
STALL_ACTIONS = ("report", "retry")  # retry: kill the stalled worker, the partition runs elsewhere
DAMAGED_KEY = ("refuse", "regenerate")  # a cached key that fails its checksum
NEEDS = ("any", "cpu", "cuda")  # which farm hosts a job may run on
# auto: each GPU's synthesis workers run on the CPUs of its NUMA node (engine.pipeline.placement;
# every allowed CPU where sysfs does not say); off: workers run wherever the kernel puts them
NUMA_PLACEMENT = ("auto", "off")
# parallel: each prover slot's GPU call runs beside the others' (a working set on the GPU per
# slot); serial: a GPU's slots take turns, one call at a time, a waiting slot reading, parsing and
# uploading its next witness meanwhile (engine.pipeline.workers)
GPU_CALLS = ("parallel", "serial")

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
GiB = 1024**3


def parse_size(value: Any) -> int:
    """Bytes from an int or a string like "64GiB", "512 MB", "0"; 0 means unlimited.

    Raises ValueError (with the reason) on anything else.
    """
    if isinstance(value, bool):
        raise ValueError("expected a size such as 64GiB or a number of bytes")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return value
    if isinstance(value, str):
        if value.strip().lower() in ("none", "unlimited", "off"):
            return 0
        m = _SIZE_RE.match(value)
        if m and m.group(2).lower() in _UNITS:
            return int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    raise ValueError(f"expected a size such as 64GiB or a number of bytes, got {value!r}")


def format_size(n: int) -> str:
    """The inverse of parse_size for display: 0 → "unlimited", else the largest exact binary unit."""
    if n == 0:
        return "unlimited"
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        k = _UNITS[unit.lower()]
        if n % k == 0:
            return f"{n // k}{unit}"
    return str(n)


def default_param_cache() -> str:
    """Where keys are cached when the config does not say: $XDG_CACHE_HOME/sealtop/params when
    XDG_CACHE_HOME is set (an absolute path, as the XDG base directory spec requires: a relative
    one is ignored), else ~/.cache/sealtop/params. Read when a config is made, so the engine's
    worker processes use the path their parent chose."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return str(Path(xdg) / "sealtop" / "params")
    return "~/.cache/sealtop/params"


def _int(value: Any, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        rng = f"at least {lo}" if hi is None else f"between {lo} and {hi}"
        raise ValueError(f"must be {rng}, got {value}")
    return value


def _count(lo: int, hi: int) -> Callable[[Any], int]:
    """A whole number in [lo, hi]."""
    return lambda value: _int(value, lo, hi)


def _choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in options:
            raise ValueError(f"must be one of {', '.join(options)}, got {value!r}")
        return value

    return check


def _str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def _optional_path(value: Any) -> str:
    """A file's path, or "" for none."""
    if not isinstance(value, str):
        raise ValueError(f"expected a file path or \"\", got {value!r}")
    return value


def _hex32_or_empty(value: Any) -> str:
    """32 bytes as 64 hex digits (an optional 0x), or "" for none."""
    if value == "":
        return ""
    if not isinstance(value, str) or not re.fullmatch(r"(0x)?[0-9a-fA-F]{64}", value):
        raise ValueError(f"expected 32 bytes as 64 hex digits, got {value!r}")
    return value.removeprefix("0x").lower()


def _devices(value: Any) -> list[int]:
    if not isinstance(value, list):
        raise ValueError(f"expected a list of GPU indices such as [0, 1], got {value!r}")
    out = [_int(v, 0, 1023) for v in value]
    if len(set(out)) != len(out):
        raise ValueError(f"lists a device twice: {value!r}")
    return out


def _seconds(lo: float, hi: float, off: bool = False) -> Callable[[Any], float]:
    """Seconds as a number in [lo, hi] (NaN and infinities refused); with ``off``, 0 too."""

    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected seconds as a number, got {value!r}")
        if off and value == 0:
            return 0.0
        if not lo <= float(value) <= hi:
            extra = " (or 0 for off)" if off else ""
            raise ValueError(f"must be between {lo:g} and {hi:g} seconds{extra}, got {value}")
        return float(value)

    return check


_ADDRESS_RE = re.compile(r"^(?:(tcp|tls)://)?[A-Za-z0-9_.\-\[\]:]+:(\d{1,5})$")


def _scheduler(value: Any) -> str:
    """A Dask scheduler address, tcp://HOST:PORT or HOST:PORT; "" for none."""
    if value == "":
        return ""
    if not isinstance(value, str):
        raise ValueError(f"expected an address such as tcp://10.0.0.5:8786, got {value!r}")
    m = _ADDRESS_RE.match(value.strip())
    if not m or not 1 <= int(m.group(2)) <= 65535:
        raise ValueError(f"expected an address such as tcp://10.0.0.5:8786, got {value!r}")
    return value.strip() if m.group(1) else f"tcp://{value.strip()}"


# ---- what a setting is ------------------------------------------------------------------------


@dataclass(frozen=True)
class Knob:
    """How a live setting changes while the engine runs, and how the console steps it."""

    apply: str  # the Engine method that puts a new value into effect (after the knob event)
    label: str  # the console's word: key texts ("Workers −1"), binding ids, the header strip
    keys: tuple[str, str]  # the console keys that step it (down, up)
    step: int = 1  # one key press
    least: int = 1  # the smallest value a key steps to
    footer: bool = False  # the up key shows in the dashboard's footer (as "Label+")
    hosts_view: bool = True  # bound in the farm's hosts view too (every host's own value)
    farm_slots: bool = False  # a change resizes a farm host's Dask slots (engine.cluster.jobs)
    guard: str = ""  # an Engine method refusing a value it cannot take now ("" for none)
    # a gauge of its own, absent while the value is 0 (else sealtop_knob_value{knob=NAME})
    gauge: str = ""
    gauge_help: str = ""


@dataclass(frozen=True)
class Setting:
    """One setting: its key in [table] of the config file, its default, the check every value
    goes through (returning the stored form), its unit ("" for a count or a word) and doc."""

    name: str
    table: str
    default: Any
    check: Callable[[Any], Any]
    unit: str
    doc: str
    knob: Knob | None = None


@dataclass(frozen=True)
class _Spec:
    """What a field's metadata holds; the field gives the name and default."""

    table: str
    check: Callable[[Any], Any]
    unit: str
    doc: str
    knob: Knob | None


def setting(table: str, default: Any, check: Callable[[Any], Any], doc: str, *, unit: str = "",
            knob: Knob | None = None, factory: Callable[[], Any] | None = None) -> Any:
    """A field of EngineConfig declaring one setting (``factory`` for a default made afresh)."""
    meta = {"setting": _Spec(table, check, unit, doc, knob)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


# ---- the table --------------------------------------------------------------------------------


@dataclass
class EngineConfig:
    """Every setting the engine reads. Knob fields (those with a ``knob``) may change while
    running."""

    backend: str = setting("engine", "auto", _choice(BACKENDS),
                           "where the proofs run; auto: cuda when a GPU answers, else cpu")
    devices: list[int] = setting("engine", [0], _devices,
                                 "the GPUs used, by index ([] on the cpu backend)",
                                 factory=lambda: [0])
    partition_workers: int = setting(
        "engine", 2, _count(1, 256), "synthesis workers: partitions synthesized at once",
        knob=Knob(apply="_apply_workers", label="Workers", keys=("w", "W"), footer=True,
                  farm_slots=True))
    gpu_channel_capacity: int = setting(
        "engine", 2, _count(1, 256),
        "synthesized partitions that may wait for a prover (the channel's capacity)",
        knob=Knob(apply="_apply_channel", label="Channel", keys=("c", "C"), farm_slots=True))
    gpu_slots_per_device: int = setting("engine", 1, _count(1, 16),
                                        "partitions each GPU proves at once")
    gpu_calls: str = setting("engine", "parallel", _choice(GPU_CALLS),
                             "how a GPU's slots share it: calls side by side (parallel), or one "
                             "at a time while the others read and upload their next (serial)")
    memory_budget: int = setting(
        "engine", 0, parse_size, "bytes of partition buffers; 0 = unlimited", unit="bytes",
        knob=Knob(apply="_apply_budget", label="Budget", keys=("m", "M"), step=GiB, least=GiB,
                  hosts_view=False, guard="_guard_budget", gauge="sealtop_memory_budget_bytes",
                  gauge_help="Budget for partition buffers (absent when unlimited)"))
    permit_release: str = setting("engine", "delivered", _choice(PERMIT_RELEASE),
                                  "when a synthesis permit is given back: once the partition "
                                  "is delivered to a prover, or once it is synthesized")
    dealloc: str = setting("engine", "async", _choice(DEALLOC),
                           "whether a partition's buffers are freed off the proving path")
    b_g2: str = setting("engine", "auto", _choice(B_G2), "where the B in G2 MSM runs")
    abc_eval: str = setting("engine", "cpu", _choice(ABC_EVAL),
                            "where a, b, c are evaluated: the synthesis workers or the prover")
    stall_after_s: float = setting(
        "engine", 120.0, _seconds(1, 86400, off=True),
        "a partition whose worker's CPU time has not moved for this long (or that is stopped) "
        "is reported as stalled; 0 turns the check off", unit="s")
    stall_action: str = setting("engine", "report", _choice(STALL_ACTIONS),
                                "what a stall does: report it, or retry the partition elsewhere")
    numa_placement: str = setting("engine", "auto", _choice(NUMA_PLACEMENT),
                                  "whether synthesis workers run on their GPU's NUMA node")
    param_cache: str = setting("paths", "", _str, "where proving keys are cached",
                               factory=default_param_cache)
    filecoin_params: str = setting(
        "paths", "", _optional_path,
        "Filecoin's parameter files (a folder such as /var/tmp/filecoin-proof-parameters, or one "
        ".params file): a key missing from the cache is read from the file made for its circuit "
        "instead of an INSECURE setup, and refused in one line if none is (\"\" = setup)")
    damaged_key: str = setting("paths", "refuse", _choice(DAMAGED_KEY),
                               "a cached key failing its checksum: refuse it, or regenerate it "
                               "(run setup again over it)")
    sample_interval_s: float = setting("telemetry", 0.5, _seconds(0.01, 3600),
                                       "how often processes and GPUs are sampled", unit="s")
    preset: str = setting("jobs", "chain-64", _str, "the circuit preset of submitted jobs")
    partitions: int = setting("jobs", 2, _count(1, 1024), "partitions of each job")
    seed: int = setting("jobs", 1, _count(0, 2**63 - 1), "the witness seed of the first job")
    c1: str = setting("jobs", "", _optional_path,
                      "a C1 output (SealCommitPhase1Output JSON) to prove instead of the preset: "
                      "every partition of its sector, Filecoin's proof bytes out (\"\" = none)")
    prover_id: str = setting("jobs", "", _hex32_or_empty,
                             "the C1 output's prover id, 32 bytes hex (the file does not hold it)")
    sector_id: int = setting("jobs", 0, _count(0, 2**64 - 1),
                             "the C1 output's sector number (the file does not hold it)")
    scheduler: str = setting("cluster", "", _scheduler,
                             "the farm's Dask scheduler address (\"\" = none)")
    host_slots: int = setting("cluster", 0, _count(0, 4096),
                              "jobs this host takes at once as a farm worker "
                              "(0 = partition_workers + gpu_channel_capacity)")
    needs: str = setting("cluster", "any", _choice(NEEDS),
                         "what a job submitted from here needs of a host: any, or a backend")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for the session_start event."""
        return dataclasses.asdict(self)

    def param_cache_path(self) -> Path:
        return Path(os.path.expanduser(self.param_cache))


def _settings() -> tuple[Setting, ...]:
    defaults = EngineConfig()
    out = []
    for f in dataclasses.fields(EngineConfig):
        spec: _Spec = f.metadata["setting"]
        out.append(Setting(f.name, spec.table, getattr(defaults, f.name), spec.check, spec.unit,
                           spec.doc, spec.knob))
    return tuple(out)


SETTINGS: tuple[Setting, ...] = _settings()
# The functions below read SETTINGS when called, so a test may add a setting to the table
# (monkeypatch) and see it reach everything derived from it.


def find(name: str) -> Setting | None:
    """The setting of that name, or None."""
    return next((s for s in SETTINGS if s.name == name), None)


def live_settings() -> list[Setting]:
    """The live knobs' settings, in the table's order."""
    return [s for s in SETTINGS if s.knob is not None]


def knob_names() -> tuple[str, ...]:
    """The names of the live knobs, in the table's order."""
    return tuple(s.name for s in live_settings())


def knob_of(name: str) -> Knob:
    """The live knob of that name; KeyError when no live knob has it."""
    s = find(name)
    if s is None or s.knob is None:
        raise KeyError(name)
    return s.knob


KNOBS: tuple[str, ...] = knob_names()
