"""Graph input and result output.

Read graphs with :func:`read_graph` (Matrix Market, edge lists, METIS, GML, Parquet, NumPy
``.npz``; :data:`SUFFIXES` lists the suffixes), or with :func:`read_input`, which also renumbers
ids that are labels or sparse integers and keeps the map back, and describe them with
:func:`graph_info`. Write
results with :func:`write_table` (Parquet or CSV) and :func:`write_json`, each atomically
through :func:`atomic_path`, and read a result table back with :func:`read_table`.
"""

from .readers import SUFFIXES, format_of, graph_info, read_graph, read_input
from .writers import atomic_path, read_table, summary_path_for, write_graph, write_json, write_result, write_table

__all__ = [
    "read_graph",
    "read_input",
    "graph_info",
    "format_of",
    "SUFFIXES",
    "write_table",
    "write_graph",
    "write_json",
    "write_result",
    "read_table",
    "atomic_path",
    "summary_path_for",
]
