"""Read and write stable-marriage instances as preference tables.

A preference table has one row per mutually acceptable pair and the columns ``man, woman,
man_rank, woman_rank`` (see :meth:`mgmatch.preferences.Preferences.from_table`), in Parquet,
CSV or TSV with a header row. :func:`read_instance` also takes any graph file mgmatch reads,
whose both sides rank by edge weight (:meth:`~mgmatch.preferences.Preferences.from_graph`).
"""

from __future__ import annotations

from pathlib import Path

from ..preferences import COLUMNS, Preferences
from .writers import TABLE_FORMATS, read_table, write_table

__all__ = ["read_preferences", "write_preferences", "read_instance", "is_preference_table"]


def read_preferences(path, *, n_men: int | None = None, n_women: int | None = None) -> Preferences:
    """Read a preference table (``.parquet``, ``.pq``, ``.csv`` or ``.tsv``).

    Raises
    ------
    InputError
        A missing or unreadable file, a missing column or an invalid row (see
        :meth:`~mgmatch.preferences.Preferences.from_table`), named with the file.

    Examples
    --------
    >>> import tempfile
    >>> from mgmatch.generators import sm_hard
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_preferences(Path(tmp) / "p.csv", sm_hard(3, seed=1))
    ...     read_preferences(out)
    Preferences(men=3, women=3, pairs=9)
    """
    columns = read_table(path)
    return Preferences.from_table(columns, n_men=n_men, n_women=n_women, source=str(path))


def write_preferences(path, prefs: Preferences) -> Path:
    """Write ``prefs`` as a preference table (dense ranks), atomically."""
    return write_table(path, prefs.to_table())


def is_preference_table(path) -> bool:
    """Whether ``path`` is a table file whose header names a preference-table column (then it
    is read as one, and a column it lacks is reported as missing)."""
    path = Path(path)
    fmt = TABLE_FORMATS.get(path.suffix.lower())
    if fmt is None or not path.is_file():
        return False
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq  # noqa: PLC0415

            names = pq.read_schema(path).names
        else:
            with open(path, "rb") as f:
                first = f.readline().decode("utf-8", errors="replace").strip()
            names = [c.strip() for c in first.split("," if fmt == "csv" else "\t")]
    except Exception:  # the readers report what is wrong with the file
        return False
    return any(c in names for c in COLUMNS)


def read_instance(path, *, graph_reader=None) -> Preferences:
    """A stable-marriage instance from a preference table, or from a graph file read by
    ``graph_reader(path)`` (both sides rank by edge weight)."""
    if is_preference_table(path):
        return read_preferences(path)
    if graph_reader is None:
        from .readers import read_graph  # noqa: PLC0415

        graph_reader = read_graph
    return Preferences.from_graph(graph_reader(path))
