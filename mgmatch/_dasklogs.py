"""Dask's log records of a job held back, and shown only when the job fails.

A cluster that loses a worker and recovers logs the loss, with tracebacks, from the scheduler
and the client in this process; on a job that then succeeds, that reads like a failure on
standard error. Within :func:`held_dask_logs` the records of the ``distributed`` loggers go to a
buffer instead: a job that fails prints them (they explain the failure), one that succeeds
drops them.
"""

from __future__ import annotations

import contextlib
import logging
import sys

__all__ = ["held_dask_logs"]

_LOGGERS = ("distributed", "dask_cuda")
_HELD = 10_000  # records kept at most; the oldest are dropped first


class _Buffer(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)
        if len(self.records) > _HELD:
            del self.records[: len(self.records) - _HELD]


@contextlib.contextmanager
def held_dask_logs(stream=None):
    """Hold back the warnings and errors that Dask logs in this process during the block; print
    them to ``stream`` (standard error) only if the block raises.

    >>> import logging
    >>> with held_dask_logs():
    ...     logging.getLogger("distributed.scheduler").warning("worker lost")
    """
    buffer = _Buffer()
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    before = [(lg.propagate, list(lg.handlers)) for lg in loggers]
    for lg in loggers:
        lg.handlers = [buffer]
        lg.propagate = False
    try:
        yield
    except BaseException:
        out = sys.stderr if stream is None else stream
        for record in buffer.records:  # the messages, without their tracebacks
            print(f"{record.name} - {record.levelname} - {record.getMessage()}", file=out)
        raise
    finally:
        for lg, (propagate, handlers) in zip(loggers, before):
            lg.handlers = handlers
            lg.propagate = propagate
