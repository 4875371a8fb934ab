"""Connecting to a Dask cluster, or starting an embedded local one, and setting workers up.

* ``scheduler="tcp://host:8786"`` or ``scheduler_file="scheduler.json"`` (what SLURM and
  Kubernetes deployments give) connect to a running cluster;
* otherwise an embedded cluster starts on 127.0.0.1: ``LocalCUDACluster`` (one worker per visible
  GPU) when dask-cuda and GPUs are present and the device allows it, else a ``LocalCluster`` of
  ``workers`` single-threaded worker processes.

Workers are prepared by :class:`WorkerSetup`, a ``WorkerPlugin`` (imports, CuPy memory pool,
kernel warm-up), never by tasks.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading

from .._signals import stop_signals_deferred
from ..errors import ClusterError, ParameterError, ResourceError

__all__ = ["cluster", "WorkerSetup", "connect"]


from distributed.diagnostics.plugin import WorkerPlugin


class WorkerSetup(WorkerPlugin):
    """``WorkerPlugin`` run once per worker: import mgmatch and its kernels' modules, make CuPy
    allocate from its default memory pool, and warm the Numba kernels so the first round does
    not pay for compiling.

    The default pool, not a pool of the worker's own: the memory checks before a run count the
    default pool's cached blocks as free, and those blocks can be given back to the driver
    (``free_all_blocks``); blocks cached by another pool would look taken to both."""

    name = "mgmatch-worker-setup"

    def __init__(self, device: str = "cpu"):
        self.device = device

    def setup(self, worker=None):
        import mgmatch  # noqa: F401, PLC0415 (the families register their warm-ups on import)

        from ..engine.warmup import warm_up  # noqa: PLC0415

        if self.device == "gpu":
            from .._array import cupy_or_none  # noqa: PLC0415

            cp = cupy_or_none()
            if cp is not None:
                cp.cuda.set_allocator(cp.get_default_memory_pool().malloc)
        warm_up()

    def teardown(self, worker=None):
        pass


def connect(address: str | None = None, scheduler_file: str | None = None, *, timeout: float = 10.0):
    """A ``distributed.Client`` for a running scheduler; one clear error when it cannot connect."""
    from distributed import Client  # noqa: PLC0415

    if address and scheduler_file:
        raise ParameterError("give either a scheduler address or a scheduler file, not both")
    if scheduler_file is not None:
        address = scheduler_address(scheduler_file)
    where = address if scheduler_file is None else f"{address} (from {scheduler_file})"
    if isinstance(address, str) and address:
        _probe(address, timeout, where)
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {where}: {exc}") from None
    except (ValueError, TypeError) as exc:  # malformed address
        where = "" if scheduler_file is None else f" (from {scheduler_file})"
        raise ClusterError(f"cannot use scheduler address {address!r}{where}: {exc}") from None


def _probe(address: str, timeout: float, where: str) -> None:
    """Open one connection to ``address`` and read the scheduler's handshake, all within
    ``timeout`` seconds. Dask's own connect reads the handshake without a time limit, so a
    service that accepts connections and never answers (another server on the port) made
    ``Client`` wait forever, and one that answers with other bytes made it read a frame length
    of exabytes and run out of memory. The cost is one more handshake per client. Runs on a
    thread of its own: the caller may be inside an event loop."""
    import asyncio  # noqa: PLC0415

    from distributed.comm import connect as comm_connect  # noqa: PLC0415

    failure: list = []

    async def handshake():
        comm = await comm_connect(address, timeout=timeout)
        await comm.close()

    def run():
        try:
            # Dask's connect retries a refused connection until its timeout and then says why;
            # the handshake that follows has no limit but this one, a little later
            asyncio.run(asyncio.wait_for(handshake(), timeout + 2.0))
        except BaseException as exc:  # noqa: BLE001 (reported below, in the caller's thread)
            failure.append(exc)

    thread = threading.Thread(target=run, name="mgmatch-scheduler-probe", daemon=True)
    thread.start()
    thread.join(timeout + 7.0)
    if thread.is_alive():
        failure.append(TimeoutError(f"no answer within {timeout:g} s"))
    if not failure:
        return
    exc = failure[0]
    if isinstance(exc, (ValueError, TypeError)):  # a malformed address: Client says it as before
        return
    if isinstance(exc, TimeoutError):  # (asyncio's too)
        raise ClusterError(f"cannot reach the Dask scheduler at {where}: no Dask handshake within {timeout:g} s "
                           "(is it a Dask scheduler's address?)")
    if not isinstance(exc, OSError):  # (other bytes: a MemoryError for a frame of exabytes, a decode error)
        raise ClusterError(f"cannot reach the Dask scheduler at {where}: it did not answer as a Dask scheduler "
                           f"({type(exc).__name__})")
    if _refused(exc, address):
        raise ClusterError(f"cannot reach the Dask scheduler at {where}: nothing listens there (the connection was "
                           f"refused for {timeout:g} s; is the scheduler running, on that host and port?)")
    raise ClusterError(f"cannot reach the Dask scheduler at {where}: {exc}")


def _refused(exc: BaseException, address: str) -> bool:
    """Whether Dask's failure to connect to ``address`` was a refused connection. Dask wraps the
    last error it met in its own time-out error, but its last try may start too late to be
    refused before the time runs out; a TCP address is then tried once more, directly."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, ConnectionRefusedError):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    import socket  # noqa: PLC0415

    from distributed.comm.addressing import parse_address, parse_host_port  # noqa: PLC0415

    try:
        scheme, location = parse_address(address)
        if scheme not in ("tcp", "tls"):
            return False
        host, port = parse_host_port(location)
        socket.create_connection((host, port), timeout=2.0).close()
    except ConnectionRefusedError:
        return True
    except (OSError, ValueError, TypeError):  # another failure: Dask's message says it
        return False
    return False


