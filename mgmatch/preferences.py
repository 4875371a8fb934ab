"""Stable-marriage instances: the men's preference lists with the women's ranks beside them.

A :class:`Preferences` holds an instance of the stable marriage problem with incomplete lists
(SMI; complete lists, SM, are the special case) in the form the Gale-Shapley and McVitie-Wilson
algorithms read [1]_ (section 2): man ``m``'s list is the CSR row ``women[indptr[m]:indptr[m+1]]``
in his order of preference, and beside each woman ``wrank`` holds *her* rank of ``m`` (0 is her
first choice), so a proposal looks up both sides' rankings in O(1) without a table of ``n^2``
entries. Only mutually acceptable pairs are stored.

Women's ranks are dense (``0 .. len(her list) - 1``): only their order matters, and dense ranks
pack with the man's id into the one 64-bit key ``wrank << 32 | man`` that decides a woman's
suitor with one atomic minimum on every device.

The structure answers the questions :func:`mgmatch.engine.execute` asks of a graph (``n``,
``nnz``, ``n_rows``, ``bipartite``, ``to``, ``partition``), so the algorithms run through the
engine like every other family: a :class:`PreferencePartition` owns a range of men and a range
of women.

References
----------
.. [1] F. Manne, M. Naim, H. Lerring, M. Halappanavar, "On stable marriages and greedy
   matchings", CSC 2016.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ._array import check_host_memory, get_namespace, to_numpy
from .errors import InputError, ParameterError

__all__ = ["Preferences", "PreferencePartition", "COLUMNS", "MAX_ID"]

#: The columns of a preference table.
COLUMNS = ("man", "woman", "man_rank", "woman_rank")
#: Ids and list lengths must stay below this: a man's id and a woman's rank of him share one
#: 64-bit key.
MAX_ID = 2**32 - 1


@dataclass(eq=False)
class Preferences:
    """A stable-marriage instance: men's lists in CSR with the women's ranks beside them.

    Build one with :meth:`from_table` (a preference table), :meth:`from_graph` (both sides rank
    by edge weight) or a generator of :mod:`mgmatch.generators`.

    Attributes
    ----------
    indptr : array of int64
        ``n_men + 1`` row offsets.
    women : array of int32 or int64
        Man ``m``'s acceptable women, his first choice first.
    wrank : array of int32
        ``wrank[e]``: the rank woman ``women[e]`` gives man ``m`` (0 is her first choice).
    n_men, n_women : int

    Examples
    --------
    >>> p = Preferences.from_table({"man": [0, 0, 1], "woman": [0, 1, 0],
    ...                             "man_rank": [0, 1, 0], "woman_rank": [1, 0, 0]})
    >>> p.n_men, p.n_women, p.nnz, p.women.tolist(), p.wrank.tolist()
    (2, 2, 3, [0, 1, 0], [1, 0, 0])
    """

    indptr: object
    women: object
    wrank: object
    n_men: int
    n_women: int

    def __post_init__(self):
        xp = get_namespace(self.indptr)
        self.n_men, self.n_women = int(self.n_men), int(self.n_women)
        self.indptr = xp.asarray(self.indptr, dtype=xp.int64)
        women = xp.asarray(self.women)
        self.women = women if women.dtype in (xp.int32, xp.int64) else women.astype(xp.int64)
        self.wrank = xp.asarray(self.wrank, dtype=xp.int32)
        if self.indptr.shape != (self.n_men + 1,) or self.women.shape != self.wrank.shape or self.women.ndim != 1:
            raise ParameterError(f"Preferences needs {self.n_men + 1} row offsets and equally long women and "
                                 f"wrank arrays, not shapes {self.indptr.shape}, {self.women.shape}, "
                                 f"{self.wrank.shape}")

    # ------------------------------------------------------------ engine's view
    bipartite = True

    @property
    def n_rows(self) -> int:
        """Men: the side that is partitioned and proposes."""
        return self.n_men

    @property
    def n(self) -> int:
        """People on both sides."""
        return self.n_men + self.n_women

    @property
    def nnz(self) -> int:
        """Mutually acceptable pairs."""
        return int(self.women.shape[0])

    @property
    def xp(self):
        return get_namespace(self.indptr)

    @property
    def lengths(self):
        """Length of each man's list."""
        return self.indptr[1:] - self.indptr[:-1]

    def __repr__(self) -> str:
        return f"Preferences(men={self.n_men}, women={self.n_women}, pairs={self.nnz})"

    def to(self, device: str) -> "Preferences":
        """A copy whose arrays live on ``"cpu"`` (NumPy) or ``"gpu"`` (CuPy)."""
        if device == "cpu":
            conv = to_numpy
        elif device == "gpu":
            from ._array import to_device  # noqa: PLC0415

            conv = to_device
        else:
            raise ParameterError(f"device must be 'cpu' or 'gpu', not {device!r}")
        return Preferences(conv(self.indptr), conv(self.women), conv(self.wrank), self.n_men, self.n_women)

    def partition(self, k=None, *, bounds=None) -> list["PreferencePartition"]:
        """Split the men into ``k`` ranges balanced by list entries, and the women into ``k``
        ranges balanced by how often they are listed; ``bounds`` gives the men's ranges
        explicitly (the women's are balanced as for ``k = len(bounds) - 1``).

        >>> p = Preferences.from_table({"man": [0, 1, 2, 3], "woman": [3, 2, 1, 0],
        ...                             "man_rank": [0, 0, 0, 0], "woman_rank": [0, 0, 0, 0]})
        >>> [(q.lo, q.hi, q.wlo, q.whi) for q in p.partition(2)]
        [(0, 2, 0, 2), (2, 4, 2, 4)]
        """
        from .graph import check_bounds, partition_bounds  # noqa: PLC0415

        if bounds is not None:
            bounds = check_bounds(bounds, self.n_men)
            k = len(bounds) - 1
        else:
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
                raise ParameterError(f"number of partitions must be a positive integer, not {k!r}")
            k = int(k)
            bounds = (np.array([0, self.n_men], dtype=np.int64) if k == 1
                      else partition_bounds(to_numpy(self.indptr), k))
        if k == 1:
            wbounds = np.array([0, self.n_women], dtype=np.int64)
        else:
            listed = np.bincount(to_numpy(self.women), minlength=self.n_women)
            wptr = np.zeros(self.n_women + 1, dtype=np.int64)
            np.cumsum(listed, out=wptr[1:])
            wbounds = partition_bounds(wptr, k)
        return [PreferencePartition.from_preferences(self, i, bounds, wbounds) for i in range(k)]

    # ------------------------------------------------------------ constructors
    @classmethod
    def from_table(cls, table, *, n_men: int | None = None, n_women: int | None = None,
                   source=None) -> "Preferences":
        """An instance from a preference table: one row per mutually acceptable pair.

        Parameters
        ----------
        table : dict of arrays, pyarrow.Table or pandas.DataFrame
            Columns ``man, woman, man_rank, woman_rank``: 0-based ids; ``man_rank`` is the
            woman's position in the man's list and ``woman_rank`` the man's in hers (smaller
            is preferred; only the order within each list matters).
        n_men, n_women : int, optional
            Sizes of the two sides (default: one more than the largest id), for people with
            empty lists beyond the largest listed id.
        source : str, optional
            The file the table came from, for error messages.

        Raises
        ------
        InputError
            A missing column, a value that is not a non-negative integer, a pair listed
            twice, a rank repeated within one person's list, or sizes below the ids listed.
        """
        cols = _columns(table, source)
        man, woman, mrank, wrank_in = (_non_negative_ints(cols[c], c, source) for c in COLUMNS)
        if not (man.size == woman.size == mrank.size == wrank_in.size):
            raise InputError("the columns man, woman, man_rank, woman_rank have different lengths", path=source)
        n_men = _side_size(man, n_men, "n_men", "man", source)
        n_women = _side_size(woman, n_women, "n_women", "woman", source)
        _refuse_repeats(man, woman, lambda i: f"the pair man {man[i]}, woman {woman[i]} is listed twice", source)
        _refuse_repeats(man, mrank, lambda i: f"man {man[i]} gives rank {mrank[i]} to two women", source)
        _refuse_repeats(woman, wrank_in, lambda i: f"woman {woman[i]} gives rank {wrank_in[i]} to two men", source)
        return cls._from_ordered(man, woman, (mrank,), (wrank_in,), n_men, n_women)

    @classmethod
    def from_graph(cls, graph) -> "Preferences":
        """The instance in which both sides rank by edge weight, larger first, ties by the
        smaller id [1]_ (section 3).

        A bipartite graph gives men = rows and women = columns, one pair per edge. An
        undirected graph on ``n`` vertices gives ``n`` men and ``n`` women and, for every edge
        ``{i, j}``, the pairs ``(man i, woman j)`` and ``(man j, woman i)`` (the paper's
        ``G'``). Either way the man-optimal stable matching is the greedy matching of the
        graph (Lemma 3.1): man ``i`` marries woman ``mate[i]``.

        >>> from mgmatch import Graph
        >>> g = Graph.from_edges([0, 1, 2], [1, 2, 3], [1.0, 3.0, 1.0])
        >>> p = Preferences.from_graph(g)
        >>> p.n_men, p.nnz
        (4, 6)
        """
        g = graph.to("cpu")
        rows = np.asarray(g.row_ids(), dtype=np.int64)
        cols = np.asarray(g.indices, dtype=np.int64)
        w = np.asarray(g.weights, dtype=np.float64)
        n_men, n_women = (g.n_rows, g.n_cols) if g.bipartite else (g.n, g.n)
        # a man orders his list by (weight descending, woman ascending), a woman hers likewise
        return cls._from_ordered(rows, cols, (-w, cols), (-w, rows), n_men, n_women)

    @classmethod
    def _from_ordered(cls, man, woman, man_keys, woman_keys, n_men, n_women) -> "Preferences":
        """Men's lists ordered by ``man_keys`` (primary first) and women's dense ranks by
        ``woman_keys``, from validated pair arrays."""
        if max(n_men, n_women) > MAX_ID:
            raise InputError(f"{max(n_men, n_women)} people on one side; at most {MAX_ID} are supported")
        # ids are dense: every id up to the largest is a person with arrays of their own (about
        # 48 bytes each through the solve), so one stray large id must be refused, not allocated
        check_host_memory(f"a stable-marriage instance of {n_men:,} men and {n_women:,} women",
                          48.0 * (n_men + n_women) + 40.0 * man.size)
        dense = _rank_within(woman, woman_keys)
        order = np.lexsort(tuple(reversed(man_keys)) + (man,))
        indptr = np.zeros(n_men + 1, dtype=np.int64)
        np.cumsum(np.bincount(man, minlength=n_men), out=indptr[1:])
        dtype = np.int32 if n_women <= np.iinfo(np.int32).max else np.int64
        return cls(indptr, woman[order].astype(dtype), dense[order].astype(np.int32), int(n_men), int(n_women))

    # ------------------------------------------------------------ views
    def men_of_entries(self):
        """The man of every list entry (host arrays)."""
        lengths = to_numpy(self.lengths)
        return np.repeat(np.arange(self.n_men, dtype=np.int64), lengths)

    def to_table(self) -> dict:
        """The instance as a preference table (dense ranks, rows in the men's order).

        >>> p = Preferences.from_table({"man": [1, 0], "woman": [0, 0], "man_rank": [5, 2], "woman_rank": [9, 4]})
        >>> {k: v.tolist() for k, v in p.to_table().items()}
        {'man': [0, 1], 'woman': [0, 0], 'man_rank': [0, 0], 'woman_rank': [0, 1]}
        """
        indptr = to_numpy(self.indptr)
        man = self.men_of_entries()
        pos = np.arange(self.nnz, dtype=np.int64) - indptr[man]
        return {"man": man, "woman": to_numpy(self.women).astype(np.int64), "man_rank": pos,
                "woman_rank": to_numpy(self.wrank).astype(np.int64)}


