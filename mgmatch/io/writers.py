"""Write results: tables as Parquet or CSV, summaries as JSON, always atomically.

Every writer goes through :func:`atomic_path`: the data is written to a hidden temporary file
beside the target and renamed onto it only when writing succeeded, so a failed or interrupted
job never leaves a partial output file behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import re
import secrets
from pathlib import Path

import numpy as np

from .._array import to_numpy
from .._signals import note_written, raise_if_stopped
from ..errors import InputError, MgmatchError, ParameterError, ResourceError

__all__ = ["atomic_path", "write_table", "write_json", "write_result", "read_table", "summary_path_for", "unwritable",
           "TABLE_FORMATS"]

#: Table suffixes and the format each stands for.
TABLE_FORMATS: dict[str, str] = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv"}
_DELIMITERS = {"csv": ",", "tsv": "\t"}


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; move it onto ``path`` when the block succeeds.

    Parent directories are created. The temporary file is hidden (its name starts with a dot)
    and keeps the target's suffixes, so writers that look at the suffix behave the same. If
    the block raises, the temporary file is deleted and ``path`` is left as it was. A target
    that exists and is not a regular file (``/dev/null``, a named pipe) is written in place:
    renaming onto it would replace the device or pipe with a file. A target that is a
    directory is refused.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     target = Path(tmp) / "out" / "note.txt"
    ...     with atomic_path(target) as partial:
    ...         _ = partial.write_text("done")
    ...     print(target.read_text(), sorted(p.name for p in target.parent.iterdir()))
    done ['note.txt']
    """
    from .._paths import require_utf8_name  # noqa: PLC0415

    require_utf8_name(path, writing=True)
    target = Path(path)
    if target.is_dir():
        raise ResourceError(f"cannot write {target}: it is a directory")
    if target.exists() and not target.is_file():
        yield target
        note_written(target)
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = unwritable(target)
        if why is not None:
            raise ResourceError(f"cannot write {target}: {why}") from exc
        raise _write_error(target, exc) from exc
    partial = target.with_name(_partial_name(target.name))
    try:
        partial.open("xb").close()  # a directory that cannot be written to fails here, naming the target
    except OSError as exc:
        raise _write_error(target, exc) from exc
    try:
        yield partial
        raise_if_stopped()  # (a stop signal whose exception was swallowed on the way)
        os.replace(partial, target)
        note_written(target)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise


#: The longest file name, in bytes, of the common file systems (ext4, XFS, Btrfs, NFS, APFS).
_NAME_MAX = 255


def _partial_name(name: str) -> str:
    """The hidden temporary name :func:`atomic_path` writes beside ``name``: ``.NAME.TOKEN.partial``
    and the target's suffixes, with NAME cut short where the whole would pass ``_NAME_MAX``
    bytes (a target name that fits must not fail for its temporary's).

    >>> _partial_name("m.csv")[:3], _partial_name("m.csv")[-12:]
    ('.m.', '.partial.csv')
    >>> name = _partial_name("a" * 250 + ".csv")
    >>> len(name.encode()), name.endswith(".partial.csv")
    (255, True)
    """
    suffixes = "".join(Path(name).suffixes)
    if len(suffixes.encode()) >= 64:
        suffixes = Path(name).suffix[:32]
    tail = f".{secrets.token_hex(4)}.partial{suffixes}"
    room = _NAME_MAX - 1 - len(tail.encode())
    return f".{name.encode()[:room].decode('utf-8', 'ignore')}{tail}"  # cut where a character ends


def write_table(path, columns: dict, *, format=None) -> Path:
    """Write equal-length columns as a Parquet, CSV or TSV table, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        The output file; ``.parquet`` or ``.pq`` writes Parquet, ``.csv`` and ``.tsv`` write
        delimited text with a header row.
    columns : dict of str to array_like
        Column name to a 1-D array (NumPy or CuPy). Parquet keeps each dtype exactly; CSV
        writes floats so that they read back as floats (``2.0``, not ``2``).
    format : {"parquet", "csv", "tsv"}, optional
        The format, overriding the suffix.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    ParameterError
        An unknown suffix or format, columns of different lengths or of more than one
        dimension, or a column name that CSV cannot hold.
    ResourceError
        The file cannot be written (permissions, a full disk).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_table(Path(tmp) / "m.csv", {"vertex": np.arange(3), "mate": np.array([2, -1, 0])})
    ...     print(out.read_text(), end="")
    vertex,mate
    0,2
    1,-1
    2,0
    """
    target = Path(path)
    fmt = _table_format(target, format)
    table = _arrow_table(columns, fmt)
    try:
        with atomic_path(target) as partial:
            _write_table_file(partial, table, fmt)
    except OSError as exc:
        raise _write_error(target, exc) from exc
    return target


