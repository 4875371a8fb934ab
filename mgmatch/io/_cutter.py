"""The chunk cutter every text reader shares: a file read in pieces of whole lines, each cut
into fields with NumPy on the bytes (comments, blank lines, padding and trailing delimiters
dropped) and parsed by pyarrow's CSV reader, with the line of any bad value named."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, replace

import numpy as np

from ..errors import InputError
from ._common import _INT64_MAX, _NEWLINE


_COMMA = ord(",")
_QUOTE = ord('"')
_CHUNK_BYTES = 1 << 24  # text is cut into fields in steps of about 16 MiB of whole lines
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[ord(" "), ord("\t"), ord("\r"), 0x0B, 0x0C]] = True


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
    if delimiter == _COMMA and b'"' in chunk:
        return None  # (a quoted field may hold the delimiter: cutting counts fields outside quotes)
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
    fail to parse with its line named. A line left with nothing is blank. With the comma as
    ``delimiter``, a field in double quotes (``"Smith, J"``, as CSV writers quote a label that
    holds the delimiter) is one field, whatever it holds; the parser takes the quotes off.
    """
    raw = np.frombuffer(chunk, dtype=np.uint8)
    if raw[-1] != _NEWLINE:
        raw = np.append(raw, np.uint8(_NEWLINE))  # a last line without a line break
    ends = np.flatnonzero(raw == _NEWLINE)
    starts = np.concatenate(([0], ends[:-1] + 1))
    quoted = _quoted(raw, starts, ends) if delimiter == _COMMA and b'"' in chunk else None
    blank = _WHITESPACE[raw]
    if quoted is not None:
        blank &= ~quoted
    if delimiter is not None:
        blank &= raw != delimiter
        separators = np.flatnonzero(raw == delimiter)
        if quoted is not None:
            separators = separators[~quoted[separators]]
    if inline_comment is not None and bytes([inline_comment]) in chunk:
        # A comment is blank, from the first mark on its line to the line's end.
        marks = np.flatnonzero(raw == inline_comment)
        if quoted is not None:
            marks = marks[~quoted[marks]]
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


def _quoted(raw, starts, ends):
    """Which bytes of ``raw`` lie inside double quotes, each line on its own (a quote left open
    ends with its line, where the parser refuses it): from an opening quote to the byte before
    its closing one. A doubled quote inside a quoted field closes and opens again, so its field
    stays quoted."""
    quotes = (raw == _QUOTE).astype(np.int64)
    seen = np.cumsum(quotes)
    before_line = seen[starts] - quotes[starts]  # the quotes of the lines above
    inside = (seen - np.repeat(before_line, ends - starts + 1)) % 2 == 1
    inside[ends] = False
    return inside


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
    """Parse the block's text with pyarrow into typed columns (a dict of NumPy arrays; a column
    of ``object`` type is text, returned as an Arrow array).

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
        table = parse({name: _arrow_type(dtype) for name, dtype in types.items()})
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
    # text columns (labels) stay Arrow arrays: their ids are numbered by Arrow (mgmatch.convert)
    return {name: table.column(name) if np.dtype(dtype) == object else table.column(name).to_numpy()
            for name, dtype in types.items()}


def _arrow_type(dtype):
    """The Arrow type a column of NumPy ``dtype`` is parsed as: ``object`` stands for text."""
    import pyarrow as pa  # noqa: PLC0415

    return pa.string() if np.dtype(dtype) == object else pa.from_numpy_dtype(dtype)


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
    if np.dtype(dtype) == object:
        return True  # any text is a label
    if np.dtype(dtype).kind == "i":
        return _INTEGER_TEXT.fullmatch(text) is not None and abs(int(text)) <= _INT64_MAX
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() == text and b"_" not in text
