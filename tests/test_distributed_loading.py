"""Reading a graph file into partitions on the Dask workers: every partition built there equals
the in-process reader's partition array for array, the canonicalisation counts agree, the
matchings equal the greedy ones, and bad input fails with one clear error naming the file."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from mgmatch import verify
from mgmatch.algorithms.matching import match
from mgmatch.errors import InputError, ParameterError
from mgmatch.io import read_graph

distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from mgmatch.distributed import DistributedGraph, read_partitions  # noqa: E402


def random_edges(n=240, m=1800, seed=3, base=0):
    """Tied integer weights, duplicates in both directions and self-loops, ids from ``base``."""
    rng = np.random.default_rng(seed)
    src = rng.integers(base, n + base, m)
    dst = rng.integers(base, n + base, m)
    src[:40], dst[:40] = dst[40:80], src[40:80]  # reversed duplicates of later entries
    dst[100:110] = src[100:110]  # self-loops
    weight = rng.integers(0, 5, m).astype(float)  # zeros included
    return src, dst, weight


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Edge lists and tables in the shapes the reader meets; each name maps to (path, options)."""
    tmp = tmp_path_factory.mktemp("loading")
    out = {}

    src, dst, weight = random_edges(base=1)
    lines = ["# a weighted graph, 1-based ids", "% another comment", "src,dst,weight"]
    for i, (a, b, c) in enumerate(zip(src, dst, weight)):
        if i % 301 == 0:
            lines.append("# a comment between edges")
        lines.append(f"{a},{b},{c:g}")
    csv = tmp / "one_based.csv"
    csv.write_text("\n".join(lines) + "\n")
    out["csv"] = (csv, {"chunk_bytes": 997})

    src, dst, _ = random_edges(seed=5)
    txt = tmp / "unweighted.txt.gz"
    with gzip.open(txt, "wt") as f:
        f.write("# SNAP style\n" + "".join(f"{a}\t{b}\n" for a, b in zip(src, dst)))
    out["gzip"] = (txt, {})

    src, dst, weight = random_edges(seed=7)
    table = pa.table({"src": src, "dst": dst, "weight": weight})
    parquet = tmp / "edges.parquet"
    pq.write_table(table, parquet, row_group_size=250)
    assert pq.ParquetFile(parquet).metadata.num_row_groups > 4
    out["parquet"] = (parquet, {})
    return out


def built_partitions(client, dg: DistributedGraph):
    return client.gather([dg.parts[p] for p in range(dg.n_parts)])


def assert_same_partitions(client, dg, graph):
    expected = graph.partition(bounds=dg.bounds)
    for got, want in zip(built_partitions(client, dg), expected, strict=True):
        assert (got.index, got.lo, got.hi, got.n_global, got.n_cols) == (want.index, want.lo, want.hi,
                                                                           want.n_global, want.n_cols)
        for name in ("indptr", "indices", "weights", "ghosts", "bounds"):
            a, b = getattr(got, name), getattr(want, name)
            assert a.dtype == b.dtype, name
            np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.mark.parametrize("name", ["csv", "gzip", "parquet"])
@pytest.mark.parametrize("partitions", [None, 3])
def test_partitions_equal_read_graph(dask_client, files, name, partitions):
    path, options = files[name]
    dg = read_partitions(dask_client, path, partitions=partitions, **options)
    graph = read_graph(path)
    assert (dg.n, dg.m, dg.nnz, dg.weighted) == (graph.n, graph.m, graph.nnz, graph.weighted)
    assert dg.n_parts == (partitions or len(dask_client.scheduler_info()["workers"]))
    assert dg.summary.as_dict() == graph.summary.as_dict()
    assert dg.summary.self_loops_dropped > 0 and dg.summary.duplicates_merged > 0
    assert_same_partitions(dask_client, dg, graph)


@pytest.mark.parametrize("duplicates", ["max", "sum", "min", "first"])
def test_duplicate_rules_zeros_and_negatives(dask_client, tmp_path, duplicates):
    src, dst, weight = random_edges(n=80, m=900, seed=11)
    weight = np.where(np.arange(weight.size) % 7 == 0, -weight, weight + 0.1 * np.arange(weight.size) % 3)
    path = tmp_path / "signed.tsv"
    path.write_text("".join(f"{a}\t{b}\t{float(c)!r}\n" for a, b, c in zip(src, dst, weight)))
    options = dict(duplicates=duplicates, negative="abs", zeros="drop", dtype="float32")
    dg = read_partitions(dask_client, path, partitions=4, chunk_bytes=1500, **options)
    graph = read_graph(path, **options)
    assert dg.summary.as_dict() == graph.summary.as_dict()
    assert dg.summary.negatives_made_absolute > 0 and dg.summary.zeros_dropped > 0
    assert_same_partitions(dask_client, dg, graph)


