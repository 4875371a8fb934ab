"""Any input, any vertex ids: build a :class:`~mgmatch.graph.Graph` from what the user has, and
hand results back in the user's ids.

:func:`as_graph` accepts

* a :class:`~mgmatch.graph.Graph` (returned as it is);
* a SciPy sparse matrix or array (entry ``a_ij`` names edge ``{i, j}``; a rectangular one is a
  bipartite graph of rows x columns);
* a NetworkX graph (its nodes, in the order ``G.nodes`` lists them, become ``0 .. n-1``);
* an edge table: a pandas or cuDF ``DataFrame`` or a pyarrow ``Table`` with columns ``src``,
  ``dst`` and optionally ``weight`` (other names through ``src=``, ``dst=``, ``weight=``);
* arrays ``(src, dst)`` or ``(src, dst, weight)`` (NumPy, CuPy, pyarrow, lists, pandas Series).

Vertex ids that are not dense non-negative integers (strings, other hashables, negative or
sparse 64-bit integers) are *renumbered*: the distinct ids, sorted, become ``0 .. n-1``, and the
returned :class:`VertexMap` maps results back, as cuGraph's renumbering does. Integer ids are kept
as they are while that costs at most twice the vertices that occur (``renumber="auto"``);
``renumber=True`` or ``False`` decides it outright. :meth:`GraphInput.summary` records what was
done, so a run's summary can say so.

The result converters turn a result into a pandas or pyarrow table in the user's ids
(:func:`to_pandas`, :func:`to_arrow`), or into the values NetworkX returns: a list of sets of
vertices for communities (:func:`communities_as_sets`), a set of pairs for matchings
(:func:`matching_as_pairs`).

Examples
--------
>>> import mgmatch
>>> from mgmatch.convert import as_graph, matching_as_pairs
>>> gi = as_graph((["a", "b", "c"], ["b", "c", "d"], [1.0, 3.0, 1.0]))
>>> gi.graph.n, gi.vertices.renumbered, gi.vertices.ids.tolist()
(4, True, ['a', 'b', 'c', 'd'])
>>> sorted(matching_as_pairs(mgmatch.suitor(gi.graph, device="cpu"), gi))
[('b', 'c')]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._array import to_numpy
from .errors import InputError, NotAGraphError, ParameterError
from .graph import Graph

__all__ = [
    "GraphInput",
    "VertexMap",
    "as_graph",
    "coerce_input",
    "attach_mapping",
    "renumber_ids",
    "ids_kept",
    "to_pandas",
    "to_arrow",
    "result_columns",
    "communities_as_sets",
    "matching_as_pairs",
]

#: ``renumber="auto"`` keeps integer ids as they are while the largest id + 1 is at most this
#: many times the number of distinct ids (plus a small allowance for tiny graphs).
_SPARSE_FACTOR = 2
_SPARSE_ALLOWANCE = 1024


# ------------------------------------------------------------------------------ the map
@dataclass(frozen=True, eq=False)
class VertexMap:
    """How the user's vertex ids map to mgmatch's dense ids ``0 .. n-1``.

    Attributes
    ----------
    ids : ndarray
        ``ids[i]`` is the user's id of dense vertex ``i`` (``int64``, or ``object`` for strings
        and other hashables). For ids kept as they are, ``ids`` is ``arange(n)``.
    renumbered : bool
        Whether the ids were renumbered (``False``: dense id ``i`` is the user's id ``i``).
    """

    ids: np.ndarray
    renumbered: bool

    @classmethod
    def identity(cls, n: int) -> "VertexMap":
        return cls(np.arange(n, dtype=np.int64), False)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def to_original(self, dense):
        """The user's ids of dense vertices ``dense`` (an array; ``-1`` entries stay ``None``).

        >>> m = VertexMap(np.array(["x", "y"], dtype=object), True)
        >>> m.to_original(np.array([1, 0])).tolist()
        ['y', 'x']
        """
        dense = np.asarray(to_numpy(dense), dtype=np.int64)
        if not self.renumbered:
            return dense
        out = self.ids[np.clip(dense, 0, max(len(self) - 1, 0))] if len(self) else np.empty(dense.shape, self.ids.dtype)
        if (dense < 0).any():
            out = out.astype(object)
            out[dense < 0] = None
        return out

    def to_dense(self, ids) -> np.ndarray:
        """Dense ids of the user's ids ``ids``; an id the graph does not have is an error.

        >>> m = VertexMap(np.array(["x", "y"], dtype=object), True)
        >>> m.to_dense(["y", "y", "x"]).tolist()
        [1, 1, 0]
        """
        if not self.renumbered:
            dense = np.asarray(ids, dtype=np.int64)
            bad = (dense < 0) | (dense >= len(self))
        else:
            index = {v: i for i, v in enumerate(self.ids.tolist())}
            values = list(ids)
            dense = np.fromiter((index.get(v, -1) for v in values), dtype=np.int64, count=len(values))
            bad = dense < 0
        if bad.any():
            first = list(ids)[int(np.flatnonzero(bad)[0])]
            raise InputError(f"vertex {first!r} is not in the graph")
        return dense

    def summary(self) -> dict:
        """A JSON-able record: whether ids were renumbered, how many, and of what type."""
        kind = "int64" if self.ids.dtype.kind in "iu" else _value_kind(self.ids)
        return {"renumbered": bool(self.renumbered), "vertices": len(self), "id_type": kind}


def _value_kind(ids: np.ndarray) -> str:
    kinds = {type(v).__name__ for v in ids[:1000].tolist()}
    return kinds.pop() if len(kinds) == 1 else "mixed"


@dataclass(frozen=True, eq=False)
class GraphInput:
    """What :func:`as_graph` made: the graph, and the maps back to the user's ids.

    Attributes
    ----------
    graph : Graph
    vertices : VertexMap
        Vertex ids of an undirected graph, or the row ids of a bipartite one.
    columns : VertexMap or None
        Column ids of a bipartite graph.
    source : str
        What the input was: ``"graph"``, ``"scipy"``, ``"networkx"``, ``"pandas"``,
        ``"pyarrow"``, ``"cudf"`` or ``"arrays"``.
    """

    graph: Graph
    vertices: VertexMap
    columns: VertexMap | None
    source: str

    @property
    def renumbered(self) -> bool:
        return self.vertices.renumbered or bool(self.columns is not None and self.columns.renumbered)

    @property
    def column_ids(self) -> VertexMap:
        """The ids of a bipartite matching's columns: the columns' of a bipartite graph, else
        the vertices' (a matching of the graph's double cover, whose columns are its vertices)."""
        return self.vertices if self.columns is None else self.columns

    def summary(self) -> dict:
        """A JSON-able record of the conversion, for a run's summary.

        >>> as_graph((["a", "b"], ["b", "c"])).summary()
        {'input': 'arrays', 'renumbered': True, 'vertices': {'renumbered': True, 'vertices': 3, 'id_type': 'str'}}
        """
        out = {"input": self.source, "renumbered": self.renumbered, "vertices": self.vertices.summary()}
        if self.columns is not None:
            out["columns"] = self.columns.summary()
        return out


def coerce_input(obj, *, bipartite: bool | None = None) -> tuple:
    """``(graph, mapping)`` for a public entry point: a :class:`~mgmatch.graph.Graph` passes as
    it is (``mapping`` ``None``), a placed distributed graph too (with the map it was placed
    with, if any), a :class:`GraphInput` gives its graph and itself; anything :func:`as_graph`
    takes is converted (weights from the ``weight`` attribute or column) and its
    :class:`GraphInput` comes back, which the entry point hands to its result (``result.mapping``)
    so that :func:`to_pandas` and the other converters give the user's ids without being told."""
    import sys  # noqa: PLC0415

    loading = sys.modules.get("mgmatch.distributed.loading")  # (loaded whenever a placed graph exists)
    if isinstance(obj, Graph):
        return obj, None
    if loading is not None and isinstance(obj, loading.DistributedGraph):
        return obj, obj.mapping
    if isinstance(obj, GraphInput):  # (as_graph or reorder made it: its map comes along)
        return obj.graph, obj
    if _kind_of(obj) is None:
        raise NotAGraphError(f"expected a graph (an mgmatch.Graph, a SciPy sparse matrix, a NetworkX graph, an edge "
                         f"table or (src, dst[, weight]) arrays), not {type(obj).__name__}")
    converted = as_graph(obj, bipartite=bipartite)
    return converted.graph, converted


