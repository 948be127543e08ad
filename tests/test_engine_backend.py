"""Backend capabilities (kernels/backend.py): what the engine asks a backend instead of testing
its name. The cpu backend is exercised for real; the cuda backend's class is inspected without a
device (importing it touches none), and its device calls run only where a GPU is."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from kernels.backend import (
    BackendUnavailable,
    backend_class,
    cuda_unavailable_reason,
    get_backend,
    is_device_backend,
    pick_backend,
)


def test_cpu_backend_is_a_host_backend_and_its_capabilities_are_no_ops() -> None:
    be = get_backend("cpu")
    assert be.is_device is False and backend_class("cpu").is_device is False
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    be.select_device(3)  # a host backend selects nothing and changes nothing
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == env
    assert be.memory_info() is None
    # synchronize and release_pools leave results intact (nothing was queued or pooled)
    rng = random.Random()
    a = np.array([[rng.getrandbits(62) for _ in range(4)] for _ in range(8)], dtype=np.uint64)
    out = be.fr_add(a, a)
    before = out.copy()
    be.synchronize()
    be.release_pools()
    assert np.array_equal(out, before)


def test_device_backend_is_known_by_its_class_without_a_device() -> None:
    assert backend_class("cuda").is_device is True
    assert is_device_backend("cuda") and not is_device_backend("cpu")
    assert not is_device_backend(None) and not is_device_backend("nope")
    with pytest.raises(BackendUnavailable, match="unknown backend 'nope'"):
        backend_class("nope")


def test_pick_backend_resolves_auto_and_refuses_a_missing_device() -> None:
    assert pick_backend("cpu") == "cpu"
    reason = cuda_unavailable_reason()
    if reason is None:
        assert pick_backend("auto") == "cuda" and pick_backend("cuda") == "cuda"
    else:
        assert pick_backend("auto") == "cpu"
        with pytest.raises(BackendUnavailable) as exc:
            pick_backend("cuda")
        assert str(exc.value) == reason


class _FakeDevice:
    """A device backend of another vendor, as kernels/backend.py's _CLASSES would name it."""

    name = "fake"
    is_device = True
    reason: str | None = None

    @staticmethod
    def unavailable_reason() -> str | None:
        return _FakeDevice.reason


def test_a_new_vendor_is_one_entry_in_the_backend_table(monkeypatch) -> None:
    """pick_backend and get_backend ask each backend's class, never its name: a device backend
    added to _CLASSES is what auto picks where it can run, and its own reason where it cannot."""
    import kernels.backend as kb

    monkeypatch.setattr(kb, "_CLASSES", {"cpu": kb._CLASSES["cpu"], "fake": (__name__, "_FakeDevice")})
    monkeypatch.setattr(_FakeDevice, "reason", None)
    assert backend_class("cpu").unavailable_reason() is None
    assert pick_backend("auto") == "fake" and pick_backend("fake") == "fake"
    assert isinstance(get_backend("auto"), _FakeDevice) and is_device_backend("fake")
    monkeypatch.setattr(_FakeDevice, "reason", f"no fake device ({random.random()})")
    assert pick_backend("auto") == "cpu" and get_backend("auto").name == "cpu"
    with pytest.raises(BackendUnavailable) as exc:
        pick_backend("fake")
    assert str(exc.value) == _FakeDevice.reason
    with pytest.raises(BackendUnavailable, match="^fake backend unavailable: no fake device"):
        get_backend("fake")
    for bad in ("cuda", "nope"):  # a name the table does not hold is refused, never guessed
        with pytest.raises(BackendUnavailable, match=f"unknown backend '{bad}'"):
            pick_backend(bad)


def test_a_prover_process_sees_only_its_gpu(monkeypatch) -> None:
    """The engine numbers GPUs as the parent sees them; a prover hides every other one."""
    select = backend_class("cuda").select_device
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    select(1)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4, 6")  # the parent was already restricted
    select(1)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "6"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4")  # a number beyond what it was shown
    select(2)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2"


@pytest.mark.gpu
def test_cuda_capabilities_on_a_device() -> None:
    if cuda_unavailable_reason() is not None:
        pytest.skip(cuda_unavailable_reason())
    import cupy

    be = get_backend("cuda")
    info = be.memory_info()
    assert info is not None
    free, total = info
    assert 0 < free <= total
    pool = cupy.get_default_memory_pool()
    be.release_pools()
    base = pool.total_bytes()  # what live arrays of earlier tests keep (their chunks stay)
    size = pool.free_bytes() + (64 << 20)  # larger than any free block: a chunk of its own
    x = cupy.zeros(size, dtype=cupy.uint8)
    del x
    assert pool.total_bytes() >= base + size  # freed, but the pool holds it
    be.synchronize()
    be.release_pools()
    assert pool.total_bytes() == base
