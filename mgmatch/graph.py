"""Graph model: undirected weighted graphs and bipartite graphs in CSR, and their partitions.

A :class:`Graph` is either

* **undirected** (``bipartite=False``): ``n`` vertices, CSR rows hold *both* directions of every
  edge, so ``nnz == 2 * m``; or
* **bipartite** (``bipartite=True``): ``n_rows`` row vertices and ``n_cols`` column vertices, CSR
  rows are row vertices and ``indices`` are column ids, ``nnz == m``.

Neighbour lists are sorted by id. Index arrays are ``int32`` while every id and offset fits,
else ``int64``; weights are ``float64`` unless ``dtype="float32"`` is asked for.

A :class:`Partition` is the unit of work of every algorithm: an owned vertex range
``[lo, hi)``, the CSR rows of those vertices with *global* neighbour ids, and the sorted list
of ghost (remote) neighbours. One partition that owns everything is the single-device case.

Canonicalisation rules (applied by every constructor, reported in :class:`CanonSummary`):

* self-loops are dropped (undirected graphs);
* entries naming the same edge are merged into one; for undirected graphs ``(u, v)`` and
  ``(v, u)`` name the same edge (the summary counts such mirrored pairs, a symmetric matrix
  stored in full, apart from true duplicates that repeat an edge in the same direction). The rule is ``duplicates="max"`` by default (the largest weight
  wins, which leaves a symmetric matrix stored in full unchanged); ``"sum"``, ``"min"`` and
  ``"first"`` are available. Matrix Market files first sum repeated coordinates, as that format
  defines, then this rule merges ``a_ij`` with ``a_ji``;
* explicit zero weights are kept (``zeros="keep"``, an edge of weight 0) or dropped
  (``zeros="drop"``);
* negative weights raise :class:`~mgmatch.errors.InputError` (``negative="error"``) or are
  replaced by their absolute value (``negative="abs"``, the papers' ``|a_ij|``);
* NaN and infinite weights always raise, naming the offending edge; so does a weight that is
  finite as given but not after the merge (``"sum"`` of large weights) or the cast to
  ``float32``, and weights whose total (``2m`` for an undirected graph) overflows a float64:
  every check holds for the values the algorithms consume;
* unweighted input gets weight 1.0, or, with ``random_weights=SEED``, weights drawn uniformly
  from (0, 1], one per edge, reproducible for a given seed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ._array import get_namespace, to_numpy
from .errors import InputError, ParameterError

__all__ = ["Graph", "Partition", "CanonSummary", "index_dtype_for", "random_unit_weights"]

_INT32_MAX = np.iinfo(np.int32).max
_DUPLICATE_RULES = ("max", "sum", "min", "first")


def index_dtype_for(n: int, nnz: int) -> np.dtype:
    """``int32`` when every vertex id and CSR offset fits in it, else ``int64``.

    >>> index_dtype_for(10, 20), index_dtype_for(2**31, 1)
    (dtype('int32'), dtype('int64'))
    """
    return np.dtype(np.int32) if max(n, nnz) <= _INT32_MAX else np.dtype(np.int64)


def _check_seed(seed) -> None:
    """A random-weights seed is a non-negative integer (or None: no random weights)."""
    ok = seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0)
    if not ok:
        raise ParameterError(f"random_weights takes a non-negative integer seed, not {seed!r}")


def random_unit_weights(n_edges: int, seed: int) -> np.ndarray:
    """``n_edges`` weights drawn uniformly from (0, 1] with a seeded generator.

    >>> w = random_unit_weights(1000, seed=1)
    >>> bool((w > 0).all() and (w <= 1).all())
    True
    """
    rng = np.random.default_rng(seed)
    return 1.0 - rng.random(n_edges)  # random() is in [0, 1), so 1 - x is in (0, 1]


@dataclass
class CanonSummary:
    """What canonicalisation found and did to the input."""

    input_entries: int = 0
    self_loops_dropped: int = 0
    duplicates_merged: int = 0
    mirrored_pairs: int = 0
    zeros_dropped: int = 0
    zeros_kept: int = 0
    negatives_made_absolute: int = 0
    weighted: bool = True
    random_weights_seed: int | None = None
    duplicate_rule: str = "max"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(eq=False)
class Graph:
    """An undirected weighted graph, or a bipartite graph, in CSR.

    Build one with :meth:`from_edges`, :meth:`from_scipy` or :meth:`from_networkx` (or read a
    file with :func:`mgmatch.io.read_graph`); the constructor itself takes canonical CSR arrays
    as they are.

    Examples
    --------
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 0], [3.0, 1.0, 2.0])
    >>> g.n, g.m, g.nnz
    (3, 3, 6)
    >>> g.neighbours(0)
    (array([1, 2], dtype=int32), array([3., 2.]))
    >>> b = Graph.from_edges([0, 0, 1], [0, 2, 1], bipartite=True, shape=(2, 3))
    >>> b.shape, b.m
    ((2, 3), 3)
    """

    indptr: object
    indices: object
    weights: object
    n_rows: int
    n_cols: int
    bipartite: bool = False
    weighted: bool = True
    summary: CanonSummary = field(default_factory=CanonSummary)
    #: What to add to a vertex number to get the id the input named it by: 1 when a file's ids
    #: were read as 1-based (Matrix Market, METIS, and edge lists or GML whose smallest id is 1
    #: unless told otherwise), else 0. Results number vertices from 0 either way.
    id_offset: int = 0
    #: A bipartite graph whose matrix is square and symmetric in its pattern, so that its CSR is
    #: also its CSC (columns to rows), as :meth:`bipartite_double_cover` makes it: bipartite
    #: matching then takes the column adjacency from the rows instead of transposing them.
    symmetric: bool = False

    def __post_init__(self):
        if self.symmetric and not (self.bipartite and self.n_rows == self.n_cols):
            raise ParameterError("symmetric is for a square bipartite graph (a double cover); "
                                 f"this one is {'bipartite' if self.bipartite else 'undirected'}, "
                                 f"{self.n_rows} x {self.n_cols}")

    # ------------------------------------------------------------------ shape
    @property
    def n(self) -> int:
        """Number of vertices: ``n_rows`` for undirected graphs, ``n_rows + n_cols`` if bipartite."""
        return self.n_rows + self.n_cols if self.bipartite else self.n_rows

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_rows, self.n_cols)

    @property
    def nnz(self) -> int:
        """Stored CSR entries (``2 m`` for undirected graphs, ``m`` for bipartite ones)."""
        return int(self.indices.shape[0])

    @property
    def m(self) -> int:
        """Number of edges."""
        return self.nnz if self.bipartite else self.nnz // 2

    @property
    def xp(self):
        """The array module holding the arrays (``numpy`` or ``cupy``)."""
        return get_namespace(self.indptr)

    @property
    def degrees(self):
        """Degree of each (row) vertex."""
        return self.indptr[1:] - self.indptr[:-1]

    def neighbours(self, v: int):
        """Neighbour ids and weights of (row) vertex ``v``."""
        a, b = int(self.indptr[v]), int(self.indptr[v + 1])
        return self.indices[a:b], self.weights[a:b]

    def __repr__(self) -> str:
        kind = f"bipartite {self.n_rows}x{self.n_cols}" if self.bipartite else f"n={self.n}"
        return (
            f"Graph({kind}, m={self.m}, index={np.dtype(self.indices.dtype).name}, "
            f"weight={np.dtype(self.weights.dtype).name})"
        )

    # ------------------------------------------------------------ conversions
    def row_ids(self):
        """The row (source) vertex of every CSR entry, on the graph's device."""
        xp = self.xp
        pos = xp.arange(self.nnz, dtype=self.indices.dtype)
        return (xp.searchsorted(self.indptr, pos, side="right") - 1).astype(self.indices.dtype)

    def edges(self):
        """Edge arrays ``(u, v, w)``, each edge once (``u < v`` for undirected graphs)."""
        rows = self.row_ids()
        if self.bipartite:
            return rows, self.indices, self.weights
        keep = rows < self.indices
        return rows[keep], self.indices[keep], self.weights[keep]

    def to_scipy(self):
        """The CSR matrix (``n x n`` symmetric, or ``n_rows x n_cols``) as ``scipy.sparse.csr_array``."""
        import scipy.sparse as sp  # noqa: PLC0415

        return sp.csr_array(
            (to_numpy(self.weights), to_numpy(self.indices), to_numpy(self.indptr)), shape=self.shape
        )

    def to(self, device: str, *, keep_pinned: bool = False) -> "Graph":
        """A copy of the graph whose arrays live on ``"cpu"`` (NumPy) or ``"gpu"`` (CuPy).

        Large host arrays are page-locked for the copy to the GPU (see
        :func:`mgmatch._array.to_device`; ``keep_pinned`` keeps them locked for later copies)."""
        if device == "cpu":
            conv = to_numpy
        elif device == "gpu":
            from ._array import cupy_or_none, to_device  # noqa: PLC0415

            cp = cupy_or_none()
            if cp is None:
                from .errors import ResourceError  # noqa: PLC0415

                raise ResourceError("no CUDA device is visible to CuPy")

            def conv(a):
                return to_device(a, keep_pinned=keep_pinned)
        else:
            raise ParameterError(f"device must be 'cpu' or 'gpu', not {device!r}")
        return dataclasses.replace(
            self, indptr=conv(self.indptr), indices=conv(self.indices), weights=conv(self.weights)
        )

    def transpose(self) -> "Graph":
        """The bipartite graph with rows and columns swapped (columns become rows)."""
        if not self.bipartite:
            return self
        t = self.to_scipy().T.tocsr()
        t.sort_indices()
        idx = index_dtype_for(max(self.shape), self.nnz)
        return dataclasses.replace(
            self,
            indptr=t.indptr.astype(idx),
            indices=t.indices.astype(idx),
            weights=t.data.astype(self.weights.dtype),
            n_rows=self.n_cols,
            n_cols=self.n_rows,
        )

    def bipartite_double_cover(self) -> "Graph":
        """The undirected graph's matrix read as a bipartite graph (``n x n``, both triangles)."""
        if self.bipartite:
            return self
        return dataclasses.replace(self, bipartite=True, n_cols=self.n_rows, symmetric=True)

    # ------------------------------------------------------------ partitions
    def partition(self, k=None, *, bounds=None) -> list["Partition"]:
        """Split the (row) vertices into ``k`` contiguous ranges balanced by edge count.

        Ranges may be empty when ``k`` exceeds the number of vertices with edges. ``k=1`` gives
        one partition that owns everything. ``bounds`` (``0 = b_0 <= b_1 <= ... <= b_k = n``)
        gives the ranges explicitly instead.

        >>> g = Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 0])
        >>> [(p.lo, p.hi) for p in g.partition(2)]
        [(0, 2), (2, 4)]
        >>> [(p.lo, p.hi) for p in g.partition(bounds=[0, 1, 4])]
        [(0, 1), (1, 4)]
        """
        bounds = self.partition_bounds(k, bounds=bounds)
        return [Partition.from_graph(self, i, bounds) for i in range(len(bounds) - 1)]

    def partition_bounds(self, k=None, *, bounds=None) -> np.ndarray:
        """The range bounds :meth:`partition` splits at: ``bounds`` checked, or ``k`` ranges
        balanced by edge count (each partition can then be built on its own, with
        :meth:`Partition.from_graph`).

        >>> Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 0]).partition_bounds(2).tolist()
        [0, 2, 4]
        """
        if bounds is not None:
            return check_bounds(bounds, self.n_rows)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ParameterError(f"number of partitions must be a positive integer, not {k!r}")
        k = int(k)  # one partition needs no degree read-back
        return np.array([0, self.n_rows], dtype=np.int64) if k == 1 else partition_bounds(to_numpy(self.indptr), k)

    # ----------------------------------------------------------- constructors
    @classmethod
    def from_edges(
        cls,
        src,
        dst,
        weight=None,
        *,
        n: int | None = None,
        bipartite: bool = False,
        shape: tuple[int, int] | None = None,
        duplicates: str = "max",
        zeros: str = "keep",
        negative: str = "error",
        random_weights: int | None = None,
        dtype="float64",
        source: str | None = None,
    ) -> "Graph":
        """Build a graph from edge arrays.

        Parameters
        ----------
        src, dst : array_like of int
            Endpoints of each entry; for bipartite graphs, row and column ids. Either one or both
            directions of an undirected edge may be given (see ``duplicates``).
        weight : array_like of float, optional
            Entry weights; unweighted input gets 1.0 (or random weights, below).
        n : int, optional
            Number of vertices (undirected). Defaults to ``max(id) + 1``.
        bipartite : bool
            Build a bipartite graph with ``shape = (n_rows, n_cols)``.
        shape : (int, int), optional
            Shape of a bipartite graph. Defaults to ``(max(src) + 1, max(dst) + 1)``.
        duplicates : {"max", "sum", "min", "first"}
            How entries naming the same edge merge.
        zeros : {"keep", "drop"}
            Keep explicit zero weights as edges, or drop them.
        negative : {"error", "abs"}
            Reject negative weights, or take their absolute value.
        random_weights : int, optional
            Seed for uniform (0, 1] weights given to an unweighted graph.
        dtype : {"float64", "float32"}
            Weight dtype.
        source : str, optional
            The file the arrays came from, named in error messages.

        Raises
        ------
        InputError
            Negative or out-of-range ids, mismatched lengths, NaN/inf or negative weights.
        """
        _check_choice("duplicates", duplicates, _DUPLICATE_RULES)
        _check_choice("zeros", zeros, ("keep", "drop"))
        _check_choice("negative", negative, ("error", "abs"))
        _check_seed(random_weights)
        wdtype = np.dtype(dtype)
        if wdtype not in (np.dtype(np.float64), np.dtype(np.float32)):
            raise ParameterError(f"dtype must be float64 or float32, not {dtype!r}")

        src = _as_id_array(src, "source", source)
        dst = _as_id_array(dst, "destination", source)
        if src.shape != dst.shape:
            raise InputError(
                f"source and destination arrays differ in length ({src.size} vs {dst.size})",
                path=source,
            )
        weighted = weight is not None
        if weighted:
            w = np.asarray(to_numpy(weight))
            if w.ndim != 1 or w.shape != src.shape:
                raise InputError(
                    f"weight array has shape {w.shape}, expected ({src.size},)", path=source
                )
            if not np.issubdtype(w.dtype, np.number) or np.issubdtype(w.dtype, np.complexfloating):
                raise InputError(f"weights must be real numbers, not {w.dtype}", path=source)
            w = w.astype(np.float64, copy=False)
        else:
            w = np.ones(src.shape, dtype=np.float64)
        summary = CanonSummary(input_entries=int(src.size), weighted=weighted, duplicate_rule=duplicates)

        # NaN / inf: always an error, naming the edge.
        bad = ~np.isfinite(w)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"weight of edge ({src[i]}, {dst[i]}) is {w[i]}; weights must be finite "
                f"({int(bad.sum())} such entr{'y' if bad.sum() == 1 else 'ies'})",
                path=source,
            )
        neg = w < 0
        if neg.any():
            if negative == "error":
                i = int(np.flatnonzero(neg)[0])
                raise InputError(
                    f"weight of edge ({src[i]}, {dst[i]}) is negative ({w[i]}; {int(neg.sum())} negative entries); "
                    "absolute values are used only on request (--negative abs, or negative='abs')",
                    path=source,
                )
            summary.negatives_made_absolute = int(neg.sum())
            w = np.abs(w)

        if bipartite:
            n_rows, n_cols = _bipartite_shape(src, dst, shape, source)
            _check_vertex_memory(n_rows, n_cols, src.size, source)
            u, v = src, dst
        else:
            if shape is not None and shape[0] != shape[1]:
                raise InputError(f"an undirected graph needs a square shape, not {shape}", path=source)
            nv = _vertex_count(src, dst, n if n is not None else (shape[0] if shape else None), source)
            n_rows = n_cols = nv
            _check_vertex_memory(n_rows, n_cols, src.size, source)
            loops = src == dst
            summary.self_loops_dropped = int(loops.sum())
            if summary.self_loops_dropped:
                keep = ~loops
                src, dst, w = src[keep], dst[keep], w[keep]
            forward = src < dst
            u, v = np.minimum(src, dst), np.maximum(src, dst)

        u, v, w, merged, mirrored = _merge_duplicates(u, v, w, n_cols, duplicates,
                                                      forward=None if bipartite else forward)
        _check_merged_weights(u, v, w, wdtype, bipartite, source)
        summary.duplicates_merged = merged
        summary.mirrored_pairs = mirrored
        zero = w == 0
        if zeros == "drop":
            summary.zeros_dropped = int(zero.sum())
            if summary.zeros_dropped:
                keep = ~zero
                u, v, w = u[keep], v[keep], w[keep]
        else:
            summary.zeros_kept = int(zero.sum())
        if not weighted and random_weights is not None:
            w = random_unit_weights(u.size, random_weights)
            summary.random_weights_seed = int(random_weights)
            weighted = True

        return cls._from_sorted_pairs(u, v, w, n_rows, n_cols, bipartite, weighted, summary, wdtype)

    @classmethod
    def _from_sorted_pairs(cls, u, v, w, n_rows, n_cols, bipartite, weighted, summary, wdtype):
        """CSR from unique pairs sorted by ``(u, v)`` (``u < v`` for undirected graphs)."""
        from .cpu.graph_build import row_pointer, symmetric_csr  # noqa: PLC0415

        nnz = u.size if bipartite else 2 * u.size
        idx = index_dtype_for(max(n_rows, n_cols), nnz)
        if bipartite:
            indptr = row_pointer(u, n_rows, idx)
            indices = v.astype(idx, copy=False)
            weights = w.astype(wdtype, copy=False)
        else:
            indptr = np.zeros(n_rows + 1, dtype=idx)
            indices = np.empty(nnz, dtype=idx)
            weights = np.empty(nnz, dtype=wdtype)
            symmetric_csr(u, v, w, n_rows, indptr, indices, weights)
        return cls(
            indptr=indptr,
            indices=indices,
            weights=weights,
            n_rows=int(n_rows),
            n_cols=int(n_cols),
            bipartite=bool(bipartite),
            weighted=bool(weighted),
            summary=summary,
        )

    @classmethod
    def from_scipy(cls, matrix, *, bipartite: bool | None = None, weighted: bool = True, **options) -> "Graph":
        """Build a graph from a SciPy sparse matrix or array.

        A square matrix becomes an undirected graph (entry ``a_ij`` names edge ``{i, j}``) unless
        ``bipartite=True``; a rectangular one is always bipartite (rows x columns). Explicitly
        stored zeros are entries (see ``zeros``). Options are those of :meth:`from_edges`.

        >>> import scipy.sparse as sp
        >>> Graph.from_scipy(sp.coo_array(([1.0, 2.0], ([0, 1], [1, 2])), shape=(3, 3))).m
        2
        """
        import scipy.sparse as sp  # noqa: PLC0415

        if not sp.issparse(matrix):
            raise InputError(f"expected a SciPy sparse matrix, got {type(matrix).__name__}")
        coo = sp.coo_array(matrix)
        if coo.ndim != 2:
            raise InputError(f"expected a 2-D sparse matrix, got {coo.ndim} dimensions")
        nr, nc = coo.shape
        if bipartite is None:
            bipartite = nr != nc
        elif not bipartite and nr != nc:
            raise InputError(f"a {nr} x {nc} matrix cannot be an undirected graph; use bipartite=True")
        data = coo.data if weighted else None
        if data is not None and (data.dtype == bool or np.issubdtype(data.dtype, np.complexfloating)):
            data = np.abs(data).astype(np.float64) if np.issubdtype(data.dtype, np.complexfloating) else None
        return cls.from_edges(
            coo.row, coo.col, data, bipartite=bipartite, shape=(nr, nc) if bipartite else None,
            n=None if bipartite else nr, **options
        )

    @classmethod
    def from_networkx(cls, nx_graph, *, weight: str | None = "weight", **options) -> "Graph":
        """Build an undirected graph from a NetworkX graph.

        Nodes are numbered in the order ``nx_graph.nodes`` lists them; edges without the
        ``weight`` attribute get 1.0 (the graph counts as unweighted when no edge has one).

        >>> import networkx as nx
        >>> Graph.from_networkx(nx.path_graph(4)).m
        3
        """
        nodes = list(nx_graph.nodes)
        index = {v: i for i, v in enumerate(nodes)}
        edges = list(nx_graph.edges(data=True))
        src = np.fromiter((index[a] for a, _, _ in edges), dtype=np.int64, count=len(edges))
        dst = np.fromiter((index[b] for _, b, _ in edges), dtype=np.int64, count=len(edges))
        has_w = weight is not None and any(weight in d for _, _, d in edges)
        w = (
            np.fromiter((float(d.get(weight, 1.0)) for _, _, d in edges), dtype=np.float64, count=len(edges))
            if has_w
            else None
        )
        return cls.from_edges(src, dst, w, n=len(nodes), **options)


