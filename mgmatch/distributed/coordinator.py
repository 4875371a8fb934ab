"""The coordinator: runs an algorithm's partition steps on Dask workers, round by round.

A distributed graph is ``{partition: Future[Partition]}``, each future pinned to one worker.
Every round each partition runs its local step to quiescence on its worker
(``<algorithm>-<phase>-r<round>-p<partition>``); its outbox is cut into one piece per receiving
partition (``<algorithm>-route-r<round>-p<from>-p<to>``, on the sender's worker) and the pieces
travel worker to worker as inputs of the receivers' next step. The coordinator sees only a few
numbers per partition and round (message counts, compute time, matched vertices) and stops when
a round sends no message; the graph never passes through it.

The partitions come either from the client (a list of :class:`~mgmatch.graph.Partition`,
scattered to the workers) or already built on the workers (a
:class:`~mgmatch.distributed.loading.DistributedGraph`, whose futures are used as they are).

If a worker is lost, its partitions' state is gone with it; the algorithms are deterministic,
so the coordinator places the partitions on the remaining workers and runs again, giving the
identical result, or fails with a :class:`~mgmatch.errors.ClusterError` naming the lost worker.
A :class:`~mgmatch.distributed.loading.DistributedGraph` lost its partitions with the worker
too: they are built again from the file on the remaining workers (same bounds) before the run
starts over.
"""

from __future__ import annotations

import asyncio
import operator
import time
import uuid
from types import SimpleNamespace

import numpy as np

from .._array import to_numpy
from ..errors import ClusterError
from ..algorithms._bsp import Messages, RoundLog, is_distributed_graph

__all__ = ["run_distributed", "run_rounds_async"]


# ------------------------------------------------------------------------- worker tasks
def _check_worker(expected: str) -> str:
    """Fail clearly if a pinned task runs anywhere but where it was sent."""
    from distributed import get_worker  # noqa: PLC0415

    here = get_worker().address
    if here != expected:
        raise ClusterError(f"task pinned to worker {expected} ran on {here}")
    return here


def _init_task(program, part, expected_worker: str, device: str):
    """Load the partition onto the worker's device and build its state; the state records how
    long that took (``load_s``, reported with the first round's counts)."""
    here = _check_worker(expected_worker)
    t0 = time.perf_counter()
    if device == "gpu":
        from .._array import cupy_or_none  # noqa: PLC0415

        cp = cupy_or_none()
        if cp is None:
            raise ClusterError(f"worker {here} has no GPU, but device='gpu' was asked for")
        part = part.to("gpu", keep_pinned=True)  # the next run's load skips the locking
    state = program.init(part)
    if device == "gpu":
        cp.cuda.get_current_stream().synchronize()
    state.load_s = time.perf_counter() - t0
    return state


def _fork(state):
    """A copy of a partition state whose mutable arrays are new (the partition and the arrays
    derived from it once, ``slot`` and ``ghosts``, are shared), so a step never alters the
    value of an earlier round's future (Dask may run a task again from its inputs)."""
    copied = {}
    for key, value in vars(state).items():
        if key in ("part", "slot", "ghosts") or not hasattr(value, "copy") or np.isscalar(value):
            copied[key] = value
        else:
            copied[key] = value.copy()
    return SimpleNamespace(**copied)


def _state_of(prev):
    """The state in an init task's result or in the previous step's ``(state, pieces, stats)``."""
    return prev[0] if isinstance(prev, tuple) else prev


def _step_task(program, prev, inbox_pieces, expected_worker: str):
    _check_worker(expected_worker)
    state = _state_of(prev)
    xp = state.part.xp
    t0 = time.perf_counter()
    state = _fork(state)
    inbox = Messages.concat([Messages(xp.asarray(m.ints), xp.asarray(m.w)) for m in inbox_pieces])
    if len(inbox) == 0:
        inbox = Messages.empty(xp)
    outbox = program.step(state, inbox)
    pieces = {q: Messages(to_numpy(m.ints, pinned=True), to_numpy(m.w, pinned=True)) for q, m in outbox.split(state.part.bounds).items()}
    stats = {
        "messages": len(outbox),
        "compute_s": time.perf_counter() - t0,
        "matched": int(program.matched(state)),
        "load_s": getattr(state, "load_s", 0.0),
    }
    state.load_s = 0.0  # reported once
    return state, pieces, stats


