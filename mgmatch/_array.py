"""Array namespaces: NumPy on the CPU, CuPy on the GPU.

Callers resolve the namespace once with :func:`get_namespace` and pass it down; results leave
the device only through :func:`to_numpy`.
"""

from __future__ import annotations

import functools

import numpy as np

from .errors import ParameterError, ResourceError

__all__ = ["get_namespace", "to_numpy", "to_numpy_rows", "to_device", "cupy_or_none", "gpu_available",
           "resolve_device", "check_host_memory"]

#: Host arrays at least this large are page-locked for their copy to the GPU: the copy then
#: runs at the bus's speed instead of through the driver's pageable staging (several times
#: slower), and locking costs less than the difference. Smaller arrays are copied as they are.
PIN_MIN_BYTES = 64 << 20


@functools.cache
def cupy_or_none():
    """Return the ``cupy`` module when it imports and sees a CUDA device, else ``None``."""
    try:
        import cupy  # noqa: PLC0415

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        return cupy
    except Exception:  # ImportError, CUDARuntimeError (no driver), ...
        return None


def gpu_available() -> bool:
    """True when CuPy imports and at least one CUDA device is visible."""
    return cupy_or_none() is not None


def get_namespace(*arrays):
    """The array module (``numpy`` or ``cupy``) that holds ``arrays``.

    >>> get_namespace(np.zeros(3)) is np
    True
    """
    for a in arrays:
        if a is None or isinstance(a, np.ndarray):
            continue
        mod = type(a).__module__
        if mod.startswith("cupy"):
            return cupy_or_none()
    return np


def to_numpy(a, *, pinned: bool = False):
    """The one device-to-host exit: return ``a`` as a NumPy array (no copy for NumPy input).

    With ``pinned`` a device array of at least 1 MiB lands in page-locked memory from CuPy's
    pinned pool, which the copy fills at the bus's speed (for short-lived arrays such as
    messages; the pool keeps what it has handed out)."""
    if a is None or isinstance(a, np.ndarray):
        return a
    if type(a).__module__.startswith("cupy"):
        if pinned and a.nbytes >= (1 << 20):
            import cupyx  # noqa: PLC0415

            out = cupyx.empty_pinned(a.shape, dtype=a.dtype)
            a.get(out=out)
            return out
        return a.get()
    return np.asarray(a)


#: Rows at least this long are copied by every thread, and device rows that long come back in
#: pieces of this many entries (see :func:`to_numpy_rows`).
ROW_PIECE = 1 << 20


def to_numpy_rows(arrays, dtype=np.int64) -> list:
    """``arrays`` (NumPy or CuPy, of one length) as the rows of one new NumPy array of
    ``dtype``; arrays that are NumPy arrays of ``dtype`` already are returned as they are.

    Long rows are written by every thread, and long device rows come back in pieces through two
    page-locked buffers, each piece's copy in flight while the one before it is written. Most of
    the cost is the first touch of the new memory, which one thread paid alone when each level
    was copied to a new host array and widened there: for a large GPU Louvain run that was a
    large share of the run (docs/performance.md, section "Result rows back to the host").
    """
    if all(isinstance(a, np.ndarray) and a.dtype == dtype for a in arrays):
        return list(arrays)
    n = int(arrays[0].shape[0])
    out = np.empty((len(arrays), n), dtype=dtype)
    if n < ROW_PIECE:
        for row, a in zip(out, arrays):
            row[:] = to_numpy(a)
        return list(out)
    from .cpu.graph_build import copy_parallel  # noqa: PLC0415

    device = [i for i, a in enumerate(arrays) if not isinstance(a, np.ndarray)]
    if device:
        _pieces_to_host([arrays[i] for i in device], [out[i] for i in device], copy_parallel)
    for i, a in enumerate(arrays):
        if isinstance(a, np.ndarray):
            copy_parallel(a, out[i])
    return list(out)


def concat_to_host(arrays, dtype) -> np.ndarray:
    """``arrays`` (NumPy or CuPy, of any lengths) end to end in one new NumPy array of
    ``dtype``: the pieces of a result column that every partition hands back, copied (and
    widened) as :func:`to_numpy_rows` copies rows, by every thread and through page-locked
    buffers."""
    arrays = list(arrays)
    if len(arrays) == 1 and isinstance(arrays[0], np.ndarray) and arrays[0].dtype == dtype:
        return arrays[0]
    out = np.empty(sum(int(a.shape[0]) for a in arrays), dtype=dtype)
    from .cpu.graph_build import copy_parallel  # noqa: PLC0415

    start = 0
    for a in arrays:
        size = int(a.shape[0])
        piece = out[start:start + size]
        start += size
        if size < ROW_PIECE:
            piece[:] = to_numpy(a)
        elif isinstance(a, np.ndarray):
            copy_parallel(a, piece)
        else:
            _pieces_to_host([a], [piece], copy_parallel)
    return out


