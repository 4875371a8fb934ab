"""Checks on the paths a job reads and writes, made before any work.

Every file that mgmatch writes (a result table, its JSON summary, a performance report) must be
none of the files it reads (the graph, a file of b values, a pipeline file) and none of the
other files it writes: otherwise one replaces the other, and the job ends with exit status 0
and a file that holds something else than its name says. Paths are compared as files (device
and inode) where they exist, else by their resolved names, so a link or a relative path that
names the same file is caught too.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from .errors import InputError, ParameterError

__all__ = ["check_job_paths", "same_file", "symlink_loop", "require_utf8_name"]


def symlink_loop(path) -> bool:
    """Whether ``path`` is (or passes through) a loop of symbolic links.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     loop = Path(tmp) / "loop"
    ...     loop.symlink_to(loop)
    ...     symlink_loop(loop), symlink_loop(Path(tmp))
    (True, False)
    """
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def require_utf8_name(path, *, writing: bool) -> None:
    """Refuse a path whose name is not UTF-8 text. A Linux file name may hold any bytes, which
    Python keeps as surrogate escapes; the Arrow and SciPy readers and writers take UTF-8 paths
    only and fail on such a name with an encoding or type error. An input is an
    :class:`InputError`, an output a :class:`ParameterError`.

    >>> require_utf8_name("m\u00e9.csv", writing=True)
    >>> require_utf8_name(os.fsdecode(b"m\\xff.csv"), writing=True)
    Traceback (most recent call last):
    ...
    mgmatch.errors.ParameterError: m\\xff.csv: the file name is not UTF-8 text, which mgmatch's readers and writers need; rename it
    """
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(text).decode("utf-8", "backslashreplace")
        why = "the file name is not UTF-8 text, which mgmatch's readers and writers need; rename it"
        if writing:
            raise ParameterError(f"{shown}: {why}") from None
        raise InputError(why, path=shown) from None


def same_file(a, b) -> bool:
    """Whether ``a`` and ``b`` name the same file (existing or not).

    >>> same_file("out/m.csv", "out/../out/m.csv"), same_file("a.csv", "b.csv")
    (True, False)
    """
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_job_paths(reads: dict, writes: dict) -> None:
    """Refuse a job whose outputs would overwrite one of its inputs or one another.

    Parameters
    ----------
    reads : dict of str to path
        What the job reads, by the name a message uses (``{"input": ..., "--b file": ...}``);
        ``None`` values and streams (``/dev/stdin``) are skipped.
    writes : dict of str to path
        What the job writes (``{"output": ..., "summary": ..., "report": ...}``); ``None``
        values are skipped.

    Raises
    ------
    InputError
        An input is a loop of symbolic links.
    ParameterError
        An output is a loop of symbolic links, a directory, one of the inputs, or another output.

    Examples
    --------
    >>> check_job_paths({"input": "g.mtx"}, {"output": "m.csv", "report": "g.mtx"})
    Traceback (most recent call last):
    ...
    mgmatch.errors.ParameterError: report g.mtx is the input file; writing it would overwrite it
    """
    reads = {what: Path(p) for what, p in reads.items() if p is not None}
    writes = {what: Path(p) for what, p in writes.items() if p is not None}
    for path in reads.values():
        require_utf8_name(path, writing=False)
    for path in writes.values():
        require_utf8_name(path, writing=True)
    for what, path in reads.items():
        if symlink_loop(path):
            raise InputError("is a loop of symbolic links", path=path)
    seen = []
    for what, path in writes.items():
        if symlink_loop(path):
            raise ParameterError(f"{what} {path} is a loop of symbolic links")
        if path.is_dir():
            raise ParameterError(f"{what} {path} is a directory")
        for other, source in reads.items():
            if _regular_or_missing(source) and same_file(path, source):
                raise ParameterError(f"{what} {path} is the {other} file; writing it would overwrite it")
        for other, target in seen:
            if same_file(path, target):
                raise ParameterError(f"{what} and {other} are the same file, {path}; give each its own path")
        seen.append((what, path))


def _regular_or_missing(path: Path) -> bool:
    """A file that writing could replace: not a stream such as ``/dev/stdin``, which reads and
    writes may both name (``-`` in, ``/dev/stdout`` out) without one clobbering the other."""
    try:
        return os.path.isfile(path) or not os.path.exists(path)
    except OSError:
        return True
