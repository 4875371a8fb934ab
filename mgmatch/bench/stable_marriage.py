"""Benchmark of the stable-marriage family on the paper's instances.

Instances [1]_ (section 4): *easy* (``sm_easy``: each man ranks ``(1 + eps) ln n`` random women,
each woman exactly the men who rank her; the paper's n = 5M to 25M) and *hard* (``sm_hard``:
identical complete lists on each side, ``n (n + 1) / 2`` proposals; n = 20,000 to 50,000 here).

Rows per instance: our sequential Gale-Shapley (one thread, the baseline of ``speedup``), our
Gale-Shapley and McVitie-Wilson on every host thread, and on the GPU McVitie-Wilson with a
thread per man (the paper's kernel) and with a warp per man. ``time_s`` is end to end (host
instance in, host result out), ``kernel_time_s`` (GPU) the run on an instance already resident
on the device. ``identical`` says the result equals the sequential Gale-Shapley's; ``proposals``
counts the women considered (the paper's TEPS numerator). The paper's Tesla K40 took just over
1 s on the easy instance of n = 25M (its Figure 1).

References
----------
.. [1] F. Manne, M. Naim, H. Lerring, M. Halappanavar, "On stable marriages and greedy
   matchings", CSC 2016.
"""

from __future__ import annotations

import numpy as np

from ._common import announce, run_threads, time_call

__all__ = ["run", "DEFAULT_INSTANCES", "QUICK_INSTANCES"]

DEFAULT_INSTANCES = ([f"sm_easy:n={n},seed=1" for n in (5_000_000, 10_000_000, 15_000_000, 20_000_000, 25_000_000)]
                     + [f"sm_hard:n={n},seed=1" for n in (20_000, 30_000, 40_000, 50_000)])
QUICK_INSTANCES = ["sm_easy:n=20000,seed=1", "sm_hard:n=400,seed=1"]

_BASELINE = "mgmatch gale-shapley sequential"


def run(graphs=None, device="auto", repeats=5, quick=False, timeout=60.0) -> list[dict]:
    """Time each implementation on each instance; return benchmark rows (see :mod:`mgmatch.bench`).

    ``graphs`` are instance specs (``"sm_easy:n=1000000,seed=1"``, see
    :func:`mgmatch.generators.parse_preferences_spec`); ``timeout`` bounds the timed repeats of
    one implementation (seconds)."""
    from .._array import resolve_device  # noqa: PLC0415
    from ..algorithms.stable_marriage import stable_marriage  # noqa: PLC0415
    from ..generators import parse_preferences_spec  # noqa: PLC0415

    dev = resolve_device(device)
    rows = []
    for spec in graphs or (QUICK_INSTANCES if quick else DEFAULT_INSTANCES):
        announce("stable-marriage", spec)
        prefs = parse_preferences_spec(spec)
        impls = [(_BASELINE, "cpu", dict(algorithm="gale-shapley", threads=1)),
                 (f"mgmatch gale-shapley {run_threads()} threads", "cpu", dict(algorithm="gale-shapley")),
                 (f"mgmatch mcvitie-wilson {run_threads()} threads", "cpu", dict(algorithm="mcvitie-wilson"))]
        if dev == "gpu":
            impls += [(f"mgmatch mcvitie-wilson {m} per man", "gpu", dict(algorithm="mcvitie-wilson", mapping=m))
                      for m in ("thread", "warp")]
        base = None
        for name, where, options in impls:
            timed = time_call(lambda: stable_marriage(prefs, device=where, **options), repeats=repeats,
                              timeout=timeout)
            result = timed["result"]
            if base is None:
                base = timed
            row = {"family": "stable-marriage", "graph": spec, "impl": name, "device": where, "n": prefs.n_men,
                   "nnz": prefs.nnz, "time_s": timed["time_s"], "times_s": timed["times_s"],
                   "proposals": result.proposals, "matched": result.matched,
                   "proposals_per_s": result.proposals / timed["time_s"],
                   "identical": bool(np.array_equal(result.wife, base["result"].wife))}
            if where == "cpu":
                row["threads"] = options.get("threads", run_threads())
            if where == "gpu":
                kernel = _resident_time(prefs, options, repeats, timeout)
                row.update(kernel_time_s=kernel["time_s"], kernel_times_s=kernel["times_s"])
            if name != _BASELINE:
                row.update(ratio_vs=_BASELINE, speedup=base["time_s"] / timed["time_s"])
                if "kernel_time_s" in row:
                    row["speedup_kernel"] = base["time_s"] / row["kernel_time_s"]
            rows.append(row)
    return rows


def _resident_time(prefs, options, repeats, timeout) -> dict:
    """Runs on an instance resident and partitioned on the GPU (kernel time)."""
    from ..algorithms.stable_marriage import _StableMarriage  # noqa: PLC0415
    from ..engine import run_local  # noqa: PLC0415

    parts = prefs.to("gpu").partition(1)
    program = _StableMarriage(options["algorithm"], None, options.get("mapping", "auto"))
    return time_call(lambda: run_local(program, parts), repeats=repeats, timeout=timeout)
