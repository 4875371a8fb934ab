"""Stable marriage (SM and SMI, men propose): Gale-Shapley and McVitie-Wilson as one partition
program, on CPU threads, one GPU, or partitions exchanging proposals.

Both algorithms return the man-optimal stable matching, which is unique, so every algorithm,
device and partition count returns exactly the same marriages [1]_. McVitie-Wilson is the
Suitor algorithm with two-sided preferences, and on an instance where both sides rank by edge
weight its result is the greedy matching (Lemma 3.1 of [1]_; see
:meth:`~mgmatch.preferences.Preferences.from_graph`).

Across partitions men and women are split by id range. A man proposes to a woman another
partition owns with a PROPOSE message; her owner answers only when it refuses him, or when he
later loses her, with a REJECT message that carries her key, so that his side skips her while
she holds a better man. The rounds end when no message is in flight: every man then holds a
woman or has no one left to ask.

References
----------
.. [1] F. Manne, M. Naim, H. Lerring, M. Halappanavar, "On stable marriages and greedy
   matchings", CSC 2016 (paper IV of the GPU Suitor thesis).
.. [2] D. G. McVitie and L. B. Wilson, "The stable marriage problem", Comm. ACM 14(7), 1971.
.. [3] D. Gale and L. S. Shapley, "College admissions and the stability of marriage",
   Amer. Math. Monthly 69(1), 1962.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from .._array import to_numpy
from ..cpu import stable_marriage as cpu
from ..engine import Messages, RoundLog, execute, fork_state
from ..errors import ParameterError
from ..preferences import Preferences
from ._rounds import round_fields

__all__ = ["StableMarriageResult", "stable_marriage", "ALGORITHMS", "MAPPINGS", "as_preferences"]

#: Algorithm names; ``auto`` (also ``stable-marriage``) is McVitie-Wilson, the faster of the two
#: on threads and on the GPU when proposals contend (the paper's hard instances).
ALGORITHMS = ("auto", "stable-marriage", "gale-shapley", "mcvitie-wilson")
#: GPU thread mappings: a thread per man, a warp per man, or ``auto``.
MAPPINGS = ("auto", "thread", "warp")


@dataclass
class StableMarriageResult:
    """The man-optimal stable matching and how it was computed.

    Attributes
    ----------
    wife : ndarray
        ``wife[m]``: the woman man ``m`` marries, or -1.
    husband : ndarray
        ``husband[w]``: the man woman ``w`` marries, or -1.
    proposals : int
        Women considered over all men: for each man, his list up to and including his wife
        (his whole list when he stays single). It depends only on the result, so it is the
        same for every algorithm and device.
    rounds : RoundLog
        Message rounds between partitions (1 for one partition).
    """

    wife: np.ndarray
    husband: np.ndarray
    n_men: int
    n_women: int
    pairs: int
    algorithm: str
    proposals: int = 0
    params: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    rounds: RoundLog = field(default_factory=RoundLog)
    device: str = "cpu"
    n_parts: int = 1

    @property
    def matched(self) -> int:
        """Number of marriages."""
        return int((self.wife >= 0).sum())

    def to_table(self) -> dict:
        """Columns ``man, woman``: the marriages by man."""
        men = np.flatnonzero(self.wife >= 0).astype(np.int64)
        return {"man": men, "woman": self.wife[men].astype(np.int64)}

    def summary(self) -> dict:
        """A JSON-able record of the run."""
        return {
            "algorithm": self.algorithm,
            "parameters": dict(self.params),
            "device": self.device,
            "partitions": self.n_parts,
            "n_men": self.n_men,
            "n_women": self.n_women,
            "pairs": self.pairs,
            "matched": self.matched,
            "proposals": self.proposals,
            "rounds": self.rounds.rounds,
            "messages_per_round": list(self.rounds.messages),
            **round_fields(self.rounds),
            "time_s": dict(self.timings),
        }

    def __repr__(self) -> str:
        return (f"StableMarriageResult({self.algorithm}, matched={self.matched}, proposals={self.proposals}, "
                f"rounds={self.rounds.rounds}, device={self.device!r})")


class _StableMarriage:
    """Gale-Shapley or McVitie-Wilson as partition steps; see :func:`stable_marriage`."""

    phase = "propose"

    def __init__(self, algorithm: str, threads: int | None, mapping: str):
        self.name = algorithm
        self.queue = algorithm == "gale-shapley"
        self.threads = threads
        self.mapping = mapping

    def init(self, part):
        xp = part.xp
        return SimpleNamespace(
            part=part,
            key=xp.full(part.n_wlocal, cpu.EMPTY, dtype=xp.uint64),
            ghost_key=xp.full(int(part.ghosts.shape[0]), cpu.EMPTY, dtype=xp.uint64),
            nxt=part.indptr[:-1].astype(xp.int64),
            pending=xp.full(part.n_owned, -1, dtype=xp.int64),
            work=xp.arange(part.n_owned, dtype=xp.int64),
            held_w=xp.empty(0, dtype=xp.int64),
            held_m=xp.empty(0, dtype=xp.int64),
        )

    def step(self, st, inbox: Messages) -> dict:
        p = st.part
        xp = p.xp
        work, rejects = st.work, xp.empty((0, 4), dtype=xp.int64)
        st.work = work[:0]
        if len(inbox):
            more, rejects, hw, hm = _twin("sm_inbox", xp)(p.lo, p.hi, p.wlo, p.ghosts, st.key, st.ghost_key,
                                                          xp.ascontiguousarray(inbox.ints))
            work = xp.concatenate([work, more])
            st.held_w = xp.concatenate([st.held_w, hw])
            st.held_m = xp.concatenate([st.held_m, hm])
        if work.shape[0]:
            self._run(st, work)
        return _outbox(st, rejects)

    def _run(self, st, work) -> None:
        p = st.part
        args = (p.lo, p.indptr, p.wrank, p.slot, p.n_wlocal, st.key, st.ghost_key, st.nxt, st.pending, work,
                self.queue)
        if p.xp is not np:
            from ..gpu import stable_marriage as gpu  # noqa: PLC0415

            gpu.sm_run(*args, mapping=self.mapping)
        elif self.threads == 1:
            cpu.sm_run(*args)
        else:
            with _numba_threads(self.threads):
                cpu.sm_run_parallel(*args)

    def matched(self, st) -> int:
        return int((st.key != cpu.EMPTY).sum())

    def fork(self, st):
        return fork_state(st, shared=("part",))

    def finish(self, st) -> dict:
        xp = st.part.xp
        husband = xp.where(st.key == cpu.EMPTY, -1, (st.key & cpu.MAN_MASK).astype(xp.int64))
        considered = int((st.nxt - st.part.indptr[:-1]).sum())
        return {"husband": husband, "considered": considered}

    def assemble(self, prefs, pieces, info):
        husband = np.concatenate([to_numpy(p["husband"]).astype(np.int64) for p in pieces]) if pieces else \
            np.empty(0, np.int64)
        wife = np.full(prefs.n_men, -1, dtype=np.int64)
        married = np.flatnonzero(husband >= 0)
        wife[husband[married]] = married
        result = StableMarriageResult(
            wife=wife, husband=husband, n_men=prefs.n_men, n_women=prefs.n_women, pairs=prefs.nnz,
            algorithm=self.name, proposals=int(sum(p["considered"] for p in pieces)), rounds=info.log,
            device=info.device, n_parts=info.n_parts,
        )
        result.params = {"partitions": info.n_parts}
        if info.device == "cpu":
            result.params["threads"] = self.threads or "all"
        else:
            result.params["mapping"] = self.mapping
        result.timings = dict(info.timings)
        result.timings.update({k: v for k, v in info.log.as_dict().items() if k.endswith("_s")})
        return result

    def gpu_bytes(self, prefs) -> int:
        """Device memory of a one-GPU run: the lists (unless already there), the women's keys,
        and per man his row offset, resume entry, pending entry and work-list place."""
        need = 8 * prefs.n_women + 32 * prefs.n_men
        if prefs.xp is np:
            need += prefs.indptr.nbytes + prefs.women.nbytes + prefs.wrank.nbytes
        return int(need)


def _outbox(st, rejects) -> dict:
    """The step's messages by receiving partition: PROPOSE for men pending on remote women,
    REJECT for remote men refused at once or no longer held by the woman that took them."""
    p = st.part
    xp = p.xp
    rows = [rejects] if rejects.shape[0] else []
    if st.held_w.shape[0]:
        key = st.key[st.held_w]
        lost = (key & cpu.MAN_MASK).astype(xp.int64) != st.held_m
        if bool(lost.any()):
            rows.append(xp.stack([xp.full(int(lost.sum()), cpu.REJECT, dtype=xp.int64), st.held_m[lost],
                                  st.held_w[lost] + p.wlo, key[lost].astype(xp.int64)], axis=1))
            st.held_w, st.held_m = st.held_w[~lost], st.held_m[~lost]
    out: dict[int, list] = {}
    if rows:
        _route(out, xp.concatenate(rows), p.bounds, xp)
    men = xp.flatnonzero(st.pending >= 0) if p.ghosts.shape[0] else None
    if men is not None and men.shape[0]:
        e = st.pending[men]
        st.pending[men] = -1
        key = (p.wrank[e].astype(xp.uint64) << np.uint64(32)) | (men + p.lo).astype(xp.uint64)
        proposals = xp.stack([xp.zeros(men.shape[0], dtype=xp.int64), p.women[e].astype(xp.int64), men + p.lo,
                              key.astype(xp.int64)], axis=1)
        _route(out, proposals, p.wbounds, xp)
    return {q: Messages.concat(batches, xp) for q, batches in out.items()}


def _route(out: dict, ints, bounds, xp) -> None:
    for q, batch in Messages(ints, xp.zeros(ints.shape[0], dtype=xp.float64)).split(bounds).items():
        out.setdefault(q, []).append(batch)


def _twin(name: str, xp):
    if xp is np:
        return getattr(cpu, name)
    from ..gpu import stable_marriage as gpu  # noqa: PLC0415

    return getattr(gpu, name)


@contextlib.contextmanager
def _numba_threads(threads):
    """Run the block with ``threads`` Numba threads (None: all of them)."""
    import numba  # noqa: PLC0415

    if threads is None:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(min(int(threads), numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(before)


# ------------------------------------------------------------------------------ public
def as_preferences(prefs, *, n_men=None, n_women=None) -> Preferences:
    """A :class:`~mgmatch.preferences.Preferences` from one, from a preference table (dict of
    arrays, pyarrow table, pandas DataFrame) or from a weighted :class:`~mgmatch.graph.Graph`
    (both sides rank by weight)."""
    from ..graph import Graph  # noqa: PLC0415

    if isinstance(prefs, Preferences):
        if n_men is not None or n_women is not None:
            raise ParameterError("n_men and n_women apply to a preference table, not to a Preferences")
        return prefs
    if isinstance(prefs, Graph):
        return Preferences.from_graph(prefs)
    return Preferences.from_table(prefs, n_men=n_men, n_women=n_women)


def _check_options(algorithm, threads, mapping) -> str:
    if algorithm not in ALGORITHMS:
        raise ParameterError(f"unknown stable-marriage algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, (int, np.integer))
                                or threads < 1):
        raise ParameterError(f"threads must be a positive integer or None (all), not {threads!r}")
    if mapping not in MAPPINGS:
        raise ParameterError(f"mapping must be one of {', '.join(MAPPINGS)}, not {mapping!r}")
    return "mcvitie-wilson" if algorithm in ("auto", "stable-marriage") else algorithm


def stable_marriage(prefs, *, algorithm: str = "auto", device: str = "auto", partitions=None, client=None,
                    threads: int | None = None, mapping: str = "auto", progress=None, n_men: int | None = None,
                    n_women: int | None = None) -> StableMarriageResult:
    """The man-optimal stable matching of a stable-marriage instance (men propose).

    Parameters
    ----------
    prefs : Preferences, preference table or Graph
        The instance: a :class:`~mgmatch.preferences.Preferences`; a table with columns
        ``man, woman, man_rank, woman_rank`` (dict of arrays, pyarrow table or pandas
        DataFrame; one row per mutually acceptable pair, smaller ranks preferred); or a
        weighted graph whose both sides rank by weight, larger first, ties by the smaller id.
    algorithm : {"auto", "stable-marriage", "gale-shapley", "mcvitie-wilson"}
        Gale-Shapley takes free men from a queue [3]_; McVitie-Wilson lets a displaced man
        propose again at once [2]_ (``auto`` and ``stable-marriage``). Both with the paper's
        enhancement: a man skips women who hold a suitor they prefer to him [1]_.
    device : {"auto", "cpu", "gpu"}
    partitions : int or sequence of int, optional
        Partitions of the men (and of the women, by id range) that exchange proposals as
        messages; bounds ``[0, b_1, ..., n_men]`` split the men explicitly. The result does
        not depend on it.
    client : distributed.Client, optional
        Run the partitions on this Dask cluster.
    threads : int, optional
        CPU threads: ``1`` runs the sequential algorithm, ``None`` every Numba thread (a man
        per thread, proposals by atomic minimum, as the paper's OpenMP codes).
    mapping : {"auto", "thread", "warp"}
        GPU: a thread per man (the paper's kernel), a warp per man (scans 32 list entries at
        a time: for long lists, where men skip many women), or ``auto`` (McVitie-Wilson: a
        warp for each man whose list holds 64 women or more, a thread for each other man;
        Gale-Shapley: warps when the lists hold 64 women or more on average).
    progress : callable, optional
        Called after each round with the engine's round record.
    n_men, n_women : int, optional
        Sizes of the sides of a preference table with people beyond its largest ids.

    Returns
    -------
    StableMarriageResult

    Raises
    ------
    InputError
        A malformed preference table (see :meth:`~mgmatch.preferences.Preferences.from_table`).
    ParameterError
        An unknown algorithm, mapping, device or partition count.

    Notes
    -----
    The result is stable: no man and woman who both list each other prefer each other to
    their partners (an unmarried person prefers anyone listed). It is man-optimal: every man
    marries his best partner over all stable matchings, which makes it unique, and each man
    considers exactly the women before his wife whatever order the proposals take.

    References
    ----------
    .. [1] Manne, Naim, Lerring, Halappanavar, CSC 2016. .. [2] McVitie and Wilson, CACM
       1971. .. [3] Gale and Shapley, 1962.

    Examples
    --------
    >>> import mgmatch
    >>> table = {"man": [0, 0, 1, 1], "woman": [0, 1, 0, 1],
    ...          "man_rank": [0, 1, 0, 1], "woman_rank": [1, 0, 0, 1]}
    >>> r = mgmatch.stable_marriage(table, device="cpu")
    >>> r.wife.tolist(), r.proposals
    ([1, 0], 3)
    """
    name = _check_options(algorithm, threads, mapping)
    instance = as_preferences(prefs, n_men=n_men, n_women=n_women)
    program = _StableMarriage(name, None if threads is None else int(threads), mapping)
    return execute(program, instance, partitions=partitions, device=device, client=client, progress=progress)
