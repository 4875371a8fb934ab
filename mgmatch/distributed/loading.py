"""Reading a graph file into partitions on the Dask workers, without passing it through the client.

:func:`read_partitions` cuts a file on storage that every worker can read into chunks (Parquet
row groups; byte ranges of a text edge list cut at line breaks; a gzip file is one chunk) and
builds the partitions in three steps, all on the workers:

1. **scan** (``read-chunk-c<chunk>``, ``read-scan-c<chunk>``): parse and check one chunk, which
   stays in the memory of the worker that read it; return only its entry count, smallest and
   largest id and a coarse histogram of endpoint counts over id buckets. From these the client
   decides the vertex count, whether ids are 1-based (the rule of
   :func:`~mgmatch.io.read_graph`) and partition bounds balanced by edge count;
2. **split** (``read-split-c<chunk>``): drop the chunk's self-loops and cut it into one piece per
   partition that owns an endpoint, holding the entries as rows of that partition's CSR (from
   each endpoint it owns); the pieces travel worker to worker (``read-piece-c<chunk>-p<partition>``);
3. **build** (``read-merge-p<partition>``, pinned to the partition's worker, and
   ``read-partition-p<partition>``): lay the rows out as CSR, merging entries that repeat an edge
   by the graph model's rule, and build the :class:`~mgmatch.graph.Partition` that
   ``read_graph(path).partition(bounds=...)`` gives.

Every entry that names an edge reaches both owners of the edge, with its place in the file where
the duplicate rule needs it (``duplicates="first"``), so both owners merge the edge identically.
Each step does work in proportion to the entries it is given (one sort, by SciPy, of the rows a
merge builds): in all, about the CPU time of reading the file in the client and scattering its
partitions, spread over the workers (``mgmatch bench --family distributed`` times both routes).
"""

from __future__ import annotations

import dataclasses
import operator
import uuid
from dataclasses import dataclass, field

import numpy as np

from ..errors import ClusterError, InputError, ParameterError
from ..graph import (
    CanonSummary, Graph, Partition, _check_choice, _check_merged_weights, check_bounds, index_dtype_for,
)
from .workers import check_worker, worker_addresses

__all__ = ["DistributedGraph", "place", "place_async", "read_partitions", "read_partitions_async"]

_HISTOGRAM_BUCKETS = 1 << 16
_TEXT_FORMATS = ("csv", "tsv", "edgelist")
_SPLITTABLE = _TEXT_FORMATS + ("parquet",)
_DEFAULT_CHUNK_BYTES = 1 << 26
# canonicalisation counts taken from the scan of each chunk rather than from the partitions
_COUNTED_IN_SCAN = ("input_entries", "self_loops_dropped", "negatives_made_absolute", "random_weights_seed")


@dataclass(frozen=True)
class _ReadPlan:
    """How a file is cut and read: everything a worker needs to read one chunk again."""

    path: str
    format: str
    chunks: tuple  # (start, stop) byte ranges, or (row_group,) for Parquet
    delimiter: int | None
    options: dict  # weighted, negative, duplicates, zeros, dtype, one_based
    n_fields: int | None = None
    header_chunk: int | None = None
    base: int = 0


@dataclass(eq=False)
class DistributedGraph:
    """An undirected graph held on a Dask cluster as one ``Future[Partition]`` per partition.

    Attributes
    ----------
    n, m, nnz : int
        Vertices, edges and stored CSR entries (``2 m``) of the whole graph.
    bounds : ndarray
        Partition ``p`` owns vertices ``[bounds[p], bounds[p+1])``.
    summary : CanonSummary
        What canonicalisation found and did, as :func:`~mgmatch.io.read_graph` reports it.
    weighted : bool
        Whether the file's weights were used.
    path : str
        The file read ("" for a graph placed from the client with :func:`place`).
    parts : dict of int to distributed.Future
        Partition ``p``, held by worker ``workers[p]``.
    workers : dict of int to str
        The worker address holding each partition.
    resident : bool
        Whether the partitions live in the workers' GPU memory (``place(..., resident=True)``)
        rather than in their host memory.
    mapping : GraphInput or None
        The graph placed, when :func:`place` was given a :class:`~mgmatch.convert.GraphInput`
        (from :func:`mgmatch.reorder`, or ids that were renumbered): every result on it carries
        it (``result.mapping``), so that it converts to the input's ids.
    """

    n: int
    m: int
    nnz: int
    bounds: np.ndarray
    summary: CanonSummary
    weighted: bool
    path: str
    parts: dict = field(repr=False)
    workers: dict = field(repr=False)
    _plan: _ReadPlan = field(default=None, repr=False)
    _source: Graph = field(default=None, repr=False)  # the client's graph, for place()
    resident: bool = False  # the partitions live in the workers' GPU memory
    mapping: object = field(default=None, repr=False)  # the GraphInput placed, whose ids results map back to

    bipartite = False

    @property
    def n_parts(self) -> int:
        """Number of partitions."""
        return len(self.bounds) - 1

    def __repr__(self) -> str:
        return (f"DistributedGraph(n={self.n}, m={self.m}, partitions={self.n_parts}, "
                f"workers={len(set(self.workers.values()))}, path={self.path!r})")


