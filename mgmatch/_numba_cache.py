"""Where Numba keeps the compiled CPU twins.

Numba caches a ``cache=True`` function beside its source (``__pycache__``) or in the user's cache
directory, and refuses to compile it when it can write to neither: a read-only install run
under a user without a home directory (a container started with an arbitrary user id) then fails
at ``import mgmatch``. :func:`ensure_numba_cache` points Numba at a directory under the system's
temporary directory in that case, and leaves every other setup (``NUMBA_CACHE_DIR`` included) as
it is.

:func:`serial_twin` compiles a parallel function's body again for the calling thread alone, under
a name of its own: Numba names a function's cache files after its qualified name and first line,
so a twin made from the same Python function would share the parallel one's files, and
whichever of the two was compiled first on a machine would then run for both.
"""

from __future__ import annotations

import os
import tempfile
import types
from pathlib import Path

__all__ = ["ensure_numba_cache", "serial_twin"]


def _writable(directory: Path) -> bool:
    """Whether files can be created in ``directory`` (made if missing), as Numba checks it."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=directory).close()
    except OSError:
        return False
    return True


def _user_cache_dir() -> Path:
    from numba.misc.appdirs import AppDirs  # noqa: PLC0415

    return Path(AppDirs(appname="numba", appauthor=False).user_cache_dir)


def ensure_numba_cache(source_dir: Path | None = None) -> str | None:
    """Give Numba a writable cache directory if it would find none; return it, or ``None`` when
    Numba's own choice stands."""
    from numba.core import config  # noqa: PLC0415

    if config.CACHE_DIR:
        return None
    source_dir = Path(__file__).parent / "cpu" if source_dir is None else Path(source_dir)
    if _writable(source_dir / "__pycache__"):
        return None
    try:
        if _writable(_user_cache_dir()):
            return None
    except (OSError, KeyError, RuntimeError):  # no home directory to speak of
        pass
    uid = getattr(os, "getuid", lambda: "user")()
    fallback = str(Path(tempfile.gettempdir()) / f"mgmatch-numba-cache-{uid}")
    config.CACHE_DIR = fallback
    return fallback


def serial_twin(parallel):
    """``parallel``'s body (a ``njit(parallel=True)`` dispatcher) compiled for one thread, and
    cached apart from it (see the module notes)."""
    from numba import njit  # noqa: PLC0415

    py = parallel.py_func
    body = types.FunctionType(py.__code__, py.__globals__, py.__name__ + "_serial", py.__defaults__, py.__closure__)
    body.__qualname__ = py.__qualname__ + "_serial"
    body.__module__ = py.__module__
    body.__doc__ = py.__doc__
    return njit(cache=True)(body)
