"""Stable marriage: every algorithm, device and partition count against a plain Gale-Shapley.

Invariants first (a matching of mutually listed pairs, no blocking pair, man-optimal by brute
force on tiny instances), then equality with an independent pure-Python Gale-Shapley that reads
the preference table itself, then the weighted case against mgmatch's greedy matching.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import deque

import numpy as np
import pytest

import mgmatch
from mgmatch import generators
from mgmatch.errors import InputError, ParameterError
from mgmatch.preferences import Preferences
from mgmatch.verify import greedy_matching
from mgmatch.verify_stable import blocking_pairs, is_stable, verify_stable_result

ALGORITHMS = ("gale-shapley", "mcvitie-wilson", "stable-marriage")


# ------------------------------------------------------------------------ references
def reference_gale_shapley(table, n_men, n_women):
    """Gale-Shapley with a queue of free men, straight from the table's rows (no mgmatch
    code): returns ``wife`` (-1 for a single man)."""
    rows = list(zip(*(np.asarray(table[c]).tolist() for c in ("man", "woman", "man_rank", "woman_rank"))))
    lists = {m: [] for m in range(n_men)}
    her_rank = {}
    for m, w, mr, wr in rows:
        lists[m].append((mr, w))
        her_rank[w, m] = wr
    for m in lists:
        lists[m] = [w for _, w in sorted(lists[m])]
    nxt = dict.fromkeys(range(n_men), 0)
    husband = {}
    free = deque(range(n_men))
    while free:
        m = free.popleft()
        while nxt[m] < len(lists[m]):
            w = lists[m][nxt[m]]
            nxt[m] += 1
            h = husband.get(w)
            if h is None or her_rank[w, m] < her_rank[w, h]:
                husband[w] = m
                if h is not None:
                    free.append(h)
                break
    wife = np.full(n_men, -1, dtype=np.int64)
    for w, m in husband.items():
        wife[m] = w
    return wife


def all_stable_matchings(table, n_men, n_women):
    """Every stable matching of a tiny instance, by enumerating all matchings of listed pairs."""
    p = Preferences.from_table(table, n_men=n_men, n_women=n_women)
    listed = {m: set() for m in range(n_men)}
    for m, w in zip(np.asarray(table["man"]).tolist(), np.asarray(table["woman"]).tolist()):
        listed[m].add(w)
    out = []
    for choice in itertools.product(*[[-1] + sorted(listed[m]) for m in range(n_men)]):
        taken = [w for w in choice if w >= 0]
        if len(taken) == len(set(taken)) and is_stable(p, np.array(choice)):
            out.append(np.array(choice))
    return out


def random_table(rng, n_men, n_women, density, *, gaps=True):
    """A random SMI table: each pair listed with probability ``density``; ranks are random
    distinct numbers (with gaps: only their order matters)."""
    mask = rng.random((n_men, n_women)) < density
    man, woman = np.nonzero(mask)
    spread = 3 if gaps else 1
    return {"man": man, "woman": woman,
            "man_rank": rng.permutation(spread * man.size)[: man.size],
            "woman_rank": rng.permutation(spread * man.size)[: man.size]}


def table_of(prefs):
    return prefs.to_table()


def uneven_table(rng, n_men, n_women):
    """Lists of very different lengths: most men list a few women, some list nearly all."""
    density = np.where(rng.random(n_men) < 0.2, 0.95, 0.03)
    mask = rng.random((n_men, n_women)) < density[:, None]
    man, woman = np.nonzero(mask)
    return {"man": man, "woman": woman, "man_rank": rng.permutation(man.size),
            "woman_rank": rng.permutation(man.size)}


INSTANCES = {
    "uneven": lambda rng: (uneven_table(rng, 120, 150), 120, 150),
    "smi-square": lambda rng: (random_table(rng, 40, 40, 0.2), 40, 40),
    "smi-more-men": lambda rng: (random_table(rng, 50, 17, 0.3), 50, 17),
    "smi-more-women": lambda rng: (random_table(rng, 13, 60, 0.25), 13, 60),
    "sm-complete": lambda rng: (table_of(generators.sm_random(30, seed=int(rng.integers(100)))), 30, 30),
    "sm-complete-unequal": lambda rng: (table_of(generators.sm_random(9, n_women=23, seed=4)), 9, 23),
    "empty-lists": lambda rng: (random_table(rng, 20, 20, 0.1), 35, 28),  # people beyond the listed ids
    "easy": lambda rng: (table_of(generators.sm_easy(300, seed=3)), 300, 300),
    "hard": lambda rng: (table_of(generators.sm_hard(25, seed=5)), 25, 25),
}


@pytest.fixture(params=sorted(INSTANCES))
def instance(request):
    rng = np.random.default_rng(abs(hash(request.param)) % 2**32)
    table, n_men, n_women = INSTANCES[request.param](rng)
    return table, n_men, n_women


def _run(table, n_men, n_women, device, **kwargs):
    return mgmatch.stable_marriage(table, n_men=n_men, n_women=n_women, device=device, **kwargs)


# ------------------------------------------------------------------------ invariants
def test_brute_force_man_optimal_on_tiny_instances(device):
    """The result is stable and every man gets his best partner over all stable matchings."""
    rng = np.random.default_rng(7)
    for _ in range(25):
        n_men, n_women = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        table = random_table(rng, n_men, n_women, 0.7)
        stable = all_stable_matchings(table, n_men, n_women)
        assert stable  # Gale and Shapley: a stable matching always exists
        r = _run(table, n_men, n_women, device)
        p = Preferences.from_table(table, n_men=n_men, n_women=n_women)
        assert is_stable(p, r.wife)
        assert any(np.array_equal(r.wife, s) for s in stable)
        lists = {m: [w for _, w in sorted((mr, w) for mm, w, mr in zip(table["man"], table["woman"],
                                                                          table["man_rank"]) if mm == m)]
                 for m in range(n_men)}
        for s in stable:  # no stable matching gives any man a better wife
            for m in range(n_men):
                best = lists[m].index(r.wife[m]) if r.wife[m] >= 0 else len(lists[m])
                other = lists[m].index(s[m]) if s[m] >= 0 else len(lists[m])
                assert best <= other


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("threads", [1, None])
def test_equals_reference_gale_shapley(instance, device, algorithm, threads):
    table, n_men, n_women = instance
    expected = reference_gale_shapley(table, n_men, n_women)
    r = _run(table, n_men, n_women, device, algorithm=algorithm, threads=threads)
    np.testing.assert_array_equal(r.wife, expected)
    p = Preferences.from_table(table, n_men=n_men, n_women=n_women)
    assert blocking_pairs(p, r.wife)[0].size == 0
    husband = np.full(n_women, -1)
    husband[expected[expected >= 0]] = np.flatnonzero(expected >= 0)
    np.testing.assert_array_equal(r.husband, husband)
    assert r.matched == int((expected >= 0).sum())


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("partitions", [2, 3, 5, 8])
def test_partitions_give_the_same_marriages(instance, device, algorithm, partitions):
    table, n_men, n_women = instance
    expected = reference_gale_shapley(table, n_men, n_women)
    one = _run(table, n_men, n_women, device, algorithm=algorithm)
    r = _run(table, n_men, n_women, device, algorithm=algorithm, partitions=partitions)
    np.testing.assert_array_equal(r.wife, expected)
    assert r.proposals == one.proposals  # women considered depend only on the result
    assert r.n_parts == partitions
    if partitions > 1 and r.rounds.rounds > 1:
        assert sum(r.rounds.messages) > 0


def test_explicit_bounds_and_a_partition_without_men(device):
    rng = np.random.default_rng(11)
    table = random_table(rng, 12, 12, 0.5)
    expected = reference_gale_shapley(table, 12, 12)
    for bounds in ([0, 0, 5, 12], [0, 12, 12], [0, 1, 2, 3, 12], 20):  # 20: more partitions than men
        r = mgmatch.stable_marriage(table, device=device, partitions=bounds)
        np.testing.assert_array_equal(r.wife, expected)


def test_proposals_count_the_women_considered(device):
    """Hard instances: identical lists, so man i (the women's i-th choice) considers i + 1
    women and marries the men's common i-th choice."""
    n = 40
    p = generators.sm_hard(n, seed=9)
    for algorithm in ALGORITHMS:
        r = mgmatch.stable_marriage(p, algorithm=algorithm, device=device)
        assert r.proposals == n * (n + 1) // 2
        order = np.asarray(p.women[:n])
        rank_of_man = np.asarray(p.wrank[::n])
        np.testing.assert_array_equal(r.wife, order[rank_of_man])


def test_empty_instances(device):
    empty = {c: np.empty(0, dtype=np.int64) for c in ("man", "woman", "man_rank", "woman_rank")}
    r = mgmatch.stable_marriage(empty, device=device, n_men=3, n_women=2)
    assert r.wife.tolist() == [-1, -1, -1] and r.husband.tolist() == [-1, -1] and r.proposals == 0
    r = mgmatch.stable_marriage(empty, device=device)
    assert r.wife.size == 0 and r.matched == 0
    one = {"man": [0], "woman": [0], "man_rank": [0], "woman_rank": [0]}
    assert mgmatch.stable_marriage(one, device=device).wife.tolist() == [0]


# ------------------------------------------------------------------------ weighted graphs
def _tied_weights(rng, m):
    return rng.integers(1, 5, size=m).astype(np.float64)  # many ties: broken by the smaller id


@pytest.mark.parametrize("partitions", [1, 3])
def test_undirected_graph_gives_the_greedy_matching(device, partitions):
    rng = np.random.default_rng(21)
    n, m = 60, 240
    g = mgmatch.Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), _tied_weights(rng, m), n=n)
    for algorithm in ALGORITHMS:
        r = mgmatch.stable_marriage(g, algorithm=algorithm, device=device, partitions=partitions)
        np.testing.assert_array_equal(r.wife, greedy_matching(g))
        np.testing.assert_array_equal(r.wife, mgmatch.suitor(g, device="cpu").mate)