def attach_mapping(result, mapping):
    """``result`` with ``mapping`` (from :func:`coerce_input`) as ``result.mapping``."""
    if mapping is not None and result is not None and not hasattr(result, "__await__"):
        result.mapping = mapping
    return result


# ---------------------------------------------------------------------------- as_graph
def as_graph(obj, *, weight: str | None = "weight", bipartite: bool | None = None, src: str = "src",
             dst: str = "dst", renumber: bool | str = "auto", **canon) -> GraphInput:
    """Build a graph from a Graph, SciPy matrix, NetworkX graph, edge table or edge arrays.

    Parameters
    ----------
    obj
        The input (see the module notes for the accepted types).
    weight : str or None
        The weight column of an edge table, or the edge attribute of a NetworkX graph;
        ``None`` reads the input as unweighted (every edge weight 1, or random weights with
        ``random_weights=SEED``). A table without a column of the default name ``"weight"``
        is unweighted, unless it has other numeric columns (then name one, or pass ``None``).
        Ignored for a Graph, a SciPy matrix (``None`` still makes it unweighted) and arrays,
        whose third array is the weight.
    bipartite : bool, optional
        Read ``src`` as row ids and ``dst`` as column ids of a bipartite graph, each renumbered
        on its own. A NetworkX graph is bipartite by its nodes' ``bipartite`` attribute (0 for a
        row, as NetworkX's bipartite module marks the top nodes). SciPy matrices: as
        :meth:`Graph.from_scipy`.
    src, dst : str
        Column names of an edge table's endpoints.
    renumber : {"auto", True, False}
        Renumber vertex ids (see the module notes). ``False`` with ids that are not
        non-negative integers is an error.
    **canon
        Canonicalisation options of :meth:`Graph.from_edges` (``duplicates``, ``zeros``,
        ``negative``, ``random_weights``, ``dtype``).

    Returns
    -------
    GraphInput
        ``.graph``, ``.vertices`` (and ``.columns`` when bipartite), ``.summary()``.

    Raises
    ------
    InputError
        The object is not a supported input, a column is missing, ids are missing (null),
        arrays differ in length, or the data are invalid for :meth:`Graph.from_edges`.
    ParameterError
        An option is out of its domain.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> as_graph(sp.coo_array(([1.0], ([0], [1])), shape=(3, 3))).graph.m
    1
    >>> gi = as_graph(([0, 1, 2**40], [1, 2**40, 0]))
    >>> gi.vertices.renumbered, gi.vertices.ids.tolist()
    (True, [0, 1, 1099511627776])
    """
    if renumber not in ("auto", True, False):
        raise ParameterError(f"renumber must be 'auto', True or False, not {renumber!r}")
    if bipartite not in (None, True, False):
        raise ParameterError(f"bipartite must be None, True or False, not {bipartite!r}")
    if weight is not None and not isinstance(weight, str):
        raise ParameterError(f"weight must be a column or attribute name (a str) or None, not {weight!r}")
    if isinstance(obj, Graph):
        return _from_graph(obj)
    kind = _kind_of(obj)
    if kind == "scipy":
        g = Graph.from_scipy(obj, bipartite=bipartite, weighted=weight is not None, **canon)
        return GraphInput(g, VertexMap.identity(g.n_rows), VertexMap.identity(g.n_cols) if g.bipartite else None, "scipy")
    if kind == "networkx":
        return _from_networkx(obj, weight, bipartite, renumber, canon)
    if kind in ("pandas", "pyarrow", "cudf"):
        s, d, w = _table_columns(obj, kind, src, dst, weight)
        return _from_arrays(s, d, w, bipartite=bool(bipartite), renumber=renumber, canon=canon, source=kind)
    if kind == "arrays":
        if len(obj) not in (2, 3):
            raise InputError(f"edge arrays come as (src, dst) or (src, dst, weight), not {len(obj)} arrays")
        s, d = obj[0], obj[1]
        w = obj[2] if len(obj) == 3 else None
        return _from_arrays(s, d, w, bipartite=bool(bipartite), renumber=renumber, canon=canon, source="arrays")
    raise InputError(
        f"cannot make a graph from a {type(obj).__module__}.{type(obj).__name__}: give an mgmatch.Graph, "
        "a SciPy sparse matrix, a NetworkX graph, a pandas, pyarrow or cuDF edge table, "
        "or arrays (src, dst[, weight])"
    )


