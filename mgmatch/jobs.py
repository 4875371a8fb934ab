"""Jobs: read an input, run an algorithm on it, write the result table and its JSON summary.

One job is what ``mgmatch run INPUT -o OUTPUT`` does, and what each entry of a pipeline file
does (:mod:`mgmatch.pipeline`); both call :func:`run_job`. The command line adds only its
options, the cluster it starts and its error reporting (:mod:`mgmatch.cli`).

Every problem a user can cause is raised as a :class:`~mgmatch.errors.MgmatchError` before any
output is written; outputs are written atomically, the table and its summary as a pair.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from pathlib import Path

import click
import numpy as np

from ._versions import versions
from .errors import InputError, ParameterError

MATCHING = ("suitor", "bsuitor", "ld", "handshake")
BIPARTITE = ("gpr", "apfb", "apsb")
COMMUNITY = ("louvain",)
STABLE = ("stable-marriage", "gale-shapley", "mcvitie-wilson")
ALGORITHM_CHOICES = ("auto",) + MATCHING + BIPARTITE + COMMUNITY + STABLE


def console(stderr: bool = True):
    """A rich console; at least 120 columns wide when output is not a terminal."""
    from rich.console import Console  # noqa: PLC0415

    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=max(console.width, 120))
    return console


def print_table(table, stderr: bool = True) -> None:
    """Print a rich table; off a terminal (a log, a CI job) at the width its cells need, so that
    none is cut to a few characters however many columns it has."""
    from rich.console import Console  # noqa: PLC0415

    out = console(stderr)
    if not out.is_terminal:
        need = out.measure(table, options=out.options.update_width(1 << 16)).maximum
        out = Console(stderr=stderr, width=max(out.width, need))
    out.print(table)


def _as_matrix_pattern(opts: dict) -> dict:
    """Read options for a cardinality matching: a matrix's bipartite graph is the matrix itself,
    rows x columns (a symmetric one gives its double cover), and only which entries are stored
    matters, not their values."""
    return opts | {"bipartite": True if opts.get("bipartite") is None else opts["bipartite"], "weighted": False}


def _read(path, fmt=None, one_based=None, negative="error", zeros="keep", duplicates="max", random_weights=None,
          bipartite=None, weighted=True, columns=None, renumber="auto", with_details=False):
    """The input as a :class:`~mgmatch.convert.GraphInput` (the graph and the maps back to the
    file's ids), read by :func:`mgmatch.io.read_input`: the columns chosen, ids that are labels or
    sparse integers renumbered (``renumber="auto"``)."""
    from .io import read_input  # noqa: PLC0415

    got = read_input(path, fmt, columns=columns, renumber=renumber, bipartite=bipartite, one_based=one_based,
                     negative=negative, zeros=zeros, duplicates=duplicates, random_weights=random_weights,
                     weighted=weighted, with_details=with_details)
    graph = (got[0] if with_details else got).graph
    if graph.n_rows == 0 or graph.n_cols == 0:  # (a header that declares no vertices: nothing to compute)
        shape = f"{graph.n_rows} x {graph.n_cols} matrix" if graph.bipartite else "graph of 0 vertices"
        raise InputError(f"is an empty {shape}: there is nothing to match or group", path=path)
    return got


def column_options(src=None, dst=None, weight=None, columns=None) -> dict | None:
    """The ``columns`` read option from ``--src``, ``--dst``, ``--weight`` (one column each) or
    ``--columns SRC,DST[,WEIGHT]``: a mapping of the roles given (``None`` when none is). A
    column that is a number counts fields from 1 (a text file without a header); on the command
    line, a string of digits is such a number.

    >>> column_options(src="user", weight="3")
    {'src': 'user', 'weight': 3}
    >>> column_options(columns="a,b")
    {'src': 'a', 'dst': 'b'}
    """
    single = {role: value for role, value in (("src", src), ("dst", dst), ("weight", weight)) if value is not None}
    if columns is not None:
        if single:
            raise ParameterError("give the columns either with --columns or with --src, --dst and --weight, "
                                 "not both")
        if isinstance(columns, str):
            parts = [part.strip() for part in columns.split(",")]
        elif isinstance(columns, (list, tuple)):  # (a pipeline file's list)
            parts = list(columns)
        else:
            parts = []
        if len(parts) not in (2, 3) or any(part in ("", None) for part in parts):
            raise ParameterError(f"--columns takes SRC,DST or SRC,DST,WEIGHT (names, or field numbers from 1), "
                                 f"not {columns!r}")
        single = dict(zip(("src", "dst", "weight"), parts))
    if not single:
        return None
    return {role: int(value) if isinstance(value, str) and value.isdigit() else value
            for role, value in single.items()}


def _note_shifted_ids(details, one_based, path):
    """Say so when the reader found an edge list's ids 1-based by itself: the result numbers
    vertices from 0, one less than the file's ids. Said under --quiet as well: a batch job that
    reads the result by the file's ids would otherwise be off by one without a word."""
    if one_based is not None or not details.get("one_based"):
        return
    click.echo(f"mgmatch: note: {path}: ids read as 1-based (none is 0); the result numbers vertices from 0, "
               "one less than in the file (--zero-based keeps the file's ids)", err=True)


def _note_ignored_value_options(opts, algorithm):
    """Say so when a cardinality matching is given ``--negative abs`` or ``--duplicates`` other
    than ``max``: it reads which entries a matrix stores, not their values, so they change
    nothing and are ignored (accepted, as command lines written for earlier versions, which read
    the values, pass ``--negative abs`` for matrices with negative entries). Said under --quiet
    as well."""
    ignored = [f"--{k} {opts[k]}" for k, default in (("negative", "error"), ("duplicates", "max"))
               if opts[k] != default]
    if ignored:
        click.echo(f"mgmatch: note: {' and '.join(ignored)} {'change' if len(ignored) > 1 else 'changes'} nothing "
                   f"for -a {algorithm}, which reads which entries a matrix stores, not their values; ignored",
                   err=True)


#: Header names that name a column, not a vertex: a first line of them is a header beyond doubt.
_COLUMN_WORDS = {"src", "dst", "source", "target", "sources", "targets", "from", "to", "u", "v", "i", "j", "node",
                 "node1", "node2", "node_1", "node_2", "vertex", "vertex1", "vertex2", "head", "tail", "weight",
                 "weights", "w", "value", "id1", "id2", "row", "col", "column", "user", "item", "a", "b"}


def _note_header_of_labels(details, path, labels=None):
    """Say so when a text file's first line, of names only, was read as a header over ids that
    are labels too: it might have been an edge (``alice,bob``), now left out. A header that
    names its columns with common words (``source,target``) is not mentioned, unless one of its
    names is a vertex of the file too (``a b`` above ``b c``: ``labels``, the file's ids), which
    makes it an edge more likely than a header. Said under --quiet as well, as the 1-based note
    is."""
    names = details.get("header_names")
    if not names:
        return
    seen = [n for n in names if labels is not None and bool((labels == n.strip()).any())]
    if not seen and any(name.strip().lower() in _COLUMN_WORDS for name in names):
        return
    also = f", though {', '.join(seen)} {'is' if len(seen) == 1 else 'are'} also a vertex of the file" if seen else ""
    click.echo(f"mgmatch: note: {path}: line 1 ({', '.join(names)}) is read as a header of column names, "
               f"not as an edge{also}; if it is an edge, add a header line above it", err=True)


#: What ``--algorithm auto`` runs: Suitor, the fastest weighted matching on CPUs and GPUs alike
#: (on a GPU its 128-bit-key kernel beat warp handshaking, LD and b-Suitor: docs/performance.md,
#: section "Matching: --algorithm auto"). All of them return the same matching.
AUTO_ALGORITHM = "suitor"


def run_job(input_path, output, *, algorithm="auto", summary=None, b=None, init="cheap", deterministic=False,
            resolution=1.0, all_levels=False, device="auto", partitions=None, quiet=False, client=None, report=None,
            on_cluster=None, read_options=None, read_on_workers=False, run_report=None, reorder=None,
            on_outputs=None):
    """One job: read INPUT, run the algorithm, write the table and its summary atomically.

    INPUT is read by :func:`mgmatch.io.read_input` (``read_options``: the reader's options, and
    ``columns`` as :func:`column_options` gives them): ids that are labels or sparse integers are
    renumbered, the table names vertices by the input's ids, and the summary records
    ``"renumbered"`` (with ``vertex_ids``, and ``column_ids`` for a bipartite graph, when true).
    With ``read_on_workers`` the Dask workers build the partitions from INPUT themselves
    (:func:`mgmatch.distributed.read_partitions`) and the summary records ``"read": "workers"``.
    With ``run_report`` the run's page of charts (:mod:`mgmatch.report`) is written there too,
    together with the table and the summary. With ``reorder`` (``"rcm"``) the graph's vertices are
    numbered again before the run (:func:`mgmatch.reorder`), the table still names the input's
    vertices, and the summary records ``"reorder"``. ``on_outputs()`` is called once the outputs
    are written, before the summary is printed (a command's last job: a stop signal from there
    on no longer undoes it, :func:`mgmatch._signals.outputs_complete`)."""
    on_cluster = client is not None if on_cluster is None else on_cluster
    algorithm, summary_path, reorder, opts = check_job(
        input_path, output, algorithm=algorithm, summary=summary, b=b, init=init, deterministic=deterministic,
        resolution=resolution, device=device, partitions=partitions, report=report, on_cluster=on_cluster,
        read_options=read_options, read_on_workers=read_on_workers, run_report=run_report, reorder=reorder)
    output = Path(output)
    from .report import RoundTrace, run_fields, run_report_written  # noqa: PLC0415

    # the matched share after each round, for the summary: free while a progress display watches the
    # rounds, one read from the device per round otherwise, so only for a run report
    trace = RoundTrace() if run_report is not None or not quiet else None
    if algorithm in STABLE:
        return _run_stable_job(input_path, output, summary_path, algorithm, device=device, partitions=partitions,
                               quiet=quiet, read_options=opts, client=client, trace=trace, run_report=run_report,
                               on_outputs=on_outputs)
    if algorithm in BIPARTITE:
        _note_ignored_value_options(opts, algorithm)
        opts = _as_matrix_pattern(opts)
    t0 = time.perf_counter()
    details = {}
    read = None  # the graph and the maps back to the input's ids, when read here
    if read_on_workers:
        _check_read_on_workers(on_cluster, algorithm, opts["bipartite"], input_path)
        from .distributed import read_partitions  # noqa: PLC0415

        graph = read_partitions(client, input_path, partitions=partitions, format=opts["fmt"],
                                one_based=opts["one_based"], duplicates=opts["duplicates"], zeros=opts["zeros"],
                                negative=opts["negative"], random_weights=opts["random_weights"],
                                weighted=opts["weighted"], columns=opts["columns"])
        partitions = None  # the partitions are built
    else:
        read, details = _read(input_path, **opts, with_details=True)
        graph = read.graph
        _note_shifted_ids(details, opts["one_based"], input_path)
        _note_header_of_labels(details, input_path, read.vertices.ids if read.renumbered else None)
        if opts["random_weights"] is not None and opts["weighted"] and graph.summary.random_weights_seed is None:
            click.echo(f"mgmatch: note: {input_path} has weights, which --random-weights does not replace; it is "
                       "ignored (--unweighted --random-weights SEED reads the edges without their weights and draws "
                       "new ones)", err=True)
    t_read = time.perf_counter() - t0
    renumbered = read is not None and read.renumbered
    if renumbered and _b_file(b) is not None:
        raise ParameterError(f"--b {b} gives one value per vertex 0 .. n-1, but the ids of {input_path} are "
                             "renumbered (they are labels or sparse integers): give one b for all vertices")
    _check_graph_kind(graph, algorithm, input_path)
    ordered = None  # the graph numbered anew, with the map to the numbering it was read in
    if reorder is not None:
        from .ordering import reorder as numbered_anew  # noqa: PLC0415

        t_order = time.perf_counter()
        ordered = numbered_anew(graph, method=reorder)
        graph = ordered.graph
        t_order = time.perf_counter() - t_order
    result = _run_algorithm(graph, algorithm, b=b, init=init, deterministic=deterministic, resolution=resolution,
                            device=device, partitions=partitions, quiet=quiet, client=client, trace=trace)
    record = result.summary()
    if client is not None:
        record["workers"] = len(client.scheduler_info()["workers"])
    record.update({
        "input": str(input_path),
        "reading": details,
        "id_offset": getattr(graph, "id_offset", 0),
        "renumbered": renumbered,
        "canonicalisation": graph.summary.as_dict(),
        "versions": versions(),
    })
    if renumbered:  # how many ids, of what type: the table holds them, not 0 .. n-1
        record["vertex_ids"] = read.vertices.summary()
        if read.columns is not None:
            record["column_ids"] = read.columns.summary()
    if read_on_workers:
        record["read"] = "workers"
    if reorder is not None:
        record["reorder"] = reorder
        record.setdefault("time_s", {})["reorder"] = t_order
    record.setdefault("time_s", {})["read"] = t_read
    record.update(run_fields(record, graph, trace))
    options = {"all_levels": all_levels} if algorithm in COMMUNITY else {}
    from .convert import result_columns  # noqa: PLC0415

    if ordered is not None:  # back to the numbering read, in a plain run's row order, then to the input's ids
        table = _in_input_order(result_columns(result, ordered, **options))
        if renumbered:
            table = {k: read.vertices.to_original(c) if k in ("u", "v", "vertex") else c for k, c in table.items()}
    elif renumbered:
        table = result_columns(result, read, **options)  # in the input's ids
    else:
        table = result.to_table(**options)
    with run_report_written(run_report, record):  # (drawn here, written with the others)
        t1 = time.perf_counter()
        _write_outputs(output, table, summary_path, record)
    record["time_s"]["write"] = time.perf_counter() - t1
    if on_outputs is not None:
        on_outputs()
    if not quiet:
        _print_summary(record, output, summary_path)
    return record


def check_job(input_path, output, *, algorithm="auto", summary=None, b=None, init="cheap", deterministic=False,
              resolution=1.0, device="auto", partitions=None, report=None, on_cluster=False, read_options=None,
              read_on_workers=False, run_report=None, reorder=None):
    """The checks of :func:`run_job` that need neither the input nor a cluster, made before any
    work (a pipeline makes them for every job before its first job runs): the outputs, the
    algorithm and its parameters. Returns the algorithm (``auto`` resolved), the summary's path,
    the order to number the vertices by, and the read options completed with their defaults."""
    from .io import summary_path_for  # noqa: PLC0415

    output = Path(output)
    summary_path = Path(summary) if summary else summary_path_for(output)
    _check_output(output, summary_path, input_path, report=report, b=b, run_report=run_report)
    if algorithm == "auto":
        algorithm = AUTO_ALGORITHM
    if algorithm not in ALGORITHM_CHOICES:
        raise ParameterError(f"unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHM_CHOICES)}")
    if not isinstance(deterministic, bool):
        raise ParameterError(f"deterministic must be true or false, not {deterministic!r}")
    if device not in ("auto", "cpu", "gpu"):
        raise ParameterError(f"device must be 'auto', 'cpu' or 'gpu', not {device!r}")
    if algorithm == "louvain":  # before the graph is read, which may take long
        from .algorithms.louvain import validate_louvain_params  # noqa: PLC0415

        validate_louvain_params(resolution, device=device)
    if algorithm in BIPARTITE:
        from .algorithms.bipartite import check_parameters  # noqa: PLC0415

        check_parameters(algorithm, init, device=device, deterministic=deterministic)
    if algorithm == "bsuitor":
        _check_b(b)
    if partitions is not None and np.ndim(partitions) == 0:  # (bounds, and the count's bound, once the graph is read)
        from .engine.execute import check_partition_count  # noqa: PLC0415

        check_partition_count(partitions)
    reorder = _check_reorder(reorder, read_on_workers, b, algorithm)
    if report is not None and not on_cluster:
        raise ParameterError("--report needs a Dask cluster (--workers, --scheduler or --scheduler-file)")
    opts = {"fmt": None, "one_based": None, "negative": "error", "zeros": "keep", "duplicates": "max",
            "random_weights": None, "bipartite": None, "weighted": True, "columns": None} | (read_options or {})
    if algorithm in BIPARTITE and opts["zeros"] == "drop":  # (it would drop nothing: the values are not read)
        raise ParameterError(f"--zeros drop does not apply to -a {algorithm}: a cardinality matching reads "
                             "which entries a matrix stores, not their values (an explicit zero is an entry)")
    return algorithm, summary_path, reorder, opts


def _check_b(b) -> None:
    """b-Suitor's ``--b``: given, and a non-negative integer or a file that exists (its values are
    checked against the graph when it is read)."""
    if b is None:
        raise ParameterError("--algorithm bsuitor needs --b (an integer or a file of integers)")
    file = _b_file(b)
    if file is None:
        if int(b) < 0:
            raise ParameterError(f"--b must be a non-negative integer or a file of them, not {b!r}")
    elif not file.is_file():
        raise ParameterError(f"--b must be an integer or an existing file, not {b!r}")


def _run_stable_job(input_path, output, summary_path, algorithm, *, device, partitions, quiet, read_options,
                    client=None, trace=None, run_report=None, on_outputs=None):
    """A stable-marriage job: a preference table (or a weighted graph) in, ``man, woman`` out."""
    from .algorithms.stable_marriage import stable_marriage  # noqa: PLC0415
    from .io.preferences import read_instance  # noqa: PLC0415

    t0 = time.perf_counter()

    def graph_reader(path):
        read, details = _read(path, **read_options, renumber=False, with_details=True)
        _note_shifted_ids(details, read_options["one_based"], path)  # (as for the other algorithms)
        return read.graph

    prefs = read_instance(input_path, graph_reader=graph_reader)
    if prefs.n_men == 0 and prefs.n_women == 0:  # (a table of a header only, as an empty edge list is refused;
        # a graph of isolated vertices is an instance in which nobody marries)
        raise InputError("holds no one to match: the preference table has no rows", path=input_path)
    t_read = time.perf_counter() - t0
    from .report import run_fields, run_report_written  # noqa: PLC0415

    with _progress(algorithm, quiet) as callback:
        if trace is not None:
            callback = trace.wrap(callback)
        result = stable_marriage(prefs, algorithm=algorithm, device=device, partitions=partitions, client=client,
                                 progress=None if callback is None else
                                 (lambda r: callback(r["round"], r["messages"], r.get("matched"))))
    record = result.summary() | {"input": str(input_path), "versions": versions()}
    if client is not None:
        record["workers"] = len(client.scheduler_info()["workers"])
    record.setdefault("time_s", {})["read"] = t_read
    record.update(run_fields(record, None, trace))
    with run_report_written(run_report, record):
        _write_outputs(output, result.to_table(), summary_path, record)
    if on_outputs is not None:
        on_outputs()
    if not quiet:
        _print_summary(record, output, summary_path)
    return record


def _in_input_order(table: dict) -> dict:
    """A reordered run's table, mapped back to the numbering the graph was read in, in the rows'
    order of a run on that numbering: pairs as ``u < v`` ascending, vertices ascending (level
    by level)."""
    cols = {k: np.asarray(v) for k, v in table.items()}
    if "u" in cols and "v" in cols:
        u, v = cols["u"], cols["v"]
        cols["u"], cols["v"] = np.minimum(u, v), np.maximum(u, v)
        keys = (cols["v"], cols["u"])
    elif "vertex" in cols:
        keys = (cols["vertex"],) + ((cols["level"],) if "level" in cols else ())
    else:
        return table
    order = np.lexsort(keys)
    return {k: c[order] for k, c in cols.items()}


def _check_reorder(reorder, read_on_workers, b, algorithm="auto"):
    """The order to number the vertices by (``None``: as read), checked against the job's other
    options: it is for the graph algorithms, the workers' own reading never has the whole graph
    in one place, and a file of one b per vertex follows the input's numbering."""
    if reorder is None or reorder == "none":
        return None
    from ._options import check_options_apply  # noqa: PLC0415
    from .ordering import METHODS  # noqa: PLC0415

    if not (isinstance(reorder, str) and reorder in METHODS):
        raise ParameterError(f"reorder must be 'none' or one of {', '.join(map(repr, METHODS))}, not {reorder!r}")
    check_options_apply(AUTO_ALGORITHM if algorithm == "auto" else algorithm, ["--reorder"])
    if read_on_workers:
        raise ParameterError("--reorder numbers the whole graph in this process; the workers' own reading "
                             "(--read-on-workers) never has it there")
    if _b_file(b) is not None:
        raise ParameterError(f"--b {b} gives one value per vertex in the input's numbering, which --reorder "
                             "changes: give one b for all vertices")
    return reorder


def _check_graph_kind(graph, algorithm, input_path):
    """A bipartite graph (rows x columns) goes only to the bipartite algorithms: say so in the
    command line's words."""
    if algorithm in BIPARTITE or not getattr(graph, "bipartite", False):
        return

    rows, cols = graph.shape
    hint = "; or --no-bipartite to read the square matrix as an undirected graph" if rows == cols else ""
    raise InputError(f"is a bipartite graph ({rows} rows x {cols} columns), and -a {algorithm} needs an undirected "
                     f"one: -a gpr, apfb or apsb find a maximum matching of a bipartite graph{hint}", path=input_path)


def _check_read_on_workers(on_cluster, algorithm, bipartite, input_path=None):
    from .io.readers import is_stream  # noqa: PLC0415

    if input_path is not None and is_stream(input_path):
        raise ParameterError(f"--read-on-workers needs INPUT to be a file every worker can read; {input_path} is a "
                             "stream, which only this process can read (leave out --read-on-workers)")
    if not on_cluster:
        raise ParameterError("--read-on-workers needs a Dask cluster (--workers, --scheduler or --scheduler-file)")
    if algorithm not in MATCHING:
        raise ParameterError(f"--read-on-workers applies to the matching algorithms ({', '.join(MATCHING)}), "
                             f"not {algorithm}")
    if bipartite:
        raise ParameterError("--read-on-workers reads undirected graphs; --bipartite does not apply")


def _check_output(output: Path, summary: Path, input_path=None, *, report=None, b=None, run_report=None):
    """Refuse outputs that cannot be written as asked, before any work: a table of unknown
    format, any output on a file the job reads (the input, a --b file) or on another output
    (:func:`mgmatch._paths.check_job_paths`), where it cannot be written
    (:func:`mgmatch.io.writers.unwritable`), or a JSON summary under another format's suffix."""
    from ._paths import check_job_paths  # noqa: PLC0415
    from .io.writers import unwritable  # noqa: PLC0415

    if Path(output).suffix.lower() not in (".parquet", ".pq", ".csv", ".tsv"):
        raise ParameterError(f"output {output} must end in .parquet, .pq, .csv or .tsv")
    for what, path in (("--summary", summary), ("--report", report), ("--run-report", run_report)):
        if path is not None and str(path) == "-":  # (it made a file named '-', where '-' reads standard input)
            raise ParameterError(f"{what} takes a file's path; '-' (standard output) is not one")
    b_file = _b_file(b)
    writes = {"output": output, "summary": summary, "report": report, "run report": run_report}
    check_job_paths({"input": input_path, "--b": b_file}, writes)
    for what, path in writes.items():
        why = None if path is None else unwritable(path)  # before the job runs, which may take long
        if why is not None:
            raise ParameterError(f"{what} {path} cannot be written: {why}")
    if summary is not None and Path(summary).suffix.lower() in _OTHER_FORMATS:
        raise ParameterError(f"summary {summary} names a {Path(summary).suffix} file, but the summary is JSON "
                             "(name it .json)")


#: Suffixes of other formats, which a JSON summary must not be written under.
_OTHER_FORMATS = (".parquet", ".pq", ".csv", ".tsv", ".html", ".htm", ".mtx", ".graph", ".gml", ".npz", ".yaml",
                  ".yml", ".gz")


def _b_file(b):
    """The file of per-vertex b values that ``--b`` names, or ``None`` for one integer b."""
    return None if b is None or isinstance(b, int) or str(b).strip().lstrip("-").isdigit() else Path(str(b))


def _parse_b(b, n):
    """``--b``: one integer, or the values of a file, one per vertex of ``n``."""
    _check_b(b)
    path = _b_file(b)
    if path is None:
        return int(b)
    import warnings  # noqa: PLC0415

    try:
        with warnings.catch_warnings():  # an empty file is reported below, not as NumPy's warning
            warnings.simplefilter("ignore", UserWarning)
            values = np.loadtxt(path, dtype=np.int64, comments=("#", "%"), ndmin=1)
    except (ValueError, OverflowError) as exc:
        raise InputError(f"b values must be integers ({exc})", path=path) from None
    except UnicodeDecodeError:
        raise InputError("is not a text file of b values", path=path) from None
    if values.ndim != 1:
        raise InputError(f"must hold one b value per line, not {values.shape[1]} per line", path=path)
    if values.shape != (n,):
        raise InputError(f"holds {values.size} b values; the graph has {n} vertices", path=path)
    if (values < 0).any():
        k = int(np.flatnonzero(values < 0)[0])
        raise InputError(f"b value {int(values[k])} of vertex {k} is negative", path=path)
    return values


@contextlib.contextmanager
def _cluster_lost():
    """A connection to the Dask scheduler lost in the middle of a job (``CommClosedError`` is an
    ``OSError``) as one :class:`ClusterError`: mgmatch's own file errors are already
    :class:`MgmatchError` by then, so an ``OSError`` here is the cluster's."""
    from .errors import ClusterError  # noqa: PLC0415

    try:
        yield
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"lost the Dask cluster during the job; no output written ({type(exc).__name__}: "
                           f"{exc})") from None