def write_result(table_path, columns: dict, summary_path, record: dict, *, format=None) -> None:
    """Write a result table and its JSON summary, atomically as a pair: both appear, or neither.

    Each file is written to one temporary path beside its target (never a temporary path of a
    temporary path), so an interrupted job has at most these two to remove."""
    table_path, summary_path = Path(table_path), Path(summary_path)
    fmt = _table_format(table_path, format)
    table = _arrow_table(columns, fmt)
    text = _json_text(record)
    try:
        with atomic_path(table_path) as tmp_table, atomic_path(summary_path) as tmp_summary:
            _write_table_file(tmp_table, table, fmt)
            tmp_summary.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise _write_error(table_path, exc) from exc


def _arrow_table(columns: dict, fmt: str):
    import pyarrow as pa  # noqa: PLC0415

    return pa.table(_checked_columns(columns, fmt))


def _write_table_file(path: Path, table, fmt: str) -> None:
    """Write an Arrow table to ``path`` as it is (the caller makes it atomic)."""
    if fmt == "parquet":
        import pyarrow as pa  # noqa: PLC0415
        import pyarrow.parquet as pq  # noqa: PLC0415

        # through a file opened here: given a path, pyarrow deletes it when a write fails, and a
        # target written in place (a link to a device, see atomic_path) is not its to delete
        with pa.OSFile(str(path), "wb") as out:
            pq.write_table(table, out)
    else:
        _write_delimited(table, path, _DELIMITERS[fmt])


def _json_text(obj) -> str:
    return json.dumps(_plain(obj), indent=2, allow_nan=False) + "\n"


def write_json(path, obj) -> Path:
    """Write ``obj`` as indented JSON, atomically.

    NumPy (and CuPy) scalars and arrays become plain numbers and lists, paths become strings,
    dataclasses become objects, and NaN or infinite floats become ``null`` (JSON has no such
    numbers).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_json(Path(tmp) / "m.json", {"weight": np.float64(2.5), "mate": np.array([1, 0])})
    ...     print(out.read_text(), end="")
    {
      "weight": 2.5,
      "mate": [
        1,
        0
      ]
    }
    """
    target = Path(path)
    text = _json_text(obj)
    try:
        with atomic_path(target) as partial:
            partial.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise _write_error(target, exc) from exc
    return target


def read_table(path, *, text=()) -> dict[str, np.ndarray]:
    """Read a Parquet, CSV or TSV table into a dict of NumPy arrays.

    ``text`` names columns of a CSV or TSV file to read as the text written, where the reader
    would guess a type: labels such as ``+1`` or ``0x2`` stay labels instead of reading as the
    number 1 or as text of another column type. Parquet keeps the types it stored.

    Raises
    ------
    InputError
        The file is missing, empty or malformed, or a column has missing values.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_table(Path(tmp) / "m.parquet", {"mate": np.array([1, 0], dtype=np.int32)})
    ...     read_table(out)
    {'mate': array([1, 0], dtype=int32)}
    """
    import pyarrow as pa  # noqa: PLC0415

    from .._paths import require_utf8_name  # noqa: PLC0415

    require_utf8_name(path, writing=False)
    source = Path(path)
    try:
        fmt = _table_format(source, None)
    except ParameterError as exc:
        raise InputError(str(exc)) from exc  # (its message names the file)
    if not source.exists():
        from .._paths import symlink_loop  # noqa: PLC0415

        raise InputError("is a loop of symbolic links" if symlink_loop(source) else "no such file", path=source)
    if source.is_dir():
        raise InputError("is a directory, not a table", path=source)
    if source.stat().st_size == 0:
        raise InputError("the file is empty (0 bytes)", path=source)
    try:
        table = _read_arrow_table(source, fmt, text)
        names = table.column_names  # decoded here: a header that is not UTF-8 fails now
    except MgmatchError:
        raise
    except (OSError, ValueError, pa.ArrowException) as exc:  # UnicodeDecodeError is a ValueError
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        detail = "; ".join(line.strip() for line in detail.splitlines() if line.strip())  # one line
        raise InputError(f"cannot read the table: {detail}", path=source) from exc
    result = {}
    for name, column in zip(names, table.columns):
        if pa.types.is_null(column.type) and not len(column):
            result[name] = np.empty(0, dtype=np.float64)  # a header without rows
            continue
        if column.null_count:  # (a column of empty fields only has the null type, and rows)
            raise InputError(f"column {name!r} has {column.null_count} missing values", path=source)
        result[name] = column.to_numpy()
    return result