def test_bipartite_graph_gives_the_greedy_matching(device):
    rng = np.random.default_rng(22)
    rows, cols, m = 30, 45, 200
    r_ids, c_ids, w = rng.integers(0, rows, m), rng.integers(0, cols, m), _tied_weights(rng, m)
    b = mgmatch.Graph.from_edges(r_ids, c_ids, w, bipartite=True, shape=(rows, cols))
    u, v, ww = (np.asarray(a) for a in b.edges())
    # the same edges as an undirected graph, columns after the rows: its greedy matching
    g = mgmatch.Graph.from_edges(u, v.astype(np.int64) + rows, ww, n=rows + cols)
    mate = greedy_matching(g)
    expected = np.where(mate[:rows] >= 0, mate[:rows] - rows, -1)
    r = mgmatch.stable_marriage(b, device=device, partitions=2)
    np.testing.assert_array_equal(r.wife, expected)


# ------------------------------------------------------------------------ table forms
def test_pyarrow_and_pandas_tables_and_arrays():
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    table = random_table(rng, 15, 15, 0.4)
    expected = reference_gale_shapley(table, 15, 15)
    for form in (table, pa.table(table), pd.DataFrame(table),
                 {k: v.astype(np.float64) for k, v in table.items()}):  # integral floats are ids too
        r = mgmatch.stable_marriage(form, device="cpu", n_men=15, n_women=15)
        np.testing.assert_array_equal(r.wife, expected)


