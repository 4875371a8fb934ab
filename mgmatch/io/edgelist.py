"""Text edge lists (``.csv``, ``.tsv``, ``.txt``, ``.edges``, ``.el``), whole or in byte ranges."""

from __future__ import annotations

import io
import re

import numpy as np

from ..errors import InputError, ParameterError
from ._common import (
    EdgeChunk, _NEWLINE, _Request, _UTF8_BOM, _check_weights, _clip, _concat, _graph_from_edges, _input_errors,
    _line_of_row, _needs_renumbering, _open_bytes, _renumbered_graph, _resolve_base,
)
from ._cutter import (
    _Block, _Irregular, _chunks, _cut_fields, _drop_first_line, _fill_fields, _first_line, _parse_fields,
    _parses_as, _uniform_block,
)


_EDGE_FIELDS = {"src": "source id", "dst": "target id", "weight": "weight"}


class _EdgeListReader:
    """Accumulates the edges of a text edge list, one chunk at a time.

    Which fields hold the source, target and weight is fixed with the first edge line
    (:meth:`_choose_fields`), and so is whether ids are labels (:meth:`_ids_are_labels`)."""

    def __init__(self, req: _Request, delimiter):
        self.req = req
        self.delimiter = delimiter  # a byte value, or None for runs of whitespace
        self.n_fields = None  # fixed by the first edge line
        self.first_edge_line = None
        self.first_empty = 0  # the empty fields the first edge line ended with (its trailing delimiters)
        self.fields = None  # role -> 0-based field, fixed by the first edge line
        self.labels = False  # ids read as text and renumbered
        self.header = False
        self.names = None  # the header's, when the first line is one
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
        names = None
        if header:
            names = [name.strip().strip(b'"').decode("utf-8", "replace")
                     for name in _first_line(block.text).split(bytes([block.separator]))]
            block = _drop_first_line(block)
            self.names = names
        n_fields, first_edge_line = self.n_fields, self.first_edge_line
        fields, labels = self.fields, self.labels
        columns = {}
        if block.line_numbers.size:
            if n_fields is None:
                n_fields, first_edge_line = int(block.field_counts[0]), int(block.line_numbers[0])
                self.first_empty = 0 if block.trailing is None else int(block.trailing[0])
            if fields is None:
                fields = self._choose_fields(n_fields, names, first_edge_line)
                labels = self._ids_are_labels(block, fields)
            self._check_field_counts(block, n_fields, first_edge_line)
            columns = self._parse(_fill_fields(block, n_fields), n_fields, fields, labels, exact=exact)
        # Nothing above changed the reader, so a chunk that must be cut can start over.
        self.header |= header
        self.n_fields, self.first_edge_line = n_fields, first_edge_line
        self.fields, self.labels = fields, labels
        self.skipped.append(block.skipped)
        for name, values in columns.items():
            self.parts[name].append(values)

    @staticmethod
    def _is_header(block: _Block) -> bool:
        names = [name.strip() for name in _first_line(block.text).split(bytes([block.separator]))]
        return all(re.fullmatch(rb'"?[A-Za-z_][\w .-]*"?', name) for name in names) and not all(
            _parses_as(name, np.float64) for name in names
        )

    def _choose_fields(self, n_fields: int, names, line: int) -> dict:
        """Role -> 0-based field: the columns the request names (by header name or field number
        from 1), the others by default. By default the source and target are the first two
        fields not chosen otherwise; the weight is the header's ``weight`` column, else the one
        field left of three; a line of more fields has no default weight, but names one in a
        header of ``weight`` (and ``src``, ``dst``)."""
        req = self.req
        if n_fields < 2:
            return {"src": 0, "dst": 1, "weight": None}  # refused by the field count check, naming the line
        choice = dict(req.columns or {"src": None, "dst": None, "weight": None})
        if not req.weighted:
            choice["weight"] = None
        if req.columns is None and req.weighted and n_fields > 3 and names and "weight" in names:
            # a wide table with a header: its named columns, and the weights kept
            choice = {"src": "src" if "src" in names else None, "dst": "dst" if "dst" in names else None,
                      "weight": "weight"}
        fields = {}
        for role, column in choice.items():
            if column is None:
                continue
            if isinstance(column, int):
                if column > n_fields:
                    raise InputError(f"the {role} column is field {column}, but line {line} has {n_fields} fields",
                                     path=req.path, line=line)
                fields[role] = column - 1
            elif names is None:
                raise InputError(f"the {role} column is named {column!r}, but the file has no header line of "
                                 "names; choose columns by field number (1, 2, ...)", path=req.path, line=line)
            elif column not in names:
                raise InputError(f"has no column {column!r} (the header names {', '.join(names)})", path=req.path)
            else:
                fields[role] = names.index(column)
        taken = set(fields.values())
        if len(taken) < len(fields):
            raise InputError("one field is chosen for two of source, target and weight", path=req.path, line=line)
        free = [k for k in range(n_fields) if k not in taken]
        for role in ("src", "dst"):
            if role not in fields:
                if names and role in names and names.index(role) in taken:  # (the header's `dst` as the weight)
                    other = next(r for r, k in fields.items() if k == names.index(role))
                    raise InputError(f"the {other} column is {role!r}, which the header names as the {role} column; "
                                     f"name the {role} column too (--{role})", path=req.path, line=line)
                fields[role] = free.pop(0)
        if "weight" not in fields and req.weighted:
            if names and "weight" in names and names.index("weight") in free:
                fields["weight"] = names.index("weight")
            elif n_fields == 3 and len(free) == 1:
                fields["weight"] = free[0]
            elif n_fields > 3 and req.columns is None:
                raise InputError(
                    f"found {n_fields} fields; an edge line holds 2 (source target) or 3 (source target weight): "
                    "name the weight column (--weight on the command line, columns= in Python), or read "
                    "without weights: an unweighted read (--unweighted, weighted=False in Python) takes the "
                    "first two fields of longer lines",
                    path=req.path, line=line,
                )
        fields.setdefault("weight", None)
        return fields

    def _ids_are_labels(self, block: _Block, fields: dict) -> bool:
        """Whether ids are labels, to be renumbered: a reader that may renumber takes them so
        when neither id of the first edge line is a decimal integer (a line such as ``0x10 1``,
        or ``1 two`` after ``0 1``, is refused as before, naming the id)."""
        if not self.req.renumber:
            return False
        first = _first_line(block.text).split(bytes([block.separator]))
        if max(fields["src"], fields["dst"]) >= len(first):
            return False
        return not any(_parses_as(first[fields[role]].strip(), np.int64) for role in ("src", "dst"))

    def _check_field_counts(self, block: _Block, n_fields: int, first_edge_line: int) -> None:
        counts = block.field_counts
        if n_fields < 2:
            raise InputError(
                f"found {n_fields} field{'s' if n_fields != 1 else ''}; an edge line holds 2 "
                "(source target) or 3 (source target weight)",
                path=self.req.path, line=first_edge_line,
            )
        odd = counts != n_fields
        if block.trailing is not None:  # a line may end in empty fields: the delimiters it ended with
            odd = (counts > n_fields) | (counts + block.trailing < n_fields)
        if odd.any():
            i = int(np.flatnonzero(odd)[0])
            if n_fields < counts[i] <= n_fields + self.first_empty:  # ("0,1," above "1,2,3")
                raise InputError(
                    f"field {n_fields + 1} is empty, where line {int(block.line_numbers[i])} has {counts[i]} "
                    "fields; every edge line needs the same number (an empty weight is not read as one)",
                    path=self.req.path, line=first_edge_line,
                )
            raise InputError(
                f"found {counts[i]} field{'s' if counts[i] != 1 else ''}, but line "
                f"{first_edge_line} has {n_fields}; every edge line needs the same number",
                path=self.req.path, line=int(block.line_numbers[i]),
            )

    def _parse(self, block: _Block, n_fields: int, fields: dict, labels: bool, *, exact: bool) -> dict:
        names = [f"field{k}" for k in range(1, n_fields + 1)]
        read = [role for role in ("src", "dst", "weight") if fields[role] is not None]
        for role in read:
            names[fields[role]] = role
        if not exact and len(read) < n_fields and b"#" in block.text:
            raise _Irregular  # a comment, maybe, among the fields left as they are: cutting drops it
        line_of = lambda row: int(block.line_numbers[row])  # noqa: E731
        id_type = object if labels else np.int64
        columns = _parse_fields(
            block, names, {role: np.float64 if role == "weight" else id_type for role in read},
            path=self.req.path, row_line=line_of, exact=exact,
            describe=lambda name, text: (
                f"{_EDGE_FIELDS[name]} {_clip(text)!r} is not "
                + ("a number" if name == "weight" else "a vertex id (a non-negative integer)")
            ),
        )
        for name in ("src", "dst"):
            if labels:
                empty = np.flatnonzero(_empty_text(columns[name]))
                if empty.size:
                    raise InputError(f"{_EDGE_FIELDS[name]} is empty", path=self.req.path, line=line_of(int(empty[0])))
                continue
            negative = columns[name] < 0
            if negative.any() and not self.req.renumber:
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

    def graph(self):
        """The graph, what the reader found, and the maps back to the file's ids (``None``
        unless the ids were renumbered)."""
        req = self.req
        if not self.parts["src"]:
            raise InputError(
                "no edges: the file holds only comments, blank lines or a header", path=req.path
            )
        src, dst = (_join_ids(self.parts[role]) for role in ("src", "dst"))
        weight = np.concatenate(self.parts["weight"]) if self.parts["weight"] else None
        skipped = np.concatenate(self.skipped)
        details = {
            "delimiter": {None: "whitespace", ord(","): "comma", ord("\t"): "tab"}[self.delimiter],
            "header_row": self.header,
            # a first line of names over ids that are labels too might have been an edge
            **({"header_names": self.names} if self.header and self.labels and self.names else {}),
            "skipped_lines": int(skipped.size),
        }
        if self.labels or _needs_renumbering(src, dst, req, bipartite=bool(req.bipartite)):
            graph, maps = _renumbered_graph(src, dst, weight, req, bipartite=bool(req.bipartite))
            return graph, {"one_based": False, **details, "renumbered": True}, maps
        one_based = _resolve_base(src, dst, req, line_of=lambda row: _line_of_row(row, skipped))
        if one_based:
            src -= 1
            dst -= 1
        graph = _graph_from_edges(src, dst, weight, req, bipartite=bool(req.bipartite))
        details = {"one_based": one_based, **details}
        if req.renumber:
            details["renumbered"] = False
        return graph, details, None


def _join_ids(parts):
    """One array of the ids parsed chunk by chunk: NumPy integers, or Arrow text for labels."""
    if parts and not isinstance(parts[0], np.ndarray):
        import pyarrow as pa  # noqa: PLC0415

        return pa.chunked_array([c for part in parts for c in part.chunks], type=pa.string())
    return np.concatenate(parts)


def _empty_text(column) -> np.ndarray:
    """Which values of an Arrow text column are empty."""
    import pyarrow.compute as pc  # noqa: PLC0415

    return pc.equal(pc.utf8_length(column), 0).to_numpy(zero_copy_only=False)


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


def _read_edge_list(req: _Request, fmt: str):
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


def edge_list_delimiter(path, format=None):
    """The field delimiter of a text edge list: a byte value, or ``None`` for runs of whitespace.

    ``csv`` and ``tsv`` fix it; an ``edgelist`` (``.txt``, ``.edges``, ``.el``) uses commas when
    its first edge line has one, exactly as :func:`read_graph` decides.

    >>> edge_list_delimiter("graph.csv"), edge_list_delimiter("graph.tsv")
    (44, 9)
    """
    from .readers import format_of  # noqa: PLC0415  (readers imports this module)

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
