"""The Dask runner: Dask places, starts and gathers; the rounds never go through the scheduler.

For a job, every worker holding partitions runs ONE long-lived task
(``<algorithm>-rounds-w<rank>``) that holds the whole round loop for its partitions: step,
exchange with the other workers directly (:mod:`mgmatch.engine.transport`: NCCL between GPU
workers, TCP connections opened once between CPU workers), one all-reduce of the round vectors
that decides termination. Rank 0 publishes the rounds as Dask events (topic
``mgmatch-<algorithm>``: round, messages, matched fraction, the program's report), which the
client turns into progress calls; every task returns its partitions' results and its round log
(large result arrays through the host's memory when the client runs on the worker's host:
mapped from the worker's GPU, or through a file in shared memory: :mod:`mgmatch.engine.handback`).

The connections of a set of workers are made once and kept (a *session*, as raft-dask keeps its
communicators), and a job holds a Dask lock per worker, taken in address order, so two jobs
never share a session at the same time nor wait for each other's workers crosswise.

If a worker is lost (its connections close) or stops (it sends not even a heartbeat for
``peer_timeout_s``), the other tasks give up, the session is dropped, and the job runs again on
the remaining workers: the programs are deterministic, so the result is identical. After
``max_restarts`` such restarts the job fails with a :class:`~mgmatch.errors.ClusterError` naming
the worker.

``EngineConfig(exchange="tasks")`` keeps the older mode, in which every round is a Dask task per
partition and messages travel as futures: slower, but each round shows on the task stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
import time
import uuid
import weakref

import numpy as np

from .._array import to_numpy
from ..errors import ClusterError, ParameterError, ResourceError, out_of_device_memory
from . import handback
from .local import round_record
from .program import HEAD, Messages, RoundLog, outbox_pieces, round_vector, sum_in_order

__all__ = ["run_on_cluster", "run_on_cluster_async", "resolve_cluster_device"]


# ------------------------------------------------------------------------- worker side
def _host_of(address: str) -> str:
    return address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")


def _open_session(sid: str, workers: list, gpu: bool, dask_worker=None):
    """Listen for the session's connections; rank 0 of a GPU session also makes the NCCL id."""
    from .transport import open_session  # noqa: PLC0415

    me = dask_worker.address
    address = open_session(sid, list(workers), me, _host_of(me))
    nccl_id = None
    if gpu and len(workers) > 1 and workers[0] == me:
        from cupy.cuda import nccl  # noqa: PLC0415

        nccl_id = nccl.get_unique_id()
    return address, nccl_id


def _close_session(sid: str) -> None:
    from .transport import close_session  # noqa: PLC0415

    close_session(sid)


class SessionMissing(ClusterError):
    """The worker does not know the session (it restarted): the client makes a new one."""


def _rank_task(program, sid: str, addresses: list, nccl_id, parts: dict, owner_rank, device: str, config,
               topic: str | None, n_vertices: int, expected_worker: str, route):
    """The round loop of one worker's partitions (see the module notes)."""
    from ..distributed.workers import check_worker  # noqa: PLC0415
    from .transport import SESSIONS, close_session  # noqa: PLC0415

    check_worker(expected_worker)
    session = SESSIONS.get(sid)
    if session is None:
        raise SessionMissing(f"worker {expected_worker} does not hold session {sid}")
    with session.lock:
        try:
            return _rounds_on_rank(program, session, addresses, nccl_id, parts, owner_rank, device, config, topic,
                                   n_vertices, route)
        except BaseException:
            close_session(sid)  # the peers see the connections close and stop too
            raise