def test_to_table_round_trip():
    rng = np.random.default_rng(5)
    table = random_table(rng, 10, 12, 0.5)
    p = Preferences.from_table(table, n_men=10, n_women=12)
    q = Preferences.from_table(p.to_table(), n_men=10, n_women=12)
    for a, b in ((p.indptr, q.indptr), (p.women, q.women), (p.wrank, q.wrank)):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------ bad input
def _good():
    return {"man": [0, 0, 1], "woman": [0, 1, 0], "man_rank": [0, 1, 0], "woman_rank": [1, 0, 0]}


@pytest.mark.parametrize("change, message", [
    (lambda t: t | {"man": [0, 0, 0], "woman": [0, 0, 1], "man_rank": [0, 1, 2], "woman_rank": [0, 1, 0]},
     "listed twice"),
    (lambda t: t | {"man_rank": [0, 0, 0]}, "gives rank 0 to two women"),
    (lambda t: t | {"woman_rank": [1, 0, 1]}, "gives rank 1 to two men"),
    (lambda t: t | {"man": [0, -1, 1]}, "negative"),
    (lambda t: t | {"woman_rank": [1, 0, -3]}, "negative"),
    (lambda t: {k: v for k, v in t.items() if k != "woman_rank"}, "lacks the column(s) woman_rank"),
    (lambda t: t | {"man_rank": [0.0, 1.5, 0.0]}, "not an integer"),
    (lambda t: t | {"woman": [0.0, np.nan, 0.0]}, "not an integer"),
    (lambda t: t | {"man": ["a", "b", "c"]}, "must hold integers"),
    (lambda t: t | {"man": [0, 0]}, "different lengths"),
])
def test_bad_tables_get_one_clear_error(device, change, message):
    with pytest.raises(InputError, match=re.escape(message)):
        mgmatch.stable_marriage(change(_good()), device=device)


