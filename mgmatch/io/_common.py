"""What every reader shares: the request, opening a file (gzip, byte-order mark), turning
library errors into one :class:`~mgmatch.errors.InputError`, weight and id checks, and the
graph build from edge arrays."""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError, MgmatchError
from ..graph import Graph, _as_id_array
from ._build import graph_from_edge_arrays


_NEWLINE = ord("\n")
_GZIP_MAGIC = b"\x1f\x8b"
_UTF8_BOM = b"\xef\xbb\xbf"
#: What a text file that starts with these bytes holds instead of UTF-8 or ASCII text (UTF-32
#: before UTF-16, whose mark begins UTF-32's little-endian one)
_NOT_TEXT = tuple((re.compile(start), what) for start, what in (
    (rb"\xff\xfe\x00\x00", "UTF-32 text (little-endian byte-order mark); save it as UTF-8"),
    (rb"\x00\x00\xfe\xff", "UTF-32 text (big-endian byte-order mark); save it as UTF-8"),
    (rb"\xff\xfe", "UTF-16 text (little-endian byte-order mark); save it as UTF-8"),
    (rb"\xfe\xff", "UTF-16 text (big-endian byte-order mark); save it as UTF-8"),
    (rb"BZh[1-9]1AY&SY", "bzip2-compressed data; decompress it, or compress it with gzip"),
    (rb"\xfd7zXZ\x00", "xz-compressed data; decompress it, or compress it with gzip"),
    (rb"\x28\xb5\x2f\xfd", "zstd-compressed data; decompress it, or compress it with gzip"),
    (rb"PK\x03\x04", "a zip archive; extract the graph file from it first"),
    (rb"\x1f\x8b", "gzip data inside gzip data (compressed twice); decompress it once"),  # (after the first)
))
_INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class _Request:
    """What the caller asked of a reader.

    ``columns`` chooses the columns of an edge table (:func:`column_choice`); ``renumber``
    (``"auto"``) lets a reader of CSV, edge lists and Parquet take ids that are not dense
    non-negative integers (labels, sparse or negative 64-bit integers) and number them
    ``0 .. n-1`` by :func:`mgmatch.convert.renumber_ids`; ``False`` refuses them, as
    :func:`~mgmatch.io.read_graph` does."""

    path: str
    bipartite: bool | None
    one_based: bool | None
    weighted: bool
    canon: dict
    columns: dict | None = None
    renumber: bool | str = False


_ROLES = ("src", "dst", "weight")


def column_choice(columns) -> dict | None:
    """The columns of an edge table to read, as ``{"src": ..., "dst": ..., "weight": ...}``.

    ``columns`` is ``None`` (the defaults), a mapping with any of the keys ``src``, ``dst`` and
    ``weight``, or a sequence ``(src, dst)`` or ``(src, dst, weight)``. A column is a name (a
    ``str``) or, in a text edge list, a field number counted from 1 (an ``int``); a role left
    out (or ``None``) keeps its default.

    >>> column_choice(("user", "item", "score"))
    {'src': 'user', 'dst': 'item', 'weight': 'score'}
    >>> column_choice({"weight": 4})
    {'src': None, 'dst': None, 'weight': 4}
    """
    from ..errors import ParameterError  # noqa: PLC0415

    if columns is None:
        return None
    if isinstance(columns, dict):
        unknown = [key for key in columns if key not in _ROLES]
        if unknown:
            raise ParameterError(f"columns takes the keys src, dst and weight, not {unknown[0]!r}")
        chosen = {role: columns.get(role) for role in _ROLES}
    elif isinstance(columns, (list, tuple)) and len(columns) in (2, 3):
        chosen = dict(zip(_ROLES, list(columns) + [None]))
    else:
        raise ParameterError(f"columns must be (src, dst), (src, dst, weight) or a mapping of those keys, "
                             f"not {columns!r}")
    for role, column in chosen.items():
        if column is None:
            continue
        if isinstance(column, bool) or not isinstance(column, (str, int)) or column in ("", 0) or (
                isinstance(column, int) and column < 1):
            raise ParameterError(f"the {role} column must be a name or a field number from 1, not {column!r}")
    given = [c for c in chosen.values() if c is not None]
    twice = next((c for c in given if given.count(c) > 1), None)
    if twice is not None:
        raise ParameterError(f"column {twice!r} is chosen for two roles (src, dst, weight take one column each)")
    return chosen


def _check_readable(path) -> None:
    """Refuse a path that names no readable, non-empty file (a stream's size is known only once
    it is read: :func:`_spooled` checks that)."""
    from .._paths import require_utf8_name, symlink_loop  # noqa: PLC0415

    require_utf8_name(path, writing=False)
    p = Path(path)
    if not p.exists():

        raise InputError("is a loop of symbolic links" if symlink_loop(p) else "no such file", path=path)
    if p.is_dir():
        raise InputError("is a directory, not a graph file", path=path)
    if not os.access(p, os.R_OK):
        raise InputError("permission denied: the file cannot be read", path=path)
    if not is_stream(p) and p.stat().st_size == 0:
        raise InputError("the file is empty (0 bytes)", path=path)