# ------------------------------------------------------------------------- worker tasks
def _read_chunk(plan: _ReadPlan, c: int, *, first_pass: bool):
    """Chunk ``c`` of the file, parsed and checked (an :class:`~mgmatch.io.readers.EdgeChunk`)."""
    from ..io.readers import read_edge_chunk, read_parquet_row_groups  # noqa: PLC0415

    opts = plan.options
    if plan.format == "parquet":
        return read_parquet_row_groups(plan.path, list(plan.chunks[c]), weighted=opts["weighted"],
                                       negative=opts["negative"], one_based=opts["one_based"],
                                       columns=opts.get("columns"))
    start, stop = plan.chunks[c]
    n_fields = None if first_pass or c == plan.header_chunk else plan.n_fields
    return read_edge_chunk(plan.path, start, stop, delimiter=plan.delimiter, weighted=opts["weighted"],
                           negative=opts["negative"], n_fields=n_fields, one_based=opts["one_based"])


def _import_readers() -> None:
    import scipy.sparse  # noqa: F401, PLC0415

    from ..io import readers  # noqa: F401, PLC0415


def _plan_task(path: str, fmt: str, chunk_bytes: int, options: dict) -> _ReadPlan:
    """Check the file and cut it into chunks (runs on a worker: the client may not see the file)."""
    import os  # noqa: PLC0415

    from ..io.readers import _check_readable, _is_gzip, edge_list_delimiter, parquet_row_groups  # noqa: PLC0415

    if fmt == "parquet":
        groups = parquet_row_groups(path, options.get("columns"))
        if not groups:
            raise InputError("no edges: the table holds no row group", path=path)
        chunks = tuple((g,) for g in range(len(groups)))
        return _ReadPlan(path, fmt, chunks, None, options)
    _check_readable(path)
    delimiter = edge_list_delimiter(path, fmt)
    if _is_gzip(path):
        chunks = ((0, None),)  # gzip data cannot be cut
    else:
        size = os.path.getsize(path)
        chunks = tuple((s, min(s + chunk_bytes, size)) for s in range(0, size, chunk_bytes))
    return _ReadPlan(path, fmt, chunks, delimiter, options)


@dataclass(frozen=True)
class _ChunkError:
    """The error a chunk's read found, handed on as a value (the scan reports it in order)."""

    message: str
    path: str | None
    line: int | None

    def raise_for(self, plan: _ReadPlan):
        raise InputError(self.message, path=self.path or plan.path, line=self.line)


def _chunk_task(plan: _ReadPlan, c: int, first_pass: bool):
    """Chunk ``c`` read and checked once, and kept on the worker for the scan and the split (a
    second read would cost as much again); a bad chunk gives its error as a value."""
    try:
        return _read_chunk(plan, c, first_pass=first_pass)
    except InputError as exc:
        return _ChunkError(exc.message, exc.path, exc.line)


def _scan_task(chunk) -> dict:
    """Pass 1: statistics of a chunk (never its edges), or its error."""
    if isinstance(chunk, _ChunkError):
        return {"error": (chunk.message, chunk.path, chunk.line)}
    src, dst, w = chunk.src, chunk.dst, chunk.weight
    top = int(max(src.max(initial=-1), dst.max(initial=-1)))
    smallest = int(min(src.min(initial=np.iinfo(np.int64).max), dst.min(initial=np.iinfo(np.int64).max)))
    shift = 0
    while (max(top, 0) >> shift) >= _HISTOGRAM_BUCKETS:
        shift += 1
    loops = src == dst
    ends_src, ends_dst = (src[~loops], dst[~loops]) if loops.any() else (src, dst)
    histogram = np.bincount(ends_src >> shift, minlength=_HISTOGRAM_BUCKETS)  # endpoints by id bucket
    histogram += np.bincount(ends_dst >> shift, minlength=_HISTOGRAM_BUCKETS)
    return {
        "error": None,
        "entries": int(src.size),
        "min": smallest,
        "max": top,
        "self_loops": int(loops.sum()),
        "negatives": 0 if w is None else int((w < 0).sum()),
        "shift": shift,
        "histogram": histogram.astype(np.int64, copy=False),
        "n_fields": chunk.n_fields,
        "header": chunk.header,
        "has_lines": chunk.has_lines,
        "begin": chunk.begin,
        "weighted": w is not None,
    }


