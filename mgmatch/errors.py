"""Exceptions raised by mgmatch.

Every problem a user can cause (a malformed file, a bad parameter, a graph that will not fit)
is raised as a subclass of :class:`MgmatchError` with a message that names the problem; the
command line prints that message on one line and exits with status 2.
"""

from __future__ import annotations

__all__ = ["MgmatchError", "InputError", "ParameterError", "NotAGraphError", "ResourceError", "ClusterError"]


class MgmatchError(Exception):
    """Base class of every error that mgmatch raises on purpose."""


class InputError(MgmatchError, ValueError):
    """Input data (a file or arrays) is malformed or invalid.

    Parameters
    ----------
    message : str
        What is wrong.
    path : str or os.PathLike, optional
        The file the problem was found in.
    line : int, optional
        The 1-based line number in ``path``, when known.

    Examples
    --------
    >>> str(InputError("weight is not a number", path="g.csv", line=3))
    'g.csv, line 3: weight is not a number'
    """

    def __init__(self, message: str, *, path=None, line: int | None = None):
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        where = []
        if self.path is not None:
            where.append(self.path)
        if line is not None:
            where.append(f"line {line}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class ParameterError(MgmatchError, ValueError):
    """A parameter of an mgmatch call is out of its domain."""


class NotAGraphError(ParameterError, InputError):
    """What was passed as the graph is none of the kinds an algorithm takes: a wrong argument
    (a :class:`ParameterError`) and unusable input (an :class:`InputError`) at once, so that
    code catching either of them catches it."""


class ResourceError(MgmatchError, RuntimeError):
    """The job does not fit the device or machine it was asked to run on."""


class ClusterError(MgmatchError, RuntimeError):
    """The Dask cluster cannot be reached or cannot run the job."""


def out_of_device_memory(exc: BaseException) -> bool:
    """Whether ``exc`` says the GPU ran out of memory: CuPy's pool (``OutOfMemoryError``), the
    CUDA runtime (``cudaErrorMemoryAllocation``), or the scratch of a CuPy sort, which Thrust
    reports as ``std::bad_alloc``."""
    return ("OutOfMemory" in type(exc).__name__ or "cudaErrorMemoryAllocation" in str(exc)
            or (isinstance(exc, MemoryError) and "bad_alloc" in str(exc)))
