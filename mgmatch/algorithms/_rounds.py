"""What a result's summary says about its rounds, one list entry per round."""

from __future__ import annotations

__all__ = ["round_fields"]


def round_fields(log) -> dict:
    """The per-round seconds of a :class:`~mgmatch.engine.RoundLog`, beside the summary's
    ``messages_per_round``: computing (the slowest partition's step), exchanging (routing the
    messages and the all-reduce) and idle (the mean time a partition waited for the slowest
    one; 0 in-process), and the transport that carried the messages; on a cluster also the
    bytes of the results that came back through the host (files, or mapped from a worker's GPU).

    >>> from mgmatch.engine import RoundLog
    >>> log = RoundLog()
    >>> log.add(4, 0.5, 0.25)
    >>> round_fields(log)
    {'compute_s_per_round': [0.5], 'exchange_s_per_round': [0.25], 'idle_s_per_round': [0.0], 'transport': 'local'}
    """
    out = {
        "compute_s_per_round": [float(s) for s in log.compute_s],
        "exchange_s_per_round": [float(s) for s in log.exchange_s],
        "idle_s_per_round": [float(s) for s in log.idle_s],
        "transport": log.transport,
    }
    if log.workers:  # a cluster run: its results' bytes that came back through shared memory
        out["handback_bytes"] = int(log.handback_bytes)
    return out
