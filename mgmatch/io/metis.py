"""METIS adjacency-list files (``.graph``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError, ParameterError
from ..graph import Graph
from ._build import graph_from_csr
from ._common import _NEWLINE, _Request, _check_weights, _clip, _concat, _open_bytes
from ._cutter import _Block, _chunks, _cut_fields, _parse_fields


@dataclass(frozen=True)
class _MetisHeader:
    n: int
    m: int
    fmt: str
    ncon: int
    line: int

    @property
    def has_edge_weights(self) -> bool:
        return self.fmt[2] == "1"

    @property
    def leading_values(self) -> int:
        """Values before the neighbours on each vertex line: size, then ``ncon`` weights."""
        return int(self.fmt[0]) + (self.ncon if self.fmt[1] == "1" else 0)


def _read_metis_header(stream, path) -> tuple[_MetisHeader, int]:
    line_number = 0
    for line in iter(stream.readline, b""):
        line_number += 1
        text = line.strip()
        if not text or text.startswith(b"%"):
            continue
        shown = text.decode("utf-8", "replace")
        fields = shown.split()
        if not 2 <= len(fields) <= 4 or not all(f.isascii() and f.isdigit() for f in fields):
            raise InputError(
                f"METIS header must be 'n m [fmt [ncon]]' with non-negative integers, not {_clip(shown)!r}",
                path=path, line=line_number,
            )
        fmt = fields[2] if len(fields) > 2 else "0"
        if len(fmt) > 3 or set(fmt) - {"0", "1"}:
            raise InputError(
                f"METIS fmt {fmt!r} is not one of 0, 1, 10, 11, 100, 101, 110, 111",
                path=path, line=line_number,
            )
        ncon = int(fields[3]) if len(fields) > 3 else 1
        if ncon < 1:
            raise InputError("METIS ncon must be at least 1", path=path, line=line_number)
        header = _MetisHeader(
            n=int(fields[0]), m=int(fields[1]), fmt=fmt.zfill(3), ncon=ncon, line=line_number
        )
        return header, line_number + 1
    raise InputError("no METIS header line 'n m [fmt [ncon]]': the file holds only comments", path=path)


class _MetisReader:
    """Accumulates the adjacency lists of a METIS file, one chunk at a time."""

    def __init__(self, req: _Request, header: _MetisHeader):
        self.req = req
        self.header = header
        self.vertices = 0  # vertex lines read so far
        self.entries = 0  # neighbour entries read so far
        self.parts = {"src": [], "dst": [], "weight": []}

    def feed(self, chunk: bytes, first_line: int) -> int:
        block = _cut_fields(
            chunk, first_line, delimiter=None, separator=_NEWLINE, keep_blank=True, comments=b"%"
        )
        counts, lines = block.field_counts, block.line_numbers
        n, path = self.header.n, self.req.path
        room = max(n - self.vertices, 0)
        extra = np.flatnonzero(counts[room:] > 0)
        if extra.size:
            raise InputError(
                f"more vertex lines than the header's n={n}", path=path, line=int(lines[room + extra[0]])
            )
        counts, lines = counts[:room], lines[:room]
        if counts.size:
            self._parse(block, counts, lines)
        self.vertices += counts.size
        return block.n_lines

    def _parse(self, block: _Block, counts, lines) -> None:
        header, path = self.header, self.req.path
        skip = header.leading_values
        stride = 2 if header.has_edge_weights else 1
        short = counts < skip
        if short.any():
            i = int(np.flatnonzero(short)[0])
            raise InputError(
                f"vertex {self.vertices + i + 1} has {counts[i]} values, but fmt="
                f"{header.fmt.lstrip('0') or '0'} puts {skip} before the neighbours",
                path=path, line=int(lines[i]),
            )
        unpaired = (counts - skip) % stride != 0
        if unpaired.any():
            i = int(np.flatnonzero(unpaired)[0])
            raise InputError(
                f"vertex {self.vertices + i + 1}: neighbours and edge weights must come in pairs",
                path=path, line=int(lines[i]),
            )
        if not counts.any():
            return
        token_ends = np.cumsum(counts)
        line_of_token = lambda t: int(lines[np.searchsorted(token_ends, t, side="right")])  # noqa: E731
        values = _parse_fields(
            block, ("value",), {"value": np.int64}, path=path,
            describe=lambda _, text: f"{_clip(text)!r} is not an integer",
            row_line=line_of_token,
        )["value"]
        position = np.arange(values.size) - np.repeat(token_ends - counts, counts)
        vertex = np.repeat(np.arange(self.vertices, self.vertices + counts.size), counts)
        at = np.flatnonzero((position >= skip) & ((position - skip) % stride == 0))
        neighbours = values[at]
        outside = (neighbours < 1) | (neighbours > header.n)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise InputError(
                f"vertex {vertex[at[i]] + 1} names neighbour {neighbours[i]}, outside 1..{header.n}",
                path=path, line=line_of_token(at[i]),
            )
        self.entries += at.size
        ids = np.int32 if header.n < 2**31 else np.int64  # half the memory where the ids fit
        self.parts["src"].append(vertex[at].astype(ids))
        self.parts["dst"].append((neighbours - 1).astype(ids))
        if header.has_edge_weights and self.req.weighted:
            weights = values[at + 1].astype(np.float64)
            src = vertex[at]
            _check_weights(
                weights, self.req, what=lambda i: f"edge ({src[i] + 1}, {neighbours[i]})",
                line_of=lambda i: line_of_token(at[i]),
            )
            self.parts["weight"].append(weights)

    def graph(self) -> tuple[Graph, dict]:
        header, req = self.header, self.req
        if self.vertices < header.n:
            raise InputError(
                f"the header says n={header.n} but only {self.vertices} vertex lines follow", path=req.path
            )
        src = _concat(self.parts["src"])
        dst = _concat(self.parts["dst"])
        if self.entries != 2 * header.m:
            raise InputError(
                f"the header says m={header.m}, so {2 * header.m} adjacency entries (METIS lists every "
                f"edge from both ends), but the lists hold {self.entries}{_metis_unpaired(src, dst, header.n)}",
                path=req.path, line=header.line,
            )
        weighted = header.has_edge_weights and req.weighted
        weight = _concat(self.parts["weight"], np.float64) if weighted else None
        graph = _graph_from_lists(src, dst, weight, header.n, req, header.line)
        if graph is None:  # an option only from_edges takes (random weights): each edge given once
            src, dst = src.astype(np.int64, copy=False), dst.astype(np.int64, copy=False)
            once = src < dst
            graph = Graph.from_edges(src[once], dst[once], None if weight is None else weight[once], n=header.n,
                                     source=req.path, **req.canon)
        distinct = graph.m + graph.summary.zeros_dropped
        if distinct != header.m:
            raise InputError(
                f"the header says m={header.m} but the adjacency lists name {distinct} distinct edges",
                path=req.path, line=header.line,
            )
        if req.bipartite:
            graph = graph.bipartite_double_cover()
        details = {"metis": {"n": header.n, "m": header.m, "fmt": header.fmt, "ncon": header.ncon}}
        return graph, details


def _graph_from_lists(src, dst, weight, n: int, req: _Request, line: int):
    """The graph of adjacency lists that give every edge from both ends, once each, with equal
    weights (what METIS requires; lists that do not are refused, naming the first vertex that
    breaks the rule), built as the symmetric matrix it is: one SciPy conversion to CSR and the
    checks of :func:`~mgmatch.io._build.graph_from_csr`, without the full merge of
    :meth:`Graph.from_edges`, whose sort of every entry costs most of a read's time and memory.
    The two listings of an edge are one edge of the file, not two entries to merge by the
    duplicate rule. ``None`` for an option that only ``from_edges`` takes. (``line``, the
    header's, goes with the messages: the lists hold ``m`` edges, but not as METIS lists them.)"""
    import scipy.sparse as sp  # noqa: PLC0415

    from ._build import _is_symmetric, mirror_of  # noqa: PLC0415

    if src.size == 0:
        return None
    broken = _metis_unpaired(src, dst, n, loops_only=True)
    if broken:
        raise InputError(f"the adjacency lists break METIS's rules{broken}", path=req.path, line=line)
    values = weight if weight is not None else np.ones(src.size, dtype=np.float64)
    csr = sp.csr_array((values, (src, dst)), shape=(n, n))  # sorted columns; repeats summed
    if csr.nnz != src.size:
        keys = np.sort(src.astype(np.int64) * n + dst)
        twice = int(keys[np.flatnonzero(keys[1:] == keys[:-1])[0]])
        raise InputError(f"the adjacency lists break METIS's rules: vertex {twice // n + 1} lists "
                         f"{twice % n + 1} twice (an edge is listed once from each end)", path=req.path, line=line)
    if not _is_symmetric(csr, None if weight is None else csr.data):  # (one transpose where all is well)
        if weight is None or not _is_symmetric(csr, None):
            raise InputError(f"every edge must be listed from both ends{_metis_unpaired(src, dst, n)}",
                             path=req.path, line=line)
        mirror = mirror_of(csr).data
        k = int(np.flatnonzero(csr.data[mirror] != csr.data)[0])
        u = int(np.searchsorted(csr.indptr, k, side="right")) - 1
        v = int(csr.indices[k])
        raise InputError(f"the adjacency lists break METIS's rules: vertex {u + 1} lists {v + 1} with weight "
                         f"{csr.data[k]:g}, but vertex {v + 1} lists {u + 1} with weight "
                         f"{csr.data[mirror][k]:g} (an edge has one weight)", path=req.path, line=line)
    return graph_from_csr(csr, req.canon, req.path, weighted=weight is not None, bipartite=False, symmetric=True,
                          implied=True)


def _metis_unpaired(src, dst, n, loops_only: bool = False) -> str:
    """The first adjacency entry that breaks METIS's rules (a vertex listing itself, or, unless
    ``loops_only``, an edge listed from one end only), worded to end a message; empty when there
    is none."""
    src, dst = src.astype(np.int64, copy=False), dst.astype(np.int64, copy=False)
    loops = np.flatnonzero(src == dst)
    if loops.size:
        u = int(src[loops[0]]) + 1
        return f": vertex {u} lists itself (a self-loop, which METIS graphs do not have)"
    if loops_only:
        return ""
    alone = np.flatnonzero(~np.isin(src * n + dst, dst * n + src))
    if alone.size:
        u, v = int(src[alone[0]]) + 1, int(dst[alone[0]]) + 1
        return f": vertex {u} lists {v}, but vertex {v} does not list {u}"
    return ""


def _read_metis(req: _Request) -> tuple[Graph, dict]:
    if req.one_based is False:
        raise ParameterError("METIS ids are 1-based by definition; one_based=False does not apply")
    with _open_bytes(req.path) as stream:
        header, line = _read_metis_header(stream, req.path)
        reader = _MetisReader(req, header)
        for chunk in _chunks(stream):
            line += reader.feed(chunk, line)
    return reader.graph()