def scheduler_address(scheduler_file) -> str:
    """The scheduler's address from a scheduler file (the JSON object a Dask scheduler writes
    with ``--scheduler-file``: ``{"address": "tcp://host:port", ...}``), checked here so that a
    missing, empty, truncated or hand-edited file is one :class:`ClusterError` naming it."""
    import json  # noqa: PLC0415

    try:
        with open(scheduler_file, "rb") as fh:
            data = fh.read((1 << 20) + 1)
    except FileNotFoundError:
        raise ClusterError(f"scheduler file {scheduler_file} does not exist") from None
    except OSError as exc:
        raise ClusterError(f"cannot read scheduler file {scheduler_file}: {exc.strerror or exc}") from None
    if len(data) > 1 << 20:
        raise ClusterError(f"scheduler file {scheduler_file} is larger than 1 MiB; a scheduler writes a few hundred "
                           "bytes")
    if not data.strip():
        raise ClusterError(f"scheduler file {scheduler_file} is empty (is the scheduler still starting?)")
    try:
        info = json.loads(data)
    except (ValueError, RecursionError) as exc:  # not JSON (UnicodeDecodeError is a ValueError), or nested too deep
        detail = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        raise ClusterError(f"scheduler file {scheduler_file} is not valid JSON ({detail})") from None
    address = info.get("address") if isinstance(info, dict) else None
    if not isinstance(address, str) or not address:
        raise ClusterError(f"scheduler file {scheduler_file} holds no scheduler address (a JSON object with an "
                           "\"address\" string, as dask scheduler --scheduler-file writes)")
    return address


