"""SIGTERM and SIGHUP handled as SIGINT is: the job unwinds, and what it was writing goes.

``timeout``, SLURM, Kubernetes and systemd stop a job with SIGTERM (a closed terminal sends
SIGHUP). Python's default for both is to die at once, which leaves behind every temporary
file a ``finally`` block would have removed: the hidden ``.partial`` files of
:func:`mgmatch.io.atomic_path` and the spool file of a stream input. Inside
:func:`terminate_as_interrupt` either signal raises :class:`Terminated`, a
``KeyboardInterrupt``, so every clean-up that runs on Ctrl-C runs on them too.
"""

from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["Terminated", "terminate_as_interrupt"]

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


def _raise_terminated(signum, frame):
    raise Terminated(signum)


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
    try:
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) is signal.SIG_IGN:
                continue  # ignored on purpose (nohup ignores SIGHUP): leave it so
            before[signum] = signal.signal(signum, _raise_terminated)
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