def _kind_of(obj) -> str | None:
    module = type(obj).__module__.split(".")[0]
    if module == "scipy":
        import scipy.sparse as sp  # noqa: PLC0415

        return "scipy" if sp.issparse(obj) else None
    if module == "networkx":
        return "networkx"
    if module == "pandas" and type(obj).__name__ == "DataFrame":
        return "pandas"
    if module == "pyarrow" and type(obj).__name__ in ("Table", "RecordBatch"):
        return "pyarrow"
    if module in ("cudf", "dask_cudf") and type(obj).__name__ == "DataFrame":
        return "cudf"
    if isinstance(obj, (tuple, list)):
        return "arrays"
    return None


def _from_graph(g: Graph) -> GraphInput:
    cols = VertexMap.identity(g.n_cols) if g.bipartite else None
    return GraphInput(g, VertexMap.identity(g.n_rows), cols, "graph")


# ------------------------------------------------------------------------------ tables
def _table_columns(table, kind, src, dst, weight):
    """The endpoint and weight columns of an edge table, as NumPy (object for strings) arrays."""
    if kind == "cudf":
        table = table.to_arrow() if hasattr(table, "to_arrow") else table.compute().to_arrow()
        kind = "pyarrow"
    names = [str(c) for c in (table.column_names if kind == "pyarrow" else table.columns)]
    for role, name in (("src", src), ("dst", dst)):
        if name not in names:
            raise InputError(f"the edge table has no {role} column {name!r} (columns: {', '.join(names)}); "
                             f"name it with {role}=")
    w = None
    if weight is not None and weight in names:
        if _has_nulls(table, kind, weight):
            raise InputError(f"weight column {weight!r} has missing values")
        w = _column(table, kind, weight)
        if w.dtype.kind not in "fiub":
            raise InputError(f"weight column {weight!r} is not numeric ({w.dtype})")
    elif weight is not None:
        others = [c for c in names if c not in (src, dst) and _is_numeric(table, kind, c)]
        if weight != "weight" or others:
            raise InputError(
                f"the edge table has no weight column {weight!r} (columns: {', '.join(names)}); "
                "name the weight column with weight=, or pass weight=None for an unweighted graph"
            )
    for name in (src, dst):
        if _has_nulls(table, kind, name):
            raise InputError(f"column {name!r} has missing vertex ids")
    return _column(table, kind, src), _column(table, kind, dst), w


