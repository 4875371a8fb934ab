"""CPU twin of message routing: a batch of messages grouped by the partition that receives it."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["group_by_owner"]


@njit(cache=True, nogil=True)
def _group_by_owner(ints, w, bounds):
    """Counting sort of the messages by the owner of ``dst`` (stable: each group keeps the
    order the messages were sent in). Returns the grouped copies and the group offsets."""
    n_parts = bounds.shape[0] - 1
    owner = np.empty(ints.shape[0], np.int64)
    offsets = np.zeros(n_parts + 1, np.int64)
    for j in range(ints.shape[0]):
        p = np.searchsorted(bounds, ints[j, 1], side="right") - 1
        owner[j] = p
        offsets[p + 1] += 1
    for p in range(n_parts):
        offsets[p + 1] += offsets[p]
    fill = offsets[:-1].copy()
    out_i = np.empty((ints.shape[0], 4), np.int64)
    out_w = np.empty(ints.shape[0], np.float64)
    for j in range(ints.shape[0]):
        at = fill[owner[j]]
        fill[owner[j]] = at + 1
        for c in range(4):
            out_i[at, c] = ints[j, c]
        out_w[at] = w[j]
    return out_i, out_w, offsets


def group_by_owner(ints: np.ndarray, w: np.ndarray, bounds: np.ndarray):
    """``(ints, w, offsets)``: the messages ``(ints[k], w[k])`` reordered so that those for
    partition ``p`` (the owner of ``ints[k, 1]`` under ``bounds``) are rows
    ``offsets[p]:offsets[p + 1]``, in their original order. Linear time, without the GIL.

    >>> ints = np.array([[0, 5, 1, -1], [0, 1, 6, -1], [1, 7, 2, -1]])
    >>> i, w, off = group_by_owner(ints, np.array([0.5, 0.25, 0.75]), np.array([0, 4, 8]))
    >>> i[:, 1].tolist(), w.tolist(), off.tolist()
    ([1, 5, 7], [0.25, 0.5, 0.75], [0, 1, 3])
    """
    if w.dtype != np.float64:
        w = w.astype(np.float64)
    if bounds.dtype != np.int64:
        bounds = bounds.astype(np.int64)
    return _group_by_owner(ints, w, bounds)
