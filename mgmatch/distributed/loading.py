"""Reading a graph file into partitions on the Dask workers, without passing it through the client.

:func:`read_partitions` cuts a file on storage that every worker can read into chunks (Parquet
row groups; byte ranges of a text edge list cut at line breaks; a gzip file is one chunk) and
builds the partitions in three steps, all on the workers:

1. **scan** (``read-scan-c<chunk>``): parse and check one chunk; return only its entry count,
   smallest and largest id and a coarse histogram of endpoint counts over id buckets. From
   these the client decides the vertex count, whether ids are 1-based (the rule of
   :func:`~mgmatch.io.read_graph`) and partition bounds balanced by edge count;
2. **split** (``read-split-c<chunk>``): read the chunk again, drop self-loops, write every entry
   as ``(min, max)`` and cut the chunk into one piece per partition that owns an endpoint; the
   pieces travel worker to worker (``read-piece-c<chunk>-p<partition>``);
3. **build** (``read-merge-p<partition>``, ``read-partition-p<partition>``, pinned to the
   partition's worker): merge duplicate entries by the graph model's rule and build the
   :class:`~mgmatch.graph.Partition` that ``read_graph(path).partition(bounds=...)`` gives.

Every entry that names an edge reaches both owners of the edge, in file order (pieces are
concatenated in chunk order and a chunk keeps its entries in file order), so both owners merge
the edge identically, ``duplicates="first"`` included.
"""

from __future__ import annotations

import operator
import uuid
from dataclasses import dataclass, field

import numpy as np

from ..errors import ClusterError, InputError, ParameterError
from ..graph import CanonSummary, Graph, Partition, _check_choice, check_bounds, index_dtype_for
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


def _scan_task(plan: _ReadPlan, c: int) -> dict:
    """Pass 1: statistics of chunk ``c`` (never its edges); a bad chunk returns its error."""
    try:
        chunk = _read_chunk(plan, c, first_pass=True)
    except InputError as exc:
        return {"error": (exc.message, exc.path, exc.line)}
    src, dst, w = chunk.src, chunk.dst, chunk.weight
    top = int(max(src.max(initial=-1), dst.max(initial=-1)))
    shift = 0
    while (max(top, 0) >> shift) >= _HISTOGRAM_BUCKETS:
        shift += 1
    loops = src == dst
    ends = np.concatenate([src[~loops], dst[~loops]]) >> shift
    return {
        "error": None,
        "entries": int(src.size),
        "min": int(min(src.min(initial=np.iinfo(np.int64).max), dst.min(initial=np.iinfo(np.int64).max))),
        "max": top,
        "self_loops": int(loops.sum()),
        "negatives": 0 if w is None else int((w < 0).sum()),
        "shift": shift,
        "histogram": np.bincount(ends, minlength=_HISTOGRAM_BUCKETS).astype(np.int64),
        "n_fields": chunk.n_fields,
        "header": chunk.header,
        "has_lines": chunk.has_lines,
        "begin": chunk.begin,
        "weighted": w is not None,
    }


def _split_task(plan: _ReadPlan, c: int, bounds: np.ndarray) -> dict:
    """Pass 2: chunk ``c`` without self-loops, cut into ``(src, dst, w)`` pieces, one per partition
    owning an endpoint, each in file order."""
    chunk = _read_chunk(plan, c, first_pass=False)
    src, dst = chunk.src - plan.base, chunk.dst - plan.base
    w = np.ones(src.size) if chunk.weight is None else chunk.weight
    keep = src != dst
    src, dst, w = src[keep], dst[keep], w[keep]
    u, v = np.minimum(src, dst), np.maximum(src, dst)
    owner_u = np.searchsorted(bounds, u, side="right") - 1
    owner_v = np.searchsorted(bounds, v, side="right") - 1
    cross = np.flatnonzero(owner_u != owner_v)
    dest = np.concatenate([owner_u, owner_v[cross]])
    entry = np.concatenate([np.arange(u.size), cross])
    order = np.lexsort((entry, dest))  # by partition, then file order
    dest, entry = dest[order], entry[order]
    cuts = np.searchsorted(dest, np.arange(len(bounds)))
    pieces = {}
    for p in range(len(bounds) - 1):
        at = entry[cuts[p]:cuts[p + 1]]
        if at.size:
            pieces[p] = (src[at], dst[at], w[at])  # as given: the merge tells mirrored entries apart
    return pieces


def _piece_task(pieces: dict, p: int):
    """The piece of a split chunk addressed to partition ``p`` (``None`` when there is none)."""
    return pieces.get(p)


def _merge_task(plan: _ReadPlan, p: int, bounds: np.ndarray, pieces: list, expected_worker: str):
    """Merge the entries partition ``p`` received by the graph model's own rules
    (:meth:`Graph.from_edges <mgmatch.graph.Graph.from_edges>` on local ids, so memory follows the
    partition, not ``n``); count what canonicalisation did to the edges it counts: those whose
    smaller endpoint it owns, so the counts of all partitions add up."""
    check_worker(expected_worker)
    pieces = [piece for piece in pieces if piece is not None]
    if pieces:
        src, dst, w = (np.concatenate([piece[i] for piece in pieces]) for i in range(3))
    else:
        src, dst, w = np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    lo, hi = int(bounds[p]), int(bounds[p + 1])
    ids = np.unique(np.concatenate([src, dst]))
    local_src, local_dst = np.searchsorted(ids, src), np.searchsorted(ids, dst)  # order-preserving
    canon = {"duplicates": plan.options["duplicates"], "zeros": plan.options["zeros"], "negative": "abs"}
    merged = Graph.from_edges(local_src, local_dst, w, n=ids.size, **canon)
    smaller = np.minimum(src, dst)
    mine = (smaller >= lo) & (smaller < hi)
    counted = Graph.from_edges(local_src[mine], local_dst[mine], w[mine], n=ids.size, **canon).summary
    counts = {name: value for name, value in counted.as_dict().items()
              if name not in _COUNTED_IN_SCAN and isinstance(value, int) and not isinstance(value, bool)}
    eu, ev, ew = merged.edges()
    u, v = ids[eu], ids[ev]
    counts["edges"] = int(((u >= lo) & (u < hi)).sum())
    return (u, v, np.asarray(ew, dtype=np.float64)), counts