def _column(table, kind, name) -> np.ndarray:
    if kind == "pyarrow":
        return table.column(name).to_numpy()
    return table[name].to_numpy()


def _has_nulls(table, kind, name) -> bool:
    if kind == "pyarrow":
        return table.column(name).null_count > 0
    return bool(table[name].isna().any())


def _is_numeric(table, kind, name) -> bool:
    if kind == "pyarrow":
        import pyarrow.types as pat  # noqa: PLC0415

        t = table.schema.field(name).type
        return pat.is_integer(t) or pat.is_floating(t)
    return table[name].dtype.kind in "iuf"


# ------------------------------------------------------------------------------ arrays
def _as_values(a, what: str) -> np.ndarray:
    """An endpoint array as NumPy: numbers as they are, anything else as an object array."""
    if type(a).__module__.split(".")[0] == "pyarrow":
        if a.null_count:
            raise InputError(f"{what} has missing vertex ids")
        a = a.to_numpy(zero_copy_only=False)
    arr = np.asarray(to_numpy(a)) if not isinstance(a, (list, tuple)) else np.asarray(a, dtype=object)
    if isinstance(a, (list, tuple)) and arr.size and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                          for v in arr.tolist()):
        arr = np.asarray(a)
    if arr.ndim != 1:
        raise InputError(f"{what} ids must be a 1-D array, got shape {arr.shape}")
    if arr.dtype.kind in "US":
        arr = arr.astype(object)
    if arr.dtype.kind == "f":  # integral floats (a column that passed through pandas) are integer ids
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            raise InputError(f"{what} id {arr[np.flatnonzero(bad)[0]].item()!r} is not an integer; vertex ids are "
                             "integers or labels")
        arr = arr.astype(np.int64)
    if arr.dtype == object and any(v is None for v in arr.tolist()):
        raise InputError(f"{what} has missing vertex ids")
    return arr


