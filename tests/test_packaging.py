"""How the installed package finds its files: the kernel sources in the wheel, Numba's cache directory."""

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
    for module in ("mgmatch/__init__.py", "mgmatch/cli.py", "mgmatch/graph.py", "mgmatch/engine/cluster_runner.py"):
        assert module in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "mgmatch = mgmatch.cli:main" in zf.read(entry).decode()


def test_loader_finds_every_kernel_family():
    from mgmatch._kernels import kernel_dir, kernel_source

    for path in sorted(kernel_dir().glob("*.cu")):
        assert "__global__" in kernel_source(path.stem)


# ------------------------------------------------------------------ Numba's cache directory
def test_numba_cache_falls_back_to_the_temporary_directory(monkeypatch, tmp_path):
    # a read-only install under a user without a home: Numba would refuse every cache=True function
    from numba.core import config

    from mgmatch import _numba_cache

    monkeypatch.setattr(config, "CACHE_DIR", "")
    monkeypatch.setattr(_numba_cache, "_writable", lambda directory: False)
    monkeypatch.setattr(_numba_cache.tempfile, "gettempdir", lambda: str(tmp_path))
    chosen = _numba_cache.ensure_numba_cache(tmp_path / "src")
    assert chosen is not None and chosen.startswith(str(tmp_path)) and config.CACHE_DIR == chosen


def test_numba_cache_keeps_numbas_own_choice(monkeypatch, tmp_path):
    from numba.core import config

    from mgmatch import _numba_cache

    monkeypatch.setattr(config, "CACHE_DIR", "")
    assert _numba_cache.ensure_numba_cache(tmp_path / "src") is None  # beside the sources
    assert config.CACHE_DIR == "" and (tmp_path / "src" / "__pycache__").is_dir()
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "mine"))  # NUMBA_CACHE_DIR given
    monkeypatch.setattr(_numba_cache, "_writable", lambda directory: False)
    assert _numba_cache.ensure_numba_cache(tmp_path / "src") is None
    assert config.CACHE_DIR == str(tmp_path / "mine")
