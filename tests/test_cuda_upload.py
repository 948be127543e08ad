"""The cuda backend reads a StoredArray through its pinned staging buffers: the device copy
equals the file bit for bit, at sizes around the stage boundary, from two threads at once."""

from __future__ import annotations

import secrets
import threading

import numpy as np
import pytest

from kernels.backend import cuda_unavailable_reason, get_backend
from kernels.stored import StoredArray

_REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"cuda: {_REASON}")]


def _stored(tmp_path, rows: int, name: str) -> tuple[np.ndarray, StoredArray]:
    arr = np.frombuffer(secrets.token_bytes(rows * 32), dtype=np.uint64).reshape(rows, 4).copy()
    path = tmp_path / name
    path.write_bytes(arr.tobytes())
    return arr, StoredArray(str(path), arr.shape)


def test_upload_equals_the_file_around_stage_boundaries(tmp_path) -> None:
    from kernels.cuda.upload import STAGE_BYTES

    be = get_backend("cuda")
    stage_rows = STAGE_BYTES // 32
    sizes = [0, 1, stage_rows - 1, stage_rows, stage_rows + 1, 3 * stage_rows + secrets.randbelow(stage_rows)]
    for i, rows in enumerate(sizes):
        arr, st = _stored(tmp_path, rows, f"s{i}")
        assert np.array_equal(be.fetch(be.place(st)), arr), rows


def test_two_threads_upload_at_once(tmp_path) -> None:
    from kernels.cuda.upload import STAGE_BYTES

    be = get_backend("cuda")
    rows = 2 * (STAGE_BYTES // 32) + 12345
    inputs = [_stored(tmp_path, rows, f"t{i}") for i in range(2)]
    got: dict[int, list[np.ndarray]] = {0: [], 1: []}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            for _ in range(3):
                got[i].append(be.fetch(be.place(inputs[i][1])))
        except BaseException as exc:  # a thread's exception would otherwise only be printed
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i in range(2):
        assert len(got[i]) == 3
        for out in got[i]:
            assert np.array_equal(out, inputs[i][0])
