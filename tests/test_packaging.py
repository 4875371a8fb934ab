"""The built wheel ships the CUDA kernel sources where the loader looks for them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    pytest.importorskip("build")
    pytest.importorskip("hatchling")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True)
    (path,) = out.glob("mgmatch-*.whl")
    return path


def test_wheel_contains_kernels(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    sources = sorted(p.name for p in (ROOT / "kernels").iterdir() if p.is_file())
    assert sources, "kernels/ is empty"
    for name in sources:
        assert f"mgmatch/kernels/{name}" in names


def test_wheel_has_console_script_and_modules(wheel):
    zf = zipfile.ZipFile(wheel)
    names = zf.namelist()
    for module in ("mgmatch/__init__.py", "mgmatch/cli.py", "mgmatch/graph.py", "mgmatch/distributed/coordinator.py"):
        assert module in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "mgmatch = mgmatch.cli:main" in zf.read(entry).decode()


def test_loader_finds_every_kernel_family():
    from mgmatch._kernels import kernel_dir, kernel_source

    for path in sorted(kernel_dir().glob("*.cu")):
        assert "__global__" in kernel_source(path.stem)
