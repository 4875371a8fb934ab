"""Small facts about a cluster's workers that placement and the engine share."""

from __future__ import annotations

from ..errors import ClusterError

__all__ = ["check_worker", "worker_addresses"]


def check_worker(expected: str) -> str:
    """Fail clearly if a pinned task runs anywhere but where it was sent."""
    from distributed import get_worker  # noqa: PLC0415

    here = get_worker().address
    if here != expected:
        raise ClusterError(f"task pinned to worker {expected} ran on {here}")
    return here


async def worker_addresses(client) -> list[str]:
    """The addresses of the workers the scheduler knows now, sorted."""
    info = await client.scheduler.identity()
    return sorted(info.get("workers", {}))