@dataclass(eq=False)
class Partition:
    """The vertices ``[lo, hi)`` of a graph and their CSR rows, with global neighbour ids.

    Attributes
    ----------
    index : int
        This partition's number, ``0 <= index < len(bounds) - 1``.
    lo, hi : int
        The owned (row) vertex range.
    bounds : ndarray
        Owned ranges of all partitions: partition ``p`` owns ``[bounds[p], bounds[p+1])``.
    indptr : array
        Local CSR offsets, ``hi - lo + 1`` of them, starting at 0.
    indices, weights : array
        Global neighbour ids and edge weights of the owned rows.
    ghosts : ndarray
        Sorted unique neighbour ids that this partition does not own (empty for bipartite
        graphs, whose columns are not partitioned).
    n_global, n_cols : int
        Vertex count (rows) and column count of the whole graph.
    bipartite, symmetric : bool
        The graph's flags (:attr:`Graph.symmetric` only when the partition owns every row).
    """

    index: int
    lo: int
    hi: int
    bounds: np.ndarray
    indptr: object
    indices: object
    weights: object
    ghosts: np.ndarray
    n_global: int
    n_cols: int
    bipartite: bool = False
    #: The partition owns every row of a :attr:`Graph.symmetric` graph: its rows are its columns.
    symmetric: bool = False
    #: The partition stays on a worker between runs (placed on a cluster): a program may keep
    #: tables with it that pay for themselves over several runs (:meth:`derived`).
    placed: bool = False
    #: Tables a program derives from the arrays above (:meth:`derived`); not pickled.
    _derived: dict = field(default_factory=dict, init=False, repr=False)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_derived"] = {}  # rebuilt where the partition lands, not sent with it
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_derived", {})

    def derived(self, key: str, build):
        """``build()``, a read-only table derived from this partition's arrays (the neighbours'
        slots), made once and kept with the partition when it is on the CPU: a graph placed on
        CPU workers keeps its partitions between runs, so only the first run of a program builds
        it. It stays as long as the partition does, so only tables of the partition's own size
        (its entries) belong here. On a GPU it is made anew for every run, as GPU memory holds
        the run's own arrays. Callers must not write to the result."""
        if self.xp is not np:
            return build()
        try:
            return self._derived[key]
        except KeyError:
            value = self._derived[key] = build()
            return value

    @classmethod
    def from_graph(cls, graph: Graph, index: int, bounds: np.ndarray) -> "Partition":
        lo, hi = int(bounds[index]), int(bounds[index + 1])
        a, b = int(graph.indptr[lo]), int(graph.indptr[hi])
        indices = graph.indices[a:b]
        xp = graph.xp
        if graph.bipartite or (lo == 0 and hi == graph.n_rows):
            ghosts = np.empty(0, dtype=np.dtype(indices.dtype))  # nothing is remote
        elif xp is np:  # one linear pass (no sort of the remote entries), without the GIL
            from .cpu.graph_build import remote_ids  # noqa: PLC0415

            ghosts = remote_ids(indices, lo, hi, graph.n_rows)
        else:  # found on the graph's own device; only the (boundary-sized) ghost list comes back
            remote = xp.sort(indices[(indices < lo) | (indices >= hi)])
            keep = xp.ones(remote.shape[0], dtype=bool)
            keep[1:] = remote[1:] != remote[:-1]  # sort + neighbour test: unique without its slow path
            ghosts = to_numpy(remote[keep])
        return cls(
            index=index,
            lo=lo,
            hi=hi,
            bounds=np.asarray(bounds, dtype=np.int64),
            indptr=graph.indptr[lo : hi + 1] - a if a else graph.indptr[lo : hi + 1],
            indices=indices if xp is not np else np.ascontiguousarray(indices),
            weights=graph.weights[a:b],
            ghosts=ghosts,
            n_global=graph.n_rows,
            n_cols=graph.n_cols,
            bipartite=graph.bipartite,
            symmetric=graph.symmetric and lo == 0 and hi == graph.n_rows,
        )

    @property
    def n_owned(self) -> int:
        return self.hi - self.lo

    @property
    def nnz(self) -> int:
        return int(self.indices.shape[0])

    @property
    def n_parts(self) -> int:
        return len(self.bounds) - 1

    @property
    def xp(self):
        return get_namespace(self.indices)

    def to(self, device: str, *, keep_pinned: bool = False) -> "Partition":
        """A copy whose CSR arrays live on ``"cpu"`` (NumPy) or ``"gpu"`` (CuPy) (``keep_pinned``
        as in :meth:`Graph.to`)."""
        g = Graph(self.indptr, self.indices, self.weights, self.n_owned, self.n_cols).to(
            device, keep_pinned=keep_pinned)
        return dataclasses.replace(self, indptr=g.indptr, indices=g.indices, weights=g.weights)

    def owner_of(self, v):
        """Partition number owning vertex (or array of vertices) ``v``."""
        return np.searchsorted(self.bounds, v, side="right") - 1

    def __repr__(self) -> str:
        return (
            f"Partition({self.index}/{self.n_parts}, owns [{self.lo}, {self.hi}), "
            f"nnz={self.nnz}, ghosts={self.ghosts.size})"
        )


