"""Which modules import which: the command line sits on top, the jobs module under it is shared with
pipelines, and no import cycle joins the engine, the loaders and the command line."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mgmatch"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, at the top or inside a function (an import
    run late is still a dependency)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                candidates = [target] + [f"{target}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                continue
            found.update(c for c in candidates if c in modules and c != name)
        graph[name] = found
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(component)
    return out


def _layer(module: str) -> str:
    """A subpackage (engine, io, distributed, ...), the command line (cli, jobs, pipeline), or a
    module of its own (graph, convert, ...)."""
    if module in ("mgmatch.cli", "mgmatch.jobs", "mgmatch.pipeline"):
        return "command line"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else module


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_crosses_layers():
    graph = import_graph()
    assert "mgmatch.jobs" in graph and "mgmatch.engine.execute" in graph["mgmatch.algorithms.matching"]
    crossing = [sorted(c) for c in _cycles(graph) if len({_layer(m) for m in c}) > 1]
    assert crossing == []


def test_cli_is_imported_by_nothing_in_the_package():
    # pipelines and the benchmark use the jobs module and the version report, not the command line
    graph = import_graph()
    assert {m for m, targets in graph.items() if "mgmatch.cli" in targets} == set()
    assert "mgmatch.jobs" in graph["mgmatch.pipeline"] and "mgmatch.jobs" in graph["mgmatch.cli"]
    assert "mgmatch._versions" in graph["mgmatch.bench"]


def test_engine_and_dask_layer_never_import_an_algorithm():
    # algorithms call the engine; the engine, placement and the workers' set-up run programs
    # and warm-ups they are handed, so none of them names an algorithm module
    graph = import_graph()
    lower = [m for m in graph if m.startswith(("mgmatch.engine", "mgmatch.distributed"))]
    assert "mgmatch.distributed.cluster" in lower and "mgmatch.engine.warmup" in lower
    offending = {m: sorted(t for t in graph[m] if t.startswith("mgmatch.algorithms")) for m in lower}
    assert {m: t for m, t in offending.items() if t} == {}


def test_workers_warm_up_the_matching_kernels():
    import mgmatch  # noqa: F401  (registers the families' warm-ups)
    from mgmatch.engine.warmup import warm_up

    assert "matching" in warm_up()