def test_bad_parameters():
    with pytest.raises(ParameterError, match="unknown stable-marriage algorithm"):
        mgmatch.stable_marriage(_good(), algorithm="roommates")
    with pytest.raises(ParameterError, match="threads"):
        mgmatch.stable_marriage(_good(), threads=0)
    with pytest.raises(ParameterError, match="mapping"):
        mgmatch.stable_marriage(_good(), mapping="block")
    with pytest.raises(ParameterError, match="partitions"):
        mgmatch.stable_marriage(_good(), partitions=100, device="cpu")
    with pytest.raises(InputError, match="n_men=1"):
        mgmatch.stable_marriage(_good(), n_men=1)


# ------------------------------------------------------------------------ GPU mappings
@pytest.mark.gpu
@pytest.mark.parametrize("mapping", ["thread", "warp"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_gpu_mappings(instance, mapping, algorithm):
    table, n_men, n_women = instance
    expected = reference_gale_shapley(table, n_men, n_women)
    for partitions in (1, 3):
        r = _run(table, n_men, n_women, "gpu", algorithm=algorithm, mapping=mapping, partitions=partitions)
        np.testing.assert_array_equal(r.wife, expected)


@pytest.mark.gpu
def test_gpu_larger_instances_equal_sequential():
    for p in (generators.sm_easy(200_000, seed=2), generators.sm_hard(2_000, seed=2)):
        seq = mgmatch.stable_marriage(p, algorithm="gale-shapley", device="cpu", threads=1)
        for mapping in ("thread", "warp"):
            for algorithm in ("gale-shapley", "mcvitie-wilson"):
                r = mgmatch.stable_marriage(p, algorithm=algorithm, device="gpu", mapping=mapping)
                np.testing.assert_array_equal(r.wife, seq.wife)
                assert r.proposals == seq.proposals


def test_threads_on_a_larger_easy_instance():
    p = generators.sm_easy(20_000, seed=4)
    seq = mgmatch.stable_marriage(p, algorithm="gale-shapley", device="cpu", threads=1)
    for algorithm in ("gale-shapley", "mcvitie-wilson"):
        r = mgmatch.stable_marriage(p, algorithm=algorithm, device="cpu")
        np.testing.assert_array_equal(r.wife, seq.wife)
        assert r.proposals == seq.proposals
    assert is_stable(p, seq.wife)
    assert seq.matched > 0.9 * p.n_men  # the paper: more than 98% married on its sizes


# ------------------------------------------------------------------------ generators
def test_easy_generator_shape_and_determinism():
    p = generators.sm_easy(5000, seed=1)
    q = generators.sm_easy(5000, seed=1)
    np.testing.assert_array_equal(p.women, q.women)
    np.testing.assert_array_equal(p.wrank, q.wrank)
    lengths = np.diff(p.indptr)
    assert lengths.min() >= int(np.log(5000)) and lengths.max() <= int(2 * np.log(5000))
    man = p.men_of_entries()
    assert np.unique(man * 5000 + p.women).size == p.nnz  # no woman twice in one list
    listed = np.bincount(p.women, minlength=5000)  # each woman ranks exactly the men listing her
    for w in (0, 17, 4999):
        assert sorted(p.wrank[p.women == w].tolist()) == list(range(listed[w]))


def test_spec_parsing():
    assert generators.parse_preferences_spec("sm_random:n=4,n_women=3,seed=1").nnz == 12
    with pytest.raises(ParameterError, match="unknown generator"):
        generators.parse_preferences_spec("sm_medium:n=4")
    with pytest.raises(ParameterError, match="parameters"):
        generators.parse_preferences_spec("sm_hard:k=4")


# ------------------------------------------------------------------------ verify and CLI
def test_verify_report():
    rng = np.random.default_rng(8)
    table = random_table(rng, 20, 20, 0.5)
    p = Preferences.from_table(table, n_men=20, n_women=20)
    r = mgmatch.stable_marriage(p, device="cpu")
    report = verify_stable_result(p, r.to_table())
    assert report["ok"] and report["stable"] and report["man_optimal"] and report["blocking_pairs"] == 0
    woman_optimal = mgmatch.stable_marriage(
        {"man": table["woman"], "woman": table["man"], "man_rank": table["woman_rank"],
         "woman_rank": table["man_rank"]}, n_men=20, n_women=20, device="cpu")
    # woman_optimal's "husband" of original man y is his wife when the women propose
    swapped = {"man": np.flatnonzero(woman_optimal.husband >= 0),
               "woman": woman_optimal.husband[woman_optimal.husband >= 0]}
    assert not np.array_equal(woman_optimal.husband, r.wife)  # this instance has several stable matchings
    report = verify_stable_result(p, swapped)  # women propose: stable, but not man-optimal
    assert report["stable"] and not report["man_optimal"] and not report["ok"]
    broken = r.to_table()
    broken["woman"] = np.roll(broken["woman"], 1)
    assert not verify_stable_result(p, broken)["ok"]


@pytest.fixture
def runner():
    from click.testing import CliRunner

    return CliRunner()


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_cli_generate_run_verify(runner, tmp_path, suffix):
    from mgmatch.cli import main

    prefs = tmp_path / f"easy{suffix}"
    res = runner.invoke(main, ["generate", "sm_easy", "-p", "n=500", "-p", "seed=2", "-o", str(prefs)])
    assert res.exit_code == 0, res.output
    expected = mgmatch.stable_marriage(generators.sm_easy(500, seed=2), device="cpu", threads=1)
    for algorithm in ("stable-marriage", "gale-shapley", "mcvitie-wilson"):
        out = tmp_path / f"{algorithm}.parquet"
        res = runner.invoke(main, ["run", "-a", algorithm, "--device", "cpu", "-q", "--partitions", "2", str(prefs),
                                   "-o", str(out)])
        assert res.exit_code == 0, res.output
        from mgmatch.io import read_table

        got = read_table(out)
        assert sorted(got) == ["man", "woman"]
        np.testing.assert_array_equal(got["woman"], expected.wife[got["man"]])
        summary = json.loads(out.with_suffix(".json").read_text())
        assert summary["proposals"] == expected.proposals and summary["matched"] == expected.matched
        assert summary["rounds"] >= 1
        res = runner.invoke(main, ["verify", str(prefs), str(out)])
        assert res.exit_code == 0 and json.loads(res.output)["man_optimal"], res.output


def test_cli_weighted_graph_and_broken_result(runner, tmp_path):
    from mgmatch.cli import main
    from mgmatch.io import write_table

    graph = tmp_path / "g.csv"
    graph.write_text("0,1,2.0\n1,2,3.0\n2,3,1.0\n0,3,1.0\n")
    out = tmp_path / "m.csv"
    res = runner.invoke(main, ["run", "-a", "stable-marriage", "--device", "cpu", "-q", str(graph), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_text().splitlines() == ["man,woman", "0,3", "1,2", "2,1", "3,0"]
    write_table(out, {"man": np.array([0, 1]), "woman": np.array([1, 0])})
    res = runner.invoke(main, ["verify", str(graph), str(out)])
    assert res.exit_code == 1 and not json.loads(res.output)["ok"]


@pytest.mark.parametrize("content, message", [
    ("man,woman,man_rank\n0,0,0\n", "woman_rank"),
    ("man,woman,man_rank,woman_rank\n0,0,0,0\n0,0,1,1\n", "listed twice"),
    ("man,woman,man_rank,woman_rank\n0,0,0,0\n0,1,0,1\n", "gives rank 0 to two women"),
    ("man,woman,man_rank,woman_rank\n0,-1,0,0\n", "negative"),
    ("man,woman,man_rank,woman_rank\n0,0,0.5,0\n", "not an integer"),
])
def test_cli_bad_tables_exit_2_without_output(runner, tmp_path, content, message):
    from mgmatch.cli import main

    prefs = tmp_path / "p.csv"
    prefs.write_text(content)
    out = tmp_path / "out.parquet"
    res = runner.invoke(main, ["run", "-a", "gale-shapley", "--device", "cpu", "-q", str(prefs), "-o", str(out)])
    assert res.exit_code == 2
    assert message in res.output and "Traceback" not in res.output
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_bench_quick_rows():
    from mgmatch.bench import run_family

    rows = run_family("stable-marriage", graphs=["sm_easy:n=3000,seed=1", "sm_hard:n=60,seed=1"], device="cpu",
                      repeats=1)
    assert {r["impl"].split()[1] for r in rows} == {"gale-shapley", "mcvitie-wilson"}
    assert all(r["identical"] for r in rows)
    assert all(r["speedup"] > 0 for r in rows if "speedup" in r)


# ------------------------------------------------------------------------ on a Dask cluster
@pytest.mark.parametrize("exchange", ["direct", "tasks"])
def test_on_a_dask_cluster(dask_client, exchange):
    from mgmatch.engine import config_context

    rng = np.random.default_rng(31)
    table, n_men, n_women = uneven_table(rng, 60, 70), 60, 70
    expected = reference_gale_shapley(table, n_men, n_women)
    with config_context(exchange=exchange):
        for algorithm, partitions in (("gale-shapley", None), ("mcvitie-wilson", 3), ("stable-marriage", [0, 0, 9, 60])):
            r = mgmatch.stable_marriage(table, n_men=n_men, n_women=n_women, algorithm=algorithm,
                                        partitions=partitions, client=dask_client, device="cpu")
            np.testing.assert_array_equal(r.wife, expected)
            assert r.rounds.rounds >= 1


def test_cli_on_an_embedded_cluster(runner, tmp_path):
    from mgmatch.cli import main

    prefs = tmp_path / "hard.csv"
    assert runner.invoke(main, ["generate", "sm_hard", "-p", "n=30", "-o", str(prefs)]).exit_code == 0
    out = tmp_path / "m.parquet"
    res = runner.invoke(main, ["run", "-a", "mcvitie-wilson", "--device", "cpu", "--workers", "2", "-q", str(prefs),
                               "-o", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads(out.with_suffix(".json").read_text())
    assert summary["partitions"] == 2 and summary["proposals"] == 30 * 31 // 2 and summary["matched"] == 30
