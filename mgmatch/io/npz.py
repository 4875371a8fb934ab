"""NumPy ``.npz`` files: edge arrays, or a matrix saved by ``scipy.sparse.save_npz``."""

from __future__ import annotations

import zipfile

import numpy as np

from ..errors import InputError, ParameterError
from ..graph import Graph
from ._common import _Request, _graph_from_arrays, _refuse_unread_weights
from .matrix_market import _graph_from_matrix


_SPARSE_KEYS = {"format", "shape", "data"}


def _read_npz(req: _Request) -> tuple[Graph, dict]:
    import scipy.sparse as sp  # noqa: PLC0415

    with _load_npz(req.path) as archive:
        keys = set(archive.files)
        if _SPARSE_KEYS <= keys and ("indptr" in keys or {"row", "col"} <= keys):
            if req.one_based is not None:
                raise ParameterError("a SciPy sparse matrix has 0-based indices; one_based does not apply")
            matrix = sp.load_npz(req.path)
            _check_matrix(matrix, req)
            graph, _ = _graph_from_matrix(matrix, req, weighted=True, base=0)
            return graph, {"npz": f"scipy.sparse {matrix.format} matrix"}
        missing = [name for name in ("src", "dst") if name not in keys]
        if missing:
            raise InputError(
                f"missing array{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}; expected "
                "src, dst[, weight][, n] or a matrix saved by scipy.sparse.save_npz "
                f"(found: {', '.join(sorted(keys)) or 'none'})",
                path=req.path,
            )
        arrays = {name: archive[name] for name in ("src", "dst", "weight") if name in keys}
        if not req.weighted:
            arrays.pop("weight", None)
        elif "weight" not in keys:
            others = {name: archive[name] for name in sorted(keys - {"src", "dst"})}
            _refuse_unread_weights([
                name for name, values in others.items()
                if values.dtype.kind in "iuf" and values.shape == arrays["src"].shape
            ], "array", req.path)
        n = _scalar(archive, "n", req) if "n" in keys else None
        shape = tuple(_scalar_array(archive["shape"], "shape", req)) if "shape" in keys else None
    graph, details = _graph_from_arrays(arrays, req, n=n, shape=shape)
    return graph, {"npz": "edge arrays", **details}


def _check_matrix(matrix, req: _Request) -> None:
    """Refuse a compressed matrix whose offsets and indices do not describe one (SciPy builds
    it from the saved arrays as they are: offsets that fall or overrun would read other rows'
    entries or past the end)."""
    check = getattr(matrix, "check_format", None)
    if check is None:
        return
    try:
        check(full_check=True)
    except (ValueError, IndexError, TypeError) as exc:
        raise InputError(f"the saved {matrix.format} matrix is not well formed: {exc}", path=req.path) from None


def _load_npz(path):
    """The archive of named arrays in an ``.npz`` file. ``np.load`` also takes ``.npy`` content
    (one array, as ``np.save`` writes), which names no array, so it is refused here, before
    ``np.load`` would read it whole."""
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as raw:
            npy = raw.read(6) == b"\x93NUMPY"
        found = "one unnamed array (.npy content, as np.save writes)" if npy else "no zip archive"
        raise InputError(
            f"the file holds {found}; an .npz holds named arrays src, dst[, weight][, n] (as np.savez "
            "writes) or a matrix saved by scipy.sparse.save_npz",
            path=path,
        )
    raw = open(path, "rb")  # noqa: SIM115  (the archive owns it once made)
    try:
        # NpzFile(own_fid=True) closes the file with the archive; made here rather than by
        # np.load, which leaves its file open when the archive cannot be made (a corrupt zip)
        return np.lib.npyio.NpzFile(raw, own_fid=True, allow_pickle=False)
    except BaseException:
        raw.close()
        raise


def _scalar(archive, name, req: _Request) -> int:
    value = np.asarray(archive[name])
    if value.shape not in ((), (1,)) or value.dtype.kind not in "iu" or int(value.reshape(-1)[0]) < 0:
        raise InputError(f"array {name!r} must be one non-negative integer", path=req.path)
    return int(value.reshape(-1)[0])


def _scalar_array(value, name, req: _Request):
    value = np.asarray(value)
    if value.shape != (2,) or value.dtype.kind not in "iu" or (value < 0).any():
        raise InputError(f"array {name!r} must hold two non-negative integers", path=req.path)
    return [int(v) for v in value]