def _split_task(plan: _ReadPlan, chunk, bounds: np.ndarray) -> dict:
    """Pass 2: a chunk without self-loops, cut into one piece per partition that owns an endpoint
    of some entry. A piece holds the entries as rows of that partition's CSR, ``(rows, cols,
    weights, n_from_src, positions)``: first the entries whose source the partition owns, from
    their source, then those whose target it owns, from their target, each group in file order
    (an entry whose both endpoints it owns is in both). ``positions`` gives each one's place in the
    chunk where the merge must know the file order (``duplicates="first"``), else ``None``."""
    if isinstance(chunk, _ChunkError):
        chunk.raise_for(plan)
    src, dst = chunk.src - plan.base, chunk.dst - plan.base
    w = np.ones(src.size) if chunk.weight is None else chunk.weight
    keep = src != dst
    if not keep.all():
        src, dst, w = src[keep], dst[keep], w[keep]
    if (w < 0).any():  # refused by the scan unless negative="abs"
        w = np.abs(w)
    if int(bounds[-1]) <= np.iinfo(np.int32).max:  # half the bytes to cut, send and lay out
        src, dst = src.astype(np.int32), dst.astype(np.int32)
    owner_src = np.searchsorted(bounds, src, side="right") - 1
    owner_dst = np.searchsorted(bounds, dst, side="right") - 1
    in_order = plan.options["duplicates"] == "first"
    pieces = {}
    for p in range(len(bounds) - 1):
        # a pass a partition and an endpoint, which keeps the file order without sorting the entries
        from_src, from_dst = np.flatnonzero(owner_src == p), np.flatnonzero(owner_dst == p)
        if from_src.size + from_dst.size == 0:
            continue
        pieces[p] = (np.concatenate([src[from_src], dst[from_dst]]), np.concatenate([dst[from_src], src[from_dst]]),
                     np.concatenate([w[from_src], w[from_dst]]), int(from_src.size),
                     np.concatenate([from_src, from_dst]) if in_order else None)
    return pieces


def _piece_task(pieces: dict, p: int):
    """The piece of a split chunk addressed to partition ``p`` (``None`` when there is none)."""
    return pieces.get(p)


def _merge_task(plan: _ReadPlan, p: int, bounds: np.ndarray, pieces: list, expected_worker: str, index_dtype=None):
    """Merge the entries partition ``p`` received by the graph model's rules and lay out the rows
    of the vertices it owns as CSR (global column ids, sorted in each row); count what
    canonicalisation did to the edges it counts: those whose smaller endpoint it owns, so the
    counts of all partitions add up.

    Most files give each edge once, and then the rows are built at once from the pieces by
    SciPy's COO to CSR conversion (which sorts each row), as :mod:`mgmatch.io` builds such a
    file's graph; where an entry repeats an edge, the entries merge first by
    :meth:`Graph.from_edges <mgmatch.graph.Graph.from_edges>`'s own rule, on ids local to the
    partition, so memory follows the partition, not ``n``.

    With ``index_dtype`` (known before the edges are counted when even every entry read would
    fit it) the result is the :class:`Partition` itself; else its rows, for
    :func:`_partition_task` once the edge count fixes the index type."""
    from ..io._common import _concat  # noqa: PLC0415 (the workers import the readers first)

    check_worker(expected_worker)
    pieces = [piece for piece in pieces if piece is not None]
    lo, hi, n = int(bounds[p]), int(bounds[p + 1]), int(bounds[-1])
    rows, cols, w = (_concat([piece[i] for piece in pieces], dtype) for i, dtype in
                     ((0, np.int64), (1, np.int64), (2, np.float64)))
    built = _csr_rows(rows - lo, cols, w, hi - lo, n)
    counts = {"duplicates_merged": 0, "mirrored_pairs": 0}
    if built is None:  # an entry repeats an edge: merge the entries, each once, by the duplicate rule
        src, dst, w = _entries_once(pieces, lo, hi)
        src, dst, w, counts = _merge_repeats(src, dst, w, lo, hi, plan.options["duplicates"])
        rows, cols = _directed(src, dst, lo, hi)
        w = np.concatenate([w[(src >= lo) & (src < hi)], w[(dst >= lo) & (dst < hi)]])
    mine = rows < cols  # each edge once: from its smaller endpoint, which this partition owns
    zero = w == 0
    zeros = int(np.count_nonzero(zero & mine))
    counts.update(zeros_dropped=0, zeros_kept=0)
    if plan.options["zeros"] == "drop":
        counts["zeros_dropped"] = zeros
        if zero.any():
            rows, cols, w, mine = rows[~zero], cols[~zero], w[~zero], mine[~zero]
            built = None
    else:
        counts["zeros_kept"] = zeros
    _check_merged_weights(rows[mine], cols[mine], w[mine], np.dtype(np.float64), False, plan.path)
    if built is None:
        built = _csr_rows(rows - lo, cols, w, hi - lo, n)
    counts["edges"] = int(np.count_nonzero(mine))
    if index_dtype is not None:
        return _partition_of(built, p, bounds, np.dtype(index_dtype), plan.options["dtype"]), counts
    return built, counts