def _partition_task(merged, p: int, bounds: np.ndarray, n: int, m: int, dtype: str, expected_worker: str):
    """The :class:`Partition` of the merged edges, as ``Graph.partition(bounds=...)`` builds it."""
    check_worker(expected_worker)
    (u, v, w), _ = merged
    lo, hi = int(bounds[p]), int(bounds[p + 1])
    idx = index_dtype_for(n, 2 * m)
    out_u = (u >= lo) & (u < hi)
    out_v = (v >= lo) & (v < hi)
    rows = np.concatenate([u[out_u], v[out_v]])
    cols = np.concatenate([v[out_u], u[out_v]])
    weights = np.concatenate([w[out_u], w[out_v]])
    order = np.lexsort((cols, rows))
    rows, cols, weights = rows[order], cols[order], weights[order]
    indptr = np.zeros(hi - lo + 1, dtype=idx)
    np.cumsum(np.bincount(rows - lo, minlength=hi - lo), out=indptr[1:])
    indices = cols.astype(idx)
    if lo == 0 and hi == n:
        ghosts = np.empty(0, dtype=idx)
    else:
        ghosts = np.unique(indices[(indices < lo) | (indices >= hi)])
    return Partition(index=p, lo=lo, hi=hi, bounds=np.asarray(bounds, dtype=np.int64), indptr=indptr,
                     indices=indices, weights=weights.astype(np.dtype(dtype)), ghosts=ghosts, n_global=n,
                     n_cols=n, bipartite=False)


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


async def _place_async(client, plan: _ReadPlan, bounds: np.ndarray, n: int, workers: list[str]):
    """Passes 2 and 3: split the chunks, route the pieces, build each partition on its worker."""
    run = uuid.uuid4().hex[:8]
    k = len(bounds) - 1
    owner = {p: workers[p % len(workers)] for p in range(k)}
    # only on the workers given: after a worker stopped, the scheduler may still list it
    split_f = [client.submit(_split_task, plan, c, bounds, key=f"read-split-c{c}-{run}", workers=workers,
                             allow_other_workers=False, pure=False)
               for c in range(len(plan.chunks))]
    merged_f = {}
    for p in range(k):
        pieces = [client.submit(_piece_task, split_f[c], p, key=f"read-piece-c{c}-p{p}-{run}", workers=workers,
                                allow_other_workers=False, pure=False)
                  for c in range(len(plan.chunks))]
        merged_f[p] = client.submit(_merge_task, plan, p, bounds, pieces, owner[p], key=f"read-merge-p{p}-{run}",
                                    workers=[owner[p]], allow_other_workers=False, pure=False)
    counts_f = [client.submit(operator.getitem, merged_f[p], 1, key=f"read-counts-p{p}-{run}", workers=[owner[p]],
                              allow_other_workers=False, pure=False) for p in range(k)]
    counts = await client.gather(counts_f)
    m = sum(c["edges"] for c in counts)
    parts = {p: client.submit(_partition_task, merged_f[p], p, bounds, n, m, plan.options["dtype"], owner[p],
                              key=f"read-partition-p{p}-{run}", workers=[owner[p]], allow_other_workers=False,
                              pure=False) for p in range(k)}
    # wait until every partition is built (a failure is raised here, not in a later run)
    await client.gather([client.submit(_owned_entries, parts[p], key=f"read-built-p{p}-{run}", workers=[owner[p]],
                                       allow_other_workers=False, pure=False) for p in range(k)])
    del split_f, merged_f
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
    plan = await client.submit(_plan_task, path, fmt, int(chunk_bytes), options, key=f"read-plan-{run}", pure=False)

    # Pass 1: statistics of every chunk.
    stats = await client.gather([client.submit(_scan_task, plan, c, key=f"read-scan-c{c}-{run}", pure=False)
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
    parts, owner, counts, m = await _place_async(client, plan, bounds, n, workers)
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
        parts, owner, _, _ = await _place_async(client, graph._plan, graph.bounds, graph.n, workers)
    if graph.resident:
        parts = await _to_gpu_async(client, parts, owner)
    graph.parts, graph.workers = parts, owner


async def _scatter_async(client, parts: list, workers: list[str]):
    owner = {p: workers[p % len(workers)] for p in range(len(parts))}
    futures = {}
    for p, part in enumerate(parts):
        futures[p] = await client.scatter(part, workers=[owner[p]], hash=False)
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
                            _source=host, resident=bool(resident))


def place(client, graph: Graph, *, partitions=None, resident: bool = False):
    """Split an in-memory graph into partitions and place one on each worker, once.

    The result is used like a graph read with :func:`read_partitions`: every algorithm run on it
    (``mgmatch.suitor(dg, client=client)``) starts from the partitions the workers already
    hold, so the graph crosses the network once, not once per run.

    Parameters
    ----------
    client : distributed.Client
        The cluster. With an asynchronous client the call returns an awaitable.
    graph : Graph
        An undirected graph in the client.
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
