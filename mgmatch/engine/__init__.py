"""The engine: one partition-program protocol, one in-process runner and one Dask runner.

Every algorithm family is a :class:`~mgmatch.engine.program.Program` over partitions;
:func:`~mgmatch.engine.local.run_local` runs it in-process over any number of partitions.
"""

from .local import round_record, run_local
from .program import Messages, Program, RoundLog, fork_state, outbox_pieces, round_vector

__all__ = ["Messages", "Program", "RoundLog", "fork_state", "outbox_pieces", "round_vector", "run_local",
           "round_record"]