def _route_task(step_result, q: int):
    """The piece of a step's outbox addressed to partition ``q`` (runs on the sender)."""
    piece = step_result[1].get(q)
    return piece if piece is not None else Messages.empty()


def _finish_task(program, prev, expected_worker: str):
    _check_worker(expected_worker)
    state = _state_of(prev)
    return {k: to_numpy(v, pinned=True) if hasattr(v, "shape") else v for k, v in program.finish(state).items()}


# ---------------------------------------------------------------------------- the rounds
async def _worker_addresses(client) -> list[str]:
    info = await client.scheduler.identity()
    return sorted(info.get("workers", {}))


def _lost_errors():
    from distributed.client import FutureCancelledError  # noqa: PLC0415
    from distributed.scheduler import KilledWorker  # noqa: PLC0415

    errors = [KilledWorker, FutureCancelledError, asyncio.CancelledError]
    try:
        from distributed.comm.core import CommClosedError  # noqa: PLC0415

        errors.append(CommClosedError)
    except ImportError:  # pragma: no cover
        pass
    import concurrent.futures  # noqa: PLC0415

    errors.append(concurrent.futures.CancelledError)
    return tuple(errors)


class _WorkerLost(Exception):
    """A worker holding a partition left the cluster (a private signal to start over)."""


async def _gather(client, futures, watch: set | None):
    """``client.gather``; with ``watch``, give up as soon as one of those workers is gone.

    Partitions built on the workers can be recomputed only where they are pinned, so after
    such a worker is lost Dask would wait for it for ever instead of failing."""
    if not watch:
        return await client.gather(futures)
    gathering = asyncio.ensure_future(client.gather(futures))
    while True:
        done, _ = await asyncio.wait({gathering}, timeout=0.5)
        if done:
            return gathering.result()
        gone = watch - set(await _worker_addresses(client))
        if gone:
            gathering.cancel()
            raise _WorkerLost(f"lost worker {', '.join(sorted(gone))}")


def _has_gpu() -> bool:
    from .._array import gpu_available  # noqa: PLC0415

    return gpu_available()


async def resolve_cluster_device(client, device: str, workers: list[str]) -> str:
    """``auto`` means GPU when every worker sees one; ``gpu`` requires that of every worker."""
    from ..errors import ParameterError  # noqa: PLC0415

    if device not in ("auto", "cpu", "gpu"):
        raise ParameterError(f"device must be 'auto', 'cpu' or 'gpu', not {device!r}")
    if device == "cpu":
        return "cpu"
    has = await client.run(_has_gpu, workers=workers)
    without = sorted(w for w, ok in has.items() if not ok)
    if device == "gpu" and without:
        raise ClusterError(f"device='gpu' was asked for, but worker {', '.join(without)} has no GPU")
    return "cpu" if without else "gpu"


async def run_rounds_async(client, program, parts, *, device="auto", progress=None, max_restarts=2,
                           total_vertices=None):
    """Run ``program`` over ``parts`` on the cluster.

    ``parts`` is a list of partitions, or a
    :class:`~mgmatch.distributed.loading.DistributedGraph` whose partitions the workers hold.
    Returns ``(finish results, RoundLog, placement seconds, device)``.
    """
    lost_errors = _lost_errors() + (_WorkerLost,)
    workers = await _worker_addresses(client)
    if not workers:
        raise ClusterError("the Dask cluster has no workers")
    device = await resolve_cluster_device(client, device, workers)
    restarts = 0
    while True:
        try:
            results, log, placement_s = await _rounds(client, program, parts, workers, device, progress,
                                                      total_vertices)
            return results, log, placement_s, device
        except lost_errors as exc:
            now = await _worker_addresses(client)
            lost = sorted(set(workers) - set(now))
            if not lost:
                raise
            if not now:
                raise ClusterError(f"lost worker {', '.join(lost)} and no worker is left") from None
            if restarts >= max_restarts:
                raise ClusterError(
                    f"lost worker {', '.join(lost)}; gave up after {restarts} restarts ({type(exc).__name__})"
                ) from None
            restarts += 1
            workers = now
            if is_distributed_graph(parts):
                from .loading import rebuild_async  # noqa: PLC0415

                await rebuild_async(client, parts, now)


