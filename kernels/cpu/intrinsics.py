"""Wide-integer primitives for numba, emitted as LLVM i128 operations.

numba has no 128-bit integer type, but LLVM does: these intrinsics give multi-limb arithmetic
its carries and high products in one instruction each, and they work with ``cache=True``.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_U64 = types.uint64
_PAIR = types.UniTuple(_U64, 2)


def _wide(builder, v):
    return builder.zext(v, ir.IntType(128))


def _split(context, builder, sig, wide):
    i64 = ir.IntType(64)
    lo = builder.trunc(wide, i64)
    hi = builder.trunc(builder.lshr(wide, ir.Constant(ir.IntType(128), 64)), i64)
    return context.make_tuple(builder, sig.return_type, [lo, hi])


@intrinsic
def mac(typingctx, a, b, c, carry):
    """(lo, hi) of a + b*c + carry; never overflows 128 bits."""
    sig = _PAIR(_U64, _U64, _U64, _U64)

    def codegen(context, builder, signature, args):
        x, y, z, k = (_wide(builder, v) for v in args)
        return _split(context, builder, signature, builder.add(builder.add(x, builder.mul(y, z)), k))

    return sig, codegen


@intrinsic
def adc(typingctx, a, b, carry):
    """(sum, carry-out) of a + b + carry."""
    sig = _PAIR(_U64, _U64, _U64)

    def codegen(context, builder, signature, args):
        x, y, k = (_wide(builder, v) for v in args)
        return _split(context, builder, signature, builder.add(builder.add(x, y), k))

    return sig, codegen


@intrinsic
def sbb(typingctx, a, b, borrow):
    """(difference, borrow-out in {0, 1}) of a - b - borrow."""
    sig = _PAIR(_U64, _U64, _U64)

    def codegen(context, builder, signature, args):
        x, y, k = (_wide(builder, v) for v in args)
        d = builder.sub(builder.sub(x, y), k)
        i64 = ir.IntType(64)
        lo = builder.trunc(d, i64)
        out = builder.trunc(builder.lshr(d, ir.Constant(ir.IntType(128), 127)), i64)
        return context.make_tuple(builder, signature.return_type, [lo, out])

    return sig, codegen
