"""Which ``mgmatch run`` options apply to which algorithm.

An option given to an algorithm that does not use it is refused rather than ignored: a batch
job that asks for ``--partitions 8`` with bipartite matching, or ``--resolution 2`` with Suitor,
would otherwise run something other than what its author believes, and exit 0.
"""

from __future__ import annotations

from .errors import ParameterError

__all__ = ["check_options_apply", "APPLIES_TO"]

_MATCHING = ("suitor", "bsuitor", "ld", "handshake")
_BIPARTITE = ("gpr", "apfb", "apsb")
_STABLE = ("stable-marriage", "gale-shapley", "mcvitie-wilson")

#: Option (as the command line spells it) -> the algorithms it applies to.
APPLIES_TO = {
    "--b": ("bsuitor",),
    "--partitions": _MATCHING + ("louvain",) + _STABLE,
    "--init": _BIPARTITE,
    "--deterministic": ("apfb", "apsb"),
    "--resolution": ("louvain",),
    "--all-levels": ("louvain",),
    "--random-weights": _MATCHING + ("louvain",) + _STABLE,
    "--weighted/--unweighted": _MATCHING + ("louvain",) + _STABLE,
    # the columns of a graph's edge table (a stable-marriage job reads a preference table)
    "--src": _MATCHING + _BIPARTITE + ("louvain",),
    "--dst": _MATCHING + _BIPARTITE + ("louvain",),
    "--columns": _MATCHING + _BIPARTITE + ("louvain",),
    "--weight": _MATCHING + ("louvain",),
    "--reorder": _MATCHING + ("louvain",),
}


def check_options_apply(algorithm: str, given) -> None:
    """Refuse options in ``given`` (names as in :data:`APPLIES_TO`, or a pipeline's keys such
    as ``all_levels``) that ``algorithm`` does not use.

    >>> check_options_apply("suitor", ["--partitions"])
    >>> check_options_apply("apfb", ["partitions"])
    Traceback (most recent call last):
    ...
    mgmatch.errors.ParameterError: --partitions does not apply to -a apfb (only to suitor, bsuitor, ld, handshake, louvain, stable-marriage, gale-shapley, mcvitie-wilson)
    """
    for name in given:
        option = _option_name(name)
        users = APPLIES_TO.get(option)
        if users is not None and algorithm not in users:
            why = " (a cardinality matching reads only which entries a matrix stores)" if algorithm in _BIPARTITE \
                and option in ("--random-weights", "--weighted/--unweighted") else ""
            raise ParameterError(f"{option} does not apply to -a {algorithm} (only to {', '.join(users)}){why}")


def _option_name(name: str) -> str:
    name = str(name)
    if name in ("weighted", "--weighted", "--unweighted"):
        return "--weighted/--unweighted"
    return name if name.startswith("--") else "--" + name.replace("_", "-")
