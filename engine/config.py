"""The engine's TOML configuration: reading, validation, and errors that name the key and line.

A config has four tables (every key optional; the defaults suit a CPU-only laptop):

    [engine]     backend, devices, partition_workers, gpu_channel_capacity,
                 gpu_slots_per_device, memory_budget, permit_release, dealloc, b_g2,
                 abc_eval, stall_after_s, stall_action, numa_placement
    [paths]      param_cache, damaged_key
    [telemetry]  sample_interval_s
    [jobs]       preset, partitions, seed
    [cluster]    scheduler, host_slots, needs

Unknown tables and keys are errors too: a misspelt knob silently falling back to its default is
the kind of mistake an operator cannot see. Every error is a :class:`ConfigError` whose message
is one line of the form ``FILE:LINE: table.key: what is wrong``.

Every way a value enters (this file, ``bench pipeline --set``, the console's prompts through
``Engine.set_knob``, a config built in code and handed to the Engine) goes through the same
per-key check, :func:`validate`; :func:`validate_config` runs it on every field of a config.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A config that cannot be used; str() is one line naming the file, line and key."""


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


@dataclass
class EngineConfig:
    """Every setting the engine reads. Knob fields (marked in KNOBS) may change while running."""

    backend: str = "auto"
    devices: list[int] = field(default_factory=lambda: [0])
    partition_workers: int = 2
    gpu_channel_capacity: int = 2
    gpu_slots_per_device: int = 1
    memory_budget: int = 0  # bytes of partition buffers; 0 = unlimited
    permit_release: str = "delivered"
    dealloc: str = "async"
    b_g2: str = "auto"
    abc_eval: str = "cpu"
    # a partition whose worker's CPU time has not moved for this long (or that is stopped) is
    # reported as stalled; 0 turns the check off
    stall_after_s: float = 120.0
    stall_action: str = "report"
    numa_placement: str = "auto"
    param_cache: str = field(default_factory=default_param_cache)
    damaged_key: str = "refuse"  # regenerate: run setup again over a key that fails its checksum
    sample_interval_s: float = 0.5
    preset: str = "chain-64"
    partitions: int = 2
    seed: int = 1
    # the farm: the Dask scheduler's address ("" = none), the jobs this host takes at once as
    # a farm worker (0 = partition_workers + gpu_channel_capacity), and what a job submitted
    # from here needs of a host ("" = any host; "cuda" or "cpu" = a host of that backend)
    scheduler: str = ""
    host_slots: int = 0
    needs: str = "any"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for the session_start event."""
        return dataclasses.asdict(self)

    def param_cache_path(self) -> Path:
        return Path(os.path.expanduser(self.param_cache))


KNOBS = ("partition_workers", "gpu_channel_capacity", "memory_budget")

# table -> key -> field name (identical here, kept explicit so the file layout can evolve)
_LAYOUT: dict[str, tuple[str, ...]] = {
    "engine": (
        "backend",
        "devices",
        "partition_workers",
        "gpu_channel_capacity",
        "gpu_slots_per_device",
        "memory_budget",
        "permit_release",
        "dealloc",
        "b_g2",
        "abc_eval",
        "stall_after_s",
        "stall_action",
        "numa_placement",
    ),
    "paths": ("param_cache", "damaged_key"),
    "telemetry": ("sample_interval_s",),
    "jobs": ("preset", "partitions", "seed"),
    "cluster": ("scheduler", "host_slots", "needs"),
}


def _int(value: Any, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        rng = f"at least {lo}" if hi is None else f"between {lo} and {hi}"
        raise ValueError(f"must be {rng}, got {value}")
    return value


def _choice(options: tuple[str, ...]):
    def check(value: Any) -> str:
        if value not in options:
            raise ValueError(f"must be one of {', '.join(options)}, got {value!r}")
        return value

    return check


def _str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def _devices(value: Any) -> list[int]:
    if not isinstance(value, list):
        raise ValueError(f"expected a list of GPU indices such as [0, 1], got {value!r}")
    out = [_int(v, 0, 1023) for v in value]
    if len(set(out)) != len(out):
        raise ValueError(f"lists a device twice: {value!r}")
    return out


def _seconds(lo: float, hi: float, off: bool = False):
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


_interval = _seconds(0.01, 3600)

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


_CHECKS: dict[str, Any] = {
    "backend": _choice(BACKENDS),
    "devices": _devices,
    "partition_workers": lambda v: _int(v, 1, 256),
    "gpu_channel_capacity": lambda v: _int(v, 1, 256),
    "gpu_slots_per_device": lambda v: _int(v, 1, 16),
    "memory_budget": parse_size,
    "permit_release": _choice(PERMIT_RELEASE),
    "dealloc": _choice(DEALLOC),
    "b_g2": _choice(B_G2),
    "abc_eval": _choice(ABC_EVAL),
    "stall_after_s": _seconds(1, 86400, off=True),
    "stall_action": _choice(STALL_ACTIONS),
    "numa_placement": _choice(NUMA_PLACEMENT),
    "param_cache": _str,
    "damaged_key": _choice(DAMAGED_KEY),
    "sample_interval_s": _interval,
    "preset": _str,
    "partitions": lambda v: _int(v, 1, 1024),
    "seed": lambda v: _int(v, 0, 2**63 - 1),
    "scheduler": _scheduler,
    "host_slots": lambda v: _int(v, 0, 4096),
    "needs": _choice(NEEDS),
}


KEYS: tuple[str, ...] = tuple(_CHECKS)


def validate(key: str, value: Any) -> Any:
    """The one check of a setting's value, wherever it comes from; returns the value in its
    stored form (a size string becomes bytes). ValueError with one line naming the key."""
    if key not in _CHECKS:
        raise ValueError(f"unknown setting {key!r} (settings: {', '.join(KEYS)})")
    try:
        return _CHECKS[key](value)
    except ValueError as exc:
        raise ValueError(f"{key}: {str(exc).splitlines()[0]}") from None


def validate_config(cfg: EngineConfig) -> EngineConfig:
    """Check every field of a config built in code (or changed after loading); ConfigError
    naming the first bad key. Returns a copy holding the checked values."""
    values = {}
    for key in KEYS:
        try:
            values[key] = validate(key, getattr(cfg, key))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    return EngineConfig(**values)


# Policies the engine reads afresh for each partition it admits, so a benchmark may switch them
# between jobs in one engine that keeps its keys (Engine.set_policy); never while one is in flight.
POLICIES = ("permit_release", "dealloc")


def check_policy(name: str, value: Any) -> Any:
    """Validate a between-jobs policy value the same way the file is validated; ValueError if bad."""
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r} (policies: {', '.join(POLICIES)})")
    return validate(name, value)


def check_knob(name: str, value: Any) -> Any:
    """Validate a live knob value the same way the file is validated; ValueError if bad."""
    if name not in KNOBS:
        raise ValueError(f"unknown knob {name!r} (knobs: {', '.join(KNOBS)})")
    return validate(name, value)


_HEADER_RE = re.compile(r"^\s*\[\s*([A-Za-z0-9_\-\.\"' ]+?)\s*\]\s*(#.*)?$")


def _line_of(text: str, table: str | None, key: str | None) -> int:
    """Best-effort line number (1-based) of ``key`` inside ``[table]`` (or of the header)."""
    current: str | None = None
    lines = text.splitlines()
    for i, line in enumerate(lines, 1):
        m = _HEADER_RE.match(line)
        if m:
            current = m.group(1).strip().strip("\"'")
            if key is None and current == table:
                return i
            continue
        if key is not None and current == table:
            if re.match(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=", line):
                return i
    # dotted forms such as `engine.partition_workers = 2` at top level
    if key is not None and table is not None:
        for i, line in enumerate(lines, 1):
            if re.match(rf"^\s*{re.escape(table)}\s*\.\s*{re.escape(key)}\s*=", line):
                return i
    return 0


def _fail(source: str, text: str, table: str | None, key: str | None, why: str) -> ConfigError:
    line = _line_of(text, table, key)
    where = f"{source}:{line}" if line else source
    name = ".".join(p for p in (table, key) if p)
    return ConfigError(f"{where}: {name}: {why}")


def parse_config(text: str, source: str = "<config>") -> EngineConfig:
    """Parse and validate TOML text. Raises ConfigError with one line naming file, line, key."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        if m:
            reason = msg[: m.start()].strip()
            raise ConfigError(f"{source}:{m.group(1)}: not valid TOML: {reason}") from None
        raise ConfigError(f"{source}: not valid TOML: {msg.splitlines()[0]}") from None
    values: dict[str, Any] = {}
    for table, body in doc.items():
        if table not in _LAYOUT:
            raise _fail(
                source, text, table, None,
                f"unknown table (expected one of {', '.join('[' + t + ']' for t in _LAYOUT)})",
            )
        if not isinstance(body, dict):
            raise _fail(source, text, None, table, "must be a table such as [" + table + "]")
        for key, value in body.items():
            if key not in _LAYOUT[table]:
                raise _fail(
                    source, text, table, key,
                    f"unknown key (keys of [{table}]: {', '.join(_LAYOUT[table])})",
                )
            try:
                values[key] = _CHECKS[key](value)
            except ValueError as exc:
                raise _fail(source, text, table, key, str(exc)) from None
    cfg = EngineConfig(**values)
    if cfg.backend == "cpu" and "devices" not in values:
        cfg.devices = []
    return cfg


def load_config(path: str | os.PathLike[str]) -> EngineConfig:
    """Read and validate a config file; ConfigError (one line) if unreadable or invalid."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read config: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{p}:{line}: not valid TOML: the file is not UTF-8") from None
    return parse_config(text, str(p))