def _from_arrays(s, d, w, *, bipartite: bool, renumber, canon, source) -> GraphInput:
    s, d = _as_values(s, "src"), _as_values(d, "dst")
    if s.shape[0] != d.shape[0]:
        raise InputError(f"src has {s.shape[0]} entries but dst has {d.shape[0]}")
    if w is not None:
        w = np.asarray(to_numpy(w))
        if w.shape != s.shape:
            raise InputError(f"weight has shape {w.shape} but src has {s.shape}")
        if w.dtype == object or w.dtype.kind not in "fiub":
            try:
                w = w.astype(np.float64)
            except (TypeError, ValueError):
                raise InputError(f"weights must be numbers, not {w.dtype}") from None
    if bipartite:
        rows, (u,) = renumber_ids([s], renumber)
        cols, (v,) = renumber_ids([d], renumber)
        g = Graph.from_edges(u, v, w, bipartite=True, shape=(len(rows), len(cols)), **canon)
        return GraphInput(g, rows, cols, source)
    verts, (u, v) = renumber_ids([s, d], renumber)
    g = Graph.from_edges(u, v, w, n=len(verts), **canon)
    return GraphInput(g, verts, None, source)


def renumber_ids(arrays: list, mode: bool | str = "auto") -> tuple[VertexMap, list]:
    """A :class:`VertexMap` over the ids of ``arrays`` and each array in dense ids.

    ``arrays`` are 1-D NumPy arrays, or pyarrow string arrays (as a file's reader parses text
    ids), which are numbered by Arrow's hashing and sorting rather than by Python comparisons.

    Integer ids stay as they are under ``mode="auto"`` while they are non-negative and the largest
    is below twice the count of distinct ids (plus 1,024): the graph then has ``max + 1``
    vertices, the ids that never occur among them isolated. Otherwise the distinct ids, sorted,
    become ``0 .. n-1`` (ids of mixed types that do not sort keep the order they first occur in).

    >>> vm, (a, b) = renumber_ids([np.array(["x", "y"], dtype=object), np.array(["y", "z"], dtype=object)])
    >>> vm.ids.tolist(), a.tolist(), b.tolist()
    (['x', 'y', 'z'], [0, 1], [1, 2])
    """
    text = [_is_arrow_text(a) for a in arrays]
    if arrays and all(text):
        if mode is False:
            raise InputError("renumber=False needs integer vertex ids; these are strings")
        return _renumber_text(arrays)
    if any(text):  # (one id space: is the text "1" the number 1? Neither guess is safe)
        raise InputError("the vertex id columns hold different types (strings in some, numbers in others); "
                         "give every id column the same type")
    ints = all(a.dtype.kind in "iu" for a in arrays)
    if ints and mode is not True:
        top = max((int(a.max()) for a in arrays if a.size), default=-1)
        if mode is False:
            low = min((int(a.min()) for a in arrays if a.size), default=0)
            if low < 0:
                raise InputError(f"vertex id {low} is negative; renumber=False needs ids 0 .. n-1")
        if mode is False or ids_kept(arrays):
            return VertexMap.identity(top + 1), [a.astype(np.int64) for a in arrays]
    elif mode is False:
        raise InputError("renumber=False needs integer vertex ids; these are "
                         f"{', '.join(sorted({str(a.dtype) for a in arrays}))}")
    sizes = [a.shape[0] for a in arrays]
    joined = np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)
    if joined.dtype == object and joined.size and all(type(v) is str for v in joined.tolist()):
        return _renumber_text([_arrow_text(a) for a in arrays])
    try:
        ids, inverse = np.unique(joined, return_inverse=True)
    except TypeError:  # ids of types that do not sort together: number them as they first occur
        index: dict = {}
        inverse = np.fromiter((index.setdefault(v, len(index)) for v in joined.tolist()), dtype=np.int64,
                              count=joined.shape[0])
        ids = np.empty(len(index), dtype=object)
        ids[:] = list(index)
    ids = ids.astype(np.int64) if ids.dtype.kind in "iu" else ids.astype(object)
    parts = np.split(inverse.astype(np.int64).reshape(-1), np.cumsum(sizes)[:-1])
    return VertexMap(ids, True), parts


