"""The engine: one partition-program protocol, one in-process runner and one Dask runner.

Every algorithm family is a :class:`~mgmatch.engine.program.Program` over partitions and runs
through :func:`~mgmatch.engine.execute.execute`: in-process over any number of partitions
(:func:`~mgmatch.engine.local.run_local`) or on a Dask cluster
(:mod:`mgmatch.engine.cluster_runner`), where one long-lived task per worker holds the round
loop and the workers exchange messages directly (:mod:`mgmatch.engine.transport`).
"""

from .config import EngineConfig, available_threads, config_context, cpu_threads, get_config
from .execute import RunInfo, check_partitions, execute, is_distributed_graph
from .local import round_record, run_local
from .program import Messages, Program, RoundLog, fork_state, outbox_pieces, round_vector

__all__ = ["Messages", "Program", "RoundLog", "fork_state", "outbox_pieces", "round_vector", "run_local",
           "round_record", "execute", "RunInfo", "check_partitions", "is_distributed_graph", "EngineConfig",
           "config_context", "get_config", "available_threads", "cpu_threads"]
