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
import threading

__all__ = ["Terminated", "terminate_as_interrupt", "raise_if_stopped", "stop_signals_deferred"]

#: The signals that stop a batch job, by name.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by ``signum`` (SIGTERM or SIGHUP)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


#: The stop signals delivered inside :func:`terminate_as_interrupt` (emptied on entering and
#: leaving it).
_received: list[int] = []


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
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` (unless ignored, as
    ``nohup`` ignores SIGHUP); the handlers before it come back after it. Outside the main thread (where Python delivers signals) it does nothing.

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
    try:
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) is signal.SIG_IGN:
                continue  # ignored on purpose (nohup ignores SIGHUP): leave it so
            before[signum] = signal.signal(signum, _raise_terminated)
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
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

    def record(signum, frame):
        deferred.append(signum)
        if len(deferred) > 1:  # asked twice: now
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            _raise_terminated(signum, frame)
        if signum != signal.SIGINT:
            _received.append(signum)

    before = {}
    try:
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) is _raise_terminated:
                before[signum] = signal.signal(signum, record)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            before[signal.SIGINT] = signal.signal(signal.SIGINT, record)
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    raise_if_stopped()
    if signal.SIGINT in deferred:
        raise KeyboardInterrupt
