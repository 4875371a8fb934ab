"""Host-side assembly of a matching's result: the mate array from the matched pairs.

Every partition hands back its matched pairs ``(u, v, w)`` with ``u`` owned and ``u < v``, in
ascending ``u`` (8 bytes a pair when ids fit 32 bits, where a mate and a weight per vertex took
16 bytes a vertex: on a cluster these bytes cross the network to the client). The mate array
is rebuilt here by every thread; the pairs are the result's ``u``, ``v``, ``w`` as they come.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["mate_from_pairs"]


def mate_from_pairs(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """``mate`` of ``n`` vertices (``-1`` where unmatched) from disjoint pairs ``(u, v)``."""
    mate = np.empty(n, dtype=np.int64)
    _fill_mate(u, v, mate)
    return mate


@njit(parallel=True, cache=True, nogil=True)
def _fill_mate(u, v, mate):  # pragma: no cover - compiled
    # every vertex is in at most one pair, so the scattered writes never collide
    for i in prange(mate.shape[0]):
        mate[i] = -1
    for i in prange(u.shape[0]):
        mate[u[i]] = v[i]
        mate[v[i]] = u[i]
