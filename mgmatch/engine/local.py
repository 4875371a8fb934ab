"""The in-process runner: any number of partitions, one process, no cluster.

The same rounds as on a cluster: every partition steps on its inbox, the outboxes are routed
to their receivers, the round vectors (:func:`~mgmatch.engine.program.round_vector`) are summed
as an all-reduce would sum them, and the loop ends when a round sends no message and no
partition is active.

On the CPU, a program whose ``concurrent_steps`` is true (its kernels release the GIL) has its
partitions' ``init``, ``step`` and ``finish`` run at the same time on a pool of threads, one
partition per thread at a time, as the workers of a cluster would run them. Each partition also
splits its own outbox and gathers its own inbox there; only the routing table and the sum of the
round vectors, both in partition order, stay on the calling thread. Nothing a partition computes
depends on when the others run, so the results are the serial loop's, bit for bit.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable

import numpy as np

from .program import HEAD, Messages, RoundLog, outbox_pieces, round_vector, sum_in_order

__all__ = ["run_local", "round_record", "run_concurrently", "step_workers"]


def round_record(program, state0, r: int, totals: np.ndarray, n_vertices: int | None) -> dict:
    """What a progress callback hears after round ``r``: its number, the messages sent, the
    matched fraction (when the program counts matched vertices) and the program's own
    ``report`` fields, from partition 0's state."""
    record = {"round": r, "messages": int(totals[0])}
    if getattr(program, "matched", None) is not None:
        record["matched"] = float(totals[2]) / n_vertices if n_vertices else None
    report = getattr(program, "report", None)
    if report is not None and state0 is not None:
        record.update(report(state0, totals[HEAD:]))
    return record


# ------------------------------------------------------------------------- thread pools
#: The pools of this process, by size (made on first use and kept: a run of a few milliseconds
#: should not pay for starting threads). Keyed by process id too, so that a forked child, whose
#: copy of a pool has no threads, makes its own.
_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
_POOL_THREAD = threading.local()


def _enter_pool(numba_threads: int) -> None:
    """Set up one pool thread: mark it (a run started from inside a step runs serially, since
    waiting there on the same pool could wait forever) and give Numba's parallel loops, should a
    step run one, this thread's share of the CPUs (``numba.set_num_threads`` is per thread)."""
    _POOL_THREAD.inside = True
    import numba  # noqa: PLC0415

    numba.set_num_threads(max(1, min(numba_threads, numba.config.NUMBA_NUM_THREADS)))


def _pool(workers: int) -> ThreadPoolExecutor:
    key = (os.getpid(), workers)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            import numba  # noqa: PLC0415

            share = max(1, numba.config.NUMBA_NUM_THREADS // workers)
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"mgmatch-step{workers}",
                                      initializer=_enter_pool, initargs=(share,))
            _POOLS[key] = pool
    return pool


def run_concurrently(fn: Callable, items, workers: int) -> list:
    """``[fn(x) for x in items]``, on ``workers`` pool threads when that is more than one (and
    this is not itself a pool thread). Every call finishes before this returns; the first
    exception, in the order of ``items``, is raised then."""
    items = list(items)
    workers = min(int(workers), len(items))
    if workers <= 1 or getattr(_POOL_THREAD, "inside", False):
        return [fn(x) for x in items]
    futures = [_pool(workers).submit(fn, x) for x in items]
    wait(futures)
    return [f.result() for f in futures]


def step_workers(program, parts: list, threads: int | None = None) -> int:
    """Threads a run of ``program`` over ``parts`` steps its partitions on: ``threads`` (default:
    the engine configuration's), at most one per partition, and 1 unless the program declares
    concurrent steps and the partitions are on the CPU."""
    if len(parts) < 2 or not getattr(program, "concurrent_steps", False) or parts[0].xp is not np:
        return 1
    if threads is None:
        from .config import get_config  # noqa: PLC0415

        threads = get_config().thread_count()
    return max(1, min(int(threads), len(parts)))


# -------------------------------------------------------------------------------- rounds
def run_local(program, parts: list, *, progress: Callable[[dict], None] | None = None,
              max_rounds: int | None = None, threads: int | None = None) -> tuple[list[dict], RoundLog]:
    """Run ``program`` over ``parts`` in-process until no partition sends a message and none is
    active.

    ``progress(record)`` is called after each round with :func:`round_record`'s dict. ``threads``
    bounds the pool the partitions step on (see :func:`step_workers`). Returns the per-partition
    ``finish`` results (in partition order) and the round log; ``compute_s`` counts the time the
    partitions step (and split and gather their messages), ``exchange_s`` the routing between
    rounds.
    """
    log = RoundLog()
    workers = step_workers(program, parts, threads)
    states = run_concurrently(program.init, parts, workers)
    bounds = parts[0].bounds
    xp = parts[0].xp
    reduced = getattr(program, "reduced", None)
    watched = progress is not None
    n_vertices = parts[0].n_global
    routed: list[list[Messages]] = [[] for _ in parts]

    def one_step(i: int):
        """Partition ``i``'s share of a round: gather its inbox, step, split its outbox by
        receiver, and its round vector."""
        state = states[i]
        outbox = program.step(state, Messages.concat(routed[i], xp))
        pieces = outbox_pieces(outbox, bounds)
        sent = sum(len(m) for m in pieces.values())
        return pieces, round_vector(program, state, sent, watched)

    while True:
        t0 = time.perf_counter()
        done = run_concurrently(one_step, range(len(parts)), workers)
        t1 = time.perf_counter()
        routed = [[] for _ in parts]
        for pieces, _ in done:  # senders in partition order: every inbox is the serial loop's
            for dest, batch in pieces.items():
                routed[dest].append(batch)
        totals = sum_in_order(vector for _, vector in done)
        if reduced is not None:
            for s in states:
                reduced(s, totals[HEAD:])
        log.add(totals[0], t1 - t0, time.perf_counter() - t1)
        if progress is not None:
            progress(round_record(program, states[0], log.rounds, totals, n_vertices))
        if totals[0] == 0 and totals[1] == 0:
            break
        if max_rounds is not None and log.rounds >= max_rounds:
            raise RuntimeError(f"{program.name} did not settle within {max_rounds} rounds")
    return run_concurrently(program.finish, states, workers), log
