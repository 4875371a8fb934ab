"""Read graphs from files: Matrix Market, edge lists, METIS, GML, Parquet and NumPy ``.npz``.

:func:`read_graph` picks the format from the file's suffix and returns a canonical
:class:`~mgmatch.graph.Graph`; :func:`graph_info` describes a file without running anything on
it. Every problem with a file is raised as one :class:`~mgmatch.errors.InputError` that names the
file and, where it is known, the line.

Rules this module decides (the graph model's own canonicalisation rules apply on top):

* **Vertex ids.** Matrix Market and METIS ids are 1-based by definition. Text edge lists and
  GML node ids are read as 1-based when no id is 0 and the smallest id is 1, else as 0-based;
  pass ``one_based=True`` or ``False`` to decide instead. Parquet and ``.npz`` arrays are
  0-based unless ``one_based=True``. Results index vertices from 0 either way.
* **Empty input.** A file of zero bytes is an error. A format that states its vertex count
  (Matrix Market, METIS, GML with its nodes, a SciPy matrix or ``.npz`` arrays with ``n``) may
  hold no edges: that is a graph of isolated vertices. A format that does not (edge lists,
  Parquet, ``.npz`` without ``n``) must hold at least one edge, so a file of only comments or a
  header is an error.
* **Matrix Market values.** Repeated coordinates are summed, as the format defines, before the
  duplicate rule merges ``a_ij`` with ``a_ji``. Complex entries become their modulus
  ``|a_ij|``. Pattern matrices are unweighted. Dense (``array``) files give one edge per nonzero
  entry. A skew-symmetric matrix stores ``-a_ij`` opposite ``a_ij``, so it needs
  ``negative="abs"``. The header is checked before the body is read: a matrix too large for
  memory, or more entries than an uncompressed file has bytes for, is refused.
* **Edge lists.** Each line is ``source target [weight]``; a ``#`` starts a comment that runs
  to the end of its line, and lines starting with ``%`` and blank lines (those left blank by a
  comment too) are skipped, anywhere in the file. A first line made only of names (such as
  ``src,dst,weight``) is a header and is skipped. ``.csv`` separates fields with commas,
  ``.tsv`` with tabs, and ``.txt``, ``.edges`` and ``.el`` with runs of spaces or tabs (or with
  commas, when the first edge line has one). Every line must have the same number of fields.
  Delimiters that end a line (spreadsheets write them) are ignored, except on a line short of
  fields, where they stand for its last fields, empty (``1,2,`` among lines of
  ``source,target,label``). An empty id, or an empty weight where weights are read, is an
  error.
* **METIS.** The header ``n m [fmt [ncon]]`` is checked against the ``n`` vertex lines and the
  ``2 m`` adjacency entries that follow (every edge is listed from both ends). Vertex sizes and
  vertex weights are skipped; edge weights, when ``fmt`` has them, are the edge weights.
* **GML.** The file holds exactly one ``graph [ ... ]``; other top-level keys (``Creator``,
  ``Version``) are skipped. Each ``node [ ... ]`` needs a unique integer ``id``, and each
  ``edge [ ... ]`` an integer ``source`` and ``target`` that some node declares; the largest
  node id sets the vertex count, so nodes without edges are isolated vertices. An edge's weight
  is its ``weight`` key, else its ``value`` key: either every edge has one (a weighted graph) or
  none does. ``directed 1`` makes every arc an undirected edge, merged by the duplicate rule as
  an edge list's are; ``multigraph``, labels, ``graphics [ ... ]`` and every other key are
  skipped. Strings are double-quoted and may span lines; a ``#`` outside a string starts a
  comment that runs to the end of the line. The file is parsed here rather than with
  NetworkX's reader: NetworkX is not a dependency, and its reader refuses files that repeat an
  edge, which the duplicate rule is meant to merge.
* **Parquet and .npz weights.** The weights are the ``weight`` column (or array), and only
  that name is read. A table without one that holds other numeric columns (for ``.npz``,
  numeric arrays of one value per edge) is refused, naming them, unless ``weighted=False``
  (``--unweighted``):
  its weights are likely there under another name, and reading on would drop them unseen.

Text formats (Matrix Market, edge lists, METIS, GML) may be gzip-compressed; compression is
recognised from the file's first bytes (a file named ``.gz`` that holds plain text is read as
plain text), and a ``.gz`` suffix is stripped before the format is looked up. A UTF-8
byte-order mark at the start of the text is skipped. A path that names a stream (a pipe,
``/dev/stdin``) is copied to a temporary file and read from there, up to a bound (half the free
space where temporary files go, or ``spool_limit``); its format must be given.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import InputError, MgmatchError, ParameterError, ResourceError
from ..graph import Graph, _as_id_array, _check_vertex_memory
from ._build import graph_from_csr, graph_from_edge_arrays

__all__ = ["read_graph", "graph_info", "format_of", "SUFFIXES"]

#: Input suffixes and what each holds; text formats also read gzip-compressed (``.gz`` added).
SUFFIXES: dict[str, str] = {
    ".mtx": "Matrix Market (coordinate or array; real, integer, complex or pattern)",
    ".csv": "edge list, comma-separated: source,target[,weight]",
    ".tsv": "edge list, tab-separated: source, target[, weight]",
    ".txt": "edge list, whitespace-separated (SNAP style, '#' or '%' comment lines)",
    ".edges": "edge list, whitespace-separated",
    ".el": "edge list, whitespace-separated",
    ".graph": "METIS adjacency lists (1-based; header 'n m [fmt [ncon]]')",
    ".gml": "GML: graph [ node [ id ] ... edge [ source target [weight or value] ] ... ]",
    ".parquet": "Parquet table with integer columns src, dst and an optional weight column",
    ".pq": "Parquet table, as .parquet",
    ".npz": "NumPy arrays src, dst[, weight][, n], or a matrix saved by scipy.sparse.save_npz",
}

_FORMAT_OF_SUFFIX = {
    ".mtx": "mtx",
    ".csv": "csv",
    ".tsv": "tsv",
    ".txt": "edgelist",
    ".edges": "edgelist",
    ".el": "edgelist",
    ".graph": "metis",
    ".gml": "gml",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".npz": "npz",
}
_FORMATS = ("mtx", "csv", "tsv", "edgelist", "metis", "gml", "parquet", "npz")
_TEXT_FORMATS = ("mtx", "csv", "tsv", "edgelist", "metis", "gml")
_CANON_OPTIONS = ("duplicates", "zeros", "negative", "random_weights", "dtype")

_CHUNK_BYTES = 1 << 24  # text is cut into fields in steps of about 16 MiB of whole lines
_NEWLINE = ord("\n")
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[ord(" "), ord("\t"), ord("\r"), 0x0B, 0x0C]] = True
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
))
_INT64_MAX = np.iinfo(np.int64).max


# ----------------------------------------------------------------------------- public API
def read_graph(path, format=None, *, bipartite=None, one_based=None, weighted=True, with_details=False,
               spool_limit=None, **canon):
    """Read a graph from a file.

    Parameters
    ----------
    path : str or os.PathLike
        The file. Its suffix names the format (see :data:`SUFFIXES`) unless ``format`` is given.
    format : {"mtx", "csv", "tsv", "edgelist", "metis", "gml", "parquet", "npz"}, optional
        The format, overriding the suffix. ``"edgelist"`` separates fields by whitespace, or by
        commas when the first edge line has one.
    bipartite : bool, optional
        Matrices (Matrix Market, SciPy ``.npz``): a rectangular matrix is always bipartite (rows
        x columns) and a square one is an undirected graph unless ``bipartite=True``. Edge lists,
        Parquet and ``.npz`` arrays: ``True`` reads sources as rows and targets as columns.
        METIS and GML: ``True`` gives the adjacency matrix as a bipartite graph (both triangles).
    one_based : bool, optional
        Whether ids in an edge list, GML file, Parquet table or ``.npz`` arrays start at 1.
        ``None`` detects it for text edge lists and GML node ids (1-based when no id is 0 and the
        smallest is 1) and means 0-based for Parquet and ``.npz``. Matrix Market and METIS are
        always 1-based.
    weighted : bool
        Use the weights the file holds; ``False`` ignores them (every edge weighs 1.0, or gets a
        random weight with ``random_weights``; an edge list's lines are read for their first two
        fields only, so they may hold more, of any content). A Parquet table or ``.npz`` without a
        ``weight`` column (array) but with other numeric ones is an error unless
        ``weighted=False``. On the command line: ``--unweighted``.
    with_details : bool
        Also return what the reader found in the file.
    spool_limit : int, optional
        The most bytes of a stream (a pipe, ``/dev/stdin``) to copy to a temporary file before
        reading it; default half the free space where temporary files go.
    **canon
        Canonicalisation options of :meth:`Graph.from_edges <mgmatch.graph.Graph.from_edges>`:
        ``duplicates``, ``zeros``, ``negative``, ``random_weights``, ``dtype``.

    Returns
    -------
    Graph
        The canonical graph on the CPU; ``graph.summary`` says what canonicalisation did, and
        ``graph.id_offset`` is 1 when the file's ids were read as 1-based (vertex ``v`` is the
        file's id ``v + 1``), else 0.
    dict
        With ``with_details`` only: ``format`` and what the format itself says (``one_based``
        for edge lists, GML and binary arrays, ``matrix_market`` with its field and symmetry,
        ``metis``, ...), as :func:`graph_info` reports it.

    Raises
    ------
    InputError
        The file is missing, unreadable, empty or malformed, or its values break a
        canonicalisation rule. The message names the file and, where known, the line.
    ParameterError
        An unknown ``format`` or canonicalisation option, or an option that does not apply.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "triangle.txt"
    ...     _ = path.write_text("# a weighted triangle\\n1 2 0.5\\n2 3 1.5\\n3 1 2.0\\n")
    ...     g = read_graph(path)
    >>> g.n, g.m, g.weighted, g.id_offset  # no id is 0: the file's ids are read as 1-based
    (3, 3, True, 1)
    >>> g.neighbours(0)
    (array([1, 2], dtype=int32), array([0.5, 2. ]))
    """
    graph, details = _read(path, format, bipartite=bipartite, one_based=one_based, weighted=weighted, canon=canon,
                           spool_limit=spool_limit)
    return (graph, details) if with_details else graph


def graph_info(path, format=None, **options) -> dict:
    """Describe the graph in a file: size, degrees, weights and what canonicalisation found.

    Parameters
    ----------
    path : str or os.PathLike
        The file, in any format :func:`read_graph` reads.
    format : str, optional
        The format, overriding the suffix.
    **options
        Options of :func:`read_graph`. ``negative`` defaults to ``"abs"`` here, so that negative
        entries are counted rather than rejected.

    Returns
    -------
    dict
        Plain Python values: ``path``, ``format``, ``n``, ``m``, ``nnz``, ``shape``,
        ``bipartite``, ``weighted``, ``degree`` (``min``, ``max``, ``mean``), ``isolated``,
        ``self_loops``, ``duplicates``, ``zeros``, ``negatives``, ``canonicalisation`` (the full
        :class:`~mgmatch.graph.CanonSummary`) and what the format itself says (for example
        ``matrix_market`` with its field and symmetry, or ``one_based`` for edge lists).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "path.csv"
    ...     _ = path.write_text("0,1\\n1,2\\n2,1\\n1,2\\n3,3\\n")
    ...     info = graph_info(path)
    >>> info["n"], info["m"], info["self_loops"], info["duplicates"], info["isolated"]
    (4, 2, 1, 1, 1)
    >>> info["canonicalisation"]["mirrored_pairs"]  # (1, 2) and (2, 1) are one edge
    1
    """
    options.setdefault("negative", "abs")
    read_options = {k: options.pop(k) for k in ("bipartite", "one_based", "weighted", "spool_limit") if k in options}
    read_options.setdefault("weighted", True)
    graph, details = _read(
        path, format, bipartite=read_options.get("bipartite"), one_based=read_options.get("one_based"),
        weighted=read_options["weighted"], canon=options, spool_limit=read_options.get("spool_limit"),
    )
    degrees = _all_degrees(graph)
    summary = graph.summary
    info = {
        "path": str(path),
        "format": details.pop("format"),
        "n": graph.n,
        "m": graph.m,
        "nnz": graph.nnz,
        "shape": list(graph.shape),
        "bipartite": graph.bipartite,
        "weighted": graph.weighted,
        "degree": {
            "min": int(degrees.min()) if degrees.size else 0,
            "max": int(degrees.max()) if degrees.size else 0,
            "mean": float(degrees.mean()) if degrees.size else 0.0,
        },
        "isolated": int(np.count_nonzero(degrees == 0)),
        "self_loops": summary.self_loops_dropped,
        "duplicates": summary.duplicates_merged,
        "zeros": summary.zeros_kept + summary.zeros_dropped,
        "negatives": summary.negatives_made_absolute,
        "canonicalisation": summary.as_dict(),
    }
    info.update(details)
    return info


def format_of(path) -> str:
    """The format name that the suffix of ``path`` stands for (a ``.gz`` suffix is looked through).

    >>> format_of("graphs/web.mtx.gz"), format_of("roads.TSV"), format_of("mesh.graph")
    ('mtx', 'tsv', 'metis')
    """
    name = Path(path).name.lower()
    compressed = name.endswith(".gz")
    if compressed:
        name = name[: -len(".gz")]
    suffix = Path(name).suffix
    fmt = _FORMAT_OF_SUFFIX.get(suffix)
    if fmt is None or (compressed and fmt not in _TEXT_FORMATS):
        shown = suffix + (".gz" if compressed else "") or "(none)"
        raise InputError(
            f"cannot tell the format from the suffix {shown!r}; known suffixes are "
            f"{', '.join(SUFFIXES)} (text formats may add .gz); or name the format (--format on the "
            "command line, format= in Python)",
            path=path,
        )
    return fmt


# ------------------------------------------------------------------------------ dispatch
@dataclass(frozen=True)
class _Request:
    """What the caller asked of a reader."""

    path: str
    bipartite: bool | None
    one_based: bool | None
    weighted: bool
    canon: dict


def _read(path, format, *, bipartite, one_based, weighted, canon, spool_limit=None) -> tuple[Graph, dict]:
    for name in canon:
        if name not in _CANON_OPTIONS:
            raise ParameterError(
                f"unknown option {name!r}; read_graph takes bipartite, one_based, weighted and "
                f"the canonicalisation options {', '.join(_CANON_OPTIONS)}"
            )
    if format is not None and format not in _FORMATS:
        raise ParameterError(f"format must be one of {', '.join(map(repr, _FORMATS))}, not {format!r}")
    if one_based not in (None, True, False):
        raise ParameterError(f"one_based must be True, False or None, not {one_based!r}")
    if bipartite not in (None, True, False):
        raise ParameterError(f"bipartite must be True, False or None, not {bipartite!r}")
    if weighted not in (True, False):
        raise ParameterError(f"weighted must be True or False, not {weighted!r}")
    _check_readable(path)
    fmt = format or format_of(path)
    with _spooled(path, fmt, spool_limit) as readable:
        request = _Request(str(readable), bipartite, one_based, bool(weighted), dict(canon))
        try:
            with _input_errors(path):
                if fmt in _TEXT_FORMATS:
                    _check_text(request.path)
                graph, details = _READERS[fmt](request)
                # the choice of base is the caller's to see: vertex v is the file's id v + id_offset
                graph.id_offset = 1 if fmt in ("mtx", "metis") or details.get("one_based") else 0
        except InputError as exc:
            if readable == path:
                raise
            # the spool's name means nothing to the caller: the stream's instead
            raise InputError(exc.message.replace(str(readable), str(path)), path=path, line=exc.line) from None
    return graph, {"format": fmt, **details}


def _check_readable(path) -> None:
    """Refuse a path that names no readable, non-empty file (a stream's size is known only once
    it is read: :func:`_spooled` checks that)."""
    p = Path(path)
    if not p.exists():
        from .._paths import symlink_loop  # noqa: PLC0415

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


#: The first bytes of the binary formats; a stream that starts otherwise is refused before it
#: is copied.
_MAGIC = {"parquet": b"PAR1", "npz": b"PK"}
_SPOOL_STEP = 1 << 20


def spool_limit_default(folder=None) -> int:
    """How many bytes of a stream input may be copied to a temporary file: half the free space
    of the folder temporary files go to (``TMPDIR``), so that a stream without end (``/dev/zero``)
    or larger than the disk stops with a message before the file system is full."""
    folder = tempfile.gettempdir() if folder is None else folder
    try:
        return shutil.disk_usage(folder).free // 2
    except OSError:
        return 0


@contextlib.contextmanager
def _spooled(path, fmt, limit=None):
    """``path`` itself, or for a stream a temporary copy of what it holds: the readers look at a
    file's first bytes and start again, or hand the path to a library, none of which a pipe
    allows. The copy goes where :mod:`tempfile` puts temporary files (``TMPDIR``) and is removed
    after the read, or when the read is interrupted (Ctrl-C, or SIGTERM and SIGHUP under the
    command line). It holds at most ``limit`` bytes (default: :func:`spool_limit_default`).
    A stream is refused as soon as its first bytes show it holds something else than ``fmt``:
    a binary format's magic bytes missing, or a NUL byte in a text format's uncompressed text."""
    if not is_stream(path):
        yield path
        return
    if limit is None:
        limit = spool_limit_default()
    try:
        fd, spool = tempfile.mkstemp(prefix="mgmatch-input-")
    except OSError as exc:
        raise InputError(f"cannot copy the input to a temporary file: {exc.strerror or exc}", path=path) from exc
    try:
        try:
            with os.fdopen(fd, "wb") as out, open(path, "rb") as stream:
                _copy_stream(stream, out, path, fmt, limit)
        except OSError as exc:
            raise InputError(f"cannot read the input into {spool}: {exc.strerror or exc}", path=path) from exc
        if os.path.getsize(spool) == 0:
            raise InputError("the input is empty (nothing was read from it)", path=path)
        yield spool
    finally:
        with contextlib.suppress(OSError):
            os.unlink(spool)


def _copy_stream(stream, out, path, fmt, limit: int) -> None:
    copied = 0
    text = None  # whether to look for NUL bytes: a text format's stream that is not gzip data
    while True:
        piece = stream.read(_SPOOL_STEP)
        if not piece:
            return
        if copied == 0:
            magic = _MAGIC.get(fmt)
            if magic is not None and not piece.startswith(magic[: len(piece)]):
                raise InputError(f"the stream does not start as a {fmt} file does ({magic!r})", path=path)
            text = fmt in _TEXT_FORMATS and not piece.startswith(_GZIP_MAGIC)
        if text and b"\0" in piece:
            raise InputError(f"the stream holds a NUL byte (at byte {copied + piece.index(0):,}), so it is not "
                             f"{fmt} text", path=path)
        copied += len(piece)
        if copied > limit:
            raise InputError(
                f"the stream holds more than {limit:,} bytes, the most that may be copied to a temporary "
                f"file ({tempfile.gettempdir()}; half its free space by default); save it to a file and read that",
                path=path,
            )
        out.write(piece)


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


def _check_text(path) -> None:
    """Refuse a text format's file that holds something else: UTF-16 or UTF-32 text (as some
    Windows tools save), or data compressed other than by gzip. Read as text, either would fail
    far from its cause, on a field count or a missing header."""
    with _open_bytes(path) as stream:
        head = stream.read(16)
    for start, what in _NOT_TEXT:
        if start.match(head):
            raise InputError(f"the file holds {what}", path=path)


class _Unseekable(io.RawIOBase):
    """A binary stream that reads as ``stream`` does and cannot seek. SciPy's Matrix Market
    reader, handed a seekable stream, seeks it when it closes, and on a plain file of more than
    about a hundred bytes that seek failed inside a thread of its own and aborted the process."""

    def __init__(self, stream):
        super().__init__()
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        return self._stream.readinto(buffer)


def _is_gzip(path) -> bool:
    with open(path, "rb") as raw:
        return raw.read(2) == _GZIP_MAGIC


# ------------------------------------------------------------------------- Matrix Market
_MM_LINE = re.compile(r"Line (\d+):\s*(.*)", re.DOTALL)
_MM_TRUNCATED = re.compile(r"Truncated file\. Expected another (\d+) lines")


def _read_matrix_market(req: _Request) -> tuple[Graph, dict]:
    import scipy.io  # noqa: PLC0415

    if req.one_based is False:
        raise ParameterError("Matrix Market ids are 1-based by definition; one_based=False does not apply")
    # One look at the start: SciPy's reader takes the path itself (its fastest way) only for
    # plain text without a byte-order mark under a name without .gz or .bz2, since it picks
    # decompression by the name where this module goes by the bytes; else it gets the stream
    # _open_bytes gives. The banner line comes from the same look.
    with _open_bytes(req.path) as stream:
        gzipped = isinstance(stream, gzip.GzipFile)
        marked = stream.tell() > 0  # past a byte-order mark
        _check_matrix_market_object(stream.readline(1 << 12), req.path)
    direct = not gzipped and not marked and not req.path.endswith((".gz", ".bz2"))
    nrows, ncols, stored, layout, field, symmetry = _matrix_market_call(scipy.io.mminfo, req.path, direct=direct)
    _check_matrix_market_header(req.path, nrows, ncols, stored, layout, symmetry, gzipped=gzipped)
    _check_matrix_market_body(req.path, layout, field)
    # a symmetric, skew-symmetric or Hermitian file stores one triangle and SciPy's reader adds
    # each entry's mirror, so the matrix read is symmetric in its pattern and in |a_ij|. (The
    # matrix goes straight into the call, so that the graph build holds its only reference and
    # frees it once it is summed into a CSR.)
    graph, entries = _graph_from_matrix(_mmread(req.path, direct, stored, (nrows, ncols)), req,
                                        weighted=field != "pattern", base=1, symmetric=symmetry != "general")
    details = {
        "matrix_market": {
            "layout": layout,
            "field": field,
            "symmetry": symmetry,
            "stored_entries": int(stored),
            "matrix_entries": entries["matrix"],
            "repeated_coordinates_summed": entries["summed"],
        }
    }
    return graph, details


def _mmread(path, direct, stored, shape):
    """The matrix of a Matrix Market file whose header and body were checked, read by SciPy."""
    import scipy.io  # noqa: PLC0415

    try:
        return _matrix_market_call(scipy.io.mmread, path, direct=direct, spmatrix=False, stored=stored, shape=shape)
    except InputError:
        plain = _matrix_market_plain_text(path)
        if plain is None:
            raise
        # SciPy's reader refuses what the body check allows: comment lines among the entries,
        # and numbers with a leading '+'; read once more without them
        try:
            return scipy.io.mmread(io.BytesIO(plain), spmatrix=False)
        except (ValueError, RuntimeError, OverflowError) as exc:
            raise _matrix_market_error(exc, path, stored, shape) from exc


def _graph_from_matrix(matrix, req: _Request, *, weighted: bool, base: int, symmetric: bool = False
                       ) -> tuple[Graph, dict]:
    """The graph of a sparse (or dense) matrix: repeated coordinates summed, ``|a_ij|`` if complex.

    ``base`` is added to row and column indices when a message names an entry; ``symmetric``
    says the matrix is known to be symmetric in its pattern and in ``|a_ij|``.
    """
    import scipy.sparse as sp  # noqa: PLC0415

    coo = sp.coo_array(matrix)  # a dense matrix keeps its nonzero entries
    del matrix
    entries = int(coo.nnz)
    data = coo.data
    if np.issubdtype(data.dtype, np.complexfloating):
        data = np.abs(data)  # |a_ij|
    weighted = req.weighted and weighted and data.dtype != bool
    # repeated coordinates add up: SciPy's COO to CSR conversion sums them (explicit zeros stay
    # entries) and sorts each row's columns; a sum that overflows is refused by the graph build,
    # naming the edge
    csr = sp.csr_array((data, (coo.row, coo.col)), shape=coo.shape)
    del coo, data
    if weighted:
        indptr = csr.indptr
        _check_weights(
            csr.data.astype(np.float64, copy=False), req,
            what=lambda i: (f"entry ({int(np.searchsorted(indptr, i, side='right')) - 1 + base}, "
                            f"{int(csr.indices[i]) + base})"),
        )
    bipartite = _matrix_bipartite(csr.shape, req)
    graph = graph_from_csr(csr, req.canon, req.path, weighted=weighted, bipartite=bipartite, symmetric=symmetric)
    if graph is None:  # an entry to merge with another than its mirror, or random weights
        graph = Graph.from_scipy(csr, bipartite=bipartite, weighted=weighted, source=req.path, **req.canon)
    return graph, {"matrix": entries, "summed": entries - int(csr.nnz)}


def _check_matrix_market_header(path, nrows, ncols, stored, layout, symmetry, *, gzipped: bool) -> None:
    """Refuse a header whose sizes the body cannot meet, before SciPy allocates for them.

    A coordinate entry is a line of at least 4 bytes (``i j`` and a line break), and a dense
    file stores at least a triangle of its ``stored`` entries, a line of at least 2 bytes each;
    a plain file too small for that is cut short or has a wrong header. (A gzip file's size says
    nothing of its text.) The matrix as read must also fit in memory, checked as the graph
    build checks it; without these checks a wrong header fails as an allocation error that
    names neither the file nor the header.
    """
    entries = f"{stored:,} entr{'y' if stored == 1 else 'ies'}"
    declared = f"the header declares a {nrows:,} x {ncols:,} matrix with {entries}"
    if not gzipped:
        size = os.path.getsize(path)
        if (4 * stored if layout == "coordinate" else stored // 2) > size:
            raise InputError(f"{declared}, more than the file's {size:,} bytes can hold", path=path)
    in_memory = 2 * stored if layout == "coordinate" and symmetry != "general" else stored
    try:
        _check_vertex_memory(nrows, ncols, in_memory, None)
    except ResourceError as exc:
        raise InputError(f"{declared}, too large for this machine's memory", path=path) from exc


#: Values per entry of a Matrix Market field.
_MM_VALUES = {"pattern": 0, "integer": 1, "real": 1, "complex": 2}


def _check_matrix_market_object(banner: bytes, path) -> None:
    """Refuse a Matrix Market file whose banner (its first line) declares an object other than a
    matrix (a vector), which SciPy's header reader takes for one and its data lines then fail."""
    words = banner.split()
    if len(words) > 1 and words[0].lower().lstrip(b"%") == b"matrixmarket" and words[1].lower() != b"matrix":
        kind = _clip(words[1].decode("utf-8", "replace"))
        raise InputError(f"Matrix Market: the banner declares a {kind!r} object; only matrices are read", path=path,
                         line=1)