def is_stream(path) -> bool:
    """Whether ``path`` names a pipe, terminal or other stream rather than a file or directory."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextlib.contextmanager
def _input_errors(path):
    """Turn whatever a parser library raises into one :class:`InputError` naming ``path``."""
    import pyarrow as pa  # noqa: PLC0415

    try:
        yield
    except InputError as exc:
        if exc.path is None:
            raise InputError(exc.message, path=path, line=exc.line) from exc
        raise
    except MgmatchError:
        raise
    except (EOFError, zlib.error) as exc:
        raise InputError(f"the compressed data is truncated or corrupt ({exc})", path=path) from exc
    except (OSError, ValueError, KeyError, IndexError, OverflowError, zipfile.BadZipFile, pa.ArrowException) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        detail = "; ".join(line.strip() for line in detail.splitlines() if line.strip())  # libraries' multi-line messages
        raise InputError(f"cannot read the file: {detail}", path=path) from exc


@contextlib.contextmanager
def _open_bytes(path):
    """The file as a binary stream, decompressed when it is gzip data, and past a leading UTF-8
    byte-order mark."""
    with open(path, "rb") as raw:
        if raw.read(2) == _GZIP_MAGIC:
            raw.seek(0)
            with gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
                _skip_bom(unzipped)
                yield unzipped
        else:
            raw.seek(0)
            _skip_bom(raw)
            yield raw


def _skip_bom(stream) -> None:
    """Step over a UTF-8 byte-order mark at the start of ``stream``: editors and spreadsheets
    (Excel's "CSV UTF-8") write one, and no format read here allows it, so left in place it
    would be taken for part of the first header, name or number."""
    if stream.read(len(_UTF8_BOM)) != _UTF8_BOM:
        stream.seek(0)


def _check_text(path, fmt: str = "") -> None:
    """Refuse a text format's file that holds something else: UTF-16 or UTF-32 text (as some
    Windows tools save), data compressed other than by gzip, or lines ended by a carriage
    return alone (classic Mac OS; GML, free of lines, reads so too). Read as text, each would
    fail far from its cause, on a field count or a missing header."""
    with _open_bytes(path) as stream:
        head = stream.read(1 << 16)
    for start, what in _NOT_TEXT:
        if start.match(head[:16]):
            raise InputError(f"the file holds {what}", path=path)
    if fmt != "gml" and b"\n" not in head and head.count(b"\r") > 1:
        raise InputError("its lines end in a carriage return alone (as classic Mac OS wrote them), and lines "
                         "end in a line feed here (or CR LF); convert the line ends", path=path)


def _is_gzip(path) -> bool:
    with open(path, "rb") as raw:
        return raw.read(2) == _GZIP_MAGIC


def _clip(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _check_weights(weights, req: _Request, *, what, line_of=None) -> None:
    """Reject NaN and infinite weights, and negative ones under ``negative="error"``."""
    bad = ~np.isfinite(weights)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        # (a number past float64's range, 1e309, is read as infinite: say so, as the file holds a number)
        why = "; weights must be finite" if np.isnan(weights[i]) else (
            " (an infinite value, or a number beyond float64's range of about 1.8e308); weights must be finite")
        raise InputError(
            f"{what(i)} has weight {weights[i]}{why}",
            path=req.path, line=None if line_of is None else line_of(i),
        )
    if req.canon.get("negative", "error") == "error":
        negative = weights < 0
        if negative.any():
            i = int(np.flatnonzero(negative)[0])
            message = (
                f"{what(i)} has negative weight {weights[i]}; absolute values are used only on request "
                "(--negative abs, or negative='abs')"
            )
            if line_of is None:
                count = int(negative.sum())
                raise InputError(
                    f"{message} ({count} negative entr{'y' if count == 1 else 'ies'})", path=req.path
                )
            raise InputError(message, path=req.path, line=line_of(i))


def _line_of_row(row: int, skipped: np.ndarray) -> int:
    """The 1-based file line of the ``row``-th kept line, given the sorted skipped lines."""
    rows_before_skip = skipped - np.arange(1, skipped.size + 1)
    return int(row + 1 + np.searchsorted(rows_before_skip, row, side="right"))


def _resolve_base(src, dst, req: _Request, *, line_of=None) -> bool:
    """Decide whether ids are 1-based; reject id 0 when the caller said they are."""
    smallest = int(min(src.min(), dst.min()))
    if req.one_based is None:
        return smallest == 1
    if req.one_based and smallest == 0:
        row = int(np.flatnonzero((src == 0) | (dst == 0))[0])
        raise InputError(
            "vertex id 0 in ids read as 1-based (one_based=True)",
            path=req.path, line=None if line_of is None else line_of(row),
        )
    return req.one_based


def _concat(parts, dtype=np.int64):
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _graph_from_arrays(arrays, req: _Request, *, n, shape) -> tuple[Graph, dict]:
    """The graph of edge arrays from a binary file (ids 0-based unless ``one_based=True``)."""
    src = _as_id_array(arrays["src"], "source", req.path)
    dst = _as_id_array(arrays["dst"], "destination", req.path)
    if src.size == 0 and n is None and shape is None:
        raise InputError("no edges: the arrays are empty and give no vertex count", path=req.path)
    one_based = False
    if src.size and req.one_based:
        one_based = _resolve_base(src, dst, req)
        src, dst = src - 1, dst - 1
    weight = arrays.get("weight")
    if weight is not None:
        weight = np.asarray(weight)
        if weight.dtype.kind in "iuf" and weight.dtype != np.float64:
            weight = weight.astype(np.float64)
    if req.bipartite:
        if shape is None and n is not None:  # n vertices read as rows x columns: a square matrix
            shape = (n, n)
        graph = _graph_from_edges(src, dst, weight, req, bipartite=True, shape=shape)
    else:
        graph = _graph_from_edges(src, dst, weight, req, n=n)
    return graph, {"one_based": one_based}


def _needs_renumbering(src, dst, req: _Request, *, bipartite: bool) -> bool:
    """Whether a reader that may renumber (``req.renumber``) must: ids that are not integers,
    or integers that :func:`~mgmatch.convert.renumber_ids` would not keep as they are (negative,
    or sparse: the largest above about twice the distinct ids). A bipartite graph is renumbered
    on both sides when either side needs it."""
    from ..convert import ids_kept  # noqa: PLC0415

    if not req.renumber:
        return False
    if req.renumber is True:
        return True
    sides = [[src], [dst]] if bipartite else [[src, dst]]
    return not all(all(isinstance(a, np.ndarray) for a in arrays) and ids_kept(arrays) for arrays in sides)


def _renumbered_graph(src, dst, weight, req: _Request, *, bipartite: bool):
    """The graph of edges between ids of any kind, numbered ``0 .. n-1`` in sorted order by
    :func:`~mgmatch.convert.renumber_ids` (rows and columns apart for a bipartite graph); returns
    the graph and the maps back to the file's ids, ``(vertices, columns)``."""
    from ..convert import renumber_ids  # noqa: PLC0415

    if bipartite:
        rows, (u,) = renumber_ids([src], True)
        cols, (v,) = renumber_ids([dst], True)
        graph = _graph_from_edges(u, v, weight, req, bipartite=True, shape=(len(rows), len(cols)))
        return graph, (rows, cols)
    verts, (u, v) = renumber_ids([src, dst], True)
    return _graph_from_edges(u, v, weight, req, n=len(verts)), (verts, None)


