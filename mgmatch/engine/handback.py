"""Results handed back through shared memory when the client runs on the workers' host.

A cluster run ends with every worker's results in the client. Dask moves them through its comm
layer, a pickled copy over a socket: on one host under a gigabyte a second, which for the
results of a large graph (Suitor's pairs of rgg k=25: 268 MB; Louvain's labels of every level)
took longer than the whole computation. So the client makes a folder for each run in its
memory file system, ``/dev/shm``, that only its user can enter (:func:`open_run`), and a worker
that finds that folder, owned by its own user, copies each large array into the pages of a file
there and hands back only its name. The copy is the one an in-process run makes to bring a
result to the host (straight from the GPU through page-locked buffers, by every thread); the
client maps the file, copies it out by every thread and removes it (:func:`unpack`), so that
no result it returns holds the file system's memory.

The folder is what tells a worker that it shares the client's memory: a worker on another host,
in a container with a ``/dev/shm`` of its own, or of another user (or user namespace, where the
folder's owner maps to another id) does not find it as its own, and hands its arrays back through
Dask, as does one whose memory file system has no room for an array (a container's is 64 MB by
default). The client removes the folder with whatever is in it when the run ends, well or not,
and on its way out when the process is stopped mid-run (:func:`close_run`); a worker that
finishes after that finds no folder and keeps its arrays.
"""

from __future__ import annotations

import atexit
import contextlib
import mmap
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass

import numpy as np

from .._array import copy_to_host, to_numpy
from ..errors import ClusterError

__all__ = ["Shared", "open_run", "close_run", "pack", "unpack", "shared_bytes", "FOLDER", "RUN_PREFIX"]

#: The memory file system the files go to (Linux).
FOLDER = "/dev/shm"
#: The name of a run's folder there begins with this.
RUN_PREFIX = "mgmatch-results-"


@dataclass(frozen=True)
class Shared:
    """An array a worker left in a file of the host's memory file system."""

    path: str
    dtype: np.dtype
    shape: tuple

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


#: The folders of the runs this client waits for, removed when the process ends.
_OPEN: set = set()


def open_run(min_bytes: int | None) -> str | None:
    """A new folder for one run's results (mode 0700), or ``None`` (nothing to hand back:
    ``min_bytes`` is ``None`` or there is no memory file system). Its name is unique among
    hosts too (a random 128-bit part), so a worker elsewhere never finds one of that name. It
    is removed at exit if :func:`close_run` has not removed it by then."""
    if min_bytes is None:
        return None
    try:
        folder = tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{uuid.uuid4().hex}-", dir=FOLDER)
    except OSError:
        return None
    if not _OPEN:  # (again at each first folder: the last registered runs first, before the exit
        # handlers of a cluster started since, which may wait on workers)
        atexit.unregister(_close_all)
        atexit.register(_close_all)
    _OPEN.add(folder)
    return folder


def close_run(folder: str | None) -> None:
    """Remove a run's folder and every file in it (read or not)."""
    if folder is None:
        return
    _OPEN.discard(folder)
    shutil.rmtree(folder, ignore_errors=True)
    if os.path.isdir(folder):  # (a worker wrote into it meanwhile)
        shutil.rmtree(folder, ignore_errors=True)


def _close_all() -> None:
    for folder in list(_OPEN):
        close_run(folder)


def pack(values: dict, folder: str | None, min_bytes: int | None) -> dict:
    """``values`` on the host: every NumPy or CuPy array of at least ``min_bytes`` bytes (a
    value, or an item of a list or tuple value: Louvain's levels) copied into a file in
    ``folder`` (the client's :func:`open_run`) and replaced by its :class:`Shared` name, when
    this process finds the folder as its own user's and it has room; any other device array
    copied to page-locked host memory."""
    share = min_bytes is not None and folder is not None and _ours(folder)

    def one(value):
        if share and _array(value) and value.nbytes >= max(min_bytes, 1) and not value.dtype.hasobject:
            shared = _write(value, folder)
            if shared is not None:
                return shared
        return to_numpy(value, pinned=True) if _array(value) else value

    return {key: type(v)(one(x) for x in v) if type(v) in (list, tuple) else one(v) for key, v in values.items()}


def _array(value) -> bool:
    """A NumPy array (not a subclass: a masked array's mask would not come along) or a CuPy one."""
    return type(value) is np.ndarray or (type(value).__name__ == "ndarray"
                                         and type(value).__module__.startswith("cupy"))


def _ours(folder: str) -> bool:
    """The folder is here, a folder, and this process's user's (whose files the client reads)."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return os.path.isdir(folder) and not os.path.islink(folder) and st.st_uid == os.getuid()


def _write(a, folder: str) -> Shared | None:
    """``a`` (NumPy or CuPy) in a new file of ``folder``, or ``None`` (no folder, no room: it goes
    through Dask). The file's pages are allocated before they are mapped (``posix_fallocate``),
    so a file system that fills meanwhile fails here, not with a bus error in the copy."""
    size = int(a.nbytes)
    try:
        st = os.statvfs(folder)
        if st.f_bavail * st.f_frsize < 2 * size:  # leave the file system as much again
            return None
        fd, path = tempfile.mkstemp(dir=folder)
    except OSError:  # (the client removed the folder: it no longer waits for this run)
        return None
    try:
        try:
            os.posix_fallocate(fd, 0, size)
            pages = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        with _closing(pages):
            copy_to_host(a, np.frombuffer(pages, dtype=np.uint8))
    except OSError:  # (filled meanwhile by another process)
        _remove(path)
        return None
    except BaseException:
        _remove(path)
        raise
    return Shared(path, np.dtype(a.dtype), tuple(a.shape))


def _items(values: dict):
    for v in values.values():
        yield from v if type(v) in (list, tuple) else (v,)


def shared_bytes(values: dict) -> int:
    """Bytes of ``values`` left in files (before :func:`unpack`)."""
    return sum(v.nbytes for v in _items(values) if isinstance(v, Shared))


def unpack(values: dict) -> dict:
    """``values`` with each :class:`Shared` array read back into a new array, its file removed."""
    def one(value):
        return _read(value) if isinstance(value, Shared) else value

    return {key: type(v)(one(x) for x in v) if type(v) in (list, tuple) else one(v) for key, v in values.items()}


def _read(s: Shared) -> np.ndarray:
    """The file's array, copied by every thread out of a mapping that is closed at once: an array
    left on the mapping would hold the memory file system's pages (and a file descriptor) for as
    long as the caller keeps it, where other runs and NCCL need that room."""
    try:
        with open(s.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size != s.nbytes:
                raise OSError(f"it holds {size} of {s.nbytes} bytes")
            pages = mmap.mmap(f.fileno(), size, mmap.MAP_SHARED, mmap.PROT_READ)
    except OSError as exc:
        raise ClusterError(f"a worker's result in {s.path} could not be read back: {exc}") from None
    finally:
        _remove(s.path)
    out = np.empty(s.shape, dtype=s.dtype)
    with _closing(pages):
        copy_to_host(np.frombuffer(pages, dtype=np.uint8), out)
    return out


@contextlib.contextmanager
def _closing(pages: mmap.mmap):
    """Unmap ``pages`` when the block ends; after a failed copy, whose traceback still holds a
    view of them, they are unmapped with it."""
    try:
        yield pages
    finally:
        try:
            pages.close()
        except BufferError:
            pass


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:  # (gone already, or the folder with it)
        pass
