"""NVML readings per GPU through nvidia-ml-py; every failure becomes None (shown as N/A).

Where there is no driver, no library or no GPU, :func:`gpu_list` returns [] and
:func:`read_gpu` returns a reading whose every metric is None. Any single metric that the driver
refuses (some are unsupported on some boards) is None on its own; nothing here ever raises.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

_lock = threading.Lock()
_state: dict[str, Any] = {"tried": False, "ok": False, "mod": None}


def _nvml():
    """The initialised pynvml module, or None when NVML cannot be used here."""
    with _lock:
        if not _state["tried"]:
            _state["tried"] = True
            try:
                import pynvml

                pynvml.nvmlInit()
                _state["mod"] = pynvml
                _state["ok"] = True
            except Exception:
                _state["ok"] = False
        return _state["mod"] if _state["ok"] else None


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:
        return None


def _text(v: Any) -> Any:
    return v.decode() if isinstance(v, bytes) else v


def _handle(index: int) -> tuple[Any, Any] | None:
    """(the NVML module, GPU ``index``'s handle); None where NVML or that GPU is not there."""
    nv = _nvml()
    if nv is None:
        return None
    h = _safe(lambda: nv.nvmlDeviceGetHandleByIndex(index))
    return None if h is None else (nv, h)


def gpu_list() -> list[dict]:
    """[{"index", "name", "memory_total"}] for every GPU NVML sees; [] where there is none."""
    nv = _nvml()
    if nv is None:
        return []
    n = _safe(nv.nvmlDeviceGetCount) or 0
    out = []
    for i in range(n):
        h = _safe(functools.partial(nv.nvmlDeviceGetHandleByIndex, i))
        name = _safe(lambda: _text(nv.nvmlDeviceGetName(h))) if h is not None else None
        mem = _safe(lambda: nv.nvmlDeviceGetMemoryInfo(h).total) if h is not None else None
        out.append({"index": i, "name": name, "memory_total": mem})
    return out


def read_gpu(index: int) -> dict:
    """One reading of GPU ``index``; a metric NVML cannot give is None."""
    reading: dict[str, Any] = {
        "index": index,
        "util": None,
        "mem_used": None,
        "mem_total": None,
        "power_w": None,
        "temp_c": None,
        "sm_clock_mhz": None,
    }
    got = _handle(index)
    if got is None:
        return reading
    nv, h = got
    reading["util"] = _safe(lambda: nv.nvmlDeviceGetUtilizationRates(h).gpu)
    mem = _safe(lambda: nv.nvmlDeviceGetMemoryInfo(h))
    if mem is not None:
        reading["mem_used"] = _safe(lambda: int(mem.used))
        reading["mem_total"] = _safe(lambda: int(mem.total))
    mw = _safe(lambda: nv.nvmlDeviceGetPowerUsage(h))
    reading["power_w"] = mw / 1000.0 if isinstance(mw, (int, float)) else None
    reading["temp_c"] = _safe(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
    reading["sm_clock_mhz"] = _safe(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
    return reading


def pci_bus_id(index: int) -> str | None:
    """GPU ``index``'s PCI bus id as NVML gives it ("00000000:17:00.0"); None where unknown."""
    got = _handle(index)
    if got is None:
        return None
    nv, h = got
    bus = _safe(lambda: _text(nv.nvmlDeviceGetPciInfo(h).busId))
    return bus if isinstance(bus, str) and bus else None