# ---------------------------------------------------------------------------- helpers
def partition_bounds(indptr: np.ndarray, k: int) -> np.ndarray:
    """``k + 1`` contiguous range bounds over rows balanced by CSR entry count.

    >>> partition_bounds(np.array([0, 2, 4, 6, 8]), 2).tolist()
    [0, 2, 4]
    """
    n = indptr.size - 1
    nnz = int(indptr[-1]) if n >= 0 else 0
    if nnz == 0:
        cuts = np.linspace(0, n, k + 1).round().astype(np.int64)
    else:
        targets = np.arange(1, k) * (nnz / k)
        cuts = np.searchsorted(indptr, targets, side="left").astype(np.int64)
        cuts = np.concatenate([[0], np.clip(cuts, 0, n), [n]])
    return np.maximum.accumulate(cuts)


def check_bounds(bounds, n: int) -> np.ndarray:
    """Validate explicit partition bounds over ``n`` vertices."""
    b = np.asarray(bounds)
    if b.ndim != 1 or b.size < 2 or not np.issubdtype(b.dtype, np.integer):
        raise ParameterError("partition bounds must be a 1-D integer sequence of at least two entries")
    b = b.astype(np.int64)
    if b[0] != 0 or b[-1] != n or (np.diff(b) < 0).any():
        raise ParameterError(f"partition bounds must rise from 0 to {n}, got {b.tolist()}")
    return b