def _graph_from_edges(src, dst, weight, req: _Request, *, n=None, bipartite=False, shape=None) -> Graph:
    """``Graph.from_edges`` of the arrays under the request's options: through SciPy's CSR
    conversion where no entry repeats an edge, else by ``from_edges`` itself (which merges
    repeats by the duplicate rule, and names any value it refuses)."""
    graph = graph_from_edge_arrays(src, dst, weight, req.canon, req.path, n=n, bipartite=bipartite, shape=shape)
    if graph is None:
        graph = Graph.from_edges(src, dst, weight, n=n, bipartite=bipartite, shape=shape, source=req.path,
                                 **req.canon)
    return graph


@dataclass
class EdgeChunk:
    """The entries of one piece of an edge-list file or Parquet table, as read and checked.

    Attributes
    ----------
    src, dst : ndarray of int64
        Endpoint ids exactly as the file holds them (before any 1-based shift).
    weight : ndarray of float64 or None
        Entry weights; ``None`` when the piece has no weight column or weights are ignored.
    n_fields : int or None
        Fields per edge line of a text piece (``None`` when it holds no edge line, or for
        Parquet).
    header : bool
        Whether the piece's first kept line was a header of names (and was skipped).
    has_lines : bool
        Whether the piece holds any line besides comments and blank lines.
    begin : int
        Byte offset (text) or first row (Parquet) of the piece in the file.
    """

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None
    n_fields: int | None = None
    header: bool = False
    has_lines: bool = False
    begin: int = 0


def _refuse_unread_weights(unread, what, path) -> None:
    """Refuse a weighted read that found no ``weight`` column (or array) while numeric ones
    ``unread`` are left: the weights are likely there under another name, and reading on would
    quietly give an unweighted graph."""
    if unread:
        many = len(unread) > 1
        raise InputError(
            f"no {what} 'weight', and the {what}{'s' if many else ''} {', '.join(map(repr, unread))} "
            f"{'are' if many else 'is'} not read: name the weight {what} 'weight'"
            + (" or choose it (--weight on the command line, columns= in Python)" if what == "column" else "")
            + f", or for an unweighted graph drop {'them' if many else 'it'} or read without weights (--unweighted "
            "on the command line, weighted=False in Python)",
            path=path,
        )