def _entries_once(pieces: list, lo: int, hi: int):
    """The entries of the pieces as the file gives them, ``(src, dst, w)``, each once: those from
    their source, and those from their target whose source is not in ``[lo, hi)``; in file order
    where the pieces carry their positions."""
    from ..io._common import _concat  # noqa: PLC0415

    out = []
    for rows, cols, w, n_from_src, positions in pieces:
        back = np.arange(n_from_src, rows.size)
        back = back[(cols[back] < lo) | (cols[back] >= hi)]  # from the target alone
        src = np.concatenate([rows[:n_from_src], cols[back]])
        dst = np.concatenate([cols[:n_from_src], rows[back]])
        weights = np.concatenate([w[:n_from_src], w[back]])
        if positions is not None:
            order = np.argsort(np.concatenate([positions[:n_from_src], positions[back]]), kind="stable")
            src, dst, weights = src[order], dst[order], weights[order]
        out.append((src, dst, weights))
    return tuple(_concat([x[i] for x in out], dtype).astype(dtype, copy=False)
                 for i, dtype in ((0, np.int64), (1, np.int64), (2, np.float64)))


def _directed(src, dst, lo: int, hi: int):
    """The entries ``(src, dst)`` as CSR rows of vertices ``[lo, hi)``: from each endpoint in the
    range (``rows``) to the other (``cols``), the sources first."""
    from_src = (src >= lo) & (src < hi)
    from_dst = (dst >= lo) & (dst < hi)
    return np.concatenate([src[from_src], dst[from_dst]]), np.concatenate([dst[from_src], src[from_dst]])


def _csr_rows(rows, cols, w, n_rows: int, n: int):
    """CSR of the entries ``(rows, cols, w)`` (``rows`` from 0): ``indptr``, the columns sorted in
    each row, the weights; or ``None`` if an entry repeats another's row and column."""
    import scipy.sparse as sp  # noqa: PLC0415

    if rows.size == 0:
        return np.zeros(n_rows + 1, dtype=np.int64), cols, w
    csr = sp.csr_array((w, (rows, cols)), shape=(n_rows, n))  # each row sorted, repeats summed
    if csr.nnz != rows.size:
        return None
    return csr.indptr, csr.indices, csr.data  # (of SciPy's index type: the partition casts them)


def _merge_repeats(src, dst, w, lo: int, hi: int, rule: str):
    """The edges of entries ``(src, dst, w)`` merged by ``rule`` as :meth:`Graph.from_edges
    <mgmatch.graph.Graph.from_edges>` merges them (an entry and its mirror are one edge given in
    both directions; entries in one direction repeat it), as ``u < v`` arrays in global ids, and
    the counts of the merge for the edges whose smaller endpoint is in ``[lo, hi)``. The ids are
    first made local, keeping their order (owned ids, and the ghosts below and above them), so that
    the merge's sort needs memory for the partition's vertices only."""
    from ..graph import _merge_duplicates  # noqa: PLC0415

    ids = np.concatenate([src, dst])
    ghosts = _sorted_unique(ids[(ids < lo) | (ids >= hi)])
    below = int(np.searchsorted(ghosts, lo))
    local_src, local_dst = (_local_ids(x, lo, hi, ghosts, below) for x in (src, dst))
    n_local = ghosts.size + hi - lo
    u, v = np.minimum(local_src, local_dst), np.maximum(local_src, local_dst)
    forward = local_src < local_dst
    mine = (u >= below) & (u < below + hi - lo)
    counts = {"duplicates_merged": 0, "mirrored_pairs": 0}
    out = []
    for part in (mine, ~mine):  # apart: the counts are of the edges this partition counts
        mu, mv, mw, merged, mirrored = _merge_duplicates(u[part], v[part], w[part], n_local, rule,
                                                         forward=forward[part])
        if part is mine:
            counts.update(duplicates_merged=merged, mirrored_pairs=mirrored)
        out.append((mu, mv, mw))
    u, v, w = (np.concatenate([a[i] for a in out]) for i in range(3))
    back = np.concatenate([ghosts[:below], np.arange(lo, hi, dtype=np.int64), ghosts[below:]])
    return back[u], back[v], w, counts


def _local_ids(x, lo: int, hi: int, ghosts, below: int):
    """Global ids ``x`` as local ones: ghosts below ``lo`` first, then the owned ids, then the
    ghosts from ``hi`` on, each in order."""
    out = x - lo + below
    outside = (x < lo) | (x >= hi)
    if outside.any():
        at = np.searchsorted(ghosts, x[outside])
        out[outside] = np.where(x[outside] < lo, at, at + (hi - lo))
    return out


def _partition_task(merged, p: int, bounds: np.ndarray, n: int, m: int, dtype: str, expected_worker: str):
    """The :class:`Partition` of the merged rows, as ``Graph.partition(bounds=...)`` builds it."""
    check_worker(expected_worker)
    rows, _ = merged
    return _partition_of(rows, p, bounds, index_dtype_for(n, 2 * m), dtype)


def _partition_of(rows, p: int, bounds: np.ndarray, idx: np.dtype, dtype: str) -> Partition:
    indptr, indices, weights = rows
    lo, hi, n = int(bounds[p]), int(bounds[p + 1]), int(bounds[-1])
    indices = indices.astype(idx)
    if lo == 0 and hi == n:
        ghosts = np.empty(0, dtype=idx)
    else:
        ghosts = _sorted_unique(indices[(indices < lo) | (indices >= hi)])
    return Partition(index=p, lo=lo, hi=hi, bounds=np.asarray(bounds, dtype=np.int64), indptr=indptr.astype(idx),
                     indices=indices, weights=weights.astype(np.dtype(dtype)), ghosts=ghosts, n_global=n,
                     n_cols=n, bipartite=False, placed=True)


