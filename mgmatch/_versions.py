"""Versions of mgmatch and of the libraries a result depends on, for summaries and benchmark rows."""

from __future__ import annotations

import platform

import numpy as np

from . import __version__

__all__ = ["versions"]


def versions() -> dict:
    """Versions of mgmatch and the libraries a result depends on."""
    import numba  # noqa: PLC0415
    import scipy  # noqa: PLC0415

    out = {
        "mgmatch": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "numba": numba.__version__,
    }
    from ._array import cupy_or_none  # noqa: PLC0415

    cp = cupy_or_none()
    if cp is not None:
        out["cupy"] = cp.__version__
        props = cp.cuda.runtime.getDeviceProperties(0)
        out["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return out