def summary_path_for(output_path) -> Path:
    """The JSON summary that goes beside a result table.

    >>> summary_path_for("out/m.parquet").as_posix(), summary_path_for("out/m.csv.gz").as_posix()
    ('out/m.json', 'out/m.json')
    >>> summary_path_for("out/m.json").as_posix()
    'out/m.summary.json'
    """
    target = Path(output_path)
    stem = target.name
    for suffix in (".gz", *TABLE_FORMATS):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
    if stem.lower().endswith(".json"):  # never the output itself
        return target.with_name(f"{stem[: -len('.json')]}.summary.json")
    return target.with_name(f"{stem}.json")


# ----------------------------------------------------------------------------- helpers
def _table_format(path: Path, format) -> str:
    if format is not None:
        if format not in _DELIMITERS and format != "parquet":
            raise ParameterError(f"table format must be 'parquet', 'csv' or 'tsv', not {format!r}")
        return format
    fmt = TABLE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ParameterError(
            f"{path}: cannot tell the table format from the suffix {path.suffix or '(none)'!r}; "
            f"use one of {', '.join(TABLE_FORMATS)}"
        )
    return fmt


def _checked_columns(columns: dict, fmt: str) -> dict:
    if not columns:
        raise ParameterError("a table needs at least one column")
    arrays = {}
    for name, values in columns.items():
        if not isinstance(name, str) or not name:
            raise ParameterError(f"column names must be non-empty strings, not {name!r}")
        if fmt != "parquet" and any(ch in name for ch in ',\t\n\r"'):
            raise ParameterError(f"column name {name!r} cannot be written to {fmt.upper()}")
        array = np.asarray(to_numpy(values))
        if array.ndim != 1:
            raise ParameterError(f"column {name!r} must be 1-D, not of shape {array.shape}")
        arrays[name] = array
    lengths = {name: a.size for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{name}={size}" for name, size in lengths.items())
        raise ParameterError(f"columns differ in length ({shown})")
    return arrays


def _write_delimited(table, path: Path, delimiter: str) -> None:
    """CSV/TSV with a plain header row, floats written so that they read back as floats, text
    (vertex labels) quoted where it holds the delimiter, a quote or a line break."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.csv as pacsv  # noqa: PLC0415

    if any(_is_text(c.type) for c in table.columns):
        _write_delimited_text(table, path, delimiter)
        return
    columns = [_float_text(c) if pa.types.is_floating(c.type) else c for c in table.columns]
    table = pa.table(columns, names=table.column_names)
    with open(path, "wb") as out:
        out.write((delimiter.join(table.column_names) + "\n").encode("utf-8"))
        pacsv.write_csv(
            table, out, pacsv.WriteOptions(include_header=False, delimiter=delimiter, quoting_style="none")
        )


def _is_text(arrow_type) -> bool:
    import pyarrow as pa  # noqa: PLC0415

    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def _write_delimited_text(table, path: Path, delimiter: str) -> None:
    """A table with text columns, written line by line as Arrow joins them: pyarrow's CSV writer
    quotes either every text value or none (refusing one that holds a delimiter), and floats,
    written as text to keep their ``.0``, would be quoted with the labels."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    texts = []
    for column in table.columns:
        if pa.types.is_floating(column.type):
            texts.append(_float_text(column))
        elif _is_text(column.type):
            special = pc.match_substring_regex(column, f'[{re.escape(delimiter)}"\r\n]')
            quoted = pc.binary_join_element_wise('"', pc.replace_substring(column, '"', '""'), '"', "")
            texts.append(pc.if_else(special, quoted, column))
        else:
            texts.append(pc.cast(column, pa.string()))
    lines = pc.binary_join_element_wise(*texts, delimiter) if len(texts) > 1 else texts[0]
    lines = pc.binary_join_element_wise(lines, "", "\n")  # each line ends in its line break
    with open(path, "wb") as out:
        out.write((delimiter.join(table.column_names) + "\n").encode("utf-8"))
        for chunk in lines.chunks:
            chunk = chunk.cast(pa.large_string())  # 64-bit offsets: a chunk's text may pass 2 GiB
            if len(chunk):
                offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64)[chunk.offset: chunk.offset + len(chunk) + 1]
                out.write(memoryview(chunk.buffers()[2])[int(offsets[0]): int(offsets[-1])])