def _check_matrix_market_body(path, layout: str, field: str) -> None:
    """Refuse a data line that SciPy's reader would read as something it does not say.

    SciPy's reader takes what it needs from the front of a line and of a field and drops the
    rest, without a word: ``2 1 1.0x`` is read as 1.0, ``3 2 2.5 7`` (an extra field, perhaps a
    complex value under a ``real`` header) as 2.5, an integer file's ``1.5`` as 1, ``1e3`` as 1
    and ``0x10`` as 0. So every data line must hold exactly the fields the header declares (two
    ids and none, one or two values in a coordinate file, the values alone in an array file),
    ids and integer values whole numbers, real and complex values decimal numbers, separated by
    spaces and tabs; blank lines and comments are skipped. One compiled pass over the text after
    the header (banner, comments, size line), in the pieces :func:`_chunks` cuts.
    """
    from ._mm_scan import NOT_A_NUMBER, NOT_WHOLE, scan_pieces  # noqa: PLC0415  (compiled on first use)

    ids = 2 if layout == "coordinate" else 0
    fields = ids + _MM_VALUES[field]
    whole = field in ("integer", "pattern")
    declared = f"the header declares a{'n' if field == 'integer' else ''} {field} matrix"
    with _open_bytes(path) as stream:
        _, line = _matrix_market_header(stream)
        for block in _chunks(stream):
            found = scan_pieces(np.frombuffer(block, dtype=np.uint8), _line_cuts(block, _scan_threads()), ids,
                                fields, not whole)
            bad = np.flatnonzero(found[:, 0] >= 0)
            if bad.size:
                at, count, t0, t1, wrong, _ = (int(x) for x in found[bad[0]])
                end = block.find(b"\n", at)
                text = block[at: len(block) if end < 0 else end].decode("utf-8", "replace").strip()
                where = line + int(found[: bad[0] + 1, 5].sum()) + 1
                token = _clip(block[t0:t1].decode("utf-8", "replace"))
                if wrong == NOT_WHOLE:
                    message = (f"{token!r} is not a whole number, and {declared} (integer ids"
                               f"{' and values' if field == 'integer' else ''})")
                elif wrong == NOT_A_NUMBER:
                    message = f"{token!r} is not a number, and {declared}"
                else:
                    message = (f"{_clip(text)!r} has {count} field{'s' if count != 1 else ''} where {declared} "
                               f"in {layout} layout, whose lines have {fields}")
                raise InputError(message, path=path, line=where)
            line += int(found[:, 5].sum())