def _sorted_unique(x: np.ndarray) -> np.ndarray:
    """``np.unique(x)``, by a sort: NumPy's hash-based unique is several times slower on the
    millions of integer ids a partition's ghosts are found among."""
    if x.size == 0:
        return x.copy()
    x = np.sort(x)
    keep = np.empty(x.size, dtype=bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def _owned_entries(part: Partition) -> int:
    return part.nnz


# ------------------------------------------------------------------------------- client side
async def _worker_list(client) -> list[str]:
    workers = await worker_addresses(client)
    if not workers:
        raise ClusterError("the Dask cluster has no workers")
    return workers


def _raise_first(stats, plan: _ReadPlan) -> None:
    for s in stats:
        if s["error"] is not None:
            message, path, line = s["error"]
            raise InputError(message, path=path or plan.path, line=line)


def _check_text_chunks(stats, plan: _ReadPlan) -> tuple[int | None, int | None]:
    """The field count and the chunk holding the header, checked across chunks."""
    with_lines = [c for c, s in enumerate(stats) if s["has_lines"]]
    if not with_lines:
        return None, None
    first = with_lines[0]
    for c in with_lines[1:]:
        if stats[c]["header"]:
            raise InputError(f"the line at byte {stats[c]['begin']} holds names, not an edge (source id is not "
                             "a vertex id)", path=plan.path)
    n_fields = next((stats[c]["n_fields"] for c in with_lines if stats[c]["n_fields"] is not None), None)
    for c in with_lines:
        found = stats[c]["n_fields"]
        if found is not None and found != n_fields:
            raise InputError(f"found {found} fields in the line at byte {stats[c]['begin']}, but the first edge "
                             f"line has {n_fields}; every edge line needs the same number", path=plan.path)
    return n_fields, first if stats[first]["header"] else None


def _combined_histogram(stats) -> tuple[np.ndarray, int]:
    """Every chunk's histogram coarsened to the widest bucket width, summed."""
    shift = max(s["shift"] for s in stats)
    total = np.zeros(_HISTOGRAM_BUCKETS, dtype=np.int64)
    for s in stats:
        factor = 1 << (shift - s["shift"])
        coarse = s["histogram"].reshape(-1, factor).sum(axis=1)
        total[: coarse.size] += coarse
    return total, shift


def _balanced_bounds(histogram: np.ndarray, shift: int, base: int, n: int, k: int) -> np.ndarray:
    """``k + 1`` bounds at bucket edges, balanced by endpoint count."""
    cumulative = np.cumsum(histogram)
    total = int(cumulative[-1]) if cumulative.size else 0
    if total == 0:
        return np.maximum.accumulate(np.linspace(0, n, k + 1).round().astype(np.int64))
    targets = np.arange(1, k) * (total / k)
    buckets = np.searchsorted(cumulative, targets, side="left").astype(np.int64)
    cuts = np.clip(((buckets + 1) << shift) - base, 0, n)
    return np.maximum.accumulate(np.concatenate([[0], cuts, [n]]).astype(np.int64))


async def _place_async(client, plan: _ReadPlan, bounds: np.ndarray, n: int, workers: list[str], *, max_edges: int,
                       chunks=None):
    """Passes 2 and 3: split the chunks, route the pieces, build each partition on its worker.
    ``chunks`` are the futures of the chunks read for the scan; without them (a rebuild after a
    worker was lost) the chunks are read again. ``max_edges`` bounds the edge count: where
    twice it fits the same index type as the true count, the merges build the partitions
    themselves, without a round trip for the count."""
    run = uuid.uuid4().hex[:8]
    k = len(bounds) - 1
    owner = {p: workers[p % len(workers)] for p in range(k)}
    # only on the workers given: after a worker stopped, the scheduler may still list it
    if chunks is None:
        chunks = [client.submit(_chunk_task, plan, c, False, key=f"read-chunk-c{c}-{run}", workers=workers,
                                allow_other_workers=False, pure=False) for c in range(len(plan.chunks))]
    split_f = [client.submit(_split_task, plan, chunks[c], bounds, key=f"read-split-c{c}-{run}", workers=workers,
                             allow_other_workers=False, pure=False)
               for c in range(len(plan.chunks))]
    del chunks  # each chunk is released once its split is done
    # int32 for any edge count up to max_edges: the type is known now (else once the edges are counted)
    index_dtype = "int32" if index_dtype_for(n, 2 * max_edges) == np.dtype(np.int32) else None
    merged_f = {}
    for p in range(k):
        pieces = [client.submit(_piece_task, split_f[c], p, key=f"read-piece-c{c}-p{p}-{run}", workers=workers,
                                allow_other_workers=False, pure=False)
                  for c in range(len(plan.chunks))]
        merged_f[p] = client.submit(_merge_task, plan, p, bounds, pieces, owner[p], index_dtype,
                                    key=f"read-merge-p{p}-{run}", workers=[owner[p]], allow_other_workers=False,
                                    pure=False)
    # Held from here by their dependents only, the chunks, splits and pieces are released as soon
    # as the tasks that read them are done: the graph is not held twice while it is merged.
    del split_f, pieces
    counts_f = [client.submit(operator.getitem, merged_f[p], 1, key=f"read-counts-p{p}-{run}", workers=[owner[p]],
                              allow_other_workers=False, pure=False) for p in range(k)]
    counts = await client.gather(counts_f)
    m = sum(c["edges"] for c in counts)
    if index_dtype is not None:
        parts = {p: client.submit(operator.getitem, merged_f[p], 0, key=f"read-partition-p{p}-{run}",
                                  workers=[owner[p]], allow_other_workers=False, pure=False) for p in range(k)}
    else:
        parts = {p: client.submit(_partition_task, merged_f[p], p, bounds, n, m, plan.options["dtype"], owner[p],
                                  key=f"read-partition-p{p}-{run}", workers=[owner[p]], allow_other_workers=False,
                                  pure=False) for p in range(k)}
    # wait until every partition is built (a failure is raised here, not in a later run)
    await client.gather([client.submit(_owned_entries, parts[p], key=f"read-built-p{p}-{run}", workers=[owner[p]],
                                       allow_other_workers=False, pure=False) for p in range(k)])
    del merged_f
    return parts, owner, counts, m


async def read_partitions_async(client, path, *, partitions=None, format=None, one_based=None, weighted=True,
                                duplicates="max", zeros="keep", negative="error", dtype="float64",
                                chunk_bytes=_DEFAULT_CHUNK_BYTES, random_weights=None,
                                columns=None) -> DistributedGraph:
    """The asynchronous core of :func:`read_partitions` (same parameters)."""
    from ..io._common import column_choice  # noqa: PLC0415
    from ..io.readers import format_of  # noqa: PLC0415

    if random_weights is not None:
        raise ParameterError("random_weights cannot be used when reading on the workers: the weights depend on "
                             "the order of the whole file; read the graph in the client (read_graph) instead")
    _check_choice("duplicates", duplicates, ("max", "sum", "min", "first"))
    _check_choice("zeros", zeros, ("keep", "drop"))
    _check_choice("negative", negative, ("error", "abs"))
    if dtype not in ("float64", "float32", np.float64, np.float32):
        raise ParameterError(f"dtype must be float64 or float32, not {dtype!r}")
    if one_based not in (None, True, False):
        raise ParameterError(f"one_based must be True, False or None, not {one_based!r}")
    if weighted not in (True, False):
        raise ParameterError(f"weighted must be True or False, not {weighted!r}")
    if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, (int, np.integer)) or chunk_bytes < 1:
        raise ParameterError(f"chunk_bytes must be a positive integer, not {chunk_bytes!r}")
    fmt = format or format_of(path)
    if fmt not in _SPLITTABLE:
        raise ParameterError(f"format {fmt!r} cannot be read on the workers (only Parquet and text edge lists "
                             "can be cut into pieces); read it in the client with read_graph and pass the Graph")
    columns = column_choice(columns)
    if columns is not None and fmt != "parquet":
        raise ParameterError("columns are chosen on the workers only in Parquet tables; read a text edge list "
                             "with chosen columns in the client (read_input)")
    if columns is not None and any(isinstance(c, int) for c in columns.values()):
        raise ParameterError("Parquet columns are chosen by name, not by number")
    if columns is not None and not weighted and columns["weight"] is not None:
        raise ParameterError("a weight column is chosen, but weights are not read (weighted=False, --unweighted)")
    path = str(path)
    workers = await _worker_list(client)
    options = {"weighted": bool(weighted), "negative": negative, "duplicates": duplicates, "zeros": zeros,
               "one_based": one_based, "dtype": str(np.dtype(dtype)), "columns": columns}
    run = uuid.uuid4().hex[:8]
    # every worker imports the readers (pyarrow, SciPy) at once, rather than each at its first chunk
    await client.run(_import_readers, workers=workers)
    plan = await client.submit(_plan_task, path, fmt, int(chunk_bytes), options, key=f"read-plan-{run}", pure=False)

    # Pass 1: every chunk read, kept where it was read, and its statistics.
    chunk_f = [client.submit(_chunk_task, plan, c, True, key=f"read-chunk-c{c}-{run}", pure=False)
               for c in range(len(plan.chunks))]
    stats = await client.gather([client.submit(_scan_task, chunk_f[c], key=f"read-scan-c{c}-{run}", pure=False)
                                 for c in range(len(plan.chunks))])
    _raise_first(stats, plan)
    n_fields = header_chunk = None
    if fmt in _TEXT_FORMATS:
        n_fields, header_chunk = _check_text_chunks(stats, plan)
    entries = sum(s["entries"] for s in stats)
    if entries == 0:
        what = "the file holds only comments, blank lines or a header" if fmt != "parquet" else "the table is empty"
        raise InputError(f"no edges: {what}", path=path)
    smallest = min(s["min"] for s in stats if s["entries"])
    if one_based is None:
        base = int(fmt != "parquet" and smallest == 1)
    else:
        base = int(one_based)
    n = max(s["max"] for s in stats) + 1 - base
    plan = _ReadPlan(path, fmt, plan.chunks, plan.delimiter, options, n_fields, header_chunk, base)

    if partitions is None:
        k = len(workers)
        histogram, shift = _combined_histogram(stats)
        bounds = _balanced_bounds(histogram, shift, base, n, k)
    elif np.ndim(partitions) == 0:
        if isinstance(partitions, bool) or not isinstance(partitions, (int, np.integer)) or partitions < 1:
            raise ParameterError(f"partitions must be a positive integer or a list of bounds, not {partitions!r}")
        histogram, shift = _combined_histogram(stats)
        bounds = _balanced_bounds(histogram, shift, base, n, int(partitions))
    else:
        bounds = check_bounds(partitions, n)

    # Passes 2 and 3: pieces to their owners, partitions built where they stay.
    placing = _place_async(client, plan, bounds, n, workers, max_edges=entries, chunks=chunk_f)
    del chunk_f  # (held by the splits alone, each is released when its split is done)
    parts, owner, counts, m = await placing
    summary = CanonSummary(
        input_entries=entries,
        self_loops_dropped=sum(s["self_loops"] for s in stats),
        negatives_made_absolute=sum(s["negatives"] for s in stats),
        weighted=any(s["weighted"] for s in stats),
        duplicate_rule=duplicates,
    )
    for name in counts[0]:
        if name != "edges":
            setattr(summary, name, sum(c[name] for c in counts))
    return DistributedGraph(n=n, m=m, nnz=2 * m, bounds=bounds, summary=summary, weighted=summary.weighted,
                            path=path, parts=parts, workers=owner, _plan=plan)