def _float_text(column):
    """Floats as text, integral values keeping a ``.0`` (``2.0``) so the type survives a round trip."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    text = pc.cast(column, pa.string())
    integral = pc.match_substring_regex(text, r"^-?[0-9]+$")
    return pc.if_else(integral, pc.binary_join_element_wise(text, ".0", ""), text)


def _read_arrow_table(path: Path, fmt: str, text=()):
    if fmt == "parquet":
        import pyarrow.parquet as pq  # noqa: PLC0415

        return pq.read_table(path)
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.csv as pacsv  # noqa: PLC0415

    return pacsv.read_csv(
        path,
        parse_options=pacsv.ParseOptions(delimiter=_DELIMITERS[fmt]),
        convert_options=pacsv.ConvertOptions(null_values=[""], strings_can_be_null=False,
                                             column_types={name: pa.string() for name in text}),
    )


def _plain(value):
    """``value`` with NumPy/CuPy values, paths and dataclasses turned into JSON-ready Python."""
    if isinstance(value, dict):
        return {_plain_key(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [_plain(v) for v in items]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, np.ndarray) or type(value).__module__.startswith("cupy"):
        return _plain(np.asarray(to_numpy(value)).tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise ParameterError(f"cannot write a {type(value).__name__} to JSON")


def _plain_key(key):
    key = key.item() if isinstance(key, np.generic) else key
    if isinstance(key, (str, int, float, bool)) or key is None:
        return key
    return str(key)


def unwritable(path) -> str | None:
    """Why ``path`` cannot be written, or ``None`` when nothing stands in the way that can be told
    before trying: the nearest existing folder above it is a file, or refuses writing (a device or
    pipe that exists is written in place, so only its own permission counts).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "f").write_text("x")
    ...     unwritable(Path(tmp) / "new" / "out.csv") is None, unwritable(Path(tmp) / "f" / "out.csv")[-15:]
    (True, 'not a directory')
    """
    path = Path(path)
    if path.exists() and not path.is_file() and not path.is_dir():
        return None if os.access(path, os.W_OK) else "permission denied"
    folder = next((p for p in path.absolute().parents if p.exists()), None)
    if folder is None:
        return None
    if not folder.is_dir():
        return f"{folder} is a file, not a directory"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"permission denied in {folder}"
    return None


def _write_error(path: Path, exc: OSError) -> ResourceError:
    return ResourceError(f"cannot write {path}: {exc.strerror or exc}")


def write_graph(path, graph) -> Path:
    """Write a graph, atomically, in the format its suffix names.

    ``.mtx`` writes Matrix Market (symmetric for undirected graphs, general for bipartite
    ones), ``.parquet``/``.pq`` and ``.csv``/``.tsv`` write one row per edge (``src, dst,
    weight``), and ``.npz`` writes the edge arrays with ``n``. Undirected graphs list each edge
    once, ``src < dst``.

    >>> import tempfile, os
    >>> from mgmatch import Graph
    >>> from mgmatch.io import read_graph
    >>> g = Graph.from_edges([0, 1], [1, 2], [0.5, 2.0])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = write_graph(os.path.join(d, "g.mtx"), g)
    ...     read_graph(p).m
    2
    """
    import scipy.io  # noqa: PLC0415
    import scipy.sparse as sp  # noqa: PLC0415

    target = Path(path)
    name = target.name.lower()
    if not name.endswith((".mtx", ".npz", *TABLE_FORMATS)):
        raise ParameterError(
            f"{target}: cannot tell the graph format from the suffix {target.suffix or '(none)'!r}; "
            f"use one of .mtx, .npz, {', '.join(TABLE_FORMATS)}"
        )
    u, v, w = (np.asarray(a) for a in graph.to("cpu").edges())
    with atomic_path(target) as tmp:
        if name.endswith(".mtx"):
            # a symmetric Matrix Market file stores the lower triangle (row >= column)
            rows, cols = (u, v) if graph.bipartite else (v, u)
            matrix = sp.coo_array((w, (rows, cols)), shape=graph.shape)
            with open(tmp, "wb") as fh:
                scipy.io.mmwrite(fh, matrix, symmetry="general" if graph.bipartite else "symmetric")
        elif name.endswith(".npz"):
            with open(tmp, "wb") as fh:
                np.savez(fh, src=u.astype(np.int64), dst=v.astype(np.int64), weight=w.astype(np.float64),
                         n=np.int64(graph.n_rows), n_cols=np.int64(graph.n_cols))
        else:
            fmt = _table_format(target, None)
            columns = {"src": u.astype(np.int64), "dst": v.astype(np.int64), "weight": w.astype(np.float64)}
            _write_table_file(tmp, _arrow_table(columns, fmt), fmt)
    return target