def ids_kept(arrays: list) -> bool:
    """Whether ``renumber="auto"`` keeps the integer ids of ``arrays`` as they are: none is
    negative or beyond int64, and the largest, ``top``, has ``top + 1`` at most twice the distinct
    ids plus 1,024. The distinct ids are counted on a mask of ``top + 1`` flags, which that bound
    keeps to about twice the ids given, rather than by sorting.

    >>> ids_kept([np.array([0, 7]), np.array([7, 9])]), ids_kept([np.array([0, 2**40])])
    (True, False)
    """
    if not all(a.dtype.kind in "iu" for a in arrays):
        return False
    sized = [a for a in arrays if a.size]
    if not sized:
        return True
    if min(int(a.min()) for a in sized) < 0:
        return False
    top = max(int(a.max()) for a in sized)
    if top >= 2**63 - 1:
        return False
    if top < _SPARSE_ALLOWANCE:
        return True
    total = sum(int(a.shape[0]) for a in arrays)
    if top + 1 > _SPARSE_FACTOR * total + _SPARSE_ALLOWANCE:
        return False  # more vertices than even all-distinct ids would allow
    seen = np.zeros(top + 1, dtype=bool)
    for a in arrays:
        seen[a] = True
    return top + 1 <= _SPARSE_FACTOR * int(np.count_nonzero(seen)) + _SPARSE_ALLOWANCE


def _is_arrow_text(a) -> bool:
    if type(a).__module__.split(".")[0] != "pyarrow":
        return False
    import pyarrow.types as pat  # noqa: PLC0415

    return pat.is_string(a.type) or pat.is_large_string(a.type)


def _arrow_text(values: np.ndarray):
    import pyarrow as pa  # noqa: PLC0415

    return pa.array(values, type=pa.string())