async def rebuild_async(client, graph: DistributedGraph, workers: list[str]) -> None:
    """Build ``graph``'s partitions again on ``workers`` (after a worker was lost), same bounds."""
    if graph._plan is None:  # placed from the client: scatter its partitions again
        parts, owner = await _scatter_async(client, graph._source.partition(bounds=graph.bounds), workers)
    else:
        parts, owner, _, _ = await _place_async(client, graph._plan, graph.bounds, graph.n, workers, max_edges=graph.m)
    if graph.resident:
        parts = await _to_gpu_async(client, parts, owner)
    graph.parts, graph.workers = parts, owner


async def _scatter_async(client, parts: list, workers: list[str]):
    owner = {p: workers[p % len(workers)] for p in range(len(parts))}
    futures = {}
    for p, part in enumerate(parts):
        futures[p] = await client.scatter(dataclasses.replace(part, placed=True), workers=[owner[p]], hash=False)
    return futures, owner


def _partition_to_gpu(part: Partition, expected_worker: str) -> Partition:
    check_worker(expected_worker)
    from .._array import cupy_or_none  # noqa: PLC0415

    cp = cupy_or_none()
    if cp is None:
        raise ClusterError(f"worker {expected_worker} has no GPU; resident=True keeps partitions in GPU memory")
    on_gpu = part.to("gpu")
    cp.cuda.get_current_stream().synchronize()
    return on_gpu