def _run_algorithm(graph, algorithm, *, b, init, resolution, device, partitions, quiet, client=None,
                   deterministic=False, trace=None):
    progress = _progress(algorithm, quiet)
    with progress as callback:
        if algorithm in MATCHING:
            if trace is not None:
                callback = trace.wrap(callback)
            from .algorithms.matching import match  # noqa: PLC0415

            bb = _parse_b(b, graph.n) if algorithm == "bsuitor" else None
            return match(graph, algorithm, b=bb, partitions=partitions, device=device, progress=callback,
                         client=client)
        if algorithm in BIPARTITE:
            from .algorithms.bipartite import bipartite_matching  # noqa: PLC0415

            return bipartite_matching(graph, algorithm=algorithm, init=init, device=device,
                                      deterministic=deterministic, client=client)
        from .algorithms.louvain import louvain  # noqa: PLC0415

        return louvain(graph, resolution=resolution, device=device, progress=callback, partitions=partitions,
                       client=client)


class _progress:
    """Progress while a job runs (matching: rounds, messages in flight; Louvain: level, sweeps,
    modularity): a rich status line on a terminal, a log line per round or sweep on the
    ``mgmatch`` logger otherwise (a batch job's stderr); nothing with --quiet."""

    def __init__(self, algorithm, quiet):
        self.algorithm = algorithm
        self.quiet = quiet
        self.to_log = not quiet and not sys.stderr.isatty()
        self.status = None

    def __enter__(self):
        if self.quiet:
            return None
        if not self.to_log:
            self.status = console().status(f"{self.algorithm}: starting")
            self.status.__enter__()
        return self.levels if self.algorithm in COMMUNITY else self.update

    def _show(self, text):
        if self.to_log:
            logging.getLogger("mgmatch.progress").info(text)
        else:
            self.status.update(text)

    def update(self, rounds, messages, matched=None):
        share = "" if matched is None else f", {100 * matched:.1f}% of vertices matched"
        self._show(f"{self.algorithm}: round {rounds}, {messages} messages in flight{share}")

    def levels(self, level, sweeps, modularity):
        self._show(self.describe_levels(level, sweeps, modularity))

    def describe_levels(self, level, sweeps, modularity):
        plural = "s" if sweeps != 1 else ""
        return f"{self.algorithm}: level {level}, {sweeps} sweep{plural}, modularity {modularity:.6f}"

    def __exit__(self, *exc):
        if self.status is not None:
            self.status.__exit__(*exc)
        return False