def _rounds_on_rank(program, session, addresses, nccl_id, parts, owner_rank, device, config, topic, n_vertices,
                    route):
    from .transport import exchange  # noqa: PLC0415

    session.ready(addresses, config, nccl_id if device == "gpu" else None)
    t0 = time.perf_counter()
    own = sorted(parts)
    cp = None
    if device == "gpu":
        from .._array import cupy_or_none  # noqa: PLC0415

        cp = cupy_or_none()
        if cp is None:
            raise ClusterError(f"worker {session.workers[session.rank]} has no GPU, but device='gpu' was asked for")
        parts = {p: part.to("gpu", keep_pinned=True) for p, part in parts.items()}
    states = {p: program.init(parts[p]) for p in own}
    if cp is not None:
        cp.cuda.get_current_stream().synchronize()
    load_s = time.perf_counter() - t0
    first = parts[own[0]]
    xp, bounds, n_parts = first.xp, first.bounds, first.n_parts
    # the states hold what they need of their partitions: a program may release a partition's
    # arrays once it is done with them (a device copy made for this run is then freed)
    parts = first = None
    reduced = getattr(program, "reduced", None)
    inbox = {p: Messages.empty(xp) for p in own}
    messages, compute, exchanged = [], [], []
    worker = None
    if topic is not None and session.rank == 0:
        from distributed import get_worker  # noqa: PLC0415

        worker = get_worker()
    last_event = 0.0
    record = None
    while True:
        t0 = time.perf_counter()
        outgoing, vectors = {}, {}
        for p in own:
            pieces = outbox_pieces(program.step(states[p], inbox[p]), bounds)
            outgoing[p] = pieces
            vectors[p] = round_vector(program, states[p], sum(len(m) for m in pieces.values()), topic is not None)
        t1 = time.perf_counter()
        table, received = exchange(session, own, owner_rank, vectors, outgoing, n_parts, xp)
        totals = sum_in_order(table)
        if reduced is not None:
            for p in own:
                reduced(states[p], totals[HEAD:])
        inbox = {q: Messages.concat(received[q], xp) for q in own}
        t2 = time.perf_counter()
        messages.append(int(totals[0]))
        compute.append(t1 - t0)
        exchanged.append(t2 - t1)
        done = totals[0] == 0 and totals[1] == 0
        if worker is not None:
            record = round_record(program, states[own[0]] if own[0] == 0 else None, len(messages), totals,
                                  n_vertices)
            if done or t2 - last_event >= config.progress_interval_s:
                worker.log_event(topic, record)
                last_event = t2
        if done:
            break
    t0 = time.perf_counter()
    pieces = {p: handback.pack(program.finish(states[p]), route, config.handback_bytes) for p in own}
    return {"pieces": pieces, "messages": messages, "compute": compute, "exchange": exchanged, "load_s": load_s,
            "finish_s": time.perf_counter() - t0, "last": record}


# ------------------------------------------------------------------------- client side
def _open_route(config, device: str):
    """The hand-back route of one run (:func:`mgmatch.engine.handback.open_run`)."""
    return handback.open_run(config.handback_bytes, device=device == "gpu" and config.handback_device)


async def _collect(client, pieces: list, route, workers: list, config) -> tuple[int, list]:
    """The bytes the workers handed back through the host, and ``pieces`` (the programs'
    results) with those arrays read back: copied from the workers' GPUs, read from the files.
    What this process could not map, the workers hand back again through files or Dask
    (:func:`~mgmatch.engine.handback.repack`); then they free their device copies."""
    handed = sum(handback.shared_bytes(piece) for piece in pieces)
    if not handed:
        return 0, pieces
    loop = asyncio.get_running_loop()
    on_device = any(handback.unmapped(piece) for piece in pieces)
    try:
        # (read off the event loop, which serves the client's other work)
        back = await loop.run_in_executor(None, lambda: [handback.unpack(piece) for piece in pieces])
        left = [s.key for piece in back for s in handback.unmapped(piece)]
        if left:
            again = await client.run(handback.repack, route.folder, left, config.handback_bytes, workers=workers)
            instead = {key: value for by_key in again.values() for key, value in by_key.items()}
            back = await loop.run_in_executor(None, lambda: [handback.unpack(piece, instead) for piece in back])
            if any(handback.unmapped(piece) for piece in back):
                raise ClusterError("a worker's result could not be read back from its GPU")
    finally:
        if on_device:  # (a worker lost meanwhile took its copies with it; a stopped one frees them
            # with its next run, the folder being gone)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.run(handback.release, route.folder, workers=workers,
                                                  on_error="ignore"), config.heartbeat_s * 4)
    return handed, back


def _has_gpu() -> bool:
    from .._array import gpu_available  # noqa: PLC0415

    return gpu_available()