def _check_choice(name, value, choices):
    if value not in choices:
        raise ParameterError(f"{name} must be one of {', '.join(map(repr, choices))}, not {value!r}")


def _as_id_array(a, what, source, *, first: int = 0):
    """Ids as int64, refused when they are not 1-D, not integers (a float is named by its value),
    negative, or beyond int64 (a uint64 id of 2**63 or more would wrap to a negative one).
    ``first`` is the entry number of ``a[0]`` in the caller's file, for the messages."""
    arr = np.asarray(to_numpy(a))
    if arr.ndim != 1:
        raise InputError(f"{what} ids must be a 1-D array, got shape {arr.shape}", path=source)
    if arr.size == 0:
        return arr.astype(np.int64)

    def refuse(bad, problem):
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{what} id {arr[i].item()} (entry {first + i}) {problem}", path=source)

    if np.issubdtype(arr.dtype, np.floating):
        fraction = ~np.isfinite(arr) | (arr != np.round(arr))
        if fraction.any():
            refuse(fraction, "is not an integer")
    elif not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"{what} ids must be integers, not {arr.dtype}", path=source)
    if arr.dtype.kind in "uf" and (arr >= 2**63).any():
        refuse(arr >= 2**63, "is too large for a vertex id")
    arr = arr.astype(np.int64, copy=False)
    if (arr < 0).any():
        refuse(arr < 0, "is negative")
    return arr


