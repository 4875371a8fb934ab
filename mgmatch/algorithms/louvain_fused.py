"""Louvain's single-GPU fast path: every level of a small graph in one fused kernel launch.

On a graph of a few thousand edges a sweep of the phase-per-kernel driver is a dozen launches of
microseconds' work each; the fused kernel (``louvain_fused`` in ``kernels/louvain.cu``) runs the
same phases, batches and decisions on a thread-block cluster, so its communities are those of
the CPU twin. This module is the program's ``single_device`` hook and nothing else calls it: a
run over several partitions never depends on it.
"""

from __future__ import annotations

import numpy as np

from ..engine.program import Messages
from .louvain_program import FIXED_BITS, MOVE_BUCKETS, LouvainState, _LevelGraph, _start_local, _twin

__all__ = ["run_fused_single"]


def run_fused_single(program, g):
    """The :class:`~mgmatch.algorithms.louvain.LouvainResult` of ``g`` (on the GPU) by the fused
    kernel, or ``None`` when the graph or the device does not qualify
    (:func:`mgmatch.gpu.louvain.fused_eligible`) or the kernel stopped before doing anything the
    driver would not redo.

    When the kernel hands a level over (a vertex of degree > 319 without room for its table, or
    no room left for the levels' rows), the program's one-partition steps go on from that level's
    graph, reporting each sweep and aggregation to ``program.progress``.
    """
    from .louvain import _result  # noqa: PLC0415

    cfg = program.config  # the run's tunables, the GPU kernels' among them
    twin = _twin("gpu")
    if not twin.fused_eligible(g.n, g.nnz, move_buckets=MOVE_BUCKETS, slices=cfg.move_slices,
                               max_edges=cfg.fused_max_edges, tune=cfg):
        return None
    params = dict(program.params, device="gpu")
    out = twin.run_fused(g.indptr, g.indices, g.weights, params, slices=cfg.move_slices,
                         slice_min=cfg.move_slice_min, bin_vertices=cfg.bin_vertices, fixed_bits=FIXED_BITS,
                         tune=cfg)
    if out["status"] == "no_room" or (out["status"] == "handover" and out["level"] == 0):
        return None
    timings = {"levels": out["level_timings"], "fused_kernel_s": out["kernel_s"]}
    if out["status"] == "done":  # the levels are host rows already
        return _result(out["levels"], out["modularity"], out["n_communities"], timings, params, "gpu")
    xp = g.xp
    state = LouvainState(
        part=None, params=params, config=cfg, device="gpu", twin=twin, xp=xp, n_parts=1, index=0, compose=True,
        graph=_LevelGraph(*out["graph"]), levels=out["levels"], modularity=out["modularity"], timings=timings,
        orig_to_level=out["orig_to_level"], level=out["level"],
    )
    state.red_out = np.zeros(1)
    _start_local(state)
    empty = Messages.empty(xp)
    while not state.done:
        program.step(state, empty)
        if program.progress is not None:
            program.progress(state.level, state.iteration, state.q_current)
    piece = program.finish(state)
    for rec in piece["timings"]["levels"]:
        rec.pop("first_round", None)
        rec.pop("last_round", None)
    return _result(piece["levels"], piece["modularity"], piece["n_communities"], piece["timings"], params, "gpu")
