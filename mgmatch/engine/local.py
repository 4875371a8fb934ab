"""The in-process runner: any number of partitions, one process, no cluster.

The same rounds as on a cluster: every partition steps on its inbox, the outboxes are routed
to their receivers, the round vectors (:func:`~mgmatch.engine.program.round_vector`) are summed
as an all-reduce would sum them, and the loop ends when a round sends no message and no
partition is active.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from .program import HEAD, Messages, RoundLog, outbox_pieces, round_vector, sum_in_order

__all__ = ["run_local", "round_record"]


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


def run_local(program, parts: list, *, progress: Callable[[dict], None] | None = None,
              max_rounds: int | None = None) -> tuple[list[dict], RoundLog]:
    """Run ``program`` over ``parts`` in-process until no partition sends a message and none is
    active.

    ``progress(record)`` is called after each round with :func:`round_record`'s dict. Returns the
    per-partition ``finish`` results (in partition order) and the round log.
    """
    log = RoundLog()
    states = [program.init(p) for p in parts]
    bounds = parts[0].bounds
    xp = parts[0].xp
    reduced = getattr(program, "reduced", None)
    inboxes: list[Messages] = [Messages.empty(xp) for _ in parts]
    n_vertices = parts[0].n_global
    while True:
        t0 = time.perf_counter()
        outboxes = [program.step(s, inboxes[i]) for i, s in enumerate(states)]
        t1 = time.perf_counter()
        routed: list[list[Messages]] = [[] for _ in parts]
        sent = []
        for o in outboxes:
            pieces = outbox_pieces(o, bounds)
            sent.append(sum(len(m) for m in pieces.values()))
            for dest, batch in pieces.items():
                routed[dest].append(batch)
        totals = sum_in_order(round_vector(program, s, k, progress is not None) for s, k in zip(states, sent))
        if reduced is not None:
            for s in states:
                reduced(s, totals[HEAD:])
        inboxes = [Messages.concat(r, xp) for r in routed]
        log.add(totals[0], t1 - t0, time.perf_counter() - t1)
        if progress is not None:
            progress(round_record(program, states[0], log.rounds, totals, n_vertices))
        if totals[0] == 0 and totals[1] == 0:
            break
        if max_rounds is not None and log.rounds >= max_rounds:
            raise RuntimeError(f"{program.name} did not settle within {max_rounds} rounds")
    return [program.finish(s) for s in states], log