def _vertex_count(src, dst, n, source):
    top = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
    if n is None:
        return top
    if top > n:
        i = int(np.flatnonzero((src >= n) | (dst >= n))[0])
        raise InputError(
            f"edge ({src[i]}, {dst[i]}) names a vertex outside 0..{n - 1} (the graph has {n} vertices)",
            path=source,
        )
    return int(n)


def _check_vertex_memory(n_rows, n_cols, entries, source):
    """Per-vertex arrays (row pointers, counting-sort buckets) cost 16 bytes a vertex and the
    entries about 48 bytes each; refuse before allocating when that cannot fit."""
    from ._array import check_host_memory  # noqa: PLC0415
    from .errors import ResourceError  # noqa: PLC0415

    try:
        check_host_memory(f"a graph of {max(n_rows, n_cols):,} vertices", 16.0 * (n_rows + n_cols) + 48.0 * entries)
    except ResourceError as exc:
        hint = " (vertex ids must be dense, 0 to n-1: the largest id sets n)" if entries < max(n_rows, n_cols) else ""
        raise ResourceError(f"{source + ': ' if source else ''}{exc}{hint}") from None


def _bipartite_shape(rows, cols, shape, source):
    top_r = int(rows.max(initial=-1)) + 1
    top_c = int(cols.max(initial=-1)) + 1
    if shape is None:
        return top_r, top_c
    nr, nc = int(shape[0]), int(shape[1])
    if top_r > nr or top_c > nc:
        bad = (rows >= nr) | (cols >= nc)
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"entry ({rows[i]}, {cols[i]}) lies outside the {nr} x {nc} shape", path=source
        )
    return nr, nc