#: Which of a client's workers see a GPU, by worker address (a worker that restarts comes back
#: at a new address): asked once, not on every job, as it costs a call to every worker.
_HAS_GPU: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


async def resolve_cluster_device(client, device: str, workers: list[str]) -> str:
    """``auto`` means GPU when every worker sees one; ``gpu`` requires that of every worker."""
    if device not in ("auto", "cpu", "gpu"):
        raise ParameterError(f"device must be 'auto', 'cpu' or 'gpu', not {device!r}")
    if device == "cpu":
        return "cpu"
    known = _HAS_GPU.setdefault(client, {})
    unknown = [w for w in workers if w not in known]
    if unknown:
        known.update(await client.run(_has_gpu, workers=unknown))
    has = {w: known[w] for w in workers}
    without = sorted(w for w, ok in has.items() if not ok)
    if device == "gpu" and without:
        raise ClusterError(f"device='gpu' was asked for, but worker {', '.join(without)} has no GPU")
    return "cpu" if without else "gpu"


class _Lost(Exception):
    """Workers of the run are gone or stopped (a private signal to start over without them)."""

    def __init__(self, workers: list[str], why: str):
        super().__init__(why)
        self.workers = workers


_SESSIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


async def _session(client, ranks: list[str], gpu: bool):
    """The session of these workers (made once, kept for later jobs): id, addresses, NCCL id."""
    cache = _SESSIONS.setdefault(client, {})
    key = (tuple(ranks), gpu)
    if key not in cache:
        sid = uuid.uuid4().hex
        opened = await client.run(_open_session, sid, ranks, gpu, workers=ranks)
        addresses = [opened[w][0] for w in ranks]
        nccl_id = opened[ranks[0]][1]
        cache[key] = (sid, addresses, nccl_id)
    return cache[key]


async def _drop_session(client, ranks: list[str], gpu: bool, alive: list[str]) -> None:
    cache = _SESSIONS.get(client, {})
    entry = cache.pop((tuple(ranks), gpu), None)
    if entry is not None and alive:
        try:
            await asyncio.wait_for(client.run(_close_session, entry[0], workers=alive, on_error="ignore"), 10)
        except Exception:  # noqa: BLE001 - a worker that cannot close a dead session is dropped anyway
            pass


async def _worker_list(client) -> list[str]:
    from ..distributed.workers import worker_addresses  # noqa: PLC0415

    return await worker_addresses(client)


async def run_on_cluster_async(client, program, parts, *, device="auto", progress=None, config=None):
    """Run ``program`` over ``parts`` on the cluster; ``(pieces, RoundLog, placement seconds, device)``.

    ``parts`` is a list of partitions (scattered to the workers here), or a
    :class:`~mgmatch.distributed.loading.DistributedGraph` whose partitions the workers hold.
    """
    from ..distributed.loading import rebuild_async  # noqa: PLC0415
    from .config import get_config  # noqa: PLC0415
    from .execute import is_distributed_graph  # noqa: PLC0415

    config = config or get_config()
    workers = await _worker_list(client)
    if not workers:
        raise ClusterError("the Dask cluster has no workers")
    device = await resolve_cluster_device(client, device, workers)
    excluded: set[str] = set()
    restarts = 0
    runner = _direct if config.exchange == "direct" else _task_rounds
    while True:
        try:
            return (*await runner(client, program, parts, workers, device, progress, config), device)
        except _Lost as lost:
            now = [w for w in await _worker_list(client) if w not in excluded]
            excluded.update(lost.workers)
            now = [w for w in now if w not in excluded]
            if not now:
                raise ClusterError(f"{lost}; no worker is left") from None
            if restarts >= config.max_restarts:
                raise ClusterError(f"{lost}; gave up after {restarts} restarts") from None
            restarts += 1
            workers = now
            if is_distributed_graph(parts):
                await rebuild_async(client, parts, workers)


def _placement(client, parts, workers):
    from .execute import is_distributed_graph  # noqa: PLC0415

    if is_distributed_graph(parts):
        return dict(parts.workers), dict(parts.parts), parts.bounds, parts.n
    return None, None, parts[0].bounds, parts[0].n_global


