"""The one entry every family's public function calls: checks, device, partitions, runner, result.

:func:`execute` validates what all families share (the partition count or bounds, the device,
the client), picks the device (and so the CPU or GPU twins, through the arrays' namespace),
splits the graph, runs the program in-process or on a Dask cluster, and hands every partition's
``finish`` output to the program's ``assemble``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .._array import resolve_device
from ..errors import ParameterError, ResourceError, out_of_device_memory
from .config import EngineConfig, get_config
from .local import run_concurrently, run_local
from .program import RoundLog

__all__ = ["RunInfo", "execute", "check_partitions", "check_partition_count", "is_distributed_graph",
           "default_partitions"]


@dataclass
class RunInfo:
    """How a run went, for ``assemble``: the round log, the device, the partition count and
    seconds per phase (``partition``: splitting and placing, ``run``: the rounds and results)."""

    log: RoundLog
    device: str
    n_parts: int
    timings: dict = field(default_factory=dict)
    on_cluster: bool = False


def is_distributed_graph(graph) -> bool:
    """Whether ``graph`` is a :class:`~mgmatch.distributed.loading.DistributedGraph` (whose module
    is loaded whenever one exists, so this never imports Dask)."""
    import sys  # noqa: PLC0415

    loading = sys.modules.get("mgmatch.distributed.loading")
    return loading is not None and isinstance(graph, loading.DistributedGraph)


#: Partitions beyond the vertex count are allowed up to this many (they own empty ranges, which
#: tests and small examples use); more only cost memory and time.
MAX_EMPTY_PARTITIONS = 64


def check_partitions(partitions, n: int):
    """``None``, a partition count (at least 1, at most ``max(n, 64)``) or explicit bounds
    ``[0, b_1, ..., n]``; returns it checked (bounds as an int64 array)."""
    if partitions is None:
        return None
    if np.ndim(partitions) == 1:
        from ..graph import check_bounds  # noqa: PLC0415

        return check_bounds(partitions, n)
    partitions = check_partition_count(partitions)
    if partitions > max(n, MAX_EMPTY_PARTITIONS):
        raise ParameterError(f"partitions={partitions} is more than the graph's {n} vertices; every partition "
                             "owns a range of vertices, so use at most one per vertex")
    return int(partitions)


def check_partition_count(partitions) -> int:
    """A partition count given as one number: a positive integer (the graph's own bound is
    :func:`check_partitions`')."""
    if isinstance(partitions, bool) or not isinstance(partitions, (int, np.integer)) or partitions < 1:
        raise ParameterError(f"partitions must be a positive integer or a list of bounds, not {partitions!r}")
    return int(partitions)


def _n_parts(partitions) -> int:
    return int(partitions) if np.ndim(partitions) == 0 else len(partitions) - 1


def _split(graph, partitions, workers: int = 1):
    """The graph's partitions; those of a :class:`~mgmatch.graph.Graph` are built ``workers``
    at a time (each one a pass over its own rows)."""
    from ..graph import Graph, Partition  # noqa: PLC0415

    if workers <= 1 or not isinstance(graph, Graph) or _n_parts(partitions) == 1:
        return graph.partition(int(partitions)) if np.ndim(partitions) == 0 else graph.partition(bounds=partitions)
    if np.ndim(partitions) == 0:
        bounds = graph.partition_bounds(int(partitions))
    else:
        bounds = graph.partition_bounds(bounds=partitions)
    return run_concurrently(lambda i: Partition.from_graph(graph, i, bounds), range(len(bounds) - 1), workers)


def default_partitions(program, graph, device: str, config: EngineConfig) -> int:
    """Partitions of an in-process run that names none: one per thread of ``config`` on the CPU
    when the program steps its partitions concurrently and allows the split
    (``split_by_threads``: its result does not depend on the partition count), else 1.

    Every partition gets at least ``config.min_partition_nnz`` stored entries, so a small graph
    stays one partition: below that, a round's fixed costs outweigh what another thread adds.
    """
    if device != "cpu" or not (getattr(program, "concurrent_steps", False)
                                and getattr(program, "split_by_threads", False)):
        return 1
    parts = min(config.thread_count(), max(1, graph.nnz // config.min_partition_nnz))
    most = getattr(program, "max_partitions", None)
    return max(1, min(parts, most) if most is not None else parts)


def execute(program, graph, *, partitions=None, device: str = "auto", client=None, progress=None,
            config: EngineConfig | None = None):
    """Run ``program`` on ``graph`` and return ``program.assemble(graph, pieces, run_info)``.

    Parameters
    ----------
    program : Program
        The family's partition program (see :mod:`mgmatch.engine.program`).
    graph : Graph or DistributedGraph
        A graph in this process, or one whose partitions a Dask cluster holds already (then
        ``client`` is required and ``partitions`` must agree with its partitions).
    partitions : int or sequence of int, optional
        Partition count or bounds. Default: one per worker on a cluster; in-process, one per
        thread (``config.threads``) on the CPU for a program that allows it (see
        :func:`default_partitions`), else 1.
    device : {"auto", "cpu", "gpu"}
        Where the kernels run; on a cluster ``auto`` means GPU when every worker has one.
    client : distributed.Client, optional
        Run on this cluster; with an asynchronous client the call returns an awaitable.
    progress : callable, optional
        ``progress(record)`` after each round (see :func:`~mgmatch.engine.local.round_record`).
    config : EngineConfig, optional
        Default: :func:`~mgmatch.engine.config.get_config`.
    """
    config = config or get_config()
    if progress is not None and not callable(progress):
        raise ParameterError(f"progress must be callable, not {type(progress).__name__}")
    distributed = is_distributed_graph(graph)
    if distributed:
        if client is None:
            raise ParameterError("a DistributedGraph lives on a Dask cluster; pass the client that placed it (client=)")
        if partitions is not None and not (np.ndim(partitions) == 0 and partitions == graph.n_parts) and not (
                np.ndim(partitions) == 1 and np.array_equal(np.asarray(partitions), graph.bounds)):
            raise ParameterError(f"the distributed graph has {graph.n_parts} partitions, built when it was placed; "
                                 f"partitions={partitions!r} cannot change them")
    else:
        partitions = check_partitions(partitions, graph.n_rows if graph.bipartite else graph.n)
    if device not in ("auto", "cpu", "gpu"):
        raise ParameterError(f"device must be 'auto', 'cpu' or 'gpu', not {device!r}")
    max_parts = getattr(program, "max_partitions", None)
    t0 = time.perf_counter()
    if client is not None:
        from .cluster_runner import run_on_cluster  # noqa: PLC0415

        if distributed:
            parts = graph
        else:
            if partitions is None:
                partitions = max(len(client.scheduler_info().get("workers", {})), 1)
                if max_parts is not None:
                    partitions = min(partitions, max_parts)
            _check_max_parts(program, partitions)
            parts = _split(graph.to("cpu"), partitions)
        n_parts = graph.n_parts if distributed else _n_parts(partitions)
        outcome = run_on_cluster(client, program, parts, device=device, progress=progress, config=config)
        if getattr(client, "asynchronous", False):
            return _assemble_async(program, graph, outcome, n_parts, t0)
        pieces, log, t_place, dev = outcome
        return _assemble(program, graph, pieces, log, dev, n_parts, t0, t_place, True)
    dev = resolve_device(device)
    if partitions is None:
        partitions = default_partitions(program, graph, dev, config)
    _check_max_parts(program, partitions)
    single = getattr(program, "single_device", None)
    try:
        if dev == "gpu":
            need = getattr(program, "gpu_bytes", None)
            if need is not None:
                check_gpu_memory(program.name, graph, need(graph))
        g = graph.to(dev)
        if single is not None and _n_parts(partitions) == 1:
            result = single(g)  # a fast special case of its own module, when it applies
            if result is not None:
                return result
        big = g.nnz >= config.min_partition_nnz * _n_parts(partitions)  # (else one thread is quicker)
        parts = _split(g, partitions, config.thread_count() if dev == "cpu" and big else 1)
        t_part = time.perf_counter() - t0
        pieces, log = run_local(program, parts, progress=progress, config=config)
    except Exception as exc:  # a CUDA out-of-memory error becomes one clear message
        if out_of_device_memory(exc):
            raise ResourceError(f"{program.name} ran out of GPU memory on a graph of {graph.n} vertices and "
                                f"{graph.nnz} stored entries: {exc}") from None
        raise
    return _assemble(program, graph, pieces, log, dev, _n_parts(partitions), t0, t_part, False)


def _check_max_parts(program, partitions) -> None:
    most = getattr(program, "max_partitions", None)
    if most is not None and _n_parts(partitions) > most:
        raise ParameterError(f"{program.name} runs on at most {most} partition(s), not {_n_parts(partitions)}")


async def _assemble_async(program, graph, outcome, n_parts, t0):
    pieces, log, t_place, dev = await outcome
    return _assemble(program, graph, pieces, log, dev, n_parts, t0, t_place, True)


def _assemble(program, graph, pieces, log, dev, n_parts, t0, t_part, on_cluster):
    t_run = time.perf_counter() - t0 - t_part
    info = RunInfo(log=log, device=dev, n_parts=n_parts, on_cluster=on_cluster,
                   timings={"partition": t_part, "run": t_run})
    result = program.assemble(graph, pieces, info)
    return result


def check_gpu_memory(what: str, graph, need: int) -> None:
    """Raise :class:`ResourceError` before a single-GPU run that will not fit the free memory."""
    import cupy  # noqa: PLC0415

    free, total = cupy.cuda.runtime.memGetInfo()
    pool = cupy.get_default_memory_pool()
    free += pool.free_bytes()  # blocks CuPy holds but does not use
    if need > free:
        raise ResourceError(
            f"{what} on n={graph.n}, nnz={graph.nnz} needs about {need / 2**30:.2f} GiB of GPU memory; "
            f"{free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB is free (use device='cpu', or more partitions "
            "on a Dask cluster)"
        )