async def _rounds(client, program, parts, workers, device, progress, total_vertices):
    run = uuid.uuid4().hex[:8]
    name, phase = program.name, getattr(program, "phase", "step")
    t0 = time.perf_counter()
    watch = None
    if is_distributed_graph(parts):  # built on the workers already
        owner = dict(parts.workers)
        part_f = dict(parts.parts)
        watch = set(owner.values())
    else:
        owner = {p: workers[p % len(workers)] for p in range(len(parts))}
        part_f = {}
        for p, part in enumerate(parts):
            part_f[p] = await client.scatter(part, workers=[owner[p]], hash=False)

    def submit(fn, *args, key, p):
        return client.submit(fn, *args, key=f"{key}-{run}", workers=[owner[p]], allow_other_workers=False,
                             pure=False)

    state_f = {p: submit(_init_task, program, part_f[p], owner[p], device, key=f"{name}-init-p{p}", p=p)
               for p in part_f}
    placement_s = time.perf_counter() - t0
    inbox_f = {p: [] for p in part_f}
    log = RoundLog()
    pipelined = len(part_f) > 1  # one partition never sends a message: one round settles it
    in_flight = None  # (round, stats futures) of the round whose counts are not read yet
    t_last = time.perf_counter()
    r = 0
    while True:
        r += 1
        res_f = {p: submit(_step_task, program, state_f[p], inbox_f[p], owner[p], key=f"{name}-{phase}-r{r}-p{p}", p=p)
                 for p in part_f}
        state_f = res_f  # the next step takes its state from this step's result, on the same worker
        stats_f = [submit(operator.getitem, res_f[p], 2, key=f"{name}-stats-r{r}-p{p}", p=p) for p in part_f]
        # Route every outbox piece now, without waiting for the counts: the next round starts on
        # the workers as soon as its inputs exist, and the coordinator reads each round's counts
        # one round behind. A round after the last message runs on empty inboxes and changes
        # nothing, so finishing from its state gives the same result.
        inbox_f = {q: [submit(_route_task, res_f[p], q, key=f"{name}-route-r{r}-p{p}-p{q}", p=p)
                       for p in part_f if p != q] for q in part_f} if pipelined else inbox_f
        if pipelined and in_flight is None:
            in_flight = (r, stats_f)
            continue
        checked, checked_f = in_flight if pipelined else (r, stats_f)
        stats = await _gather(client, checked_f, watch)
        now = time.perf_counter()
        wall, t_last = now - t_last, now
        total = sum(s["messages"] for s in stats)
        slowest = max(s["compute_s"] for s in stats)
        load = max(s["load_s"] for s in stats)
        log.load_s += load
        log.messages.append(total)
        log.compute_s.append(slowest)
        log.exchange_s.append(max(wall - slowest - load, 0.0))
        log.idle_s.append(sum(slowest - s["compute_s"] for s in stats) / len(stats))
        if progress is not None:
            matched = sum(s["matched"] for s in stats)
            progress(checked, total, matched / total_vertices if total_vertices else None)
        if total == 0:
            break
        in_flight = (r, stats_f)
    out_f = [submit(_finish_task, program, state_f[p], owner[p], key=f"{name}-finish-p{p}", p=p) for p in part_f]
    results = await _gather(client, out_f, watch)
    log.finish_s = time.perf_counter() - t_last
    del state_f, part_f
    return results, log, placement_s


def run_distributed(client, program, parts, *, device="auto", progress=None, total_vertices=None):
    """Sync shell over :func:`run_rounds_async`: returns the results with a synchronous client,
    an awaitable with an asynchronous one."""
    coro = run_rounds_async(client, program, parts, device=device, progress=progress, total_vertices=total_vertices)
    if getattr(client, "asynchronous", False):
        return coro
    return client.sync(lambda: coro)