def copy_to_host(a, out: np.ndarray) -> None:
    """``a`` (NumPy or CuPy, of ``out``'s size in bytes) into the contiguous host array ``out``
    byte for byte, as :func:`concat_to_host` copies: by every thread, a device array through two
    page-locked buffers (the results a worker leaves in shared memory)."""
    from .cpu.graph_build import copy_parallel  # noqa: PLC0415

    if a.nbytes != out.nbytes:
        raise ValueError(f"copy_to_host: {a.nbytes} bytes into {out.nbytes}")
    if out.nbytes == 0:
        return
    word = np.uint64 if out.nbytes % 8 == 0 else np.uint8  # whole words where the size allows
    dst = out.reshape(-1).view(np.uint8).view(word)
    if isinstance(a, np.ndarray):
        copy_parallel(np.ascontiguousarray(a).reshape(-1).view(np.uint8).view(word), dst)
        return
    import cupy as cp  # noqa: PLC0415

    _pieces_to_host([cp.ascontiguousarray(a).reshape(-1).view(cp.uint8).view(word)], [dst], copy_parallel)


def _pieces_to_host(arrays, rows, copy) -> None:
    """Device ``arrays`` into host ``rows``, :data:`ROW_PIECE` entries at a time."""
    import cupy as cp  # noqa: PLC0415
    import cupyx  # noqa: PLC0415

    n = int(arrays[0].shape[0])
    size = min(n, ROW_PIECE)
    stages = [cupyx.empty_pinned(size, dtype=arrays[0].dtype) for _ in range(2)]
    stream = cp.cuda.get_current_stream()  # the stream that computed the arrays
    pieces = [(i, lo, min(lo + size, n)) for i in range(len(arrays)) for lo in range(0, n, size)]
    ready = [None, None]

    def fetch(j):
        i, lo, hi = pieces[j]
        arrays[i][lo:hi].get(stream=stream, out=stages[j % 2][: hi - lo], blocking=False)
        ready[j % 2] = stream.record()

    for j in range(min(2, len(pieces))):
        fetch(j)
    for j, (i, lo, hi) in enumerate(pieces):
        ready[j % 2].synchronize()
        copy(stages[j % 2][: hi - lo], rows[i][lo:hi])
        if j + 2 < len(pieces):
            fetch(j + 2)


def to_device(a, *, keep_pinned: bool = False):
    """The one host-to-device entry: ``a`` as a CuPy array (no copy for CuPy input).

    Arrays of at least :data:`PIN_MIN_BYTES` are page-locked (``cudaHostRegister``) for the
    copy. With ``keep_pinned`` the array stays locked until it is freed,
    so later copies of it (a partition loaded again for every run on a worker) skip the
    locking. Where locking fails (memory already locked, a read-only mapping) the copy is
    made as it is.
    """
    cp = cupy_or_none()
    if not isinstance(a, np.ndarray):
        return cp.asarray(a)
    a = np.ascontiguousarray(a)
    if a.nbytes < PIN_MIN_BYTES:
        return cp.asarray(a)
    registered = _register(cp, a)
    out = cp.empty(a.shape, dtype=a.dtype)
    out.set(a)
    if registered:
        cp.cuda.get_current_stream().synchronize()  # the copy reads the locked pages
        if registered is True and keep_pinned:
            import weakref  # noqa: PLC0415

            # unlocked when ``a`` is freed: ``a`` keeps its memory alive until then
            weakref.finalize(a, _unregister, cp, a.ctypes.data)
        elif registered is True:
            _unregister(cp, a.ctypes.data)
    return out


def _register(cp, a: np.ndarray):
    """Page-lock ``a``: True if done here, ``"already"`` if it was, False if it cannot be."""
    ptr = a.ctypes.data
    try:
        attrs = cp.cuda.runtime.pointerGetAttributes(ptr)
        if attrs.type == cp.cuda.runtime.memoryTypeHost:
            return "already"
    except Exception:  # older drivers raise for pageable memory
        pass
    try:
        cp.cuda.runtime.hostRegister(ptr, a.nbytes, 0)
        return True
    except Exception:
        return False


def _unregister(cp, ptr: int) -> None:
    try:
        cp.cuda.runtime.hostUnregister(ptr)
    except Exception:  # pragma: no cover - already gone with its context
        pass


def resolve_device(device: str) -> str:
    """Map ``"auto" | "cpu" | "gpu"`` to the device a call runs on.

    ``auto`` picks the GPU when CuPy sees one. Asking for ``gpu`` on a machine without one
    raises :class:`~mgmatch.errors.ResourceError`.

    >>> resolve_device("cpu")
    'cpu'
    """
    if device not in ("auto", "cpu", "gpu"):
        raise ParameterError(f"device must be 'auto', 'cpu' or 'gpu', not {device!r}")
    if device == "auto":
        return "gpu" if gpu_available() else "cpu"
    if device == "gpu" and not gpu_available():
        raise ResourceError("device='gpu' was asked for, but CuPy sees no CUDA device here")
    return device


def check_host_memory(what: str, estimate_bytes: float) -> None:
    """Refuse work whose arrays alone would exceed this machine's physical memory, with one
    :class:`~mgmatch.errors.ResourceError` instead of a failed allocation.

    >>> check_host_memory("a small graph", 1024)
    """
    try:
        import psutil  # noqa: PLC0415

        total = psutil.virtual_memory().total
    except ImportError:  # pragma: no cover
        import os  # noqa: PLC0415

        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if estimate_bytes > total:
        raise ResourceError(
            f"{what} needs about {estimate_bytes / 2**30:,.0f} GiB of memory; this machine has "
            f"{total / 2**30:,.0f} GiB"
        )
