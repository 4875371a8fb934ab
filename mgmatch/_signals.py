"""SIGTERM and SIGHUP handled as SIGINT is: the job unwinds, and what it was writing goes.

``timeout``, SLURM, Kubernetes and systemd stop a job with SIGTERM (a closed terminal sends
SIGHUP). Python's default for both is to die at once, which leaves behind every temporary
file a ``finally`` block would have removed: the hidden ``.partial`` files of
:func:`mgmatch.io.atomic_path` and the spool file of a stream input. Inside
:func:`terminate_as_interrupt` either signal raises :class:`Terminated`, a
``KeyboardInterrupt``, so every clean-up that runs on Ctrl-C runs on them too.

Some code swallows that exception where it lands: a C extension that clears any error while it
imports a module (pyarrow importing pandas on its first conversion), or a garbage-collector
callback, whose exceptions Python prints and drops. The signal is therefore also recorded, and
:func:`raise_if_stopped` raises it again where an output is about to be committed.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

__all__ = ["Terminated", "terminate_as_interrupt", "raise_if_stopped", "stop_signals_deferred", "note_written",
           "written", "outputs_complete", "stopped_after_outputs", "exit_at_once_on_stop",
           "stop_at_once_until_handled"]

#: The signals that stop a batch job, by name.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
#: Those and Ctrl-C's SIGINT: inside :func:`terminate_as_interrupt` all three raise
#: :class:`Terminated` and are recorded, as an extension that swallows the exception (pyarrow
#: importing pandas) would otherwise lose a Ctrl-C and let the job run on to the end.
HANDLED = (signal.SIGINT, *STOP_SIGNALS)


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by ``signum`` (SIGTERM, SIGHUP, or SIGINT: Ctrl-C)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


#: The stop signals delivered inside :func:`terminate_as_interrupt` (emptied on entering and
#: leaving it).
_received: list[int] = []


#: Outputs committed inside :func:`terminate_as_interrupt` (emptied on entering it), for the
#: message of a stop that comes after some of them.
_written: list[str] = []
#: The stop signal that came after :func:`outputs_complete` (then recorded, not raised).
_late: list[int] = []


def note_written(path) -> None:
    """Record that ``path`` now holds a complete output (an atomic write's rename)."""
    _written.append(str(path))


def written() -> list[str]:
    """The outputs committed since the block of :func:`terminate_as_interrupt` began."""
    return list(_written)


def outputs_complete() -> None:
    """The command's outputs are all written: from here a stop signal no longer undoes the job.
    The first is recorded (:func:`stopped_after_outputs`) and the closing goes on (an embedded
    cluster shuts down as it would have, instead of being cut off mid-way); a second acts at
    once. Only inside :func:`terminate_as_interrupt`, on the main thread.

    >>> import os
    >>> with terminate_as_interrupt():
    ...     outputs_complete()
    ...     os.kill(os.getpid(), signal.SIGTERM)
    ...     print("closed", stopped_after_outputs())
    closed SIGTERM
    """
    if threading.current_thread() is not threading.main_thread():
        return

    def record(signum, frame):
        _late.append(signum)
        if len(_late) > 1:
            _raise_terminated(signum, frame)

    for signum in HANDLED:
        if signal.getsignal(signum) is _raise_terminated:
            signal.signal(signum, record)


def stopped_after_outputs() -> str | None:
    """The name of the stop signal that came after :func:`outputs_complete`, if one did."""
    return signal.Signals(_late[0]).name if _late else None


def exit_at_once_on_stop() -> None:
    """For a process whose command has finished well and which now winds down: a stop signal
    ends it at once, with status 0, as nothing it did is undone (by default the signal killed it
    with status 143 while its outputs stood complete). From the exit handlers on, where the
    interpreter puts back the default action of every signal that has a Python handler, the
    stop signals are ignored instead: what is left is freeing memory. Only on the main thread;
    an ignored signal stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    import atexit  # noqa: PLC0415

    for signum in HANDLED:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _leave)
    atexit.register(_ignore_stops)


def stop_at_once_until_handled() -> None:
    """For a program's start: Ctrl-C ends it at once with the one-line message and status 130
    until :func:`terminate_as_interrupt` takes SIGINT over (nothing is written before that, and
    Python's own ``KeyboardInterrupt`` there ended in a traceback or click's ``Aborted!``). Only
    on the main thread, and only where SIGINT has Python's own handler."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _stop_at_once)


def _stop_at_once(signum, frame):
    import os  # noqa: PLC0415

    _say("mgmatch: interrupted; no output written")
    os._exit(128 + signum)


def _say(line: str) -> None:
    """One line on standard error from a signal handler that ends the process: written at once,
    past Python's buffered streams."""
    import os  # noqa: PLC0415

    try:
        os.write(2, (line + "\n").encode())
    except OSError:
        pass


def _leave(signum, frame):
    import os  # noqa: PLC0415

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _say(f"mgmatch: {signal.Signals(signum).name} came after the command had finished; its outputs are complete")
    os._exit(0)


def _ignore_stops() -> None:
    for signum in HANDLED:
        if signal.getsignal(signum) is _leave:
            signal.signal(signum, signal.SIG_IGN)


def _raise_terminated(signum, frame):
    _received.append(signum)
    raise Terminated(signum)


def raise_if_stopped() -> None:
    """Raise :class:`Terminated` if a stop signal came inside :func:`terminate_as_interrupt`,
    even where the code it interrupted swallowed the exception (see the module notes).

    >>> import os
    >>> with terminate_as_interrupt():
    ...     try:
    ...         os.kill(os.getpid(), signal.SIGTERM)
    ...     except Terminated:
    ...         pass  # swallowed, as some extensions do
    ...     try:
    ...         raise_if_stopped()
    ...     except Terminated as stop:
    ...         print(stop.name)
    SIGTERM
    """
    if _received:
        raise Terminated(_received[-1])


@contextlib.contextmanager
def terminate_as_interrupt():
    """Within the block, SIGTERM, SIGHUP and SIGINT raise :class:`Terminated` (unless ignored, as
    ``nohup`` ignores SIGHUP, or given a handler of someone else's for SIGINT); the handlers
    before it come back after it. Outside the main thread (where Python delivers signals) it
    does nothing.

    >>> import os
    >>> with terminate_as_interrupt():
    ...     try:
    ...         os.kill(os.getpid(), signal.SIGTERM)
    ...     except Terminated as stop:
    ...         print(stop.name)
    SIGTERM
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {}
    _received.clear()
    _written.clear()
    _late.clear()
    hook = sys.unraisablehook

    def unraisable(info):
        # a stop raised where Python can only print and drop it (a garbage-collector callback):
        # it is recorded, and raised again where an output would be committed; not printed
        if not isinstance(info.exc_value, Terminated):
            hook(info)

    try:
        for signum in HANDLED:
            current = signal.getsignal(signum)
            if current is signal.SIG_IGN or (signum == signal.SIGINT
                                             and current not in (signal.default_int_handler, _stop_at_once)):
                continue  # ignored on purpose (nohup ignores SIGHUP), or another's handler: leave it so
            before[signum] = signal.signal(signum, _raise_terminated)
        sys.unraisablehook = unraisable
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        if sys.unraisablehook is unraisable:
            sys.unraisablehook = hook
        _received.clear()


@contextlib.contextmanager
def stop_signals_deferred():
    """Within the block a stop signal (SIGTERM or SIGHUP inside :func:`terminate_as_interrupt`,
    and SIGINT) is recorded instead of raised, and raised as the block ends: for a step that an
    exception must not cut in two. A local Dask cluster interrupted while its workers start is
    left half made, out of reach of the code that would close it, and Dask's exit hook then fails
    on it with a traceback. A second signal in the block raises at once: a start that hangs (a
    worker stuck in its set-up) must still give way. Outside the main thread it does nothing.

    >>> import os
    >>> with terminate_as_interrupt():
    ...     try:
    ...         with stop_signals_deferred():
    ...             os.kill(os.getpid(), signal.SIGTERM)
    ...             print("the block ends")
    ...     except Terminated as stop:
    ...         print(stop.name)
    ...     try:
    ...         with stop_signals_deferred():
    ...             os.kill(os.getpid(), signal.SIGTERM)
    ...             os.kill(os.getpid(), signal.SIGTERM)
    ...             print("not reached")
    ...     except Terminated as stop:
    ...         print("at once:", stop.name)
    the block ends
    SIGTERM
    at once: SIGTERM
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    deferred = []
    # outside terminate_as_interrupt, Ctrl-C is Python's own KeyboardInterrupt, not recorded
    python_sigint = signal.getsignal(signal.SIGINT) is signal.default_int_handler

    def record(signum, frame):
        deferred.append(signum)
        own = python_sigint and signum == signal.SIGINT
        if len(deferred) > 1:  # asked twice: now
            if own:
                raise KeyboardInterrupt
            _raise_terminated(signum, frame)
        if not own:
            _received.append(signum)

    before = {}
    try:
        for signum in HANDLED:
            if signal.getsignal(signum) is _raise_terminated or (python_sigint and signum == signal.SIGINT):
                before[signum] = signal.signal(signum, record)
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    raise_if_stopped()
    if python_sigint and signal.SIGINT in deferred:
        raise KeyboardInterrupt