def _check_merged_weights(u, v, w, wdtype, bipartite, source):
    """Refuse weights that are finite as given but not as the algorithms consume them: a merged
    weight (``duplicates="sum"`` adds ``1e308 + 1e308``) or a weight cast to ``float32`` beyond
    its range, and weights whose total overflows. Every algorithm sums weights (a matching's
    weight, Louvain's ``2m`` over both directions of every edge), so the checks before the merge
    are not enough: ``inf`` would flow into the results without a word."""
    with np.errstate(over="ignore"):
        stored = w.astype(wdtype, copy=False)
        bad = ~np.isfinite(stored)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            merged = not np.isfinite(w[i])
            how = "merging its entries gives" if merged else f"as {wdtype.name} it becomes"
            hint = "another duplicate rule (--duplicates max)" if merged else "float64 weights"
            raise InputError(
                f"the weight of edge ({u[i]}, {v[i]}) overflows: {how} {stored[i]} "
                f"({int(bad.sum())} such edge{'s' if bad.sum() != 1 else ''}); weights must be finite: "
                f"use {hint} or smaller weights",
                path=source,
            )
        total = float(np.sum(stored, dtype=np.float64)) * (1 if bipartite else 2)
    if not np.isfinite(total):
        raise InputError(
            f"the weights sum to more than a float64 can hold ({np.finfo(np.float64).max:.4g}); the algorithms "
            "add weights up (a matching's weight, Louvain's total), so scale the weights down",
            path=source,
        )