def _scan_threads() -> int:
    """The threads the compiled scans run on (Numba's, as set by ``NUMBA_NUM_THREADS``)."""
    import numba  # noqa: PLC0415

    return numba.get_num_threads()


def _line_cuts(block: bytes, pieces: int) -> np.ndarray:
    """Offsets that cut ``block`` into about ``pieces`` runs of whole lines: ``0``, the start of
    a line near each ``k / pieces`` of the way, and ``len(block)``."""
    cuts = [0]
    for k in range(1, pieces):
        at = block.find(b"\n", max(cuts[-1], len(block) * k // pieces))
        if at < 0:
            break
        cuts.append(at + 1)
    cuts.append(len(block))
    return np.unique(np.asarray(cuts, dtype=np.int64))


_MM_BODY_COMMENT = re.compile(rb"^[ \t]*%[^\n]*", re.MULTILINE)
_MM_PLUS_SIGN = re.compile(rb"(?:^|(?<=[ \t]))\+(?=[0-9.])", re.MULTILINE)


def _matrix_market_plain_text(path) -> bytes | None:
    """The file's text with what SciPy's reader refuses after the size line made plain, or
    ``None`` when there is none of it: comment lines become blank lines, and a ``+`` that
    starts a number (``+1``, as C's ``strtod`` and the format's reference reader take it)
    becomes a space. Line numbers stay as they are, so later messages name the right line."""
    with _open_bytes(path) as stream:
        header, _ = _matrix_market_header(stream)
        body = stream.read()
    plain = _MM_PLUS_SIGN.sub(b" ", _MM_BODY_COMMENT.sub(b"", body))
    return None if plain == body else header + plain


def _matrix_market_header(stream) -> tuple[bytes, int]:
    """Read the banner, the comment and blank lines after it and the size line off ``stream``:
    their bytes, and how many lines they are."""
    lines = []
    for text in stream:
        lines.append(text)
        if text.strip() and not text.lstrip().startswith(b"%"):
            break
    return b"".join(lines), len(lines)


def _matrix_market_call(function, path, *, direct, stored=None, shape=None, **options):
    """Run SciPy's reader on the path (``direct``) or on the file's stream; name the line on failure."""
    try:
        if direct:
            return function(path, **options)
        with _open_bytes(path) as stream:
            return function(io.BufferedReader(_Unseekable(stream)), **options)
    except (ValueError, RuntimeError, OverflowError) as exc:  # an integer beyond int64: OverflowError
        raise _matrix_market_error(exc, path, stored, shape) from exc


def _matrix_market_error(exc, path, stored, shape) -> InputError:
    text = str(exc).strip()
    line = None
    found = _MM_LINE.match(text)
    if found:
        line, text = int(found[1]), found[2]
    truncated = _MM_TRUNCATED.match(text)
    if truncated:
        missing = int(truncated[1])
        return InputError(
            f"the file ends early: the header promises {stored} entries, "
            f"{missing} entry line{'s' if missing != 1 else ''} short",
            path=path,
        )
    text = re.sub(r"\.\s+(\w)", lambda m: "; " + m[1].lower(), text.rstrip("."))
    text = text[:1].lower() + text[1:]
    if isinstance(exc, OverflowError):
        text += " (ids, sizes and integer values must fit in a signed 64-bit integer; a real field holds larger values)"
    if "index out of bounds" in text and shape is not None:
        text += f" (the header declares a {shape[0]} x {shape[1]} matrix; ids start at 1)"
    return InputError(f"Matrix Market: {text}", path=path, line=line)


def _matrix_bipartite(shape, req: _Request) -> bool:
    nrows, ncols = shape
    if req.bipartite is False and nrows != ncols:
        raise InputError(
            f"a {nrows} x {ncols} matrix cannot be an undirected graph; it reads as bipartite "
            "(rows x columns)",
            path=req.path,
        )
    return nrows != ncols if req.bipartite is None else req.bipartite


# ---------------------------------------------------------------------- cutting text up
@dataclass
class _Block:
    """One chunk of a text file, comment lines dropped and fields cut apart.

    ``text`` holds the kept lines, one per line break, their fields joined by the byte
    ``separator``; ``line_numbers`` gives each kept line's 1-based number in the file and
    ``field_counts`` its number of fields; ``skipped`` lists the dropped lines' numbers.
    ``trailing`` counts the delimiters that each kept line ended with, which are not in
    ``text``; it is ``None`` when no line ended with one.
    """

    text: bytes
    separator: int
    line_numbers: np.ndarray
    field_counts: np.ndarray
    skipped: np.ndarray
    n_lines: int
    trailing: np.ndarray | None = None


class _Irregular(Exception):
    """A chunk taken as it is turned out to need cutting (a private signal, never raised out)."""


def _chunks(stream):
    """Yield pieces of ``stream`` that end at a line break (the last one may not)."""
    size = _CHUNK_BYTES
    while True:
        piece = stream.read(size)
        if not piece:
            return
        if not piece.endswith(b"\n"):
            piece += stream.readline()
        yield piece


def _first_line(text: bytes) -> bytes:
    end = text.find(b"\n")
    return (text if end < 0 else text[:end]).rstrip(b"\r")


def _uniform_block(chunk: bytes, first_line: int, delimiter) -> _Block | None:
    """The chunk as it stands, for the parser to take directly; ``None`` if it must be cut.

    Machine-written edge lists (comment lines at the top only, one delimiter byte between
    fields, no padding) parse as they stand. Anything else makes the parser fail or return a
    row count other than the line count, and the chunk is then cut and parsed again, which
    names the offending line: a comment or padded line has a field that is not a number, a
    blank line is skipped by the parser, a stray delimiter changes the field count.

    A comment after the fields lands in a field that fails to parse as well, unless an
    unweighted read leaves that field unparsed; :meth:`_EdgeListReader._parse` sends such a
    chunk to be cut.

    A comma or tab delimiter that ends the first line (spreadsheets end every line with one) is
    dropped before each line break here, as cutting drops it; a line that ends otherwise has a
    field count of its own, and the parser's complaint sends the chunk to be cut.
    """
    leading = 0  # comment lines at the top of the chunk
    while chunk[:1] in (b"#", b"%"):
        end = chunk.find(b"\n")
        chunk = b"" if end < 0 else chunk[end + 1 :]
        leading += 1
    if not chunk:
        return None
    first = _first_line(chunk)
    if delimiter is None:  # runs of whitespace: take a tab-separated or space-separated chunk
        delimiter = ord("\t") if b"\t" in chunk else ord(" ")
    elif first.endswith(bytes([delimiter])):  # a spreadsheet's line ending
        eol = b"\r\n" if chunk.startswith(b"\r\n", len(first)) else b"\n"
        chunk = chunk.replace(bytes([delimiter]) + eol, eol)
        first = _first_line(chunk)
    d = bytes([delimiter])
    if not first or first.startswith(d) or first.endswith(d) or d + d in first or first[-1:].isspace():
        return None  # the first line fixes the field count, so it must be regular
    n_lines = chunk.count(b"\n") + (not chunk.endswith(b"\n"))
    return _Block(
        text=chunk,
        separator=delimiter,
        line_numbers=first_line + leading + np.arange(n_lines),
        field_counts=np.full(n_lines, first.count(d) + 1),
        skipped=first_line + np.arange(leading),
        n_lines=leading + n_lines,
    )


def _cut_fields(chunk: bytes, first_line: int, *, delimiter, separator, keep_blank, comments,
                inline_comment=None) -> _Block:
    """Cut a chunk of whole lines into fields, with NumPy on the bytes.

    ``delimiter`` is one byte value (``,`` or tab) between fields, with whitespace around fields
    dropped, or ``None`` for runs of whitespace. Fields come out joined by ``separator``. Lines
    whose first non-blank byte is in ``comments`` are dropped, and so are blank lines unless
    ``keep_blank``. The byte ``inline_comment``, when given, starts a comment anywhere on a
    line, which runs to the line's end. Delimiters that end a line, with nothing after them but
    whitespace, more delimiters or a comment, are dropped as well (spreadsheets end each line
    with one) and counted in the block's ``trailing``; an empty field before the last stays, to
    fail to parse with its line named. A line left with nothing is blank.
    """
    raw = np.frombuffer(chunk, dtype=np.uint8)
    if raw[-1] != _NEWLINE:
        raw = np.append(raw, np.uint8(_NEWLINE))  # a last line without a line break
    ends = np.flatnonzero(raw == _NEWLINE)
    starts = np.concatenate(([0], ends[:-1] + 1))
    blank = _WHITESPACE[raw]
    if delimiter is not None:
        blank &= raw != delimiter
        separators = np.flatnonzero(raw == delimiter)
    if inline_comment is not None and bytes([inline_comment]) in chunk:
        # A comment is blank, from the first mark on its line to the line's end.
        marks = np.flatnonzero(raw == inline_comment)
        lines = np.searchsorted(ends, marks)
        opening = np.flatnonzero(np.diff(lines, prepend=-1))
        blank[_ranges(marks[opening], ends[lines[opening]])] = True
        if delimiter is not None:
            separators = separators[~blank[separators]]
    run_starts, run_stops = _runs(blank)
    trailing_counts = None
    if delimiter is not None:
        trailing = _trailing(raw, blank, (run_starts, run_stops), separators, delimiter)
        if trailing.any():  # blank them, and a line of nothing else is a blank line
            trailing_counts = np.bincount(np.searchsorted(ends, separators[trailing]), minlength=ends.size)
            blank[separators[trailing]] = True
            separators = separators[~trailing]
            run_starts, run_stops = _runs(blank)
    before = np.where(run_starts > 0, raw[run_starts - 1], _NEWLINE)
    after = raw[run_stops]

    lead = raw[starts]  # the first solid byte of each line
    padded = blank[starts]
    if padded.any():
        lead[padded] = after[np.searchsorted(run_starts, starts[padded])]
    is_comment = np.isin(lead, np.frombuffer(comments, dtype=np.uint8))
    is_blank = lead == _NEWLINE
    keep_line = ~is_comment if keep_blank else ~(is_comment | is_blank)

    keep_byte = ~blank
    if delimiter is None:
        # A run of whitespace between two fields becomes one separator; any other is dropped.
        separators = run_starts[(before != _NEWLINE) & (after != _NEWLINE)]
        keep_byte[separators] = True
    else:
        # Whitespace next to a delimiter or a line end is padding; inside a field it stays
        # (and makes that field fail to parse, with its line named).
        edge = np.array([_NEWLINE, delimiter], dtype=np.uint8)
        inner = ~np.isin(before, edge) & ~np.isin(after, edge)
        keep_byte[_ranges(run_starts[inner], run_stops[inner])] = True
    field_counts = np.bincount(np.searchsorted(ends, separators), minlength=ends.size) + ~is_blank

    if not keep_line.all():
        keep_byte &= np.repeat(keep_line, ends - starts + 1)
    out = raw
    if delimiter is None or delimiter != separator:
        out = raw.copy()
        out[separators] = separator
    numbers = first_line + np.arange(ends.size)
    return _Block(
        text=out[keep_byte].tobytes(),
        separator=separator,
        line_numbers=numbers[keep_line],
        field_counts=field_counts[keep_line],
        skipped=numbers[~keep_line],
        n_lines=int(ends.size),
        trailing=None if trailing_counts is None else trailing_counts[keep_line],
    )


def _runs(blank):
    """The starts and stops of the runs of blank bytes, ``[starts[k], stops[k])``; each run
    stops at a solid byte, since a chunk ends in a line break."""
    step = np.diff(blank.view(np.int8), prepend=np.int8(0))
    return np.flatnonzero(step == 1), np.flatnonzero(step == -1)


def _trailing(raw, blank, runs, delimiters, delimiter):
    """Which of the ``delimiters`` (the sorted positions of the byte ``delimiter`` in ``raw``)
    have nothing but blank bytes and delimiters after them on their line; ``runs`` are the runs
    of ``blank``."""
    run_starts, run_stops = runs
    follow = delimiters + 1  # the first solid byte after each: the next byte, or the end of its run
    padded = blank[follow]
    follow[padded] = run_stops[np.searchsorted(run_starts, follow[padded])]
    follow = raw[follow]
    trailing = follow == _NEWLINE
    chained = np.flatnonzero(follow == delimiter)  # followed by the next delimiter
    if chained.size:
        # A chain of delimiters is trailing when its last one is; the last delimiter of all
        # ends a chain, since a line break follows it.
        last = np.flatnonzero(follow != delimiter)
        trailing[chained] = trailing[last[np.searchsorted(last, chained)]]
    return trailing


def _ranges(starts, stops):
    """All positions of the ranges ``[starts[k], stops[k])``, concatenated."""
    lengths = stops - starts
    offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
    return offsets + np.arange(int(lengths.sum()))


def _drop_first_line(block: _Block) -> _Block:
    end = block.text.find(b"\n")
    return _Block(
        text=b"" if end < 0 else block.text[end + 1 :],
        separator=block.separator,
        line_numbers=block.line_numbers[1:],
        field_counts=block.field_counts[1:],
        skipped=np.union1d(block.skipped, block.line_numbers[:1]),
        n_lines=block.n_lines,
        trailing=None if block.trailing is None else block.trailing[1:],
    )


def _fill_fields(block: _Block, n_fields: int) -> _Block:
    """The block with each line short of ``n_fields`` fields, which ended with delimiters enough
    for the rest, given the rest back as empty fields: among lines of ``source,target,label``,
    ``1,2,`` is an edge without a label (and among lines with weights, an empty weight, which
    the parser refuses with its line named)."""
    if block.trailing is None:
        return block
    short = block.field_counts < n_fields
    if not short.any():
        return block
    filled = np.where(short, n_fields - block.field_counts, 0)
    text = np.frombuffer(block.text, dtype=np.uint8)
    line_ends = np.flatnonzero(text == _NEWLINE)
    text = np.insert(text, np.repeat(line_ends, filled), np.uint8(block.separator))
    return replace(block, text=text.tobytes(), field_counts=block.field_counts + filled,
                   trailing=block.trailing - filled)


def _parse_fields(block: _Block, columns, types, *, path, describe, row_line, exact=True):
    """Parse the block's text with pyarrow into typed columns (a dict of NumPy arrays).

    On a value that does not parse, find the first one and raise an :class:`InputError` that
    names its line; ``describe(column, text)`` words the complaint and ``row_line(row)`` maps a
    parsed row to its file line. A block taken as it stands (``exact=False``) raises
    :class:`_Irregular` instead, to be cut and parsed again.
    """
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.csv as pacsv  # noqa: PLC0415

    # One field per line (a line break as separator) needs a delimiter that no field holds.
    delimiter = "\t" if block.separator == _NEWLINE else chr(block.separator)

    def parse(column_types):
        return pacsv.read_csv(
            io.BytesIO(block.text),
            read_options=pacsv.ReadOptions(column_names=list(columns)),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter, quote_char='"' if delimiter == "," else False,
                ignore_empty_lines=True,
            ),
            convert_options=pacsv.ConvertOptions(
                column_types=column_types, include_columns=list(types), null_values=[],
                strings_can_be_null=False, quoted_strings_can_be_null=False,
            ),
        )

    try:
        table = parse({name: pa.from_numpy_dtype(dtype) for name, dtype in types.items()})
    except pa.ArrowInvalid as exc:
        if not exact:
            raise _Irregular from exc
        found = _first_bad_value(parse({name: pa.binary() for name in types}), types)
        if found is None:
            message = re.sub(r"^In CSV column #\d+: ", "", str(exc))
            raise InputError(f"cannot parse the file: {message}", path=path) from exc
        row, name, text = found
        raise InputError(describe(name, text), path=path, line=row_line(row)) from exc
    if not exact and table.num_rows != block.line_numbers.size:
        raise _Irregular  # not one row per line
    integers = [name for name, dtype in types.items() if np.dtype(dtype).kind == "i"]
    if integers and (b"x" in block.text or b"X" in block.text):
        # pyarrow's integer parser takes hexadecimal (0x10 as 16); ids are decimal, so a line
        # with an x in an id is refused, by a second look at those columns as text
        if not exact:
            raise _Irregular
        found = _first_bad_value(parse({name: pa.binary() for name in types}), {n: types[n] for n in integers})
        if found is not None:
            row, name, text = found
            raise InputError(describe(name, text), path=path, line=row_line(row))
    return {name: table.column(name).to_numpy() for name in types}


_INTEGER_TEXT = re.compile(rb"-?[0-9]+")


def _first_bad_value(table, types):
    """Row, column and text of the first value that is not of its column's type, or ``None``."""
    first = None
    for name, dtype in types.items():
        for row, value in enumerate(table.column(name).to_pylist()):
            if first is not None and row >= first[0]:
                break
            if not _parses_as(value, dtype):
                first = (row, name, value.decode("utf-8", "replace"))
                break
    return first


def _parses_as(text: bytes, dtype) -> bool:
    if np.dtype(dtype).kind == "i":
        return _INTEGER_TEXT.fullmatch(text) is not None and abs(int(text)) <= _INT64_MAX
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() == text and b"_" not in text


def _clip(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _check_weights(weights, req: _Request, *, what, line_of=None) -> None:
    """Reject NaN and infinite weights, and negative ones under ``negative="error"``."""
    bad = ~np.isfinite(weights)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{what(i)} has weight {weights[i]}; weights must be finite",
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


# ----------------------------------------------------------------------------- edge lists
_EDGE_FIELDS = {"src": "source id", "dst": "target id", "weight": "weight"}


class _EdgeListReader:
    """Accumulates the edges of a text edge list, one chunk at a time."""

    def __init__(self, req: _Request, delimiter):
        self.req = req
        self.delimiter = delimiter  # a byte value, or None for runs of whitespace
        self.n_fields = None  # fixed by the first edge line
        self.first_edge_line = None
        self.header = False
        self.parts = {"src": [], "dst": [], "weight": []}
        self.skipped = []

    def feed(self, chunk: bytes, first_line: int) -> int:
        """Take the edges of one chunk that starts at line ``first_line``; return its line count."""
        block = _uniform_block(chunk, first_line, self.delimiter)
        if block is not None:
            try:
                self._take(block, exact=False)
                return block.n_lines
            except (_Irregular, InputError):
                pass  # cut the chunk and take it again, which names the line at fault
        block = _cut_fields(
            chunk, first_line, delimiter=self.delimiter,
            separator=ord("\t") if self.delimiter is None else self.delimiter,
            keep_blank=False, comments=b"%", inline_comment=ord("#"),
        )
        self._take(block, exact=True)
        return block.n_lines

    def _take(self, block: _Block, *, exact: bool) -> None:
        header = self.n_fields is None and block.line_numbers.size > 0 and self._is_header(block)
        if header:
            block = _drop_first_line(block)
        n_fields, first_edge_line = self.n_fields, self.first_edge_line
        columns = {}
        if block.line_numbers.size:
            if n_fields is None:
                n_fields, first_edge_line = int(block.field_counts[0]), int(block.line_numbers[0])
            self._check_field_counts(block, n_fields, first_edge_line)
            columns = self._parse(_fill_fields(block, n_fields), n_fields, exact=exact)
        # Nothing above changed the reader, so a chunk that must be cut can start over.
        self.header |= header
        self.n_fields, self.first_edge_line = n_fields, first_edge_line
        self.skipped.append(block.skipped)
        for name, values in columns.items():
            self.parts[name].append(values)

    @staticmethod
    def _is_header(block: _Block) -> bool:
        names = [name.strip() for name in _first_line(block.text).split(bytes([block.separator]))]
        return all(re.fullmatch(rb'"?[A-Za-z_][\w .-]*"?', name) for name in names) and not all(
            _parses_as(name, np.float64) for name in names
        )

    def _check_field_counts(self, block: _Block, n_fields: int, first_edge_line: int) -> None:
        counts = block.field_counts
        if n_fields < 2 or (n_fields > 3 and self.req.weighted):
            raise InputError(
                f"found {n_fields} field{'s' if n_fields != 1 else ''}; an edge line holds 2 "
                "(source target) or 3 (source target weight)"
                + ("; an unweighted read (--unweighted, weighted=False in Python) takes the first two "
                   "fields of longer lines"
                   if n_fields > 3 else ""),
                path=self.req.path, line=first_edge_line,
            )
        odd = counts != n_fields
        if block.trailing is not None:  # a line may end in empty fields: the delimiters it ended with
            odd = (counts > n_fields) | (counts + block.trailing < n_fields)
        if odd.any():
            i = int(np.flatnonzero(odd)[0])
            raise InputError(
                f"found {counts[i]} field{'s' if counts[i] != 1 else ''}, but line "
                f"{first_edge_line} has {n_fields}; every edge line needs the same number",
                path=self.req.path, line=int(block.line_numbers[i]),
            )

    def _parse(self, block: _Block, n_fields: int, *, exact: bool) -> dict:
        names = (("src", "dst", "weight") + tuple(f"field{k}" for k in range(4, n_fields + 1)))[:n_fields]
        read = names if self.req.weighted else names[:2]  # an unweighted read leaves the other fields as they are
        if not exact and len(read) < n_fields and b"#" in block.text:
            raise _Irregular  # a comment, maybe, among the fields left as they are: cutting drops it
        line_of = lambda row: int(block.line_numbers[row])  # noqa: E731
        columns = _parse_fields(
            block, names, {name: np.float64 if name == "weight" else np.int64 for name in read},
            path=self.req.path, row_line=line_of, exact=exact,
            describe=lambda name, text: (
                f"{_EDGE_FIELDS[name]} {_clip(text)!r} is not "
                + ("a number" if name == "weight" else "a vertex id (a non-negative integer)")
            ),
        )
        for name in ("src", "dst"):
            negative = columns[name] < 0
            if negative.any():
                i = int(np.flatnonzero(negative)[0])
                raise InputError(
                    f"{_EDGE_FIELDS[name]} {columns[name][i]} is negative; vertex ids start at 0 or 1",
                    path=self.req.path, line=line_of(i),
                )
        if "weight" in columns:
            src, dst = columns["src"], columns["dst"]
            _check_weights(
                columns["weight"], self.req, what=lambda i: f"edge ({src[i]}, {dst[i]})", line_of=line_of
            )
        return columns

    def graph(self) -> tuple[Graph, dict]:
        req = self.req
        if not self.parts["src"]:
            raise InputError(
                "no edges: the file holds only comments, blank lines or a header", path=req.path
            )
        src = np.concatenate(self.parts["src"])
        dst = np.concatenate(self.parts["dst"])
        weight = np.concatenate(self.parts["weight"]) if self.parts["weight"] else None
        skipped = np.concatenate(self.skipped)
        one_based = _resolve_base(src, dst, req, line_of=lambda row: _line_of_row(row, skipped))
        if one_based:
            src -= 1
            dst -= 1
        graph = _graph_from_edges(src, dst, weight, req, bipartite=bool(req.bipartite))
        details = {
            "one_based": one_based,
            "delimiter": {None: "whitespace", ord(","): "comma", ord("\t"): "tab"}[self.delimiter],
            "header_row": self.header,
            "skipped_lines": int(skipped.size),
        }
        return graph, details


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


def _sniff_delimiter(chunk: bytes):
    """Comma when the first edge line has one outside its comment, else runs of whitespace."""
    start = 0
    while start < len(chunk):
        end = chunk.find(b"\n", start)
        end = len(chunk) if end < 0 else end
        text = chunk[start:end].split(b"#", 1)[0].strip()
        if text and text[:1] != b"%":
            return ord(",") if b"," in text else None
        start = end + 1
    return None


def _read_edge_list(req: _Request, fmt: str) -> tuple[Graph, dict]:
    delimiter = {"csv": ord(","), "tsv": ord("\t")}.get(fmt)
    reader = None
    line = 1
    with _open_bytes(req.path) as stream:
        for chunk in _chunks(stream):
            if reader is None:
                reader = _EdgeListReader(req, _sniff_delimiter(chunk) if fmt == "edgelist" else delimiter)
            line += reader.feed(chunk, line)
    if reader is None:
        raise InputError("the file is empty (no data once decompressed)", path=req.path)
    return reader.graph()


# ----------------------------------------------------------------------------------- METIS
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
        self.parts["src"].append(vertex[at])
        self.parts["dst"].append(neighbours - 1)
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
        graph = Graph.from_edges(src, dst, weight, n=header.n, source=req.path, **req.canon)
        distinct = graph.m + graph.summary.zeros_dropped
        if distinct != header.m:
            loops = graph.summary.self_loops_dropped
            raise InputError(
                f"the header says m={header.m} but the adjacency lists name {distinct} distinct "
                f"edges{f' and {loops} self-loop entries' if loops else ''}; every edge must be "
                f"listed from both ends{_metis_unpaired(src, dst, header.n)}",
                path=req.path, line=header.line,
            )
        if req.bipartite:
            graph = graph.bipartite_double_cover()
        details = {"metis": {"n": header.n, "m": header.m, "fmt": header.fmt, "ncon": header.ncon}}
        return graph, details


def _metis_unpaired(src, dst, n) -> str:
    """The first adjacency entry that breaks METIS's rules (a vertex listing itself, or an edge
    listed from one end only), worded to end a message; empty when there is none."""
    loops = np.flatnonzero(src == dst)
    if loops.size:
        u = int(src[loops[0]]) + 1
        return f": vertex {u} lists itself (a self-loop, which METIS graphs do not have)"
    alone = np.flatnonzero(~np.isin(src * n + dst, dst * n + src))
    if alone.size:
        u, v = int(src[alone[0]]) + 1, int(dst[alone[0]]) + 1
        return f": vertex {u} lists {v}, but vertex {v} does not list {u}"
    return ""


def _concat(parts, dtype=np.int64):
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _read_metis(req: _Request) -> tuple[Graph, dict]:
    if req.one_based is False:
        raise ParameterError("METIS ids are 1-based by definition; one_based=False does not apply")
    with _open_bytes(req.path) as stream:
        header, line = _read_metis_header(stream, req.path)
        reader = _MetisReader(req, header)
        for chunk in _chunks(stream):
            line += reader.feed(chunk, line)
    return reader.graph()


# ------------------------------------------------------------------------------------- GML
# Whitespace, then one token, told apart by its group: a key, an integer, a real, a bracket, a
# string, a comment (skipped), or anything else (an error). Every byte that is not whitespace
# starts one of these, so no text is passed over unseen. A number must end where a key could not
# go on, so "12ab" and "1.2.3" are not tokens. Taking the whitespace in the match, rather than
# leaving the search to step over it, makes tokenising about three times as fast.
_GML_TOKEN = re.compile(
    rb"""
    \s*(?:
      ([A-Za-z_]\w*)
    | ([+-]?[0-9]+(?![\w.]))
    | ((?:[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?[0-9]+[eE][+-]?[0-9]+
        |[+-](?i:inf(?:inity)?|nan))(?![\w.]))
    | (\[)
    | (\])
    | ("[^"]*")
    | (\#[^\n]*)
    | ("|[^\s\[\]"\#]+)
    )""",
    re.VERBOSE,
)
_GML_KEY, _GML_INT, _GML_REAL, _GML_OPEN, _GML_CLOSE, _GML_STRING, _GML_COMMENT, _GML_BAD = range(1, 9)
_GML_SPECIAL_REALS = (b"nan", b"inf", b"infinity")  # tokenised as keys when unsigned; as values, reals
# The list a key-value pair sits in: the file's top level, the graph, a node, an edge, or any
# other list (whose pairs are skipped).
_GML_TOP, _GML_GRAPH, _GML_NODE, _GML_EDGE, _GML_OTHER = range(5)
_GML_EDGE_INTS = (b"source", b"target")
_GML_EDGE_NUMBERS = (b"source", b"target", b"weight", b"value")


@dataclass
class _GmlContent:
    """What a GML file's graph holds, as read: ids as the file gives them, byte offsets of the
    ``node`` and ``edge`` keys (for messages), and each edge's weight (``None`` without one)."""

    directed: bool
    node_ids: list
    node_at: list
    src: list
    dst: list
    weight: list
    edge_at: list


def _line_at(data: bytes, at: int) -> int:
    """The 1-based line of byte offset ``at``."""
    return data.count(b"\n", 0, at) + 1


def _gml_text(token: bytes) -> str:
    return repr(_clip(token.decode("utf-8", "replace")))


def _parse_gml(data: bytes, path: str) -> _GmlContent:
    """Tokenise ``data`` and collect the nodes and edges of its one ``graph [ ... ]``."""

    def fail(message, at):
        return InputError(message, path=path, line=_line_at(data, at))

    def integer(text, at, what) -> int:
        value = int(text)
        if abs(value) > _INT64_MAX:
            raise fail(f"{what} {value} is too large", at)
        return value

    stack = []  # per open list: (the enclosing list, the offset and text of the key that opened it)
    context = _GML_TOP
    key = None  # the key waiting for its value
    key_at = 0
    graph_at = None
    directed = False
    node_ids, node_at, src, dst, weight, edge_at = [], [], [], [], [], []
    node_id = source = target = edge_weight = edge_value = None
    for match in _GML_TOKEN.finditer(data):
        kind = match.lastindex
        if kind == _GML_COMMENT:
            continue
        if key is None:  # a key, or the end of the list
            if kind == _GML_KEY:
                key, key_at = match[kind], match.start(kind)
                continue
            if kind != _GML_CLOSE:
                if kind == _GML_BAD:
                    raise _gml_bad_token(match, fail)
                raise fail(f"expected a key, found {_gml_text(match[kind])}", match.start(kind))
            if not stack:
                raise fail("']' closes no list (there are more ']' than '[')", match.start(kind))
            opened_at = stack[-1][1]
            if context == _GML_EDGE:
                if source is None or target is None:
                    raise fail(f"edge has no {'source' if source is None else 'target'}", opened_at)
                src.append(source)
                dst.append(target)
                weight.append(edge_value if edge_weight is None else edge_weight)
                edge_at.append(opened_at)
            elif context == _GML_NODE:
                if node_id is None:
                    raise fail("node has no id", opened_at)
                node_ids.append(node_id)
                node_at.append(opened_at)
            context = stack.pop()[0]
            continue
        # the value of ``key``
        if kind == _GML_OPEN:
            if context == _GML_GRAPH and key == b"edge":
                inner, source, target, edge_weight, edge_value = _GML_EDGE, None, None, None, None
            elif context == _GML_GRAPH and key == b"node":
                inner, node_id = _GML_NODE, None
            elif context == _GML_TOP and key == b"graph":
                if graph_at is not None:
                    first = _line_at(data, graph_at)
                    raise fail(
                        f"a second graph [ ... ] (the first is on line {first}); a GML file holds exactly one",
                        key_at,
                    )
                graph_at, inner = key_at, _GML_GRAPH
            elif (context == _GML_EDGE and key in _GML_EDGE_NUMBERS) or (
                context == _GML_NODE and key == b"id"
            ) or (context == _GML_GRAPH and key == b"directed"):
                raise fail(f"{key.decode()} must be a number, not a list", key_at)
            else:
                inner = _GML_OTHER
            stack.append((context, key_at, key))
            context = inner
        elif kind == _GML_INT or kind == _GML_REAL or kind == _GML_STRING or (
            kind == _GML_KEY and match[kind].lower() in _GML_SPECIAL_REALS
        ):
            if context == _GML_EDGE:
                if key in _GML_EDGE_NUMBERS:
                    text, at = match[kind], match.start(kind)
                    if kind == _GML_STRING or (kind != _GML_INT and key in _GML_EDGE_INTS):
                        wanted = "an integer" if key in _GML_EDGE_INTS else "a number"
                        raise fail(f"edge {key.decode()} {_gml_text(text)} is not {wanted}", at)
                    if key == b"source":
                        if source is not None:
                            raise fail("edge has two source keys", at)
                        source = integer(text, at, "edge source")
                    elif key == b"target":
                        if target is not None:
                            raise fail("edge has two target keys", at)
                        target = integer(text, at, "edge target")
                    elif key == b"weight":
                        if edge_weight is not None:
                            raise fail("edge has two weight keys", at)
                        edge_weight = float(text)
                    else:
                        if edge_value is not None:
                            raise fail("edge has two value keys", at)
                        edge_value = float(text)
            elif context == _GML_NODE:
                if key == b"id":
                    text, at = match[kind], match.start(kind)
                    if kind != _GML_INT:
                        raise fail(f"node id {_gml_text(text)} is not an integer", at)
                    if node_id is not None:
                        raise fail("node has two ids", at)
                    node_id = integer(text, at, "node id")
                    if node_id < 0:
                        raise fail(f"node id {node_id} is negative; vertex ids start at 0 or 1", at)
            elif context == _GML_GRAPH:
                if key == b"directed":
                    if kind != _GML_INT or int(match[kind]) not in (0, 1):
                        raise fail(f"directed must be 0 or 1, not {_gml_text(match[kind])}", match.start(kind))
                    directed = int(match[kind]) == 1
                elif key == b"node" or key == b"edge":
                    raise fail(f"{key.decode()} must be a list [ ... ], not {_gml_text(match[kind])}", key_at)
            elif context == _GML_TOP and key == b"graph":
                raise fail(f"graph must be a list [ ... ], not {_gml_text(match[kind])}", key_at)
        elif kind == _GML_BAD:
            raise _gml_bad_token(match, fail)
        else:  # a key, or ']'
            raise fail(f"key {_gml_text(key)} has no value", key_at)
        key = None
    if key is not None:
        raise fail(f"key {_gml_text(key)} has no value", key_at)
    if stack:
        _, opened_at, opener = stack[-1]
        shown = _clip(opener.decode("utf-8", "replace"))
        raise fail(f"{shown} [ ... ] opened here is never closed (a ']' is missing)", opened_at)
    if graph_at is None:
        raise InputError("no graph [ ... ] in the file; a GML file holds one", path=path)
    return _GmlContent(directed, node_ids, node_at, src, dst, weight, edge_at)


def _gml_bad_token(match, fail) -> InputError:
    text, at = match[_GML_BAD], match.start(_GML_BAD)
    if text == b'"':
        return fail("a string opened here is never closed (no closing '\"')", at)
    return fail(f"{_gml_text(text)} is not a GML token (a key, a number, a quoted string, '[' or ']')", at)


def _read_gml(req: _Request) -> tuple[Graph, dict]:
    with _open_bytes(req.path) as stream:
        data = stream.read()
    if not data:
        raise InputError("the file is empty (no data once decompressed)", path=req.path)
    content = _parse_gml(data, req.path)
    ids = np.array(content.node_ids, dtype=np.int64)
    if ids.size == 0:
        raise InputError("the graph declares no nodes", path=req.path)
    order = np.argsort(ids, kind="stable")
    repeated = order[1:][ids[order[1:]] == ids[order[:-1]]]  # every declaration after an id's first
    if repeated.size:
        i = int(repeated.min())
        first = int(np.flatnonzero(ids == ids[i])[0])
        raise InputError(
            f"node id {ids[i]} is declared twice (first on line {_line_at(data, content.node_at[first])})",
            path=req.path, line=_line_at(data, content.node_at[i]),
        )
    src = np.array(content.src, dtype=np.int64)
    dst = np.array(content.dst, dtype=np.int64)
    known = np.sort(ids)
    declared = [known[np.minimum(np.searchsorted(known, ends), known.size - 1)] == ends for ends in (src, dst)]
    undeclared = ~(declared[0] & declared[1])
    if undeclared.any():
        i = int(np.flatnonzero(undeclared)[0])
        raise InputError(
            f"edge ({src[i]}, {dst[i]}) names node {src[i] if not declared[0][i] else dst[i]}, "
            "which no node declares",
            path=req.path, line=_line_at(data, content.edge_at[i]),
        )
    weight = None
    if req.weighted and content.weight:
        missing = np.fromiter((w is None for w in content.weight), dtype=bool, count=len(content.weight))
        if missing.any() and not missing.all():
            i, j = int(np.flatnonzero(missing)[0]), int(np.flatnonzero(~missing)[0])
            raise InputError(
                f"edge ({src[i]}, {dst[i]}) has no weight (no 'weight' or 'value' key), but the edge on "
                f"line {_line_at(data, content.edge_at[j])} has one; give every edge a weight, or none",
                path=req.path, line=_line_at(data, content.edge_at[i]),
            )
        if not missing.any():
            weight = np.array(content.weight, dtype=np.float64)
            _check_weights(
                weight, req, what=lambda i: f"edge ({src[i]}, {dst[i]})",
                line_of=lambda i: _line_at(data, content.edge_at[i]),
            )
    one_based = _resolve_base(ids, ids, req, line_of=lambda row: _line_at(data, content.node_at[row]))
    if one_based:
        ids, src, dst = ids - 1, src - 1, dst - 1
    graph = Graph.from_edges(src, dst, weight, n=int(ids.max()) + 1, source=req.path, **req.canon)
    if req.bipartite:
        graph = graph.bipartite_double_cover()
    details = {
        "one_based": one_based,
        "gml": {"directed": content.directed, "nodes": int(ids.size), "edges": int(src.size)},
    }
    return graph, details


# -------------------------------------------------------------------------------- Parquet
def _read_parquet(req: _Request) -> tuple[Graph, dict]:
    import pyarrow.parquet as pq  # noqa: PLC0415

    handle = pq.ParquetFile(req.path)  # one footer read for the schema and the table
    names = handle.schema_arrow.names
    _check_edge_columns(names, req.path)
    if req.weighted:
        _check_weight_column(handle.schema_arrow, req.path)
    table = handle.read(columns=_edge_columns(names, req.weighted))
    arrays = _edge_table_arrays(table, req.path)
    graph, details = _graph_from_arrays(arrays, req, n=None, shape=None)
    return graph, {"columns": list(names), **details}


# ---------------------------------------------------------------------------------- .npz
_SPARSE_KEYS = {"format", "shape", "data"}


def _read_npz(req: _Request) -> tuple[Graph, dict]:
    import scipy.sparse as sp  # noqa: PLC0415

    with _load_npz(req.path) as archive:
        keys = set(archive.files)
        if _SPARSE_KEYS <= keys and ("indptr" in keys or {"row", "col"} <= keys):
            if req.one_based is not None:
                raise ParameterError("a SciPy sparse matrix has 0-based indices; one_based does not apply")
            matrix = sp.load_npz(req.path)
            graph, _ = _graph_from_matrix(matrix, req, weighted=True, base=0)
            return graph, {"npz": f"scipy.sparse {matrix.format} matrix"}
        missing = [name for name in ("src", "dst") if name not in keys]
        if missing:
            raise InputError(
                f"missing array{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}; expected "
                "src, dst[, weight][, n] or a matrix saved by scipy.sparse.save_npz "
                f"(found: {', '.join(sorted(keys)) or 'none'})",
                path=req.path,
            )
        arrays = {name: archive[name] for name in ("src", "dst", "weight") if name in keys}
        if not req.weighted:
            arrays.pop("weight", None)
        elif "weight" not in keys:
            others = {name: archive[name] for name in sorted(keys - {"src", "dst"})}
            _refuse_unread_weights([
                name for name, values in others.items()
                if values.dtype.kind in "iuf" and values.shape == arrays["src"].shape
            ], "array", req.path)
        n = _scalar(archive, "n", req) if "n" in keys else None
        shape = tuple(_scalar_array(archive["shape"], "shape", req)) if "shape" in keys else None
    graph, details = _graph_from_arrays(arrays, req, n=n, shape=shape)
    return graph, {"npz": "edge arrays", **details}


def _load_npz(path):
    """The archive of named arrays in an ``.npz`` file. ``np.load`` also takes ``.npy`` content
    (one array, as ``np.save`` writes), which names no array, so it is refused here, before
    ``np.load`` would read it whole."""
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as raw:
            npy = raw.read(6) == b"\x93NUMPY"
        found = "one unnamed array (.npy content, as np.save writes)" if npy else "no zip archive"
        raise InputError(
            f"the file holds {found}; an .npz holds named arrays src, dst[, weight][, n] (as np.savez "
            "writes) or a matrix saved by scipy.sparse.save_npz",
            path=path,
        )
    raw = open(path, "rb")  # noqa: SIM115  (the archive owns it once made)
    try:
        # NpzFile(own_fid=True) closes the file with the archive; made here rather than by
        # np.load, which leaves its file open when the archive cannot be made (a corrupt zip)
        return np.lib.npyio.NpzFile(raw, own_fid=True, allow_pickle=False)
    except BaseException:
        raw.close()
        raise


def _scalar(archive, name, req: _Request) -> int:
    value = np.asarray(archive[name])
    if value.shape not in ((), (1,)) or value.dtype.kind not in "iu" or int(value.reshape(-1)[0]) < 0:
        raise InputError(f"array {name!r} must be one non-negative integer", path=req.path)
    return int(value.reshape(-1)[0])


def _scalar_array(value, name, req: _Request):
    value = np.asarray(value)
    if value.shape != (2,) or value.dtype.kind not in "iu" or (value < 0).any():
        raise InputError(f"array {name!r} must hold two non-negative integers", path=req.path)
    return [int(v) for v in value]


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
        graph = _graph_from_edges(src, dst, weight, req, bipartite=True, shape=shape)
    else:
        graph = _graph_from_edges(src, dst, weight, req, n=n)
    return graph, {"one_based": one_based}


def _graph_from_edges(src, dst, weight, req: _Request, *, n=None, bipartite=False, shape=None) -> Graph:
    """``Graph.from_edges`` of the arrays under the request's options: through SciPy's CSR
    conversion where no entry repeats an edge, else by ``from_edges`` itself (which merges
    repeats by the duplicate rule, and names any value it refuses)."""
    graph = graph_from_edge_arrays(src, dst, weight, req.canon, req.path, n=n, bipartite=bipartite, shape=shape)
    if graph is None:
        graph = Graph.from_edges(src, dst, weight, n=n, bipartite=bipartite, shape=shape, source=req.path,
                                 **req.canon)
    return graph


def _all_degrees(graph: Graph) -> np.ndarray:
    """Degree of every vertex: rows, then columns for a bipartite graph."""
    rows = np.diff(np.asarray(graph.indptr))
    if not graph.bipartite:
        return rows
    return np.concatenate([rows, np.bincount(np.asarray(graph.indices), minlength=graph.n_cols)])


_READERS = {
    "mtx": _read_matrix_market,
    "csv": lambda req: _read_edge_list(req, "csv"),
    "tsv": lambda req: _read_edge_list(req, "tsv"),
    "edgelist": lambda req: _read_edge_list(req, "edgelist"),
    "metis": _read_metis,
    "gml": _read_gml,
    "parquet": _read_parquet,
    "npz": _read_npz,
}


# ------------------------------------------------------------------- reading in pieces
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


def edge_list_delimiter(path, format=None):
    """The field delimiter of a text edge list: a byte value, or ``None`` for runs of whitespace.

    ``csv`` and ``tsv`` fix it; an ``edgelist`` (``.txt``, ``.edges``, ``.el``) uses commas when
    its first edge line has one, exactly as :func:`read_graph` decides.

    >>> edge_list_delimiter("graph.csv"), edge_list_delimiter("graph.tsv")
    (44, 9)
    """
    fmt = format or format_of(path)
    if fmt in ("csv", "tsv"):
        return {"csv": ord(","), "tsv": ord("\t")}[fmt]
    if fmt != "edgelist":
        raise ParameterError(f"{fmt!r} is not a text edge-list format")
    with _input_errors(path), _open_bytes(path) as stream:
        head = next(_chunks(stream), b"")
    return _sniff_delimiter(head)


def read_edge_chunk(path, start=0, stop=None, *, delimiter, weighted=True, negative="error",
                    n_fields=None, one_based=None) -> EdgeChunk:
    """Read the lines of a text edge list that start at a byte in ``[start, stop)``.

    Cutting a file at any byte offsets and reading every range gives each line exactly once: a
    range skips a line that began before ``start`` and finishes one that began before ``stop``.
    A gzip-compressed file cannot be cut: read it whole (``start=0, stop=None``). Lines are
    checked as :func:`read_graph` checks them (field counts, ids, NaN, infinite and, under
    ``negative="error"``, negative weights).

    Parameters
    ----------
    path : str or os.PathLike
        The edge list.
    start, stop : int, optional
        The byte range; ``stop=None`` reads to the end of the file.
    delimiter : int or None
        The field delimiter, as :func:`edge_list_delimiter` gives it.
    weighted : bool
        Keep a weight column (``False`` reads the first two fields of each line only).
    negative : {"error", "abs"}
        Reject negative weights, or leave them to be made absolute later.
    n_fields : int, optional
        Fields per edge line, when an earlier piece fixed them; a first line of names is then
        an error rather than a header.
    one_based : bool, optional
        ``True`` rejects vertex id 0, naming its line.

    Returns
    -------
    EdgeChunk

    Raises
    ------
    InputError
        The piece is malformed. The line is named when the range starts at byte 0, else the
        message gives the byte offset of the line at fault.
    """
    req = _Request(str(path), None, one_based, bool(weighted), {"negative": negative})
    begin = 0
    with _input_errors(path):
        if stop is None and start == 0:
            with _open_bytes(path) as stream:
                data = b"".join(_chunks(stream))
        else:
            with open(path, "rb") as raw:
                if start > 0:
                    raw.seek(start - 1)
                    if raw.read(1) != b"\n":
                        raw.readline()  # the line that began before start belongs to the range before
                begin = raw.tell()
                data = b""
                if stop is None or begin < stop:
                    data = raw.read(-1 if stop is None else stop - begin)
                    if data and not data.endswith(b"\n"):
                        data += raw.readline()
                if begin == 0:
                    data = data.removeprefix(_UTF8_BOM)
    reader = _EdgeListReader(req, delimiter)
    if n_fields is not None:
        reader.n_fields, reader.first_edge_line = int(n_fields), 1
    lines_read = 0
    try:
        for piece in _chunks(io.BytesIO(data)):
            lines_read += reader.feed(piece, lines_read + 1)
        src = _concat(reader.parts["src"])
        dst = _concat(reader.parts["dst"])
        if one_based and src.size and min(int(src.min()), int(dst.min())) == 0:
            skipped = _concat(reader.skipped)
            row = int(np.flatnonzero((src == 0) | (dst == 0))[0])
            raise InputError("vertex id 0 in ids read as 1-based (one_based=True)", path=path,
                             line=_line_of_row(row, skipped))
    except InputError as exc:
        if begin == 0 or exc.line is None:
            raise
        offset = begin + _offset_of_line(data, exc.line)
        raise InputError(f"the line at byte {offset}: {exc.message}", path=path) from None
    weight = _concat(reader.parts["weight"], np.float64) if reader.parts["weight"] else None
    has_lines = reader.header or src.size > 0
    return EdgeChunk(src, dst, weight, n_fields=reader.n_fields if has_lines else None,
                     header=reader.header, has_lines=has_lines, begin=begin)


def _offset_of_line(data: bytes, line: int) -> int:
    """Byte offset in ``data`` where its 1-based ``line`` starts."""
    breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE)
    return 0 if line <= 1 else int(breaks[min(line - 2, breaks.size - 1)]) + 1


def parquet_row_groups(path) -> list[int]:
    """Rows in each row group of a Parquet edge table, after checking its columns are there."""
    import pyarrow.parquet as pq  # noqa: PLC0415

    _check_readable(path)
    with _input_errors(path):
        handle = pq.ParquetFile(path)
        meta, names = handle.metadata, handle.schema_arrow.names
    _check_edge_columns(names, path)
    return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def _check_edge_columns(names, path) -> None:
    missing = [name for name in ("src", "dst") if name not in names]
    if missing:
        raise InputError(
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}; "
            f"an edge table has src, dst and optionally weight (found: {', '.join(names) or 'none'})",
            path=path,
        )