@dataclass(eq=False)
class PreferencePartition:
    """The men ``[lo, hi)`` with their lists, and the women ``[wlo, whi)`` whose suitors this
    partition keeps.

    ``slot[e]`` is where woman ``women[e]`` lives for this partition: ``women[e] - wlo`` when
    it owns her, else ``n_wlocal + j`` for her place ``j`` in the sorted ``ghosts`` (remote
    women its men list). With one partition ``slot`` is ``women`` itself.
    """

    index: int
    lo: int
    hi: int
    bounds: np.ndarray
    wlo: int
    whi: int
    wbounds: np.ndarray
    indptr: object
    women: object
    wrank: object
    slot: object
    ghosts: object
    n_global: int
    n_women: int

    @property
    def xp(self):
        return get_namespace(self.indptr)

    @property
    def n_owned(self) -> int:
        return self.hi - self.lo

    @property
    def n_wlocal(self) -> int:
        return self.whi - self.wlo

    @property
    def nnz(self) -> int:
        return int(self.women.shape[0])

    @property
    def n_parts(self) -> int:
        return len(self.bounds) - 1

    def to(self, device: str, *, keep_pinned: bool = False) -> "PreferencePartition":
        """A copy whose arrays live on ``"cpu"`` (NumPy) or ``"gpu"`` (CuPy) (``keep_pinned``
        as in :meth:`mgmatch.graph.Graph.to`)."""
        if device == "cpu":
            conv = to_numpy
        elif device == "gpu":
            from ._array import to_device  # noqa: PLC0415

            def conv(a):
                return to_device(a, keep_pinned=keep_pinned)
        else:
            raise ParameterError(f"device must be 'cpu' or 'gpu', not {device!r}")
        women = conv(self.women)
        slot = women if self.slot is self.women else conv(self.slot)
        return dataclasses.replace(self, indptr=conv(self.indptr), women=women, wrank=conv(self.wrank), slot=slot,
                                   ghosts=conv(self.ghosts))

    def __repr__(self) -> str:
        return (f"PreferencePartition({self.index}/{self.n_parts}, men [{self.lo}, {self.hi}), "
                f"women [{self.wlo}, {self.whi}), pairs={self.nnz}, ghosts={int(self.ghosts.shape[0])})")

    @classmethod
    def from_preferences(cls, prefs: Preferences, index: int, bounds, wbounds) -> "PreferencePartition":
        xp = prefs.xp
        lo, hi = int(bounds[index]), int(bounds[index + 1])
        wlo, whi = int(wbounds[index]), int(wbounds[index + 1])
        a, b = int(prefs.indptr[lo]), int(prefs.indptr[hi])
        women = prefs.women[a:b]
        if wlo == 0 and whi == prefs.n_women:
            slot = women
            ghosts = xp.empty(0, dtype=women.dtype)
        else:
            local = (women >= wlo) & (women < whi)
            ghosts = xp.unique(women[~local])
            slot = xp.where(local, women.astype(xp.int64) - wlo,
                            (whi - wlo) + xp.searchsorted(ghosts, women)).astype(xp.int64)
        return cls(index=index, lo=lo, hi=hi, bounds=np.asarray(bounds, dtype=np.int64), wlo=wlo, whi=whi,
                   wbounds=np.asarray(wbounds, dtype=np.int64),
                   indptr=prefs.indptr[lo:hi + 1] - a, women=women, wrank=prefs.wrank[a:b], slot=slot,
                   ghosts=ghosts, n_global=prefs.n_men, n_women=prefs.n_women)


