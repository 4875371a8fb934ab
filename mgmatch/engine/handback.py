"""Results handed back through the host's memory when the client runs on the workers' host.

A cluster run ends with every worker's results in the client. Dask moves them through its comm
layer, a pickled copy over a socket: on one host under a gigabyte a second, which for the
results of a large graph (Suitor's pairs of rgg k=25: 268 MB; Louvain's labels of every level)
took longer than the whole computation. So the client makes a folder for each run in its
memory file system, ``/dev/shm``, that only its user can enter (:func:`open_run`), and a worker
that finds that folder, owned by its own user, hands each large array back another way:

* an array on a GPU the client can reach (the run's :class:`Route` names the GPUs the client
  sees, by PCI bus id) is copied on the device into an allocation of its own, which the worker
  keeps, and handed back as a CUDA IPC handle (:class:`DeviceShared`). The client maps it and
  copies it to its memory by every thread through two page-locked buffers, the one copy an
  in-process run makes to bring its result to the host; it then tells the workers to free their
  copies (:func:`release`). If the client cannot map it (no CUDA context to be had on that GPU:
  exclusive compute mode, no memory left), the worker hands the array back again through a file
  (:func:`repack`);
* any other array is copied into the pages of a file in the folder, straight from the GPU
  through page-locked buffers by every thread for a device array, and only the file's name is
  handed back (:class:`Shared`). The client maps the file, copies it out by every thread and
  removes it (:func:`unpack`), so that no result it returns holds the file system's memory.

The folder is what tells a worker that it shares the client's host: a worker on another host,
in a container with a ``/dev/shm`` of its own, or of another user (or user namespace, where the
folder's owner maps to another id) does not find it as its own, and hands its arrays back through
Dask, as does one whose memory file system has no room for an array (a container's is 64 MB by
default). The client removes the folder with whatever is in it when the run ends, well or not,
and on its way out when the process is stopped mid-run (:func:`close_run`); a worker that
finishes after that finds no folder and keeps its arrays, and a worker frees the device copies
of a run whose folder is gone the next time it hands results back.
"""

from __future__ import annotations

import atexit
import contextlib
import mmap
import os
import shutil
import tempfile
import threading
import uuid
from dataclasses import dataclass

import numpy as np

from .._array import copy_to_host, cupy_or_none, to_numpy
from ..errors import ClusterError

__all__ = ["Route", "Shared", "DeviceShared", "open_run", "close_run", "pack", "unpack", "unmapped", "repack",
           "release", "shared_bytes", "FOLDER", "RUN_PREFIX"]

#: The memory file system the files go to (Linux).
FOLDER = "/dev/shm"
#: The name of a run's folder there begins with this.
RUN_PREFIX = "mgmatch-results-"


class _Sized:
    """An array's bytes, from its ``dtype`` and ``shape``."""

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass(frozen=True)
class Shared(_Sized):
    """An array a worker left in a file of the host's memory file system."""

    path: str
    dtype: np.dtype
    shape: tuple


@dataclass(frozen=True)
class DeviceShared(_Sized):
    """An array a worker keeps in an allocation of its own on the GPU of PCI bus id ``bus``,
    which the client maps through the CUDA IPC ``handle`` (``key`` names it to the worker)."""

    bus: str
    handle: bytes
    key: str
    pid: int
    dtype: np.dtype
    shape: tuple


@dataclass(frozen=True)
class Route:
    """How a run's results may come back: ``folder`` (the client's, in its memory file system),
    the PCI bus ids of the GPUs whose memory the client may map (``buses``; empty: none)."""

    folder: str
    buses: tuple = ()


#: The folders of the runs this client waits for, removed when the process ends.
_OPEN: set = set()


def open_run(min_bytes: int | None, device: bool = False) -> Route | None:
    """The route of one run's results: a new folder (mode 0700) and, with ``device``, the GPUs
    this process sees and has not failed to map (:func:`mappable_buses`); or ``None`` (nothing
    to hand back: ``min_bytes`` is ``None`` or there is no memory file system). The folder's name
    is unique among hosts too (a random 128-bit part), so a worker elsewhere never finds one of
    that name. It is removed at exit if :func:`close_run` has not removed it by then."""
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
    return Route(folder, mappable_buses() if device else ())


#: PCI bus ids of the GPUs on which this process failed to map a worker's memory: it does not
#: ask for device hand-backs there again.
_UNMAPPABLE: set = set()


def mappable_buses() -> tuple:
    """The PCI bus ids of the GPUs this process sees (no CUDA context is made to learn them),
    less those where mapping failed before."""
    cp = cupy_or_none()
    if cp is None:
        return ()
    try:
        buses = [cp.cuda.runtime.deviceGetPCIBusId(d) for d in range(cp.cuda.runtime.getDeviceCount())]
    except cp.cuda.runtime.CUDARuntimeError:
        return ()
    return tuple(b for b in buses if b not in _UNMAPPABLE)


def close_run(route: Route | None) -> None:
    """Remove a run's folder and every file in it (read or not)."""
    if route is not None:
        _remove_run(route.folder)


def _remove_run(folder: str) -> None:
    _OPEN.discard(folder)
    shutil.rmtree(folder, ignore_errors=True)
    if os.path.isdir(folder):  # (a worker wrote into it meanwhile)
        shutil.rmtree(folder, ignore_errors=True)


def _close_all() -> None:
    for folder in list(_OPEN):
        _remove_run(folder)


