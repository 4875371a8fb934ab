"""NetworkX's own tests of the functions mgmatch backs, run through the backend.

NetworkX runs its test suite against a backend when ``NETWORKX_TEST_BACKEND`` names it: every
dispatchable call converts its graphs to the backend and runs the backend's implementation, or
NetworkX's own where the backend declines (``can_run``) and ``NETWORKX_FALLBACK_TO_NX`` is set.
This module runs the test files of the backed functions that way in a subprocess, records which
calls really ran on mgmatch, and holds the outcome to :data:`mgmatch.nx.interface.EXPECTED_FAILURES`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

nx = pytest.importorskip("networkx")

from mgmatch.nx.interface import EXPECTED_FAILURES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NX_DIR = Path(nx.__file__).parent
TEST_FILES = [
    "algorithms/community/tests/test_louvain.py",
    "algorithms/community/tests/test_quality.py",
    "algorithms/bipartite/tests/test_matching.py",
    "algorithms/tests/test_matching.py",
]
BACKED = {"louvain_communities", "louvain_partitions", "modularity", "maximal_matching",
          "hopcroft_karp_matching", "eppstein_matching"}

# A pytest plugin for the subprocess: NetworkX logs every call it hands to a backend, and every
# fall-back to its own implementation; the plugin files them under the test that made them.
TRACE_PLUGIN = textwrap.dedent('''
    import json, logging, os
    import pytest

    RECORD = {}
    CURRENT = [None]

    class Handler(logging.Handler):
        def emit(self, record):
            if CURRENT[0] is None or not isinstance(record.args, tuple):
                return
            entry = RECORD.setdefault(CURRENT[0], {"ran": [], "fell_back": [], "outcome": None})
            msg = record.msg
            if msg.startswith("Using backend '%s' for call to '%s'") and record.args[0] == "mgmatch":
                entry["ran"].append(record.args[1])
            elif msg.startswith("Falling back to use 'networkx' instead of '%s'") and record.args[0] == "mgmatch":
                entry["fell_back"].append(record.args[1])

    def pytest_configure(config):
        logger = logging.getLogger("networkx.utils.backends")
        logger.setLevel(logging.DEBUG)
        logger.addHandler(Handler())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        CURRENT[0] = item.nodeid
        RECORD.setdefault(item.nodeid, {"ran": [], "fell_back": [], "outcome": None})
        yield
        CURRENT[0] = None

    def pytest_runtest_logreport(report):
        entry = RECORD.setdefault(report.nodeid, {"ran": [], "fell_back": [], "outcome": None})
        if report.when == "call" or report.outcome != "passed":
            entry["outcome"] = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome

    def pytest_sessionfinish(session, exitstatus):
        with open(os.environ["MGMATCH_NX_TRACE"], "w") as f:
            json.dump(RECORD, f)
''')


def backend_environment(tmp_path: Path) -> dict:
    """The environment of a Python that finds the backend through the entry points this checkout
    declares: a distribution record made from ``pyproject.toml``, first on the path."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    groups = project["project"]["entry-points"]
    dist = tmp_path / "site" / "mgmatch-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mgmatch\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in entries.items()) + "\n"
        for group, entries in groups.items()))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), str(ROOT), env.get("PYTHONPATH", "")])
    return env


def test_networkx_tests_pass_through_the_backend(tmp_path):
    env = backend_environment(tmp_path)
    (tmp_path / "site" / "mgmatch_nx_trace.py").write_text(TRACE_PLUGIN)
    env.update(NETWORKX_TEST_BACKEND="mgmatch", NETWORKX_FALLBACK_TO_NX="True",
               MGMATCH_NX_TRACE=str(tmp_path / "trace.json"), MGMATCH_NX_DEVICE="cpu")
    # importlib mode: pytest must not put site-packages before the record made above
    cmd = [sys.executable, "-m", "pytest", "--import-mode=importlib", "-p", "no:cacheprovider",
           "-p", "mgmatch_nx_trace", "-q", "-rxXfE", *(str(NX_DIR / f) for f in TEST_FILES)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    trace = json.loads((tmp_path / "trace.json").read_text())

    outcomes = {nodeid: entry["outcome"] for nodeid, entry in trace.items()}
    assert set(outcomes.values()) <= {"passed", "xfailed", "skipped"}, outcomes
    xfailed = {(Path(n.split("::")[0]).name, n.split("::")[-1]) for n, o in outcomes.items() if o == "xfailed"}
    assert xfailed == set(EXPECTED_FAILURES)  # each listed failure happens (strict), and no other

    ran = {}
    for nodeid, entry in trace.items():
        for name in entry["ran"]:
            ran.setdefault(name, set()).add(nodeid)
    # every backed function ran on mgmatch in tests that passed, not only through fall-backs
    for name in BACKED:
        passed = {n for n in ran.get(name, ()) if outcomes[n] == "passed"}
        assert passed, f"no passing NetworkX test ran {name} on mgmatch"
    # the counts, for the record: python -m pytest tests/test_nx_backend_suite.py -s
    print(f"\nNetworkX tests through mgmatch: {sum(o == 'passed' for o in outcomes.values())} passed, "
          f"{len(xfailed)} expected failures")
    for name in sorted(BACKED):
        tests = ran.get(name, set())
        fell = {n for n, e in trace.items() if name in e["fell_back"]}
        print(f"  {name}: ran on mgmatch in {len(tests)} tests, left to NetworkX in {len(fell)}")
