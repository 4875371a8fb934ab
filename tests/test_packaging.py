"""How the installed package finds its files: the kernel sources in the wheel, Numba's cache directory."""

from __future__ import annotations

import os
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


def test_every_cached_twin_has_cache_files_of_its_own():
    # Numba names a function's cache files after its module, qualified name and first line: two
    # dispatchers of one Python function (a parallel one and its serial twin) shared them, and the
    # one compiled first on a machine ran for both, so a "parallel" batch ran on one thread
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    import mgmatch

    seen = {}
    for info in pkgutil.walk_packages(mgmatch.__path__, "mgmatch."):
        if ".gpu" in info.name or info.name.endswith(("__main__", "nx.interface")):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency (CuPy, Dask) that this install lacks
            continue
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and value._cache.__class__.__name__ != "NullCache":
                py = value.py_func
                key = (py.__module__, py.__qualname__, py.__code__.co_firstlineno)
                assert seen.setdefault(key, value) is value, key
    assert len(seen) > 50


def test_serial_twin_runs_the_same_body_on_one_thread():
    import numpy as np
    from numba import njit, prange

    from mgmatch._numba_cache import serial_twin

    @njit(parallel=True)
    def total(a):
        s = 0.0
        for i in prange(a.shape[0]):
            s += a[i]
        return s

    one = serial_twin(total)
    assert one.py_func.__qualname__.endswith("total_serial") and one.py_func.__code__ is total.py_func.__code__
    a = np.arange(1000.0)
    assert one(a) == total(a) == a.sum()


# ------------------------------------------------------------------ what the wheel carries
def test_wheel_is_typed_and_licensed(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "mgmatch/py.typed" in names  # PEP 561: type checkers read the package's annotations
    license_file = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    text = zipfile.ZipFile(wheel).read(license_file).decode()
    assert text == (ROOT / "LICENSE").read_text() and "Apache License" in text and "Version 2.0" in text


def test_wheel_metadata_has_urls_and_license(wheel):
    zf = zipfile.ZipFile(wheel)
    meta = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in meta
    for label in ("Homepage", "Source", "Issues", "Changelog"):
        assert f"Project-URL: {label}, https://" in meta


def test_wheel_registers_the_networkx_backend(wheel):
    zf = zipfile.ZipFile(wheel)
    names = zf.namelist()
    assert "_mgmatch_nx/__init__.py" in names and "mgmatch/nx/interface.py" in names
    entry = zf.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "[networkx.backends]\nmgmatch = mgmatch.nx.interface:backend_interface" in entry
    assert "[networkx.backend_info]\nmgmatch = _mgmatch_nx:get_info" in entry


def test_backend_info_loads_without_mgmatch():
    # NetworkX reads the backend's information while it is imported: that must not import mgmatch
    code = "import sys, _mgmatch_nx; _mgmatch_nx.get_info(); print('mgmatch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------- Dask pins of the extras
def _requirements():
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {Requirement(r).name: Requirement(r) for r in project["dependencies"]}
    gpu = {Requirement(r).name: Requirement(r) for r in project["optional-dependencies"]["gpu"]}
    return base, gpu


def test_gpu_extra_pins_one_release_line_and_the_base_pins_one_dask():
    # dask-cuda pins Dask exactly through rapids-dask-dependency; a CPU install must get that Dask,
    # so the base requirement names one version and the gpu extra one dask-cuda release line
    base, gpu = _requirements()
    (dask_spec,) = base["dask"].specifier
    assert dask_spec.operator == "==" and "distributed" in base["dask"].extras
    (cuda_spec,) = gpu["dask-cuda"].specifier
    assert cuda_spec.operator == "==" and cuda_spec.version.endswith(".*")
    assert "dask" not in gpu and "distributed" not in gpu


def test_installed_rapids_pins_agree_with_the_base_pins():
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement

    try:
        pins = {Requirement(r).name: Requirement(r) for r in requires("rapids-dask-dependency") or []}
    except PackageNotFoundError:
        pytest.skip("rapids-dask-dependency is not installed (a gpu-extra install has it)")
    base, _ = _requirements()
    (dask_spec,) = base["dask"].specifier
    for name in ("dask", "distributed"):
        assert dask_spec.version in pins[name].specifier


# ----------------------------------------------------------------- the README's Python block
def test_readme_python_block_runs_as_a_script(tmp_path):
    # the block reads graph.mtx (an undirected graph) and matrix.mtx (a rectangular matrix)
    import re

    import numpy as np
    import scipy.io
    import scipy.sparse as sp

    from mgmatch.generators import delaunay

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert len(blocks) == 1
    scipy.io.mmwrite(tmp_path / "graph.mtx", sp.triu(delaunay(8, seed=1).to_scipy(), k=1))
    scipy.io.mmwrite(tmp_path / "matrix.mtx", sp.random(40, 30, density=0.1, random_state=np.random.default_rng(5)))
    (tmp_path / "readme_block.py").write_text(blocks[0])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "readme_block.py"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
