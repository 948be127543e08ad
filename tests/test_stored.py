"""StoredArray: arrays read from their file (the engine's shared-memory segments) rather than
mapped; the cpu backend places them, and the split prover takes them as its inputs."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from engine.groth16 import examples
from engine.groth16.prove import evaluate, prove_finish, prove_start
from engine.groth16.setup import setup
from engine.pipeline import proving
from kernels.backend import get_backend
from kernels.constants import R_MOD
from kernels.stored import StoredArray


def _random_rows(rows: int) -> np.ndarray:
    return np.frombuffer(secrets.token_bytes(rows * 32), dtype=np.uint64).reshape(rows, 4).copy()


def _store(tmp_path, arr: np.ndarray, name: str = "x") -> StoredArray:
    path = tmp_path / name
    path.write_bytes(arr.tobytes())
    return StoredArray(str(path), arr.shape)


def test_reads_whole_and_row_ranges(tmp_path) -> None:
    arr = _random_rows(1 + secrets.randbelow(5000))
    st = _store(tmp_path, arr)
    assert st.ndim == 2 and st.nbytes == arr.nbytes
    assert np.array_equal(st.read(), arr)
    n = arr.shape[0]
    start = secrets.randbelow(n)
    stop = start + secrets.randbelow(n - start + 1)
    assert np.array_equal(st.read(start, stop), arr[start:stop])
    assert np.array_equal(st.read(n - 1, n + 10), arr[n - 1:])  # stop clamps to the shape
    assert st.read(3, 3).shape == (0, 4)


def test_a_short_file_is_an_error(tmp_path) -> None:
    arr = _random_rows(64)
    path = tmp_path / "short"
    path.write_bytes(arr.tobytes()[:-8])
    with pytest.raises(OSError, match="end of file"):
        StoredArray(str(path), arr.shape).read()


def test_cpu_backend_places_a_stored_array(tmp_path) -> None:
    arr = _random_rows(100)
    placed = get_backend("cpu").place(_store(tmp_path, arr))
    assert isinstance(placed, np.ndarray) and np.array_equal(placed, arr)


def test_split_prover_gives_the_same_proof_from_stored_inputs(tmp_path) -> None:
    """What a GPU prover slot does (its inputs are files, not mappings), on the cpu backend:
    the same proof as from arrays, with r and s fixed, and the same public inputs."""
    be = get_backend("cpu")
    circuit = examples.chain_for_constraints(1 << 6)
    pk = setup(circuit.r1cs, secrets.token_hex(8), be)
    z = circuit.witness(secrets.randbelow(R_MOD))
    a, b, c = evaluate(circuit.r1cs, z)
    r, s = secrets.randbelow(R_MOD), secrets.randbelow(R_MOD)
    stored = [_store(tmp_path, v, n) for v, n in ((a, "a"), (b, "b"), (c, "c"), (z, "z"))]
    from_arrays = prove_finish(prove_start(pk, a, b, c, z, be, r=r, s=s))
    from_files = prove_finish(prove_start(pk, *stored, be, r=r, s=s))
    assert from_files == from_arrays
    assert proving.public_inputs(pk.num_inputs, stored[3]) == examples.public_inputs(circuit.r1cs, z)


def test_the_cuda_upload_fills_its_buffer_in_parallel_parts(tmp_path) -> None:
    """kernels.cuda.upload reads each staging buffer with several threads (no GPU needed to
    check the reading): every byte lands where it belongs, and a short file is an error."""
    import os

    from kernels.cuda import upload

    data = np.frombuffer(secrets.token_bytes(3 << 20), dtype=np.uint8)
    path = tmp_path / "fill"
    path.write_bytes(data.tobytes())
    buf = np.zeros(2 << 20, dtype=np.uint8)
    fd = os.open(path, os.O_RDONLY)
    try:
        for size in (len(buf), 1, 4096 * 3 + 5, secrets.randbelow(len(buf)) + 1):
            off = secrets.randbelow(len(data) - size + 1)
            upload._fill(fd, memoryview(buf)[:size], off)
            assert np.array_equal(buf[:size], data[off:off + size]), (size, off)
        with pytest.raises(OSError, match="end of file"):
            upload._fill(fd, memoryview(buf), len(data) - 100)
    finally:
        os.close(fd)
