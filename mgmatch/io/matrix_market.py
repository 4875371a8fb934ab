"""Matrix Market files (``.mtx``): the header and body checked here, the matrix read by SciPy."""

from __future__ import annotations

import gzip
import io
import os
import re

import numpy as np

from ..errors import InputError, ParameterError, ResourceError
from ..graph import Graph, _check_vertex_memory
from ._build import graph_from_csr
from ._common import _Request, _check_weights, _clip, _open_bytes
from ._cutter import _chunks


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
    _check_matrix_market_kind(req.path, nrows, ncols, field, symmetry)
    _check_matrix_market_header(req.path, nrows, ncols, stored, layout, symmetry, gzipped=gzipped)
    _check_matrix_market_body(req.path, layout, field)
    # a symmetric, skew-symmetric or Hermitian file stores one triangle and SciPy's reader adds
    # each entry's mirror, so the matrix read is symmetric in its pattern and in |a_ij|. (The
    # matrix goes straight into the call, so that the graph build holds its only reference and
    # frees it once it is summed into a CSR.)
    one_triangle = symmetry != "general" and layout == "coordinate"
    graph, entries = _graph_from_matrix(_mmread(req.path, direct, stored, (nrows, ncols)), req,
                                        weighted=field != "pattern", base=1, symmetric=symmetry != "general",
                                        triangle=stored if one_triangle else None)
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


def _graph_from_matrix(matrix, req: _Request, *, weighted: bool, base: int, symmetric: bool = False,
                       triangle: int | None = None) -> tuple[Graph, dict]:
    """The graph of a sparse (or dense) matrix: repeated coordinates summed, ``|a_ij|`` if complex.

    ``base`` is added to row and column indices when a message names an entry; ``symmetric``
    says the matrix is known to be symmetric in its pattern and in ``|a_ij|`` (the mirror of
    each entry is the format's, not a second entry to merge with it); ``triangle``, the entries
    a symmetric file stored, has them checked for one triangle (:func:`_check_one_triangle`).
    """
    import scipy.sparse as sp  # noqa: PLC0415

    coo = sp.coo_array(matrix)  # a dense matrix keeps its nonzero entries
    del matrix
    if triangle is not None:
        _check_one_triangle(coo, triangle, base, req.path)
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
    graph = graph_from_csr(csr, req.canon, req.path, weighted=weighted, bipartite=bipartite, symmetric=symmetric,
                           implied=symmetric)
    if graph is None:  # an entry to merge with another than its mirror, or random weights
        # (a symmetric file's mirrors are the format's: its upper triangle holds each edge once)
        graph = Graph.from_scipy(sp.triu(csr, format="csr") if symmetric else csr, bipartite=bipartite,
                                 weighted=weighted, source=req.path, **req.canon)
    return graph, {"matrix": entries, "summed": entries - int(csr.nnz)}


def _check_one_triangle(coo, stored: int, base: int, path, *, slice_entries: int = 1 << 22) -> None:
    """Refuse a symmetric (skew-symmetric, Hermitian) file that stores an entry in both
    triangles: each stored entry stands for its mirror too, so ``(i, j)`` and ``(j, i)`` would
    be the edge twice, its weight summed. (A file that stores the whole matrix under a symmetric
    header is a common slip; read as it is, every weight would come out doubled.)

    SciPy's reader gives the ``stored`` entries of the file first, then the mirror of each of
    them off the diagonal, in the same order; where the matrix it gave is not so (another
    reader), nothing can be told and nothing is checked. The order is checked ``slice_entries``
    entries at a time, so that the check holds no copy in proportion to the file."""
    rows, cols = coo.row, coo.col
    if rows.size < stored:
        return
    tail, below_any, above_any = stored, False, False
    for a in range(0, stored, slice_entries):
        b = min(a + slice_entries, stored)
        r, c = rows[a:b], cols[a:b]
        off = r != c
        k = int(np.count_nonzero(off))
        if tail + k > rows.size or not (np.array_equal(rows[tail : tail + k], c[off])
                                         and np.array_equal(cols[tail : tail + k], r[off])):
            return  # not SciPy's order: nothing can be told
        tail += k
        below_any = below_any or bool((r > c).any())
        above_any = above_any or bool((r < c).any())
    if tail != rows.size or not (below_any and above_any):
        return
    r, c = rows[:stored], cols[:stored]
    below, above = r > c, r < c
    width = np.int64(max(int(r.max()), int(c.max())) + 1)
    lower = r[below].astype(np.int64) * width + c[below]
    upper = c[above].astype(np.int64) * width + r[above]  # as the lower entry it mirrors
    both = np.intersect1d(lower, upper)
    if both.size:
        i, j = int(both[0] // width) + base, int(both[0] % width) + base
        raise InputError(f"Matrix Market: entries ({i}, {j}) and ({j}, {i}) are both stored, but the header "
                         "declares a symmetric matrix, which stores one triangle (each entry stands for its "
                         "mirror); declare it 'general' if the file holds the whole matrix", path=path)


def _check_matrix_market_kind(path, nrows, ncols, field: str, symmetry: str) -> None:
    """Refuse a header the format does not allow: a symmetric, skew-symmetric or Hermitian
    matrix that is not square (it stores one triangle and stands for the other; SciPy's reader
    of a dense one writes past its array), a Hermitian one whose values are not complex, and a
    skew-symmetric pattern (its entries would have no sign to flip)."""
    if symmetry != "general" and nrows != ncols:
        raise InputError(f"Matrix Market: a {symmetry} matrix is square, but the header declares "
                         f"{nrows:,} rows and {ncols:,} columns", path=path)
    if symmetry == "hermitian" and field != "complex":
        raise InputError(f"Matrix Market: a hermitian matrix has complex values, but the header declares a "
                         f"{field} one (a real symmetric matrix is 'symmetric')", path=path)
    if symmetry == "skew-symmetric" and field == "pattern":
        raise InputError("Matrix Market: a skew-symmetric matrix has values, but the header declares a "
                         "pattern one", path=path)


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
    if len(words) == 5 and words[0].lower().lstrip(b"%") == b"matrixmarket":
        # (SciPy's header reader fails on a word it does not know with a bare KeyError)
        for what, word, known in (("layout", words[2], ("coordinate", "array")),
                                  ("field", words[3], ("real", "integer", "complex", "pattern")),
                                  ("symmetry", words[4], ("general", "symmetric", "skew-symmetric", "hermitian"))):
            if word.lower().decode("utf-8", "replace") not in known:
                raise InputError(f"Matrix Market: the banner's {what} is {_clip(word.decode('utf-8', 'replace'))!r}, "
                                 f"not one of {', '.join(known)}", path=path, line=1)


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
    if shape is None and stored is None and "invalid integer value" in text:  # (the header's read)
        text += (" in the size line, the first line after the banner and comments: it holds the rows, the "
                 "columns and, in coordinate layout, the number of entries")
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