async def _scatter(client, parts, workers):
    owner = {p: workers[p % len(workers)] for p in range(len(parts))}
    futures = {}
    for p, part in enumerate(parts):
        futures[p] = await client.scatter(part, workers=[owner[p]], hash=False)
    return owner, futures


def _lost_errors():
    import concurrent.futures  # noqa: PLC0415

    from distributed.client import FutureCancelledError  # noqa: PLC0415
    from distributed.scheduler import KilledWorker  # noqa: PLC0415

    errors = [KilledWorker, FutureCancelledError, asyncio.CancelledError, concurrent.futures.CancelledError]
    try:
        from distributed.comm.core import CommClosedError  # noqa: PLC0415

        errors.append(CommClosedError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


async def _wait_all(client, futures: list, watch: set, grace: float):
    """The futures' results; :class:`_Lost` when a watched worker leaves the cluster or a task
    gives up on a peer. After the first failure the others get ``grace`` seconds to end (they
    do, once the failed task's connections close), so that an ordinary error of one task (bad
    input) is raised as itself rather than as the peers' lost connection."""
    from .transport import PeerError  # noqa: PLC0415

    tasks = {asyncio.ensure_future(client.gather(f)): i for i, f in enumerate(futures)}
    pending = set(tasks)
    results: dict[int, object] = {}
    errors: dict[int, BaseException] = {}
    failed_at = None
    while pending:
        timeout = 0.5 if failed_at is None else max(0.0, failed_at + grace - time.monotonic())
        done, pending = await asyncio.wait(pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        for t in done:
            exc = t.exception()
            if exc is None:
                results[tasks[t]] = t.result()
            else:
                errors[tasks[t]] = exc
                failed_at = failed_at or time.monotonic()
        if not pending or (failed_at is not None and time.monotonic() >= failed_at + grace):
            break  # (every task ended: no need to ask the scheduler for its workers)
        gone = watch - set(await _worker_list(client))
        if gone:
            for t in pending:
                t.cancel()
            raise _Lost(sorted(gone), f"lost worker {', '.join(sorted(gone))}")
    for t in pending:
        t.cancel()
    if not errors:
        return [results[i] for i in range(len(futures))]
    ordinary = [(i, e) for i, e in errors.items() if not isinstance(e, (PeerError, *_lost_errors()))]
    if ordinary:
        i, exc = ordinary[0]
        if out_of_device_memory(exc):  # one clear message, as a local run gives
            raise ResourceError(f"task {futures[i].key} ran out of GPU memory on its worker: {exc} (more workers "
                                "give each a smaller share of the graph)") from None
        raise exc
    peer_errors = [e for e in errors.values() if isinstance(e, PeerError)]
    named = sorted({e.worker for e in peer_errors if e.worker})
    gone = sorted(watch - set(await _worker_list(client)))
    lost = sorted(set(named) | set(gone))
    why = "; ".join(sorted({str(e) for e in peer_errors})) or f"lost worker {', '.join(lost)}"
    raise _Lost(lost, why)


async def _direct(client, program, parts, workers, device, progress, config):
    t0 = time.perf_counter()
    owner, part_f, bounds, n_vertices = _placement(client, parts, workers)
    if owner is None:
        owner, part_f = await _scatter(client, parts, workers)
    ranks = sorted(set(owner.values()))
    rank_of = {w: r for r, w in enumerate(ranks)}
    owner_rank = np.array([rank_of[owner[p]] for p in range(len(bounds) - 1)], dtype=np.int64)
    gpu = device == "gpu"
    # every worker's lock at once (Dask's multi-lock): two jobs never hold each other's workers crosswise
    lock_id = uuid.uuid4().hex
    await client.scheduler.multi_lock_acquire(locks=[f"mgmatch-engine-{w}" for w in ranks], id=lock_id,
                                              timeout=None, num_locks=len(ranks))
    try:
        for attempt in range(2):
            sid, addresses, nccl_id = await _session(client, ranks, gpu)
            placement_s = time.perf_counter() - t0
            run = uuid.uuid4().hex[:8]
            topic = f"mgmatch-{program.name}-{run}" if progress is not None else None
            route = _open_route(config, device)
            seen = {"round": 0}
            if topic is not None:
                def on_event(event, seen=seen):
                    record = event[1]
                    if record.get("round", 0) > seen["round"]:
                        seen["round"] = record["round"]
                        progress(record)

                client.subscribe_topic(topic, on_event)
            futures = [
                client.submit(_rank_task, program, sid, addresses, nccl_id,
                              {p: part_f[p] for p in part_f if owner[p] == w}, owner_rank, device, config, topic,
                              n_vertices, w, route, key=f"{program.name}-rounds-w{r}-{run}", workers=[w],
                              allow_other_workers=False, pure=False)
                for r, w in enumerate(ranks)
            ]
            try:
                results = await _wait_all(client, futures, set(ranks), grace=2 * config.heartbeat_s + 1.0)
                where = [(r, p) for r in results for p in r["pieces"]]
                handed, back = await _collect(client, [r["pieces"][p] for r, p in where], route, ranks, config)
                for (r, p), piece in zip(where, back):
                    r["pieces"][p] = piece
            except SessionMissing:
                await _drop_session(client, ranks, gpu, ranks)
                continue
            except _Lost as lost:
                alive = [w for w in ranks if w not in lost.workers]
                await _drop_session(client, ranks, gpu, alive)
                raise
            except BaseException:
                await _drop_session(client, ranks, gpu, ranks)
                raise
            finally:
                if topic is not None:
                    client.unsubscribe_topic(topic)
                for f in futures:
                    f.release()
                handback.close_run(route)
            break
        else:
            raise ClusterError("the workers lost their sessions twice in a row")
    finally:
        await client.scheduler.multi_lock_release(id=lock_id)
    log = RoundLog(transport="nccl" if gpu and len(ranks) > 1 else ("tcp" if len(ranks) > 1 else "local"),
                   workers=len(ranks))
    n_rounds = len(results[0]["messages"])
    for i in range(n_rounds):
        # the round's critical path: the worker that computed longest, then its exchange. The
        # others' exchange includes their wait for it, which is idle time, not exchange.
        last = max(results, key=lambda r: r["compute"][i])
        slowest = last["compute"][i]
        log.add(results[0]["messages"][i], slowest, last["exchange"][i],
                sum(slowest - r["compute"][i] for r in results) / len(results))
    log.load_s = max(r["load_s"] for r in results)
    log.finish_s = max(r["finish_s"] for r in results)
    log.handback_bytes = handed
    last = results[0]["last"]
    if progress is not None and last is not None and last["round"] > seen["round"]:
        progress(last)
    pieces = {}
    for r in results:
        pieces.update(r["pieces"])
    return [pieces[p] for p in range(len(bounds) - 1)], log, placement_s


# ------------------------------------------------------------------ per-round task mode
def _init_task(program, part, expected_worker: str, device: str):
    from ..distributed.workers import check_worker  # noqa: PLC0415

    check_worker(expected_worker)
    t0 = time.perf_counter()
    if device == "gpu":
        part = part.to("gpu", keep_pinned=True)
    state = program.init(part)
    return state, time.perf_counter() - t0


def _step_task(program, prev, inbox_pieces, reduced_totals, expected_worker: str):
    from ..distributed.workers import check_worker  # noqa: PLC0415

    check_worker(expected_worker)
    state = prev[0]
    fork = getattr(program, "fork", None)
    if fork is None:
        raise ParameterError(f"{program.name} cannot run in the per-round task mode (it has no fork)")
    state = fork(state)
    if reduced_totals is not None and getattr(program, "reduced", None) is not None:
        program.reduced(state, reduced_totals)
    t0 = time.perf_counter()
    xp = _state_xp(state)
    inbox = Messages.concat([Messages(xp.asarray(m.ints), xp.asarray(m.w)) for m in inbox_pieces], xp)
    pieces = outbox_pieces(program.step(state, inbox), prev[2])
    vector = round_vector(program, state, sum(len(m) for m in pieces.values()))
    host = {q: Messages(to_numpy(m.ints, pinned=True), to_numpy(m.w, pinned=True)) for q, m in pieces.items()}
    stats = {"vector": vector, "compute_s": time.perf_counter() - t0, "load_s": prev[1]}
    return state, 0.0, prev[2], host, stats


def _state_xp(state):
    """The array module of a task-mode state (through its partition, whatever the program)."""
    part = getattr(state, "part", None)
    return part.xp if part is not None else np


def _with_bounds(init_result, bounds):
    state, load_s = init_result
    return state, load_s, bounds


def _route_task(step_result, q: int):
    piece = step_result[3].get(q)
    return piece if piece is not None else Messages.empty()


def _finish_task(program, prev, reduced_totals, expected_worker: str, config, route):
    from ..distributed.workers import check_worker  # noqa: PLC0415

    check_worker(expected_worker)
    state = prev[0]
    if reduced_totals is not None and getattr(program, "reduced", None) is not None:
        state = program.fork(state)
        program.reduced(state, reduced_totals)
    return handback.pack(program.finish(state), route, config.handback_bytes)


async def _task_rounds(client, program, parts, workers, device, progress, config):
    """Every round a task per partition, messages as futures (``exchange="tasks"``)."""
    run = uuid.uuid4().hex[:8]
    name, phase = program.name, getattr(program, "phase", "step")
    t0 = time.perf_counter()
    owner, part_f, bounds, n_vertices = _placement(client, parts, workers)
    if owner is None:
        owner, part_f = await _scatter(client, parts, workers)
    watch = set(owner.values())

    def submit(fn, *args, key, p):
        return client.submit(fn, *args, key=f"{key}-{run}", workers=[owner[p]], allow_other_workers=False,
                             pure=False)

    state_f = {p: submit(_with_bounds, submit(_init_task, program, part_f[p], owner[p], device,
                                              key=f"{name}-init-p{p}", p=p), bounds, key=f"{name}-bounds-p{p}", p=p)
               for p in part_f}
    placement_s = time.perf_counter() - t0
    inbox_f = {p: [] for p in part_f}
    log = RoundLog(transport="tasks", workers=len(watch))
    totals = None
    t_last = time.perf_counter()
    r = 0
    while True:
        r += 1
        reduced_totals = None if totals is None else totals[HEAD:]
        res_f = {p: submit(_step_task, program, state_f[p], inbox_f[p], reduced_totals, owner[p],
                           key=f"{name}-{phase}-r{r}-p{p}", p=p) for p in part_f}
        state_f = res_f
        # every partition's messages to q, its own included (Louvain's partitions write to
        # themselves: the totals of their own communities), ordered by sender as in direct mode
        inbox_f = {q: [submit(_route_task, res_f[p], q, key=f"{name}-route-r{r}-p{p}-p{q}", p=p)
                       for p in sorted(part_f)] for q in part_f}
        stats_f = [submit(operator.getitem, res_f[p], 4, key=f"{name}-stats-r{r}-p{p}", p=p) for p in part_f]
        stats = await _wait_all(client, stats_f, watch, grace=0.0)
        now = time.perf_counter()
        wall, t_last = now - t_last, now
        totals = sum_in_order(s["vector"] for s in stats)
        slowest = max(s["compute_s"] for s in stats)
        load = max(s["load_s"] for s in stats)
        log.load_s += load
        log.add(totals[0], slowest, max(wall - slowest - load, 0.0),
                sum(slowest - s["compute_s"] for s in stats) / len(stats))
        if progress is not None:
            progress(round_record(program, None, r, totals, n_vertices))
        if totals[0] == 0 and totals[1] == 0:
            break
    reduced_totals = totals[HEAD:]
    route = _open_route(config, device)
    out_f = [submit(_finish_task, program, state_f[p], reduced_totals if getattr(program, "reduced", None) else None,
                    owner[p], config, route, key=f"{name}-finish-p{p}", p=p)
             for p in part_f]
    try:
        results = await _wait_all(client, out_f, watch, grace=0.0)
        log.handback_bytes, results = await _collect(client, results, route, sorted(watch), config)
    finally:
        handback.close_run(route)
    log.finish_s = time.perf_counter() - t_last
    return results, log, placement_s


def run_on_cluster(client, program, parts, *, device="auto", progress=None, config=None):
    """Sync shell over :func:`run_on_cluster_async`: the outcome with a synchronous client, an
    awaitable with an asynchronous one."""
    coro = run_on_cluster_async(client, program, parts, device=device, progress=progress, config=config)
    if getattr(client, "asynchronous", False):
        return coro
    return client.sync(lambda: coro)