def _check_weight_column(schema, path) -> None:
    """Refuse a weighted read of a table without a ``weight`` column but with other numeric ones."""
    import pyarrow as pa  # noqa: PLC0415

    if "weight" not in schema.names:
        numeric = [f.name for f in schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]
        _refuse_unread_weights([name for name in numeric if name not in ("src", "dst")], "column", path)


def _refuse_unread_weights(unread, what, path) -> None:
    """Refuse a weighted read that found no ``weight`` column (or array) while numeric ones
    ``unread`` are left: the weights are likely there under another name, and reading on would
    quietly give an unweighted graph."""
    if unread:
        many = len(unread) > 1
        raise InputError(
            f"no {what} 'weight', and the {what}{'s' if many else ''} {', '.join(map(repr, unread))} "
            f"{'are' if many else 'is'} not read: name the weight {what} 'weight', or for an unweighted "
            f"graph drop {'them' if many else 'it'} or read without weights (--unweighted on the command line, "
            "weighted=False in Python)",
            path=path,
        )


def _edge_columns(names, weighted) -> list:
    """The columns of an edge table to read: src, dst, and weight when asked for and present."""
    return ["src", "dst"] + (["weight"] if weighted and "weight" in names else [])


def _edge_table_arrays(table, path, *, first_row: int = 0) -> dict:
    """The columns of a read edge table as NumPy arrays, after checking their types (integer
    ids, numeric weights) and that no value is missing; rows are named from ``first_row``."""
    import pyarrow as pa  # noqa: PLC0415

    arrays = {}
    for name in table.column_names:
        column = table.column(name)
        numeric = pa.types.is_integer(column.type) if name != "weight" else (
            pa.types.is_integer(column.type) or pa.types.is_floating(column.type)
        )
        if not numeric:
            kind = "integers" if name != "weight" else "numbers"
            raise InputError(f"column {name!r} has type {column.type}; it must hold {kind}", path=path)
        if column.null_count:
            row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise InputError(
                f"column {name!r} has {column.null_count} missing values (the first in row {first_row + row})",
                path=path,
            )
        arrays[name] = column.to_numpy()
    return arrays