@pytest.mark.parametrize("zeros", ["keep", "drop"])
def test_distinct_edges_are_laid_out_without_a_merge(dask_client, tmp_path, zeros):
    # each edge once (the common file): the rows are built straight from the entries, and equal
    # the in-process reader's, zero and negative weights included
    rng = np.random.default_rng(17)
    keys = rng.choice(300 * 299 // 2, 2500, replace=False)
    u = ((1 + np.sqrt(8 * keys + 1)) // 2).astype(np.int64)
    u -= u * (u - 1) // 2 > keys
    u += (u + 1) * u // 2 <= keys
    v = keys - u * (u - 1) // 2
    flip = rng.random(u.size) < 0.5  # either direction, never both
    src, dst = np.where(flip, v, u), np.where(flip, u, v)
    weight = rng.integers(-3, 4, u.size).astype(float)  # zeros and negatives
    path = tmp_path / "distinct.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), path, row_group_size=600)
    options = dict(negative="abs", zeros=zeros)
    dg = read_partitions(dask_client, path, partitions=3, **options)
    graph = read_graph(path, **options)
    assert dg.summary.as_dict() == graph.summary.as_dict()
    assert dg.summary.duplicates_merged == dg.summary.mirrored_pairs == 0 and dg.summary.negatives_made_absolute > 0
    assert_same_partitions(dask_client, dg, graph)


def test_rows_are_sorted_and_a_repeated_entry_is_seen():
    from mgmatch.distributed.loading import _csr_rows, _directed

    rows, cols = _directed(np.array([0, 1, 0, 2]), np.array([3, 2, 1, 3]), 0, 2)  # rows of vertices 0 and 1
    assert rows.tolist() == [0, 1, 0, 1] and cols.tolist() == [3, 2, 1, 0]
    indptr, indices, weights = _csr_rows(rows, cols, np.array([1.0, 2.0, 3.0, 4.0]), 2, 4)
    assert indptr.tolist() == [0, 2, 4] and indices.tolist() == [1, 3, 0, 2]
    assert weights.tolist() == [3.0, 1.0, 4.0, 2.0]
    assert _csr_rows(np.array([0, 0]), np.array([1, 1]), np.ones(2), 1, 2) is None


def _merged_both_ways(plan, p, bounds, pieces, m):
    """On a worker: partition ``p`` built by the merge itself, and built after it from its rows."""
    from distributed import get_worker

    from mgmatch.distributed.loading import _merge_task, _partition_task

    here = get_worker().address
    built, counts = _merge_task(plan, p, bounds, pieces, here, "int32")
    rows, later_counts = _merge_task(plan, p, bounds, pieces, here)
    return built, _partition_task((rows, later_counts), p, bounds, int(bounds[-1]), m, "float64", here), \
        counts == later_counts


def test_a_partition_built_by_its_merge_equals_one_built_after_the_count(dask_client, files):
    # when the index type is known before the edges are counted, the merge builds the partition
    from dataclasses import replace

    from mgmatch.distributed import loading

    path, _ = files["parquet"]
    graph = read_graph(path)
    options = {"weighted": True, "negative": "error", "duplicates": "max", "zeros": "keep", "one_based": None,
               "dtype": "float64", "columns": None}
    plan = loading._plan_task(str(path), "parquet", 1 << 20, options)
    chunks = [loading._chunk_task(plan, c, True) for c in range(len(plan.chunks))]
    plan = replace(plan, base=0)
    bounds = np.array([0, graph.n // 3, graph.n])
    pieces = [loading._split_task(plan, chunk, bounds) for chunk in chunks]
    expected = graph.partition(bounds=bounds)
    for p in range(2):
        built, later, same_counts = dask_client.submit(_merged_both_ways, plan, p, bounds,
                                                       [piece.get(p) for piece in pieces], graph.m,
                                                       pure=False).result()
        assert same_counts
        for got in (built, later):
            for name in ("indptr", "indices", "weights", "ghosts"):
                a, b = getattr(got, name), getattr(expected[p], name)
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)


def test_parquet_columns_chosen_on_the_workers(dask_client, tmp_path):
    src, dst, weight = random_edges(n=90, m=700, seed=19)
    path = tmp_path / "named.parquet"
    pq.write_table(pa.table({"day": np.arange(src.size), "to": dst, "from": src, "w": weight + 1}), path,
                   row_group_size=200)
    dg = read_partitions(dask_client, path, partitions=2, columns={"src": "from", "dst": "to", "weight": "w"})
    graph = read_graph(path, columns=("from", "to", "w"))
    assert dg.summary.as_dict() == graph.summary.as_dict()
    assert_same_partitions(dask_client, dg, graph)
    with pytest.raises(InputError, match="has no column 'hour'"):
        read_partitions(dask_client, path, columns=("from", "hour"))
    text = tmp_path / "named.csv"
    text.write_text("from,to\n0,1\n")
    with pytest.raises(ParameterError, match="only in Parquet tables"):
        read_partitions(dask_client, text, columns=("from", "to"))


def test_unweighted_read_takes_the_first_two_fields(dask_client, tmp_path):
    src, dst, _ = random_edges(n=60, m=400, seed=5)
    path = tmp_path / "labelled.txt"
    path.write_text("".join(f"{a} {b} label{a % 5} {b * 7}\n" for a, b in zip(src, dst)))  # four fields
    dg = read_partitions(dask_client, path, partitions=3, chunk_bytes=900, weighted=False)
    graph = read_graph(path, weighted=False)
    assert not dg.weighted and not graph.weighted
    assert_same_partitions(dask_client, dg, graph)


def test_explicit_bounds_and_empty_partitions(dask_client, files):
    path, options = files["csv"]
    graph = read_graph(path)
    bounds = [0, 0, 10, graph.n, graph.n]
    dg = read_partitions(dask_client, path, partitions=bounds, **options)
    np.testing.assert_array_equal(dg.bounds, bounds)
    assert_same_partitions(dask_client, dg, graph)


@pytest.mark.parametrize("name", ["csv", "gzip", "parquet"])
def test_matchings_equal_greedy(dask_client, files, name):
    path, options = files[name]
    dg = read_partitions(dask_client, path, partitions=3, **options)
    graph = read_graph(path)
    expected = verify.greedy_matching(graph)
    for algorithm in ("suitor", "ld", "handshake"):
        result = match(dg, algorithm, client=dask_client)
        np.testing.assert_array_equal(result.mate, expected)
        assert (result.n, result.m, result.n_parts) == (graph.n, graph.m, 3)
    eu, ev, _ = verify.greedy_b_matching(graph, 2)
    result = match(dg, "bsuitor", b=2, client=dask_client)
    np.testing.assert_array_equal(result.u, eu)
    np.testing.assert_array_equal(result.v, ev)


def test_distributed_graph_needs_its_client_and_partitions(dask_client, files):
    path, options = files["parquet"]
    dg = read_partitions(dask_client, path, partitions=2, **options)
    with pytest.raises(ParameterError, match="client"):
        match(dg, "suitor")
    with pytest.raises(ParameterError, match="2 partitions"):
        match(dg, "suitor", partitions=3, client=dask_client)


# ------------------------------------------------------------------------------ bad input
def test_nan_weight_in_a_later_chunk(dask_client, tmp_path):
    lines = [f"{i},{i + 1},1.5" for i in range(200)]
    lines[150] = "150,151,nan"
    path = tmp_path / "nan.csv"
    path.write_text("\n".join(lines) + "\n")
    offset = sum(len(line) + 1 for line in lines[:150])
    with pytest.raises(InputError, match=rf"nan.csv: the line at byte {offset}: .*finite") as err:
        read_partitions(dask_client, path, chunk_bytes=256)
    assert err.value.path == str(path)
    with pytest.raises(InputError, match="nan.csv, line 151"):  # one chunk: the line is named
        read_partitions(dask_client, path)


@pytest.mark.parametrize(
    ("name", "text", "kwargs", "pattern"),
    [
        ("negative.txt", "0 1\n1 2\n-3 4\n", {}, r"negative.txt, line 3: source id -3 is negative"),
        ("word.csv", "0,1\n1,2\n2,x\n", {}, r"word.csv, line 3: target id 'x' is not a vertex id"),
        ("zero.csv", "1,2\n0,3\n", {"one_based": True}, r"zero.csv, line 2: vertex id 0"),
        ("comments.txt", "# nothing\n% at all\n", {}, "no edges"),
        ("missing.csv", None, {}, "no such file"),
    ],
)
def test_bad_text_input(dask_client, tmp_path, name, text, kwargs, pattern):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(InputError, match=pattern) as err:
        read_partitions(dask_client, path, **kwargs)
    assert err.value.path == str(path)


def test_negative_id_in_parquet(dask_client, tmp_path):
    table = pa.table({"src": np.array([0, 1, -2]), "dst": np.array([1, 2, 3])})
    pq.write_table(table, tmp_path / "negative.parquet", row_group_size=2)
    with pytest.raises(InputError, match=r"negative.parquet: source id -2 \(entry 2\) is negative"):
        read_partitions(dask_client, tmp_path / "negative.parquet")


def test_unsupported_formats_and_options(dask_client, tmp_path, files):
    path = tmp_path / "g.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1.0\n")
    with pytest.raises(ParameterError, match="read it in the client"):
        read_partitions(dask_client, path)
    with pytest.raises(ParameterError, match="read it in the client"):
        read_partitions(dask_client, tmp_path / "g.npz")
    with pytest.raises(ParameterError, match="random_weights"):
        read_partitions(dask_client, files["gzip"][0], random_weights=1)
    with pytest.raises(ParameterError, match="duplicates"):
        read_partitions(dask_client, files["gzip"][0], duplicates="mean")


# ------------------------------------------------------------------------------------ CLI
def test_cli_read_on_workers(dask_client, files, tmp_path):
    from click.testing import CliRunner

    from mgmatch.cli import main
    from mgmatch.jobs import run_job

    path, _ = files["csv"]
    out = tmp_path / "mates.csv"
    record = run_job(path, out, algorithm="ld", client=dask_client, quiet=True, read_on_workers=True)
    assert record["read"] == "workers"
    assert record["canonicalisation"] == read_graph(path).summary.as_dict()
    assert json.loads(out.with_suffix(".json").read_text())["read"] == "workers"
    expected = verify.greedy_matching(read_graph(path))
    assert record["cardinality"] == int((expected >= 0).sum() // 2)

    runner = CliRunner()
    res = runner.invoke(main, ["run", "-q", "--read-on-workers", str(path), "-o", str(tmp_path / "a.csv")])
    assert res.exit_code == 2 and "needs a Dask cluster" in res.output
    res = runner.invoke(main, ["run", "-q", "--read-on-workers", "--workers", "2", "-a", "louvain", str(path),
                               "-o", str(tmp_path / "b.csv")])
    assert res.exit_code == 2 and "matching algorithms" in res.output
    out = tmp_path / "c.parquet"
    res = runner.invoke(main, ["run", "-q", "--read-on-workers", "--workers", "2", "--device", "cpu", str(path),
                               "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.with_suffix(".json").read_text())["read"] == "workers"


def test_run_job_reads_chosen_parquet_columns_on_the_workers(dask_client, tmp_path):
    from mgmatch.jobs import run_job

    src, dst, weight = random_edges(n=90, m=700, seed=23)
    path = tmp_path / "named.parquet"
    pq.write_table(pa.table({"a": src, "b": dst, "w": weight}), path, row_group_size=300)
    columns = {"src": "a", "dst": "b", "weight": "w"}
    record = run_job(path, tmp_path / "m.csv", client=dask_client, quiet=True, read_on_workers=True,
                     read_options={"columns": columns})
    assert record["read"] == "workers" and record["renumbered"] is False
    expected = verify.greedy_matching(read_graph(path, columns=columns))
    assert record["cardinality"] == int((expected >= 0).sum() // 2)


def test_worker_lost_mid_run_rebuilds_partitions(tmp_path, worker_fault):
    from mgmatch.engine import config_context, execute

    from test_distributed import SlowSuitor

    src, dst, weight = random_edges(n=2000, m=12000, seed=13)
    path = tmp_path / "big.csv"
    path.write_text("".join(f"{a},{b},{c:g}\n" for a, b, c in zip(src, dst, weight)))
    expected = verify.greedy_matching(read_graph(path))
    dg = read_partitions(worker_fault.client, path, partitions=6, chunk_bytes=20000)
    with config_context(peer_timeout_s=3.0, heartbeat_s=0.2, progress_interval_s=1e-6):
        result = execute(SlowSuitor(0.08), dg, client=worker_fault.client, device="cpu",
                         progress=worker_fault.progress)
    assert worker_fault.fired.is_set()
    assert worker_fault.victim not in dg.workers.values()
    np.testing.assert_array_equal(result.mate, expected)