# ---------------------------------------------------------------------------- table checks
def _columns(table, source) -> dict:
    """The four columns of ``table`` (dict, pyarrow table or pandas frame) as arrays."""
    if hasattr(table, "column_names") and hasattr(table, "column"):  # pyarrow.Table
        names = list(table.column_names)
        get = lambda c: table.column(c).to_numpy()  # noqa: E731
    elif hasattr(table, "columns") and hasattr(table, "to_numpy"):  # pandas.DataFrame
        names = [str(c) for c in table.columns]
        get = lambda c: table[c].to_numpy()  # noqa: E731
    elif isinstance(table, dict):
        names = list(table)
        get = lambda c: table[c]  # noqa: E731
    else:
        raise InputError(f"a preference table is a dict of arrays, a pyarrow table or a pandas DataFrame, "
                         f"not {type(table).__name__}", path=source)
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise InputError(f"the preference table lacks the column(s) {', '.join(missing)} "
                         f"(it needs {', '.join(COLUMNS)}; it has {', '.join(map(str, names)) or 'none'})",
                         path=source)
    return {c: get(c) for c in COLUMNS}


def _non_negative_ints(values, name, source) -> np.ndarray:
    arr = np.asarray(to_numpy(values))
    if arr.ndim != 1:
        raise InputError(f"column {name} must be 1-D, got shape {arr.shape}", path=source)
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype == object or arr.dtype.kind in "USb":
        raise InputError(f"column {name} must hold integers, not {arr.dtype} values", path=source)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"column {name}, row {i}: {arr[i].item()!r} is not an integer", path=source)
    if (arr < 0).any():
        i = int(np.flatnonzero(arr < 0)[0])
        raise InputError(f"column {name}, row {i}: {arr[i].item()} is negative", path=source)
    if arr.dtype.kind in "uf" and (arr > np.iinfo(np.int64).max).any():
        raise InputError(f"column {name} holds values beyond int64", path=source)
    return arr.astype(np.int64)