async def _to_gpu_async(client, parts: dict, owner: dict) -> dict:
    """The partitions copied into their workers' GPU memory (the host copies are dropped)."""
    run = uuid.uuid4().hex[:8]
    moved = {p: client.submit(_partition_to_gpu, parts[p], owner[p], key=f"place-gpu-p{p}-{run}",
                              workers=[owner[p]], allow_other_workers=False, pure=False) for p in parts}
    await client.gather([client.submit(_owned_entries, moved[p], key=f"place-resident-p{p}-{run}",
                                       workers=[owner[p]], allow_other_workers=False, pure=False) for p in moved])
    return moved


async def place_async(client, graph: Graph, *, partitions=None, resident: bool = False) -> DistributedGraph:
    """The asynchronous core of :func:`place` (same parameters)."""
    from ..convert import GraphInput  # noqa: PLC0415

    mapping = graph if isinstance(graph, GraphInput) else None
    graph = graph.graph if mapping is not None else graph
    if not isinstance(graph, Graph):
        raise ParameterError(f"place() takes a Graph, not {type(graph).__name__}")
    if resident not in (True, False):
        raise ParameterError(f"resident must be True or False, not {resident!r}")
    if graph.bipartite:
        raise ParameterError("place() takes an undirected graph; bipartite matching runs in-process")
    workers = await _worker_list(client)
    host = graph.to("cpu")
    if partitions is None:
        partitions = len(workers)
    # Graph.partition checks the count or the bounds
    parts = host.partition(partitions) if np.ndim(partitions) == 0 else host.partition(bounds=partitions)
    futures, owner = await _scatter_async(client, parts, workers)
    if resident:
        futures = await _to_gpu_async(client, futures, owner)
    return DistributedGraph(n=graph.n, m=graph.m, nnz=graph.nnz, bounds=np.asarray(parts[0].bounds),
                            summary=graph.summary, weighted=graph.weighted, path="", parts=futures, workers=owner,
                            _source=host, resident=bool(resident), mapping=mapping)