def read_parquet_row_groups(path, groups, *, weighted=True, negative="error", one_based=None) -> EdgeChunk:
    """Read and check some row groups of a Parquet edge table (``src``, ``dst``, ``weight``).

    Parameters
    ----------
    path : str or os.PathLike
        The table.
    groups : list of int
        Row-group numbers, in ascending order.
    weighted, negative, one_based
        As for :func:`read_edge_chunk`; rows are named by their position in the whole table.

    Returns
    -------
    EdgeChunk
    """
    import pyarrow.parquet as pq  # noqa: PLC0415

    req = _Request(str(path), None, one_based, bool(weighted), {"negative": negative})
    with _input_errors(path):
        handle = pq.ParquetFile(path)
        names = handle.schema_arrow.names
        _check_edge_columns(names, path)
        if weighted:
            _check_weight_column(handle.schema_arrow, path)
        meta = handle.metadata
        first_row = sum(meta.row_group(i).num_rows for i in range(min(groups, default=0)))
        table = handle.read_row_groups(list(groups), columns=_edge_columns(names, weighted))
        arrays = _edge_table_arrays(table, path, first_row=first_row)
    src = _as_id_array(arrays["src"], "source", path, first=first_row)
    dst = _as_id_array(arrays["dst"], "destination", path, first=first_row)
    weight = None
    if "weight" in arrays:
        weight = arrays["weight"].astype(np.float64)
        _check_weights(weight, req, what=lambda i: f"edge ({src[i]}, {dst[i]}) in row {first_row + i}")
    if one_based and src.size and min(int(src.min()), int(dst.min())) == 0:
        row = int(np.flatnonzero((src == 0) | (dst == 0))[0])
        raise InputError(f"vertex id 0 in row {first_row + row}, in ids read as 1-based (one_based=True)",
                         path=path)
    return EdgeChunk(src, dst, weight, has_lines=src.size > 0, begin=first_row)