def _merge_duplicates(u, v, w, n_cols, rule, forward=None):
    """Merge entries with equal ``(u, v)`` by ``rule``; return arrays sorted by (u, v).

    For undirected input ``forward`` tells which entries were given as ``(min, max)``: an entry
    and its mirror are the symmetric form of one edge (counted in ``mirrored``), not a
    duplicate; ``merged`` counts entries repeating an edge in the same direction.
    """
    from .cpu.graph_build import sort_pairs  # noqa: PLC0415

    if u.size == 0:
        return u, v, w, 0, 0
    n_rows = int(u.max()) + 1
    order = sort_pairs(u, v, n_rows, max(int(n_cols), int(v.max()) + 1))
    u, v, w = u[order], v[order], w[order]
    first = np.empty(u.size, dtype=bool)
    first[0] = True
    np.logical_or(u[1:] != u[:-1], v[1:] != v[:-1], out=first[1:])
    groups = int(first.sum())
    if groups == u.size:
        return u, v, w, 0, 0
    starts = np.flatnonzero(first)
    if forward is None:
        merged, mirrored = int(u.size - groups), 0
    else:
        n_fwd = np.add.reduceat(forward[order].astype(np.int64), starts)
        n_bwd = np.diff(np.append(starts, u.size)) - n_fwd
        merged = int(np.maximum(n_fwd - 1, 0).sum() + np.maximum(n_bwd - 1, 0).sum())
        mirrored = int(((n_fwd > 0) & (n_bwd > 0)).sum())
    if rule == "max":
        wm = np.maximum.reduceat(w, starts)
    elif rule == "min":
        wm = np.minimum.reduceat(w, starts)
    elif rule == "sum":
        with np.errstate(over="ignore"):  # an overflowing sum is refused after the merge, naming the edge
            wm = np.add.reduceat(w, starts)
    else:  # first given, thanks to the stable sort
        wm = w[starts]
    return u[starts], v[starts], wm, merged, mirrored