def place(client, graph: Graph, *, partitions=None, resident: bool = False):
    """Split an in-memory graph into partitions and place one on each worker, once.

    The result is used like a graph read with :func:`read_partitions`: every algorithm run on it
    (``mgmatch.suitor(dg, client=client)``) starts from the partitions the workers already
    hold, so the graph crosses the network once, not once per run.

    Parameters
    ----------
    client : distributed.Client
        The cluster. With an asynchronous client the call returns an awaitable.
    graph : Graph or GraphInput
        An undirected graph in the client; a :class:`~mgmatch.convert.GraphInput` (as
        :func:`mgmatch.reorder` makes) places its graph, and every result on the placed graph
        carries it, so that it converts to the input's ids.
    partitions : int or sequence of int, optional
        Number of partitions (default: one per worker; contiguous vertex ranges balanced
        by edge count, as :meth:`Graph.partition`) or explicit bounds ``[0, b_1, ..., n]``.
    resident : bool
        Keep the partitions in the workers' GPU memory (GPU workers only), so that every run
        starts on the device without copying the graph again; by default they stay in the
        workers' host memory (page-locked after the first run) and each run copies them over.

    Returns
    -------
    DistributedGraph

    Notes
    -----
    The client keeps ``graph``: if a worker is lost during a run, its partitions are scattered
    again to the remaining workers and the run starts over (same result).

    Examples
    --------
    >>> dg = place(client, mgmatch.generators.kron(20))  # doctest: +SKIP
    >>> mgmatch.suitor(dg, client=client)  # doctest: +SKIP
    """
    coro = place_async(client, graph, partitions=partitions, resident=resident)
    if getattr(client, "asynchronous", False):
        return coro
    return client.sync(lambda: coro)


def read_partitions(client, path, *, partitions=None, format=None, one_based=None, weighted=True,
                    duplicates="max", zeros="keep", negative="error", dtype="float64",
                    chunk_bytes=_DEFAULT_CHUNK_BYTES, random_weights=None, columns=None):
    """Read a graph file into partitions built on the Dask workers.

    The file must be on storage that every worker can read; the client never reads it. The
    partitions equal those of ``read_graph(path, ...).partition(bounds=graph.bounds)``, array
    for array, and the canonicalisation counts equal ``read_graph``'s.

    Parameters
    ----------
    client : distributed.Client
        The cluster. With an asynchronous client the call returns an awaitable.
    path : str or os.PathLike
        A Parquet table (``src``, ``dst``, optional ``weight``; cut by row groups) or a text edge
        list (CSV, TSV, whitespace; ``#``/``%`` comments; cut into byte ranges at line breaks,
        except gzip data, which is read as one chunk).
    partitions : int or sequence of int, optional
        Number of partitions (default: one per worker), balanced by edge count at the
        granularity of 65536 id buckets, or explicit bounds ``[0, b_1, ..., n]``.
    format : {"csv", "tsv", "edgelist", "parquet"}, optional
        The format, overriding the suffix.
    one_based, weighted, duplicates, zeros, negative, dtype
        As for :func:`~mgmatch.io.read_graph`; ids are read as 1-based by the same rule.
    chunk_bytes : int
        Size of the byte ranges a plain text file is cut into.
    random_weights : None
        Not supported: per-edge random weights depend on the order of the whole file.
    columns : tuple or dict, optional
        A Parquet table's columns holding the source, target and weight, by name, as for
        :func:`~mgmatch.io.read_graph`. Ids must be non-negative integers here: labels and
        sparse ids are renumbered only by a read in the client (:func:`~mgmatch.io.read_input`).

    Returns
    -------
    DistributedGraph

    Raises
    ------
    ParameterError
        A format that cannot be cut (Matrix Market, METIS, ``.npz``: read it with
        ``read_graph``), ``random_weights``, or a bad option.
    InputError
        The file is missing or malformed; the message names the file and the line (for the
        first chunk) or the byte offset of the line at fault.
    ClusterError
        The cluster has no workers.

    Notes
    -----
    If a worker holding a partition is lost while an algorithm runs on the graph, the
    engine builds the partitions again from the file on the remaining workers (same
    bounds, same result) and runs the algorithm again.

    Examples
    --------
    >>> dg = read_partitions(client, "roads.parquet")  # doctest: +SKIP
    >>> mgmatch.suitor(dg, client=client)  # doctest: +SKIP
    """
    coro = read_partitions_async(client, path, partitions=partitions, format=format, one_based=one_based,
                                 weighted=weighted, duplicates=duplicates, zeros=zeros, negative=negative,
                                 dtype=dtype, chunk_bytes=chunk_bytes, random_weights=random_weights,
                                 columns=columns)
    if getattr(client, "asynchronous", False):
        return coro
    return client.sync(lambda: coro)
