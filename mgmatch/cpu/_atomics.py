"""Atomic operations on one element of a NumPy array, for Numba-compiled code on threads.

Numba has no atomic operations on CPU arrays. These intrinsics emit LLVM's ``atomicrmw`` and
``cmpxchg`` on the element's address (sequentially consistent), the CPU counterparts of CUDA's
``atomicAdd``, ``atomicMin`` and ``atomicCAS`` that the GPU kernels use. Each returns the
element's value before the operation.

``load_acquire`` and ``store_release`` order plain accesses around them, as C++'s
``memory_order_acquire``/``release`` do: no access after the acquiring load is moved before it,
none before the releasing store after it. On x86 they are plain moves; what they forbid is the
compiler's reordering, which a reader of two fields that a writer sets in turn relies on.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["atomic_add", "atomic_min", "atomic_umin", "atomic_cas", "load_acquire", "load_relaxed", "store_release"]


def _element_pointer(context, builder, sig, args):
    aty = sig.args[0]
    ary = context.make_array(aty)(context, builder, args[0])
    i = context.cast(builder, args[1], sig.args[1], types.intp)
    return cgutils.get_item_pointer(context, builder, aty, ary, [i], wraparound=False)


def _atomic_rmw(op):
    """An intrinsic ``f(array, index, value) -> old`` doing ``atomicrmw op`` on one element."""

    def typer(typingctx, arr, idx, val):
        def codegen(context, builder, sig, args):
            ptr = _element_pointer(context, builder, sig, args)
            v = context.cast(builder, args[2], sig.args[2], sig.args[0].dtype)
            return builder.atomic_rmw(op, ptr, v, "seq_cst")

        return arr.dtype(arr, idx, val), codegen

    typer.__name__ = f"atomic_{op}"
    return intrinsic(typer)


#: ``atomic_add(a, i, v)``: ``a[i] += v``; returns the old ``a[i]``.
atomic_add = _atomic_rmw("add")
#: ``atomic_min(a, i, v)``: ``a[i] = min(a[i], v)`` (signed integers); returns the old ``a[i]``.
atomic_min = _atomic_rmw("min")
#: ``atomic_umin(a, i, v)``: the same on unsigned integers.
atomic_umin = _atomic_rmw("umin")


@intrinsic
def atomic_cas(typingctx, arr, idx, expected, new):
    """``atomic_cas(a, i, expected, new)``: ``a[i] = new`` if ``a[i] == expected``; returns the
    old ``a[i]`` (equal to ``expected`` exactly when the swap took place)."""

    def codegen(context, builder, sig, args):
        ptr = _element_pointer(context, builder, sig, args)
        dt = sig.args[0].dtype
        cmp = context.cast(builder, args[2], sig.args[2], dt)
        val = context.cast(builder, args[3], sig.args[3], dt)
        pair = builder.cmpxchg(ptr, cmp, val, "seq_cst", "seq_cst")
        return builder.extract_value(pair, 0)

    return arr.dtype(arr, idx, expected, new), codegen


def _atomic_load(ordering):
    """An intrinsic ``f(array, index) -> value`` reading one element with ``ordering``."""

    def typer(typingctx, arr, idx):
        def codegen(context, builder, sig, args):
            ptr = _element_pointer(context, builder, sig, args)
            size = context.get_abi_sizeof(context.get_data_type(sig.args[0].dtype))
            return builder.load_atomic(ptr, ordering, size)

        return arr.dtype(arr, idx), codegen

    typer.__name__ = f"load_{ordering}"
    return intrinsic(typer)


#: ``load_acquire(a, i)``: ``a[i]``, read with acquire ordering.
load_acquire = _atomic_load("acquire")
#: ``load_relaxed(a, i)``: ``a[i]``, read whole (monotonic ordering) while other threads may write it.
load_relaxed = _atomic_load("monotonic")


@intrinsic
def store_release(typingctx, arr, idx, val):
    """``store_release(a, i, v)``: ``a[i] = v``, written with release ordering."""

    def codegen(context, builder, sig, args):
        ptr = _element_pointer(context, builder, sig, args)
        dt = sig.args[0].dtype
        v = context.cast(builder, args[2], sig.args[2], dt)
        builder.store_atomic(v, ptr, "release", context.get_abi_sizeof(context.get_data_type(dt)))
        return context.get_dummy_value()

    return types.none(arr, idx, val), codegen
