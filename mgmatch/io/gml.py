"""GML files (``.gml``), parsed here (see :mod:`mgmatch.io.readers` for why not by NetworkX)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..graph import Graph
from ._common import _INT64_MAX, _Request, _check_weights, _clip, _open_bytes, _resolve_base


# Whitespace, then one token, told apart by its group: a key, an integer, a real, a bracket, a
# string, a comment (skipped), or anything else (an error). Every byte that is not whitespace
# starts one of these, so no text is passed over unseen. A number must end where a key could not
# go on, so "12ab" and "1.2.3" are not tokens. Taking the whitespace in the match, rather than
# leaving the search to step over it, makes tokenising about three times as fast.
_GML_TOKEN = re.compile(
    rb"""
    \s*(?:
      ([A-Za-z_]\w*)
    | ([+-]?[0-9]+(?![\w.]))
    | ((?:[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?[0-9]+[eE][+-]?[0-9]+
        |[+-](?i:inf(?:inity)?|nan))(?![\w.]))
    | (\[)
    | (\])
    | ("[^"]*")
    | (\#[^\n]*)
    | ("|[^\s\[\]"\#]+)
    )""",
    re.VERBOSE,
)
_GML_KEY, _GML_INT, _GML_REAL, _GML_OPEN, _GML_CLOSE, _GML_STRING, _GML_COMMENT, _GML_BAD = range(1, 9)
_GML_SPECIAL_REALS = (b"nan", b"inf", b"infinity")  # tokenised as keys when unsigned; as values, reals
# The list a key-value pair sits in: the file's top level, the graph, a node, an edge, or any
# other list (whose pairs are skipped).
_GML_TOP, _GML_GRAPH, _GML_NODE, _GML_EDGE, _GML_OTHER = range(5)
_GML_EDGE_INTS = (b"source", b"target")
_GML_EDGE_NUMBERS = (b"source", b"target", b"weight", b"value")


@dataclass
class _GmlContent:
    """What a GML file's graph holds, as read: ids as the file gives them, byte offsets of the
    ``node`` and ``edge`` keys (for messages), and each edge's weight (``None`` without one)."""

    directed: bool
    node_ids: list
    node_at: list
    src: list
    dst: list
    weight: list
    edge_at: list


def _line_at(data: bytes, at: int) -> int:
    """The 1-based line of byte offset ``at``."""
    return data.count(b"\n", 0, at) + 1


def _gml_text(token: bytes) -> str:
    return repr(_clip(token.decode("utf-8", "replace")))


def _parse_gml(data: bytes, path: str) -> _GmlContent:
    """Tokenise ``data`` and collect the nodes and edges of its one ``graph [ ... ]``."""

    def fail(message, at):
        return InputError(message, path=path, line=_line_at(data, at))

    def integer(text, at, what) -> int:
        value = int(text)
        if abs(value) > _INT64_MAX:
            raise fail(f"{what} {value} is too large", at)
        return value

    stack = []  # per open list: (the enclosing list, the offset and text of the key that opened it)
    context = _GML_TOP
    key = None  # the key waiting for its value
    key_at = 0
    graph_at = None
    directed = False
    node_ids, node_at, src, dst, weight, edge_at = [], [], [], [], [], []
    node_id = source = target = edge_weight = edge_value = None
    for match in _GML_TOKEN.finditer(data):
        kind = match.lastindex
        if kind == _GML_COMMENT:
            continue
        if key is None:  # a key, or the end of the list
            if kind == _GML_KEY:
                key, key_at = match[kind], match.start(kind)
                continue
            if kind != _GML_CLOSE:
                if kind == _GML_BAD:
                    raise _gml_bad_token(match, fail)
                raise fail(f"expected a key, found {_gml_text(match[kind])}", match.start(kind))
            if not stack:
                raise fail("']' closes no list (there are more ']' than '[')", match.start(kind))
            opened_at = stack[-1][1]
            if context == _GML_EDGE:
                if source is None or target is None:
                    raise fail(f"edge has no {'source' if source is None else 'target'}", opened_at)
                src.append(source)
                dst.append(target)
                weight.append(edge_value if edge_weight is None else edge_weight)
                edge_at.append(opened_at)
            elif context == _GML_NODE:
                if node_id is None:
                    raise fail("node has no id", opened_at)
                node_ids.append(node_id)
                node_at.append(opened_at)
            context = stack.pop()[0]
            continue
        # the value of ``key``
        if kind == _GML_OPEN:
            if context == _GML_GRAPH and key == b"edge":
                inner, source, target, edge_weight, edge_value = _GML_EDGE, None, None, None, None
            elif context == _GML_GRAPH and key == b"node":
                inner, node_id = _GML_NODE, None
            elif context == _GML_TOP and key == b"graph":
                if graph_at is not None:
                    first = _line_at(data, graph_at)
                    raise fail(
                        f"a second graph [ ... ] (the first is on line {first}); a GML file holds exactly one",
                        key_at,
                    )
                graph_at, inner = key_at, _GML_GRAPH
            elif (context == _GML_EDGE and key in _GML_EDGE_NUMBERS) or (
                context == _GML_NODE and key == b"id"
            ) or (context == _GML_GRAPH and key == b"directed"):
                raise fail(f"{key.decode()} must be a number, not a list", key_at)
            else:
                inner = _GML_OTHER
            stack.append((context, key_at, key))
            context = inner
        elif kind == _GML_INT or kind == _GML_REAL or kind == _GML_STRING or (
            kind == _GML_KEY and match[kind].lower() in _GML_SPECIAL_REALS
        ):
            if context == _GML_EDGE:
                if key in _GML_EDGE_NUMBERS:
                    text, at = match[kind], match.start(kind)
                    if kind == _GML_STRING or (kind != _GML_INT and key in _GML_EDGE_INTS):
                        wanted = "an integer" if key in _GML_EDGE_INTS else "a number"
                        raise fail(f"edge {key.decode()} {_gml_text(text)} is not {wanted}", at)
                    if key == b"source":
                        if source is not None:
                            raise fail("edge has two source keys", at)
                        source = integer(text, at, "edge source")
                    elif key == b"target":
                        if target is not None:
                            raise fail("edge has two target keys", at)
                        target = integer(text, at, "edge target")
                    elif key == b"weight":
                        if edge_weight is not None:
                            raise fail("edge has two weight keys", at)
                        edge_weight = float(text)
                    else:
                        if edge_value is not None:
                            raise fail("edge has two value keys", at)
                        edge_value = float(text)
            elif context == _GML_NODE:
                if key == b"id":
                    text, at = match[kind], match.start(kind)
                    if kind != _GML_INT:
                        raise fail(f"node id {_gml_text(text)} is not an integer", at)
                    if node_id is not None:
                        raise fail("node has two ids", at)
                    node_id = integer(text, at, "node id")
                    if node_id < 0:
                        raise fail(f"node id {node_id} is negative; vertex ids start at 0 or 1", at)
            elif context == _GML_GRAPH:
                if key == b"directed":
                    if kind != _GML_INT or int(match[kind]) not in (0, 1):
                        raise fail(f"directed must be 0 or 1, not {_gml_text(match[kind])}", match.start(kind))
                    directed = int(match[kind]) == 1
                elif key == b"node" or key == b"edge":
                    raise fail(f"{key.decode()} must be a list [ ... ], not {_gml_text(match[kind])}", key_at)
            elif context == _GML_TOP and key == b"graph":
                raise fail(f"graph must be a list [ ... ], not {_gml_text(match[kind])}", key_at)
        elif kind == _GML_BAD:
            raise _gml_bad_token(match, fail)
        else:  # a key, or ']'
            raise fail(f"key {_gml_text(key)} has no value", key_at)
        key = None
    if key is not None:
        raise fail(f"key {_gml_text(key)} has no value", key_at)
    if stack:
        _, opened_at, opener = stack[-1]
        shown = _clip(opener.decode("utf-8", "replace"))
        raise fail(f"{shown} [ ... ] opened here is never closed (a ']' is missing)", opened_at)
    if graph_at is None:
        raise InputError("no graph [ ... ] in the file; a GML file holds one", path=path)
    return _GmlContent(directed, node_ids, node_at, src, dst, weight, edge_at)


def _gml_bad_token(match, fail) -> InputError:
    text, at = match[_GML_BAD], match.start(_GML_BAD)
    if text == b'"':
        return fail("a string opened here is never closed (no closing '\"')", at)
    return fail(f"{_gml_text(text)} is not a GML token (a key, a number, a quoted string, '[' or ']')", at)


def _read_gml(req: _Request) -> tuple[Graph, dict]:
    with _open_bytes(req.path) as stream:
        data = stream.read()
    if not data:
        raise InputError("the file is empty (no data once decompressed)", path=req.path)
    content = _parse_gml(data, req.path)
    ids = np.array(content.node_ids, dtype=np.int64)
    if ids.size == 0:
        raise InputError("the graph declares no nodes", path=req.path)
    order = np.argsort(ids, kind="stable")
    repeated = order[1:][ids[order[1:]] == ids[order[:-1]]]  # every declaration after an id's first
    if repeated.size:
        i = int(repeated.min())
        first = int(np.flatnonzero(ids == ids[i])[0])
        raise InputError(
            f"node id {ids[i]} is declared twice (first on line {_line_at(data, content.node_at[first])})",
            path=req.path, line=_line_at(data, content.node_at[i]),
        )
    src = np.array(content.src, dtype=np.int64)
    dst = np.array(content.dst, dtype=np.int64)
    known = np.sort(ids)
    declared = [known[np.minimum(np.searchsorted(known, ends), known.size - 1)] == ends for ends in (src, dst)]
    undeclared = ~(declared[0] & declared[1])
    if undeclared.any():
        i = int(np.flatnonzero(undeclared)[0])
        raise InputError(
            f"edge ({src[i]}, {dst[i]}) names node {src[i] if not declared[0][i] else dst[i]}, "
            "which no node declares",
            path=req.path, line=_line_at(data, content.edge_at[i]),
        )
    weight = None
    if req.weighted and content.weight:
        missing = np.fromiter((w is None for w in content.weight), dtype=bool, count=len(content.weight))
        if missing.any() and not missing.all():
            i, j = int(np.flatnonzero(missing)[0]), int(np.flatnonzero(~missing)[0])
            raise InputError(
                f"edge ({src[i]}, {dst[i]}) has no weight (no 'weight' or 'value' key), but the edge on "
                f"line {_line_at(data, content.edge_at[j])} has one; give every edge a weight, or none",
                path=req.path, line=_line_at(data, content.edge_at[i]),
            )
        if not missing.any():
            weight = np.array(content.weight, dtype=np.float64)
            _check_weights(
                weight, req, what=lambda i: f"edge ({src[i]}, {dst[i]})",
                line_of=lambda i: _line_at(data, content.edge_at[i]),
            )
    one_based = _resolve_base(ids, ids, req, line_of=lambda row: _line_at(data, content.node_at[row]))
    if one_based:
        ids, src, dst = ids - 1, src - 1, dst - 1
    graph = Graph.from_edges(src, dst, weight, n=int(ids.max()) + 1, source=req.path, **req.canon)
    if req.bipartite:
        graph = graph.bipartite_double_cover()
    details = {
        "one_based": one_based,
        "gml": {"directed": content.directed, "nodes": int(ids.size), "edges": int(src.size)},
    }
    return graph, details
