"""R1CS rows as the C2 gadget tests compare them with the rows bellperson writes: each of A, B
and C's row i as {variable: coefficient as an integer}."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels.cpu.convert import from_mont_fr


def r1cs_row(shape: Any, i: int) -> tuple[dict[int, int], ...]:
    """Row i of the shape's A, B and C."""
    out = []
    for m in "ABC":
        csr = getattr(shape.r1cs, m)
        lo, hi = int(csr.indptr[i]), int(csr.indptr[i + 1])
        out.append(dict(zip(np.asarray(csr.indices[lo:hi]).tolist(), from_mont_fr(np.asarray(csr.data[lo:hi])))))
    return tuple(out)


def gadget_rows(shape: Any) -> int:
    """The rows a gadget wrote: all but the input constraints at the end."""
    return int(shape.r1cs.num_constraints - shape.r1cs.num_inputs)
