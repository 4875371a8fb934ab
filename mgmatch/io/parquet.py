"""Parquet edge tables (``.parquet``, ``.pq``), whole or by row groups."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..graph import _as_id_array
from ._common import (
    EdgeChunk, _Request, _check_readable, _check_weights, _graph_from_arrays, _input_errors, _needs_renumbering,
    _refuse_unread_weights, _renumbered_graph,
)


def _read_parquet(req: _Request):
    import pyarrow.parquet as pq  # noqa: PLC0415

    handle = pq.ParquetFile(req.path)  # one footer read for the schema and the table
    names = handle.schema_arrow.names
    chosen = _chosen_columns(handle.schema_arrow, req.columns, req.weighted, req.path)
    table = handle.read(columns=[c for c in chosen.values() if c is not None])
    arrays = _edge_table_arrays(table, req.path, roles=chosen, labels=bool(req.renumber))
    details = {"columns": list(names)}
    if _needs_renumbering(arrays["src"], arrays["dst"], req, bipartite=bool(req.bipartite)):
        weight = arrays.get("weight")
        graph, maps = _renumbered_graph(arrays["src"], arrays["dst"], None if weight is None else
                                        weight.astype(np.float64, copy=False), req, bipartite=bool(req.bipartite))
        return graph, {**details, "one_based": False, "renumbered": True}, maps
    graph, found = _graph_from_arrays(arrays, req, n=None, shape=None)
    details.update(found)
    if req.renumber:
        details["renumbered"] = False
    return graph, details, None


def parquet_row_groups(path, columns=None) -> list[int]:
    """Rows in each row group of a Parquet edge table, after checking its columns are there
    (``columns`` as :func:`~mgmatch.io._common.column_choice` gives them)."""
    import pyarrow.parquet as pq  # noqa: PLC0415

    _check_readable(path)
    with _input_errors(path):
        handle = pq.ParquetFile(path)
        meta, schema = handle.metadata, handle.schema_arrow
    _chosen_columns(schema, columns, False, path)
    return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def _chosen_columns(schema, columns, weighted, path) -> dict:
    """Role -> the column of a Parquet edge table that holds it: ``src``, ``dst`` and ``weight``
    unless ``columns`` names others; ``weight`` is ``None`` when weights are not read or the
    table has none (a table with other numeric columns is then refused, as they likely hold
    the weights)."""
    names = schema.names
    choice = columns or {}
    ids = {role: choice.get(role) or role for role in ("src", "dst")}
    missing = [column for column in ids.values() if column not in names]
    if missing:
        if not choice.get("src") and not choice.get("dst"):
            raise InputError(
                f"missing column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}; "
                f"an edge table has src, dst and optionally weight (found: {', '.join(names) or 'none'})",
                path=path,
            )
        raise InputError(f"has no column {missing[0]!r} (found: {', '.join(names) or 'none'})", path=path)
    weight = None
    if weighted and choice.get("weight"):
        weight = choice["weight"]
        if weight not in names:
            raise InputError(f"has no weight column {weight!r} (found: {', '.join(names) or 'none'})", path=path)
        taken = next((role for role, column in ids.items() if column == weight), None)
        if taken is not None:
            raise InputError(f"the weight column is {weight!r}, which is the {taken} column too; name the "
                             f"{taken} column (--{taken})", path=path)
    elif weighted and "weight" in names and "weight" not in ids.values():
        weight = "weight"
    elif weighted:
        _check_weight_column(schema, path, exclude=tuple(ids.values()))
    return {**ids, "weight": weight}


def _check_weight_column(schema, path, exclude=("src", "dst")) -> None:
    """Refuse a weighted read of a table without a ``weight`` column but with other numeric ones."""
    import pyarrow as pa  # noqa: PLC0415

    if "weight" not in schema.names or "weight" in exclude:
        numeric = [f.name for f in schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]
        unread = [name for name in numeric if name not in exclude]
        if unread and "weight" in exclude:  # the 'weight' column was chosen as ids
            raise InputError(f"the column 'weight' is read as ids, and {', '.join(map(repr, unread))} "
                             f"{'are' if len(unread) > 1 else 'is'} not read: choose the weight column (--weight "
                             "on the command line, columns= in Python), or read without weights (--unweighted, "
                             "weighted=False in Python)", path=path)
        _refuse_unread_weights(unread, "column", path)


def _edge_table_arrays(table, path, *, roles=None, labels=False, first_row: int = 0) -> dict:
    """The columns of a read edge table as arrays by role (``src``, ``dst``, ``weight``; ``roles``
    maps each to its column), after checking their types and that no value is missing: ids are
    integers (NumPy), or with ``labels`` text too (an Arrow string array, to be renumbered);
    weights are numbers. Rows are named from ``first_row``."""
    import pyarrow as pa  # noqa: PLC0415

    roles = roles or {"src": "src", "dst": "dst", "weight": "weight" if "weight" in table.column_names else None}
    arrays = {}
    for role, name in roles.items():
        if name is None:
            continue
        column = table.column(name)
        if pa.types.is_dictionary(column.type):  # pandas' categorical columns
            column = column.cast(column.type.value_type)
        text = labels and role != "weight" and (pa.types.is_string(column.type) or pa.types.is_large_string(column.type))
        numeric = pa.types.is_integer(column.type) if role != "weight" else (
            pa.types.is_integer(column.type) or pa.types.is_floating(column.type)
        )
        if not (numeric or text):
            kind = ("integers or text labels" if labels else "integers") if role != "weight" else "numbers"
            hint = ""
            if role != "weight" and not labels and (pa.types.is_string(column.type)
                                                    or pa.types.is_large_string(column.type)):
                hint = (" (text ids are renumbered when mgmatch.io.read_input reads them, or mgmatch run without "
                        "--read-on-workers)")
            raise InputError(f"column {name!r} has type {column.type}; it must hold {kind}{hint}", path=path)
        if column.null_count:
            row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise InputError(
                f"column {name!r} has {column.null_count} missing values (the first in row {first_row + row})",
                path=path,
            )
        arrays[role] = column.cast(pa.string()) if text else column.to_numpy()
        if not text and role != "weight" and arrays[role].dtype == np.uint64:  # int64 from here on: none may wrap
            arrays[role] = _as_id_array(arrays[role], "source" if role == "src" else "destination", path,
                                        first=first_row)
    return arrays


def read_parquet_row_groups(path, groups, *, weighted=True, negative="error", one_based=None,
                            columns=None) -> EdgeChunk:
    """Read and check some row groups of a Parquet edge table (``src``, ``dst``, ``weight``, or
    the columns ``columns`` names, as :func:`~mgmatch.io._common.column_choice` gives them).

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
        chosen = _chosen_columns(handle.schema_arrow, columns, weighted, path)
        meta = handle.metadata
        first_row = sum(meta.row_group(i).num_rows for i in range(min(groups, default=0)))
        table = handle.read_row_groups(list(groups), columns=[c for c in chosen.values() if c is not None])
        arrays = _edge_table_arrays(table, path, roles=chosen, first_row=first_row)
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
