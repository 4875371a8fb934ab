"""Results handed back through shared memory when the client runs on the workers' host.

A cluster run ends with every worker's results in the client. Dask moves them through its comm
layer, a pickled copy over a socket: on one host under a gigabyte a second, which for the
results of a large graph (Suitor's pairs of rgg k=25: 268 MB; Louvain's labels of every level)
took longer than the whole computation. A client and a worker that see the same memory file
system as the same user (the same kernel, by its boot id; the same mount of ``/dev/shm``, by
its device and inode, as two containers on one host may each have their own) share it, so a
worker writes each large array to a file there (one copy) and hands back only its name; the
client reads the file into a new array (one copy) and removes it.

The files are named after the run (:func:`files_of`), so the client removes whatever a run
left, whether its tasks ended well or not (:func:`discard_run`), and on its way out, stopped by
a signal mid-run, those of the runs it was waiting for (:func:`track`). A worker on another host, a
host without a memory file system, or one too small for the array (a container's is 64 MB by
default) hands the array back through Dask as before.
"""

from __future__ import annotations

import atexit
import glob
import math
import os
import tempfile
from dataclasses import dataclass

import numpy as np

from ..errors import ClusterError

__all__ = ["Shared", "host_token", "pack", "unpack", "shared_bytes", "track", "discard_run", "files_of"]

#: The memory file system the files go to (Linux).
FOLDER = "/dev/shm"
_PREFIX = "mgmatch-result-"


@dataclass(frozen=True)
class Shared:
    """An array a worker left in a file of the host's memory file system."""

    path: str
    dtype: str
    shape: tuple

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize


def host_token() -> str | None:
    """What tells this process's memory file system from any other: the kernel's boot id and
    the folder's device and inode, and the user (a worker's files are its user's alone); ``None``
    where there is none to hand results back through (the results then go through Dask)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
        st = os.stat(FOLDER)
    except OSError:
        return None
    if not os.access(FOLDER, os.W_OK):
        return None
    return f"{boot}/{st.st_dev}/{st.st_ino}/{os.getuid()}"


def files_of(run: str) -> str:
    """The glob pattern of a run's files."""
    return os.path.join(FOLDER, f"{_PREFIX}{run}-*")


def pack(values: dict, token: str | None, run: str, min_bytes: int | None) -> dict:
    """``values`` with every NumPy array of at least ``min_bytes`` bytes (a value, or an item of
    a list or tuple value: Louvain's levels) written to a file and replaced by its
    :class:`Shared` name, when ``token`` (the client's :func:`host_token`) is this process's and
    the folder has room; else ``values`` as they are. ``min_bytes`` ``None``: never."""
    if min_bytes is None or token is None or token != host_token():
        return values

    def one(value):
        if isinstance(value, np.ndarray) and value.nbytes >= min_bytes and not value.dtype.hasobject:
            shared = _write(value, run)
            return value if shared is None else shared
        return value

    return {key: type(v)(one(x) for x in v) if isinstance(v, (list, tuple)) else one(v) for key, v in values.items()}


def _write(a: np.ndarray, run: str) -> Shared | None:
    """``a`` in a new file of the run, or ``None`` (no room: the array goes through Dask)."""
    try:
        st = os.statvfs(FOLDER)
        if st.f_bavail * st.f_frsize < 2 * a.nbytes:  # leave the file system as much again
            return None
        fd, path = tempfile.mkstemp(prefix=f"{_PREFIX}{run}-", dir=FOLDER)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "wb", buffering=0) as f:
            view, done = memoryview(np.ascontiguousarray(a).reshape(-1)).cast("B"), 0
            while done < a.nbytes:
                done += f.write(view[done:])
    except OSError:  # (filled meanwhile by another process)
        _remove(path)
        return None
    except BaseException:
        _remove(path)
        raise
    return Shared(path, a.dtype.str, tuple(a.shape))


def _items(values: dict):
    for v in values.values():
        yield from v if isinstance(v, (list, tuple)) else (v,)


def shared_bytes(values: dict) -> int:
    """Bytes of ``values`` left in files (before :func:`unpack`)."""
    return sum(v.nbytes for v in _items(values) if isinstance(v, Shared))


def unpack(values: dict) -> dict:
    """``values`` with each :class:`Shared` array read back into a new array, its file removed."""
    def one(value):
        return _read(value) if isinstance(value, Shared) else value

    return {key: type(v)(one(x) for x in v) if isinstance(v, (list, tuple)) else one(v) for key, v in values.items()}


def _read(s: Shared) -> np.ndarray:
    out = np.empty(s.shape, dtype=np.dtype(s.dtype))
    try:
        with open(s.path, "rb", buffering=0) as f:
            view, done = memoryview(out.reshape(-1)).cast("B"), 0
            while done < out.nbytes:
                got = f.readinto(view[done:])
                if not got:
                    raise OSError(f"it ended after {done} of {out.nbytes} bytes")
                done += got
    except OSError as exc:
        raise ClusterError(f"a worker's result in {s.path} could not be read back: {exc}") from None
    finally:
        _remove(s.path)
    return out


#: The runs this client waits for, whose files go when the process ends (:func:`track`).
_TRACKED: set = set()


def track(run: str) -> None:
    """Note that this client waits for ``run``: if the process ends first (a job stopped by
    SIGTERM unwinds and exits), what the run's workers wrote meanwhile is removed on the way out."""
    if not _TRACKED:
        atexit.unregister(_discard_tracked)
        atexit.register(_discard_tracked)
    _TRACKED.add(run)


def _discard_tracked() -> None:
    for run in list(_TRACKED):
        discard_run(run)


def discard_run(run: str) -> None:
    """Remove every file the run's workers left and the client did not read (a failed run)."""
    _TRACKED.discard(run)
    for path in glob.glob(files_of(run)):
        _remove(path)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
