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
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..errors import InputError, ParameterError
from ..graph import Graph
# One module per format around the shared chunk cutter (_cutter); the pieces that read a file
# in parts (for mgmatch.distributed.loading) are imported from here too, as they always were.
from ._common import (
    _GZIP_MAGIC, EdgeChunk, _check_readable, _check_text, _input_errors, _Request, column_choice, is_stream,
)
from ._common import _is_gzip  # noqa: F401  (mgmatch.distributed.loading imports it from here)
from .edgelist import _read_edge_list, edge_list_delimiter, read_edge_chunk
from .gml import _read_gml
from .matrix_market import _read_matrix_market
from .metis import _read_metis
from .npz import _read_npz
from .parquet import _read_parquet, parquet_row_groups, read_parquet_row_groups

__all__ = ["read_graph", "read_input", "graph_info", "format_of", "SUFFIXES", "is_stream", "EdgeChunk", "edge_list_delimiter",
           "read_edge_chunk", "parquet_row_groups", "read_parquet_row_groups"]

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
#: The formats whose columns may be chosen and whose ids may be renumbered.
_TABLE_FORMATS = ("csv", "tsv", "edgelist", "parquet")
_CANON_OPTIONS = ("duplicates", "zeros", "negative", "random_weights", "dtype")


def read_graph(path, format=None, *, bipartite=None, one_based=None, weighted=True, with_details=False,
               spool_limit=None, columns=None, **canon):
    """Read a graph from a file.

    Vertex ids must be integers here; :func:`read_input` also reads labels and sparse 64-bit
    ids, and renumbers them.

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
    columns : tuple or dict, optional
        The columns of a CSV, TSV, edge list or Parquet table that hold the source, the target
        and the weight: ``(src, dst)``, ``(src, dst, weight)`` or a mapping with any of those
        keys, each a column name or, in a text file, a field number from 1. A text file's names
        are those of its header line. Roles left out keep their defaults: Parquet's ``src``,
        ``dst`` and ``weight`` columns; a text file's first two fields not chosen otherwise, and
        as weight its header's ``weight`` column or the one field left of three. A text file of
        more than three fields whose header names a ``weight`` column is read by its header's
        ``src``, ``dst`` and ``weight`` even without ``columns``.
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
    graph, details, _ = _read(path, format, bipartite=bipartite, one_based=one_based, weighted=weighted, canon=canon,
                              spool_limit=spool_limit, columns=columns)
    return (graph, details) if with_details else graph


def read_input(path, format=None, *, columns=None, renumber="auto", bipartite=None, one_based=None, weighted=True,
               with_details=False, spool_limit=None, **canon):
    """Read a graph from a file, with the maps from its vertices back to the file's ids.

    As :func:`read_graph`, and a CSV, TSV, edge list or Parquet table may name its vertices by
    ids that are not dense non-negative integers: labels (a Parquet string column; in a text
    file, ids of which neither on the first edge line is an integer), negative integers, or
    sparse 64-bit ones (the largest above about twice the distinct ids). Those are renumbered,
    as :func:`mgmatch.convert.as_graph` renumbers them: the distinct ids, sorted, become
    ``0 .. n-1`` (rows and columns apart for a bipartite graph), and the maps give results back
    in the file's ids (:func:`mgmatch.convert.to_pandas`, :func:`~mgmatch.convert.result_columns`).

    Parameters
    ----------
    path, format, columns, bipartite, one_based, weighted, spool_limit, **canon
        As for :func:`read_graph`. Renumbered ids are not shifted by ``one_based``: they map
        back to the file's own ids.
    renumber : {"auto", True, False}
        ``"auto"`` renumbers the ids above; ``True`` renumbers any ids of those formats (integer
        ones too); ``False`` reads as :func:`read_graph` does.
    with_details : bool
        Also return what the reader found, with ``renumbered``.

    Returns
    -------
    mgmatch.convert.GraphInput
        ``.graph``, ``.vertices`` (and ``.columns`` when bipartite), ``.renumbered``; its
        ``source`` is the format read.
    dict
        With ``with_details`` only, as for :func:`read_graph`.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "friends.csv"
    ...     _ = path.write_text("person,friend,since\\nann,bob,2001\\nbob,cy,1999\\n")
    ...     gi = read_input(path, columns={"weight": "since"})
    >>> gi.renumbered, gi.vertices.ids.tolist(), gi.graph.m
    (True, ['ann', 'bob', 'cy'], 2)
    """
    from ..convert import GraphInput, VertexMap  # noqa: PLC0415

    if renumber not in ("auto", True, False):
        raise ParameterError(f"renumber must be 'auto', True or False, not {renumber!r}")
    graph, details, maps = _read(path, format, bipartite=bipartite, one_based=one_based, weighted=weighted,
                                 canon=canon, spool_limit=spool_limit, columns=columns, renumber=renumber)
    if maps is None:
        maps = (VertexMap.identity(graph.n_rows), VertexMap.identity(graph.n_cols) if graph.bipartite else None)
    read = GraphInput(graph, maps[0], maps[1], details["format"])
    return (read, details) if with_details else read


def graph_info(path, format=None, **options) -> dict:
    """Describe the graph in a file: size, degrees, weights and what canonicalisation found.

    Parameters
    ----------
    path : str or os.PathLike
        The file, in any format :func:`read_graph` reads.
    format : str, optional
        The format, overriding the suffix.
    **options
        Options of :func:`read_graph`, and ``renumber`` as for :func:`read_input` (``renumbered``
        then says whether the ids were). ``negative`` defaults to ``"abs"`` here, so that
        negative entries are counted rather than rejected.

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
    read_options = {k: options.pop(k) for k in ("bipartite", "one_based", "weighted", "spool_limit", "columns",
                                                 "renumber") if k in options}
    read_options.setdefault("weighted", True)
    graph, details, _ = _read(
        path, format, bipartite=read_options.get("bipartite"), one_based=read_options.get("one_based"),
        weighted=read_options["weighted"], canon=options, spool_limit=read_options.get("spool_limit"),
        columns=read_options.get("columns"), renumber=read_options.get("renumber", False),
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


#: Suffixes of compression other than gzip, named as such rather than as an unknown format.
_OTHER_COMPRESSION = {".bz2": "bzip2-compressed", ".xz": "xz-compressed", ".zst": "zstd-compressed",
                      ".zip": "a zip archive", ".lzma": "lzma-compressed", ".7z": "a 7-Zip archive"}


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
    if fmt is None and suffix in _OTHER_COMPRESSION and not compressed:
        raise InputError(f"is {_OTHER_COMPRESSION[suffix]} (by its suffix {suffix!r}), and only gzip is read: "
                         "decompress it, or compress it with gzip", path=path)
    if fmt is None or (compressed and fmt not in _TEXT_FORMATS):
        shown = suffix + (".gz" if compressed else "") or "(none)"
        raise InputError(
            f"cannot tell the format from the suffix {shown!r}; known suffixes are "
            f"{', '.join(SUFFIXES)} (text formats may add .gz); or name the format (--format on the "
            "command line, format= in Python)",
            path=path,
        )
    return fmt


def _read(path, format, *, bipartite, one_based, weighted, canon, spool_limit=None, columns=None,
          renumber=False) -> tuple[Graph, dict, tuple | None]:
    """The graph, the details, and the maps back to the file's ids (``None`` unless renumbered)."""
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
    columns = column_choice(columns)
    _check_readable(path)
    fmt = format or format_of(path)
    if columns is not None:
        if fmt not in _TABLE_FORMATS:
            raise ParameterError(f"columns are chosen in CSV, TSV, edge lists and Parquet tables, not in {fmt} "
                                 "files")
        if not weighted and columns["weight"] is not None:
            raise ParameterError("a weight column is chosen, but weights are not read (weighted=False, "
                                 "--unweighted)")
        if fmt == "parquet" and any(isinstance(c, int) for c in columns.values()):
            raise ParameterError("Parquet columns are chosen by name, not by number")
    renumber = renumber if fmt in _TABLE_FORMATS else False
    with _spooled(path, fmt, spool_limit) as readable:
        request = _Request(str(readable), bipartite, one_based, bool(weighted), dict(canon), columns, renumber)
        try:
            with _input_errors(path):
                if fmt in _TEXT_FORMATS:
                    _check_text(request.path, fmt)
                graph, details, *maps = _READERS[fmt](request)
                maps = maps[0] if maps else None
                # the choice of base is the caller's to see: vertex v is the file's id v + id_offset
                graph.id_offset = 1 if fmt in ("mtx", "metis") or details.get("one_based") else 0
        except InputError as exc:
            if readable == path:
                raise
            # the spool's name means nothing to the caller: the stream's instead
            raise InputError(exc.message.replace(str(readable), str(path)), path=path, line=exc.line) from None
    return graph, {"format": fmt, **details}, maps


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