def _renumber_text(arrays: list) -> tuple[VertexMap, list]:
    """String ids numbered in sorted order, by Arrow: a hash table gives each distinct id a code in
    the order of first occurrence, and sorting the distinct ids turns codes into ranks. Arrow
    compares strings by their UTF-8 bytes, which orders them as Python compares ``str``."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    sizes = [len(a) for a in arrays]
    joined = pa.chunked_array([c for a in arrays for c in (a.chunks if isinstance(a, pa.ChunkedArray) else [a])],
                              type=pa.string()) if arrays else pa.chunked_array([], type=pa.string())
    if joined.null_count:
        raise InputError("missing vertex ids (null values)")
    encoded = pc.dictionary_encode(joined.combine_chunks()) if len(joined) else None
    if encoded is None:
        return VertexMap(np.empty(0, dtype=object), True), [np.empty(0, dtype=np.int64) for _ in arrays]
    distinct = encoded.dictionary
    order = pc.array_sort_indices(distinct).to_numpy()
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size, dtype=np.int64)
    dense = rank[encoded.indices.to_numpy(zero_copy_only=False)]
    ids = np.asarray(distinct.take(pa.array(order)).to_numpy(zero_copy_only=False), dtype=object)
    return VertexMap(ids, True), np.split(dense, np.cumsum(sizes)[:-1])


# -------------------------------------------------------------------------- networkx in
def _from_networkx(G, weight, bipartite, renumber, canon) -> GraphInput:
    nodes = list(G.nodes)
    if bipartite:
        top = [v for v in nodes if G.nodes[v].get("bipartite") == 0]
        bottom = [v for v in nodes if G.nodes[v].get("bipartite") == 1]
        if len(top) + len(bottom) != len(nodes):
            raise InputError("a bipartite NetworkX graph needs every node's 'bipartite' attribute set to 0 (row) "
                             "or 1 (column)")
        rows, cols = _node_map(top), _node_map(bottom)
        ri = {v: i for i, v in enumerate(top)}
        ci = {v: i for i, v in enumerate(bottom)}
        u, v, w = [], [], []
        for a, b, data in G.edges(data=True):
            if a in ci and b in ri:
                a, b = b, a
            if a not in ri or b not in ci:
                raise InputError(f"edge ({a!r}, {b!r}) joins two nodes of the same side")
            u.append(ri[a])
            v.append(ci[b])
            w.append(data.get(weight, 1.0) if weight is not None else 1.0)
        has_w = weight is not None and any(weight in d for _, _, d in G.edges(data=True))
        g = Graph.from_edges(np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64),
                             np.asarray(w, dtype=np.float64) if has_w else None, bipartite=True,
                             shape=(len(top), len(bottom)), **canon)
        return GraphInput(g, rows, cols, "networkx")
    if G.is_multigraph() and "duplicates" not in canon:
        canon = dict(canon, duplicates="sum")  # parallel edges add up, as NetworkX's algorithms sum them
    g = Graph.from_networkx(G, weight=weight, **canon)
    return GraphInput(g, _node_map(nodes), None, "networkx")


def _node_map(nodes: list) -> VertexMap:
    n = len(nodes)
    if all(type(v) is int for v in nodes) and nodes == list(range(n)):
        return VertexMap.identity(n)
    ids = np.empty(n, dtype=object)
    ids[:] = nodes
    if n and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in nodes):
        ids = ids.astype(np.int64)
    return VertexMap(ids, True)


# ---------------------------------------------------------------------------- results out
def _maps(mapping, result=None) -> tuple[VertexMap | None, VertexMap | None]:
    if mapping is None:  # a result of an entry point given a NetworkX graph, a table, ... knows its own
        mapping = getattr(result, "mapping", None)
    if mapping is None:
        return None, None
    if isinstance(mapping, GraphInput):
        return mapping.vertices, mapping.column_ids
    if isinstance(mapping, VertexMap):
        return mapping, mapping
    raise ParameterError(f"expected a GraphInput or VertexMap, not {type(mapping).__name__}")


def result_columns(result, mapping=None, **options) -> dict:
    """A result's table (its ``to_table()``) with vertex columns in the user's ids.

    ``u``, ``v``, ``vertex`` and ``row`` columns map through ``mapping.vertices``, ``col``
    through ``mapping.column_ids`` (a :class:`VertexMap` maps them all). ``options`` go to
    ``to_table`` (e.g. ``all_levels=True``).
    """
    table = result.to_table(**options)
    verts, cols = _maps(mapping, result)
    out = {}
    for name, values in table.items():
        vm = cols if name == "col" else verts if name in ("u", "v", "vertex", "row") else None
        out[name] = vm.to_original(values) if vm is not None and vm.renumbered else values
    return out


def to_pandas(result, mapping=None, **options):
    """A result as a pandas ``DataFrame`` in the user's ids (see :func:`result_columns`).

    >>> import mgmatch
    >>> gi = as_graph((["a", "b"], ["b", "c"]))
    >>> to_pandas(mgmatch.louvain(gi.graph, device="cpu"), gi).to_dict("list")
    {'vertex': ['a', 'b', 'c'], 'community': [0, 0, 0]}
    """
    import pandas as pd  # noqa: PLC0415

    return pd.DataFrame(result_columns(result, mapping, **options))


def to_arrow(result, mapping=None, **options):
    """A result as a pyarrow ``Table`` in the user's ids (see :func:`result_columns`).

    >>> import mgmatch
    >>> gi = as_graph(([5, 7], [7, 9], [1.0, 2.0]), renumber=True)
    >>> to_arrow(mgmatch.suitor(gi.graph, device="cpu"), gi).to_pydict()
    {'u': [7], 'v': [9], 'weight': [2.0]}
    """
    import pyarrow as pa  # noqa: PLC0415

    cols = result_columns(result, mapping, **options)
    return pa.table({k: pa.array(v.tolist() if v.dtype == object else v) for k, v in cols.items()})


def communities_as_sets(result_or_labels, mapping=None) -> list[set]:
    """Communities as NetworkX returns them: a list of sets of vertices (user's ids).

    Takes a :class:`~mgmatch.LouvainResult` (its final level) or an array of labels, one per
    vertex. Communities are listed in the order of their first vertex.

    >>> communities_as_sets(np.array([1, 1, 0, 2, 0]))
    [{0, 1}, {2, 4}, {3}]
    """
    labels = getattr(result_or_labels, "communities", result_or_labels)
    labels = np.asarray(to_numpy(labels), dtype=np.int64)
    verts, _ = _maps(mapping, result_or_labels)
    if labels.size == 0:
        return []
    order = np.argsort(labels, kind="stable")  # vertices grouped by label, each group in vertex order
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    groups = np.split(order, cuts)
    groups.sort(key=lambda grp: int(grp[0]))
    ids = verts.ids.tolist() if verts is not None and verts.renumbered else None
    if ids is None:
        return [set(grp.tolist()) for grp in groups]
    return [{ids[i] for i in grp.tolist()} for grp in groups]


def matching_as_pairs(result, mapping=None) -> set[tuple]:
    """A matching as NetworkX returns one from ``maximal_matching``: a set of pairs (user's ids).

    Works for (b-)matchings (pairs ``(u, v)``, ``u < v`` in dense ids) and bipartite matchings
    (pairs ``(row, column)``).
    """
    table = result_columns(result, mapping)
    if "row" in table:
        a, b = table["row"], table["col"]
    else:
        a, b = table["u"], table["v"]
    return set(zip(a.tolist(), b.tolist()))