def _side_size(ids, given, what, column, source) -> int:
    least = int(ids.max()) + 1 if ids.size else 0
    if given is None:
        return least
    if isinstance(given, bool) or not isinstance(given, (int, np.integer)) or given < 0:
        raise ParameterError(f"{what} must be a non-negative integer, not {given!r}")
    if given < least:
        raise InputError(f"{what}={given}, but column {column} lists id {least - 1}", path=source)
    return int(given)


def _refuse_repeats(group, value, describe, source) -> None:
    """One clear error when two rows share ``(group, value)``."""
    if group.size < 2:
        return
    order = np.lexsort((value, group))
    same = (group[order][1:] == group[order][:-1]) & (value[order][1:] == value[order][:-1])
    if same.any():
        raise InputError(describe(int(order[int(np.flatnonzero(same)[0])])), path=source)


def _rank_within(group, keys) -> np.ndarray:
    """Position of every entry within its group when the group is ordered by ``keys``
    (primary first)."""
    if group.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort(tuple(reversed(keys)) + (group,))
    g = group[order]
    start = np.ones(g.size, dtype=bool)
    start[1:] = g[1:] != g[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(g.size), 0))
    rank = np.empty(group.size, dtype=np.int64)
    rank[order] = np.arange(g.size) - first
    return rank