def pack(values: dict, route: Route | None, min_bytes: int | None) -> dict:
    """``values`` for the client: every NumPy or CuPy array of at least ``min_bytes`` bytes (a
    value, or an item of a list or tuple value: Louvain's levels) handed back through the host,
    when this process finds the route's folder (the client's :func:`open_run`) as its own
    user's: a device array on a GPU of the route as a :class:`DeviceShared` copy kept here,
    any other one copied into a file of the folder, where it has room, as a :class:`Shared`
    name. Any other device array is copied to page-locked host memory."""
    _sweep()
    share = min_bytes is not None and route is not None and _ours(route.folder)

    def one(value):
        if share and _array(value) and value.nbytes >= max(min_bytes, 1) and not value.dtype.hasobject:
            shared = (_hold(value, route) if route.buses and not isinstance(value, np.ndarray) else None) \
                or _write(value, route.folder)
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


#: The device copies this process hands back (:func:`_hold`), by run folder and key, until the
#: client has copied them (:func:`release`) or the run's folder is gone (:func:`_sweep`).
_HELD: dict = {}
_HELD_LOCK = threading.Lock()


def _hold(a, route: Route) -> DeviceShared | None:
    """A copy of device array ``a`` in an allocation of its own (an IPC handle names the start
    of an allocation, and the memory pool's blocks are parts of larger ones), kept in
    :data:`_HELD`; ``None`` when ``a``'s GPU is not one the client maps or there is no room
    for the copy (the array then goes through a file)."""
    cp = cupy_or_none()
    with a.device:
        try:
            bus = cp.cuda.runtime.deviceGetPCIBusId(a.device.id)
            if bus not in route.buses:
                return None
            memory = cp.cuda.Memory(a.nbytes)
        except cp.cuda.runtime.CUDARuntimeError:
            return None
        copy = cp.ndarray(a.shape, a.dtype, cp.cuda.MemoryPointer(memory, 0))
        copy[...] = a
        cp.cuda.get_current_stream().synchronize()  # (the client reads it from another process)
        handle = bytes(cp.cuda.runtime.ipcGetMemHandle(memory.ptr))
    key = uuid.uuid4().hex
    with _HELD_LOCK:
        _HELD.setdefault(route.folder, {})[key] = copy
    return DeviceShared(bus, handle, key, os.getpid(), np.dtype(a.dtype), tuple(a.shape))


def release(folder: str) -> None:
    """Free the device copies this process keeps for the run of ``folder`` (the client has
    copied them, or given up on the run)."""
    with _HELD_LOCK:
        _HELD.pop(folder, None)


def _sweep() -> None:
    """Free the device copies of runs whose folder is gone: their client will not ask for them."""
    with _HELD_LOCK:
        for folder in [f for f in _HELD if not os.path.isdir(f)]:
            del _HELD[folder]


def repack(folder: str, keys: list, min_bytes: int | None) -> dict:
    """The device copies named by ``keys`` that this process keeps for the run of ``folder``,
    by key, handed back again through files or Dask (the client could not map them)."""
    with _HELD_LOCK:
        held = dict(_HELD.get(folder, {}))
    return pack({k: held[k] for k in keys if k in held}, Route(folder), min_bytes)


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
    """Bytes of ``values`` left in files or on a worker's device (before :func:`unpack`)."""
    return sum(v.nbytes for v in _items(values) if isinstance(v, (Shared, DeviceShared)))


def unmapped(values: dict) -> list:
    """The :class:`DeviceShared` items of ``values`` (after :func:`unpack`: those it could not map)."""
    return [v for v in _items(values) if isinstance(v, DeviceShared)]


def unpack(values: dict, again: dict | None = None) -> dict:
    """``values`` with each :class:`Shared` array read back into a new array, its file removed,
    and each :class:`DeviceShared` one copied from the worker's GPU, or left as it is where this
    process cannot map it (:func:`unmapped`); ``again`` holds, by key, what the workers handed
    back instead of those (:func:`repack`)."""
    def one(value):
        if isinstance(value, DeviceShared) and again is not None and value.key in again:
            value = again[value.key]
        if isinstance(value, DeviceShared):
            return _map(value)
        return _read(value) if isinstance(value, Shared) else value

    return {key: type(v)(one(x) for x in v) if type(v) in (list, tuple) else one(v) for key, v in values.items()}


def _map(s: DeviceShared):
    """The worker's device copy ``s`` in a new host array, or ``s`` itself where this process
    cannot map it (its GPU is then left out of later routes: :func:`mappable_buses`)."""
    cp = cupy_or_none()
    out = np.empty(s.shape, dtype=s.dtype)
    if s.pid == os.getpid():  # (a worker thread of this process: no mapping needed, nor possible)
        with _HELD_LOCK:
            held = next((run[s.key] for run in _HELD.values() if s.key in run), None)
        if held is None:
            raise ClusterError(f"a worker's result on GPU {s.bus} was freed before it was read back")
        with held.device:
            copy_to_host(held, out)
        return out
    if cp is None:
        return s
    try:
        device = cp.cuda.runtime.deviceGetByPCIBusId(s.bus)
        with cp.cuda.Device(device):
            ptr = cp.cuda.runtime.ipcOpenMemHandle(s.handle)
            try:
                memory = cp.cuda.UnownedMemory(ptr, s.nbytes, s, device)
                copy_to_host(cp.ndarray(s.shape, s.dtype, cp.cuda.MemoryPointer(memory, 0)), out)
            finally:
                cp.cuda.runtime.ipcCloseMemHandle(ptr)
    except cp.cuda.runtime.CUDARuntimeError:
        _UNMAPPABLE.add(s.bus)
        return s
    return out


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
