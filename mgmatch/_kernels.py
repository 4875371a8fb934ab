"""The one loader of CUDA kernels.

Kernel sources live in ``kernels/<family>.cu`` (shipped in the wheel as ``mgmatch/kernels``).
:func:`get_kernel` compiles a family's source with ``cupy.RawModule`` the first time a kernel of
it is asked for on a device, instantiating templates through ``name_expressions`` and passing
tunables as ``#define``s, and memoises the module per (device, family, defines). Nothing here
imports CuPy until a kernel is asked for, so the CPU path never needs it.
"""

from __future__ import annotations

import functools
import os
from importlib import resources
from pathlib import Path

from ._array import cupy_or_none

__all__ = ["kernel_dir", "kernel_source", "get_module", "get_kernel", "cooperative_blocks", "device_attribute",
           "sm_count", "compute_capability"]

def kernel_dir() -> Path:
    """Folder holding the ``.cu`` sources: the installed package data, else the source tree."""
    packaged = resources.files("mgmatch") / "kernels"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "kernels"


@functools.cache
def kernel_source(family: str) -> str:
    """Text of ``kernels/<family>.cu``."""
    path = kernel_dir() / f"{family}.cu"
    if not path.is_file():
        raise FileNotFoundError(f"kernel source {path} is missing from the installation")
    return path.read_text()


@functools.cache
def _module(device_id: int, family: str, defines: tuple, name_expressions: tuple, cooperative: bool):
    import cupy  # noqa: PLC0415

    header = "".join(f"#define {k} {v}\n" for k, v in defines)
    with cupy.cuda.Device(device_id):
        return cupy.RawModule(
            code=header + kernel_source(family),
            options=("-std=c++17", "--use_fast_math") if os.environ.get("MGMATCH_FAST_MATH") else ("-std=c++17",),
            name_expressions=name_expressions or None,
            enable_cooperative_groups=cooperative,
        )


def get_module(family: str, *, defines: dict | None = None, name_expressions=(), cooperative: bool = False):
    """The compiled ``RawModule`` of a kernel family on the current device (memoised).

    With ``cooperative`` its kernels are launched cooperatively (``cuLaunchCooperativeKernel``):
    every block of the grid is resident at once, which grid-wide barriers need; the grid must
    then fit the device (see :func:`cooperative_blocks`).
    """
    import cupy  # noqa: PLC0415

    dev = cupy.cuda.runtime.getDevice()
    return _module(dev, family, tuple(sorted((defines or {}).items())), tuple(name_expressions), bool(cooperative))


def get_kernel(family: str, name: str, *, defines: dict | None = None, name_expressions=(), cooperative: bool = False):
    """One kernel of a family; ``name`` may be a template instantiation listed in ``name_expressions``."""
    module = get_module(family, defines=defines, name_expressions=name_expressions, cooperative=cooperative)
    return module.get_function(name)


def device_attribute(name: str) -> int:
    """An attribute of the current device, ``name`` as in ``cudaDevAttr<name>`` (asked once per
    device; ``Device.attributes`` would query every attribute each time)."""
    import cupy  # noqa: PLC0415

    return _device_attribute(int(cupy.cuda.runtime.getDevice()), name)


@functools.cache
def _device_attribute(device_id: int, name: str) -> int:
    import cupy  # noqa: PLC0415

    rt = cupy.cuda.runtime
    return int(rt.deviceGetAttribute(getattr(rt, f"cudaDevAttr{name}"), device_id))


def sm_count() -> int:
    """Multiprocessors of the current device."""
    return device_attribute("MultiProcessorCount")


def compute_capability() -> int:
    """Compute capability of the current device as ``10 * major + minor`` (90 for an H100/H200)."""
    # (the cached module, not an import statement: asked on every small graph's call)
    return _compute_capability(int(cupy_or_none().cuda.runtime.getDevice()))


@functools.cache
def _compute_capability(device_id: int) -> int:
    import cupy  # noqa: PLC0415

    return int(cupy.cuda.Device(device_id).compute_capability)


def cooperative_blocks(kernel, block: int, per_sm: int) -> int:
    """Blocks of a cooperative launch of ``kernel``: at most ``per_sm`` per multiprocessor, and no
    more than the device can hold resident at once (its occupancy for ``block`` threads)."""
    return sm_count() * max(1, min(int(per_sm), _resident_blocks(kernel.kernel.ptr, int(block))))


@functools.cache
def _resident_blocks(function_ptr: int, block: int) -> int:
    from cupy_backends.cuda.api import driver  # noqa: PLC0415

    return int(driver.occupancyMaxActiveBlocksPerMultiprocessor(function_ptr, block, 0))