def _write_outputs(output, table, summary_path, record):
    """Write the table and the summary atomically: both appear, or neither."""
    from .io import write_result  # noqa: PLC0415

    write_result(output, table, summary_path, record)


#: Counts that a Louvain summary's ``time_s`` still holds (deprecated there: the summary's
#: ``rounds`` and ``partitions`` hold them), not shown as seconds.
_COUNTS_AMONG_TIMES = ("partitions", "rounds")


def _print_summary(record, output, summary_path):
    from rich.table import Table  # noqa: PLC0415

    t = Table(title=f"mgmatch {record.get('algorithm')}", show_header=False)
    for key in ("input", "device", "n", "m", "n_rows", "n_cols", "cardinality", "weight", "modularity",
                "n_communities", "rounds"):
        if key in record and record[key] is not None:
            val = record[key]
            if isinstance(val, list):
                val = val[-1] if val else None
            t.add_row(key, f"{val:.6g}" if isinstance(val, float) else str(val))
    if record.get("renumbered"):
        t.add_row("renumbered", "yes: the output names vertices by the input's ids")
    for phase, secs in record.get("time_s", {}).items():
        if isinstance(secs, (int, float)) and phase not in _COUNTS_AMONG_TIMES:
            t.add_row(f"time {phase}", f"{secs:.3f} s")
    t.add_row("output", str(output))
    t.add_row("summary", str(summary_path))
    print_table(t)
