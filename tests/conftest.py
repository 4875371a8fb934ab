"""Shared fixtures and markers.

* ``gpu`` tests run when CuPy sees a CUDA device, else they are skipped with the reason.
* ``mgpu`` tests need two or more devices and dask-cuda.
* ``device`` is a fixture parametrised over ``cpu`` and ``gpu`` so one test body serves both.
* ``dask_client`` attaches to the cluster named by ``SCHEDULER_FILE`` when set, else starts a
  small CPU ``LocalCluster`` on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from mgmatch._array import cupy_or_none

DATA = Path(__file__).parent / "data"


def _gpu_count() -> int:
    cp = cupy_or_none()
    return 0 if cp is None else int(cp.cuda.runtime.getDeviceCount())


def pytest_collection_modifyitems(config, items):
    n = _gpu_count()
    try:
        import dask_cuda  # noqa: F401

        have_dask_cuda = True
    except Exception:
        have_dask_cuda = False
    skip_gpu = pytest.mark.skip(reason="needs CuPy and a CUDA device")
    skip_mgpu = pytest.mark.skip(reason="needs two CUDA devices and dask-cuda")
    for item in items:
        if "mgpu" in item.keywords and (n < 2 or not have_dask_cuda):
            item.add_marker(skip_mgpu)
        elif "gpu" in item.keywords and n < 1:
            item.add_marker(skip_gpu)


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request):
    """Run one test body on every backend."""
    return request.param


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    sched = os.environ.get("SCHEDULER_FILE")
    if sched:
        with distributed.Client(scheduler_file=sched) as client:
            yield client
        return
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None, silence_logs=40,
    ) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture(params=["killed", "stopped"])
def worker_fault(request):
    """A 3-worker CPU cluster and a ``progress`` callback that, once a run reports its second
    round, kills one worker process (``os._exit``) or stops it (``SIGSTOP``; it is continued
    after the test).

    Yields a namespace with ``client``, ``victim`` (the worker's address), ``mode``, ``progress``
    (taking the engine's round record) and ``fired`` (set once the fault was triggered).
    """
    import signal
    import threading
    from types import SimpleNamespace

    distributed = pytest.importorskip("distributed")
    mode = request.param
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        client.wait_for_workers(3)
        victim = sorted(client.scheduler_info()["workers"])[1]
        pid = client.run(os.getpid, workers=[victim])[victim]
        fired = threading.Event()

        def fault():
            if not fired.wait(60):
                return
            if mode == "stopped":
                os.kill(pid, signal.SIGSTOP)
                return
            try:
                client.run(os._exit, 1, workers=[victim])
            except (OSError, distributed.comm.CommClosedError):
                pass  # the worker died before it could answer

        def progress(record):
            if record["round"] >= 2:
                fired.set()

        thread = threading.Thread(target=fault, daemon=True)
        thread.start()
        try:
            yield SimpleNamespace(client=client, victim=victim, mode=mode, progress=progress, fired=fired)
        finally:
            thread.join(30)
            if mode == "stopped":
                with contextlib.suppress(ProcessLookupError):  # Dask may have replaced it
                    os.kill(pid, signal.SIGCONT)


@pytest.fixture(scope="session")
def internal_weight():
    """Louvain's internal weight counted anew in NumPy (the first term of Eq. (1): every
    vertex's self-loop plus its stored entries into its own community, fixed point), the
    reference for the changes the twins count from their movers. Host arrays in, an int out."""
    import numpy as np

    def count(indptr, indices, wfix, loop_fix, comm) -> int:
        rows = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
        return int(loop_fix.sum()) + int(wfix[comm[rows] == comm[indices]].sum())

    return count