@contextlib.contextmanager
def cluster(*, scheduler: str | None = None, scheduler_file: str | None = None, workers: int | None = None,
            device: str = "auto", dashboard: bool = True, timeout: float = 10.0,
            wait_for_workers: int | None = None, wait_timeout: float = 300.0, check_cores: bool = False):
    """A Dask client for the job, as a context manager.

    Parameters
    ----------
    scheduler, scheduler_file : str, optional
        Connect to a running cluster. Without them an embedded local cluster starts.
    workers : int, optional
        Worker processes of an embedded cluster: default 2 on CPUs; on GPUs one per visible GPU,
        or the first ``workers`` GPUs.
    device : {"auto", "cpu", "gpu"}
        ``gpu`` requires a GPU cluster; ``auto`` starts one when dask-cuda and GPUs are there.
    dashboard : bool
        Serve the Dask dashboard of an embedded cluster (its address is ``client.dashboard_link``).
    timeout : float
        Seconds to wait for the scheduler to answer, and (without ``wait_for_workers``) for a
        first worker to join it.
    wait_for_workers : int, optional
        Start only once this many workers have joined a running cluster (SLURM and Kubernetes
        jobs start their workers beside the job), waiting at most ``wait_timeout`` seconds; a
        job then runs one partition per worker. Without it a job starts as soon as one worker is
        there. An embedded cluster starts all its workers before it yields; asking it to wait
        for more than it has is an error.
    wait_timeout : float
        Seconds to wait for ``wait_for_workers`` workers before giving up with
        :class:`~mgmatch.errors.ClusterError`.
    check_cores : bool
        Refuse an embedded cluster of more CPU workers than this process has cores
        (:class:`~mgmatch.errors.ResourceError`), as the command line does; without it more
        workers than cores start, taking turns on them (as a test of partitioning may want).

    Yields
    ------
    distributed.Client

    Examples
    --------
    >>> from mgmatch.distributed import cluster
    >>> with cluster(workers=2, device="cpu", dashboard=False) as client:  # doctest: +SKIP
    ...     mgmatch.suitor(graph, client=client)
    """
    from .._array import gpu_available, resolve_device  # noqa: PLC0415

    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ParameterError(f"workers must be a positive integer, not {workers!r}")
    if wait_for_workers is not None and (isinstance(wait_for_workers, bool) or not isinstance(wait_for_workers, int)
                                         or wait_for_workers < 1):
        raise ParameterError(f"wait_for_workers must be a positive integer, not {wait_for_workers!r}")
    if not isinstance(wait_timeout, (int, float)) or not wait_timeout > 0 or wait_timeout == float("inf"):
        raise ParameterError(f"wait_timeout must be a positive number of seconds, not {wait_timeout!r}")
    for name, value in (("scheduler", scheduler), ("scheduler_file", scheduler_file)):
        if value is not None and not str(value).strip():  # (an unset variable in a batch script)
            raise ParameterError(f"{name} is empty; give a scheduler's address (tcp://HOST:PORT) or file, or "
                                 "leave it out to run without a cluster")
    if (scheduler or scheduler_file) and workers is not None:  # (it was dropped without a word)
        raise ParameterError(f"workers={workers} (--workers) starts a cluster of its own here; a running cluster "
                             "(--scheduler, --scheduler-file) has the workers it has: leave --workers out, or give "
                             "--wait-for-workers to start once that many have joined")
    if scheduler or scheduler_file:
        client = connect(scheduler, scheduler_file, timeout=timeout)
        try:
            if wait_for_workers is None:
                _check_workers(client, timeout)
            else:
                _wait_for_workers(client, wait_for_workers, wait_timeout)
            client.register_plugin(WorkerSetup("cpu" if device == "cpu" else "gpu"))
            yield client
        finally:
            client.close()
        return

    dev = resolve_device(device)
    local = None
    dash = "127.0.0.1:0" if dashboard else None
    if dev == "gpu" and gpu_available():
        try:
            from dask_cuda import LocalCUDACluster  # noqa: PLC0415
        except ImportError:
            raise ClusterError("device='gpu' on a local cluster needs dask-cuda (pip install mgmatch[gpu])") from None
        from .._array import cupy_or_none  # noqa: PLC0415

        visible = cupy_or_none().cuda.runtime.getDeviceCount()
        if workers is not None and workers > visible:
            raise ClusterError(f"{workers} GPU workers were asked for, but {visible} GPU(s) are visible")
        expected = workers or visible
        _check_embedded_wait(wait_for_workers, expected)
        make = functools.partial(LocalCUDACluster, host="127.0.0.1", dashboard_address=dash, silence_logs=40,
                                 n_workers=workers or visible)
    else:
        from distributed import LocalCluster  # noqa: PLC0415

        if check_cores:
            _check_cpu_workers(workers)
        expected = workers or 2
        _check_embedded_wait(wait_for_workers, expected)
        make = functools.partial(LocalCluster, n_workers=expected, threads_per_worker=1, processes=True,
                                 host="127.0.0.1", dashboard_address=dash, silence_logs=40)
    from distributed import Client  # noqa: PLC0415

    try:
        # A stop signal while the workers start waits for the start to end, then unwinds through
        # the close below: a cluster half made would be out of reach (stop_signals_deferred).
        with stop_signals_deferred():
            local = make()
        with Client(local) as client:
            # the cluster's own workers, all of them (at least as many as --wait-for-workers, which
            # _check_embedded_wait bounds by them): one that registers late, on a loaded machine,
            # would otherwise find its partitions placed on the others
            _wait_for_workers(client, expected, wait_timeout)
            client.register_plugin(WorkerSetup(dev))
            yield client
    finally:
        # A worker slow to stop (a loaded machine) makes close() time out after the job is done,
        # its process killed by the nanny all the same: that must not fail the job, nor replace
        # the error a failing one is raising.
        if local is not None:
            with contextlib.suppress(TimeoutError, OSError):
                local.close()


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _check_cpu_workers(workers) -> None:
    """Refuse more CPU worker processes than cores: each worker runs its partition's rounds on
    one core, so the extra ones only take turns, and starting dozens of processes (each importing
    mgmatch and warming its kernels) takes minutes before the first round."""
    cores = usable_cores()
    if workers is not None and workers > cores:
        raise ResourceError(f"{workers} CPU workers were asked for, but this machine has {cores} core"
                            f"{'s' if cores != 1 else ''} for them; use --workers {cores} or fewer (the result "
                            "does not depend on the number of workers)")


def _check_embedded_wait(wait_for_workers, n_workers: int) -> None:
    if wait_for_workers is not None and wait_for_workers > n_workers:
        raise ParameterError(f"an embedded cluster of {n_workers} workers cannot wait for {wait_for_workers}; "
                             "--wait-for-workers is for a running cluster (--scheduler or --scheduler-file)")


def _wait_for_workers(client, n: int, timeout: float) -> None:
    try:
        client.wait_for_workers(n, timeout=timeout)
    except (TimeoutError, OSError):
        joined = len(client.scheduler_info().get("workers", {}))
        raise ClusterError(f"only {joined} of the {n} workers asked for joined the Dask cluster at "
                           f"{client.scheduler.address} within {timeout:g} s") from None


def _check_workers(client, timeout):
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, OSError):
        raise ClusterError(f"the Dask cluster at {client.scheduler.address} has no workers "
                           f"(none joined within {timeout:g} s)") from None
