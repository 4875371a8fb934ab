"""Parquet edge tables (``.parquet``, ``.pq``), whole or by row groups."""

from __future__ import annotations


import numpy as np

from ..errors import InputError
from ..graph import Graph, _as_id_array
from ._common import (
    EdgeChunk, _Request, _check_readable, _check_weights, _graph_from_arrays, _input_errors,
    _refuse_unread_weights,
)


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
