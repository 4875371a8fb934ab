"""Checks of stable-marriage results: a valid marriage, stability, man-optimality.

:func:`blocking_pairs` lists the pairs that would break a matching up (both listed each other
and each prefers the other to their partner; a single person prefers anyone listed);
:func:`verify_stable_result` checks a written result (columns ``man, woman``) against its
instance, as ``mgmatch verify`` does.
"""

from __future__ import annotations

import numpy as np

from ._array import to_numpy
from .preferences import Preferences

__all__ = ["marriage_entries", "blocking_pairs", "is_stable", "man_optimal_matching", "verify_stable_result"]


def marriage_entries(prefs: Preferences, wife) -> np.ndarray:
    """For every man, the list entry of his wife (-1 when single or when she is not in his
    list)."""
    p = prefs.to("cpu")
    wife = np.asarray(wife, dtype=np.int64)
    man = p.men_of_entries()
    hit = np.flatnonzero(np.asarray(p.women, dtype=np.int64) == wife[man])
    entry = np.full(p.n_men, -1, dtype=np.int64)
    entry[man[hit]] = hit
    return entry


def blocking_pairs(prefs: Preferences, wife) -> tuple[np.ndarray, np.ndarray]:
    """The blocking pairs ``(men, women)`` of the matching ``wife`` (``wife[m]`` or -1): pairs
    that list each other where the man prefers the woman to his wife and she prefers him to
    her husband (a single person prefers anyone listed).

    >>> p = Preferences.from_table({"man": [0, 0, 1, 1], "woman": [0, 1, 0, 1],
    ...                             "man_rank": [0, 1, 0, 1], "woman_rank": [0, 1, 1, 0]})
    >>> [a.tolist() for a in blocking_pairs(p, [1, 0])]
    [[0], [0]]
    >>> [a.tolist() for a in blocking_pairs(p, [0, 1])]
    [[], []]
    """
    p = prefs.to("cpu")
    wife = np.asarray(wife, dtype=np.int64)
    indptr = np.asarray(p.indptr)
    women = np.asarray(p.women, dtype=np.int64)
    wrank = np.asarray(p.wrank, dtype=np.int64)
    man = p.men_of_entries()
    entry = marriage_entries(p, wife)
    big = np.iinfo(np.int64).max
    his = np.where(entry >= 0, entry - indptr[:-1], big)  # his wife's place in his list
    hers = np.full(p.n_women, big, dtype=np.int64)  # her rank of her husband
    married = entry >= 0
    hers[women[entry[married]]] = wrank[entry[married]]
    pos = np.arange(p.nnz, dtype=np.int64) - indptr[man]
    block = (pos < his[man]) & (wrank < hers[women])
    return man[block], women[block]


def is_stable(prefs: Preferences, wife) -> bool:
    """True when ``wife`` is a matching of mutually listed pairs with no blocking pair."""
    wife = np.asarray(wife, dtype=np.int64)
    married = wife >= 0
    if np.unique(wife[married]).size != int(married.sum()):
        return False
    if (marriage_entries(prefs, wife)[married] < 0).any():
        return False
    return blocking_pairs(prefs, wife)[0].size == 0


def man_optimal_matching(prefs: Preferences) -> np.ndarray:
    """The man-optimal stable matching by the sequential Gale-Shapley algorithm, as ``wife``."""
    from .algorithms.stable_marriage import stable_marriage  # noqa: PLC0415

    return stable_marriage(prefs, algorithm="gale-shapley", device="cpu", threads=1).wife


def verify_stable_result(prefs: Preferences, columns: dict) -> dict:
    """Check a written stable matching (columns ``man, woman``) against its instance: ids in
    range, every pair mutually listed, nobody married twice, no blocking pair, and equal to
    the man-optimal stable matching (sequential Gale-Shapley).

    Returns a report dict with ``ok`` and the findings (used by ``mgmatch verify``).
    """
    man = np.asarray(to_numpy(columns["man"]), dtype=np.int64)
    woman = np.asarray(to_numpy(columns["woman"]), dtype=np.int64)
    report = {"pairs": int(man.size)}
    report["ids_in_range"] = bool(((man >= 0) & (man < prefs.n_men) & (woman >= 0) & (woman < prefs.n_women)).all())
    if not report["ids_in_range"]:
        report["ok"] = False
        return report
    report["nobody_twice"] = bool(np.unique(man).size == man.size and np.unique(woman).size == woman.size)
    if not report["nobody_twice"]:
        report["ok"] = False
        return report
    wife = np.full(prefs.n_men, -1, dtype=np.int64)
    wife[man] = woman
    report["all_pairs_listed"] = bool((marriage_entries(prefs, wife)[man] >= 0).all())
    blocking = blocking_pairs(prefs, wife)[0].size if report["all_pairs_listed"] else None
    report["blocking_pairs"] = blocking
    report["stable"] = bool(report["all_pairs_listed"] and blocking == 0)
    report["man_optimal"] = bool(report["stable"] and np.array_equal(wife, man_optimal_matching(prefs)))
    report["matched"] = int(man.size)
    report["ok"] = report["man_optimal"]
    return report
