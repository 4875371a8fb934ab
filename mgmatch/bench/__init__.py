"""``mgmatch bench``: our implementations and their peers, side by side on the same graphs.

Each family module (``matching``, ``bipartite``, ``louvain``, ``distributed``, ``stable_marriage``, ``io``) has ``run(...) -> list[dict]``;
:func:`write_report` prints the rows as a table and writes them as JSON. The JSON layout is
stable so runs can be compared: ``{"mgmatch_bench": 1, "host": {...}, "rows": [...]}``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import platform
from pathlib import Path

__all__ = ["run_family", "write_report", "host_info"]

FAMILIES = ("matching", "bipartite", "louvain", "distributed", "stable-marriage", "io")


def run_family(family: str, *, threads=None, **kwargs) -> list[dict]:
    """Run one family's benchmark (see its module for the parameters).

    ``threads`` (a list of counts) runs every case once per count, mgmatch and its peers alike
    on that many threads (:func:`~mgmatch.bench._common.bench_threads`): the scaling curve.
    Every row records its ``threads``; without ``threads``, the engine's count
    (:func:`~mgmatch.engine.available_threads` unless configured).
    """
    from ..engine import get_config  # noqa: PLC0415

    from ._common import bench_threads, check_thread_counts, graph_cache  # noqa: PLC0415

    if family not in FAMILIES:
        from ..errors import ParameterError  # noqa: PLC0415

        raise ParameterError(f"unknown benchmark family {family!r}; choose from {', '.join(FAMILIES)}")
    counts = [None] if threads is None else check_thread_counts(threads)
    module = importlib.import_module(f".{family.replace('-', '_')}", __name__)
    rows = []
    with graph_cache() if len(counts) > 1 else contextlib.nullcontext():
        for t in counts:
            with bench_threads(t):
                found = module.run(**kwargs)
                for row in found:
                    row.setdefault("threads", get_config().thread_count())
            rows += found
    return rows


def host_info() -> dict:
    """The machine the rows were measured on."""
    from .._versions import versions  # noqa: PLC0415
    from ._common import host_threads  # noqa: PLC0415

    info = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "usable_cores": host_threads(), **versions()}
    return info


# shown when some row has them: quality beside the peer, kernel time, memory, coordinator phases
_OPTIONAL_COLUMNS = ("threads", "kernel_time_s", "speedup_kernel", "weight_rel_diff", "modularity", "cardinality",
                     "peak_gpu_bytes_per_nnz", "peak_bytes_per_nnz", "rounds", "exchange_share", "identical",
                     "proposals", "matched", "peak_bytes", "memory_ratio")


def write_report(rows: list[dict], output: Path | None = None, *, console=None, print_table=None) -> None:
    """Write ``rows`` as JSON when ``output`` is given, then print them as a table: on
    ``console``, or through ``print_table(table)``."""
    from rich.table import Table  # noqa: PLC0415

    cols = ["family", "graph", "impl", "device", "n", "nnz", "time_s", "speedup", "ratio_vs"]
    cols += [c for c in _OPTIONAL_COLUMNS if any(c in r for r in rows)]
    table = Table(title="mgmatch bench")
    for c in cols:
        table.add_column(c)
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c, "")
            cells.append(f"{v:.4g}" if isinstance(v, float) else str(v))
        table.add_row(*cells)
    if output is not None:  # first: a run stopped while the table prints keeps its rows
        from ..io import write_json  # noqa: PLC0415

        write_json(output, {"mgmatch_bench": 1, "host": host_info(), "rows": rows})
    if print_table is not None:
        print_table(table)
    elif console is not None:
        console.print(table)
