"""Kernel warm-up for a worker: each algorithm family registers how to compile (or load from
Numba's cache) its kernels on a tiny input, and a worker's setup runs every registered warm-up,
so that the first round of a job does not pay for compiling.

The families register themselves when :mod:`mgmatch` is imported, so the engine and the Dask
layer, which run the warm-ups, never import an algorithm.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["register", "warm_up"]

_WARMUPS: dict[str, Callable[[], None]] = {}


def register(name: str, fn: Callable[[], None]) -> None:
    """Run ``fn()`` in :func:`warm_up`; a second registration under ``name`` replaces the first."""
    _WARMUPS[name] = fn


def warm_up() -> list[str]:
    """Run every registered warm-up, in the order registered; their names."""
    for fn in _WARMUPS.values():
        fn()
    return list(_WARMUPS)
