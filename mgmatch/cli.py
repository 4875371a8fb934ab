"""The ``mgmatch`` command line: ``run``, ``info``, ``generate``, ``verify``, ``bench``, ``demo``.

Every error a user can cause (bad file, bad parameter, a job that will not fit) prints one line
``mgmatch: error: ...`` on standard error and exits with status 2; no partial output is left.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import platform
import sys
import time
from pathlib import Path

import click
import numpy as np

from . import __version__
from .errors import InputError, MgmatchError, ParameterError

MATCHING = ("suitor", "bsuitor", "ld", "handshake")
BIPARTITE = ("gpr", "apfb", "apsb")
COMMUNITY = ("louvain",)
STABLE = ("stable-marriage", "gale-shapley", "mcvitie-wilson")
ALGORITHM_CHOICES = ("auto",) + MATCHING + BIPARTITE + COMMUNITY + STABLE


class _Exit(click.ClickException):
    exit_code = 2

    def show(self, file=None):
        message = "; ".join(line.strip() for line in self.message.splitlines() if line.strip())  # one line
        click.echo(f"mgmatch: error: {message}", err=True)


def _friendly(fn):
    """Turn MgmatchError into one line and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from ._signals import Terminated, terminate_as_interrupt  # noqa: PLC0415

        try:
            with terminate_as_interrupt():  # SIGTERM/SIGHUP clean up as Ctrl-C does
                return fn(*args, **kwargs)
        except Terminated as stop:
            click.echo(f"mgmatch: stopped by {stop.name}; no output written", err=True)
            sys.exit(128 + stop.signum)
        except MgmatchError as exc:
            raise _Exit(str(exc)) from None
        except MemoryError:
            raise _Exit("ran out of memory; no output written (try fewer vertices, a cluster with "
                        "more workers, or --device cpu)") from None
        except KeyboardInterrupt:
            click.echo("mgmatch: interrupted; no output written", err=True)
            sys.exit(130)

    return wrapper


def _console(stderr: bool = True):
    """A rich console; at least 120 columns wide when output is not a terminal."""
    from rich.console import Console  # noqa: PLC0415

    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=max(console.width, 120))
    return console


def versions() -> dict:
    """Versions of mgmatch and the libraries a result depends on."""
    import numba  # noqa: PLC0415
    import scipy  # noqa: PLC0415

    out = {
        "mgmatch": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "numba": numba.__version__,
    }
    from ._array import cupy_or_none  # noqa: PLC0415

    cp = cupy_or_none()
    if cp is not None:
        out["cupy"] = cp.__version__
        props = cp.cuda.runtime.getDeviceProperties(0)
        out["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return out


# ------------------------------------------------------------------------------ options
#: The input formats, as mgmatch.io reads them (kept here so that --help needs no import of the readers;
#: a test checks the two lists agree).
_FORMAT_HELP = "Input format: mtx, csv, tsv, edgelist, metis, gml, parquet or npz (default: from the suffix)."


#: Paths as given: mgmatch checks them itself (:func:`mgmatch.io.read_graph`, the output checks)
#: and says what is wrong in one ``mgmatch: error:`` line, where click's own readability check
#: would print a usage block instead.
_PATH = click.Path(path_type=Path, readable=False)


def _canon_options(f):
    f = click.option("--format", "fmt", default=None, help=_FORMAT_HELP)(f)
    f = click.option("--one-based/--zero-based", "one_based", default=None,
                     help="Vertex ids of edge lists start at 1 / at 0 (default: detect).")(f)
    f = click.option("--negative", type=click.Choice(["error", "abs"]), default="error", show_default=True,
                     help="Reject negative weights, or use their absolute values.")(f)
    f = click.option("--zeros", type=click.Choice(["keep", "drop"]), default="keep", show_default=True,
                     help="Keep explicit zero weights as edges, or drop them.")(f)
    f = click.option("--duplicates", type=click.Choice(["max", "sum", "min", "first"]), default="max",
                     show_default=True, help="How entries naming the same edge merge.")(f)
    f = click.option("--random-weights", type=int, default=None, metavar="SEED",
                     help="Give an unweighted graph uniform (0, 1] weights drawn with SEED.")(f)
    f = click.option("--bipartite/--no-bipartite", default=None,
                     help="Read a square matrix as rows x columns (default: only rectangular ones).")(f)
    f = _weighted_option(f)
    return f


def _weighted_option(f):
    return click.option("--weighted/--unweighted", "weighted", default=True,
                        help="Use the weights the input holds, or ignore them: every edge weighs 1 (or gets "
                             "--random-weights), and an edge list's lines are read for their first two fields only.  "
                             "[default: weighted]")(f)


def _as_matrix_pattern(opts: dict) -> dict:
    """Read options for a cardinality matching: a matrix's bipartite graph is the matrix itself,
    rows x columns (a symmetric one gives its double cover), and only which entries are stored
    matters, not their values."""
    return opts | {"bipartite": True if opts.get("bipartite") is None else opts["bipartite"], "weighted": False}


def _input(path: Path) -> Path:
    """INPUT as given, ``-`` standing for standard input."""
    return Path("/dev/stdin") if str(path) == "-" else path


def _read(path, fmt=None, one_based=None, negative="error", zeros="keep", duplicates="max", random_weights=None,
          bipartite=None, weighted=True, with_details=False):
    from .io import read_graph  # noqa: PLC0415

    return read_graph(path, fmt, bipartite=bipartite, one_based=one_based, negative=negative, zeros=zeros,
                      duplicates=duplicates, random_weights=random_weights, weighted=weighted,
                      with_details=with_details)


def _note_shifted_ids(details, one_based, path):
    """Say so when the reader found an edge list's ids 1-based by itself: the result numbers
    vertices from 0, one less than the file's ids. Said under --quiet as well: a batch job that
    reads the result by the file's ids would otherwise be off by one without a word."""
    if one_based is not None or not details.get("one_based"):
        return
    click.echo(f"mgmatch: note: {path}: ids read as 1-based (none is 0); the result numbers vertices from 0, "
               "one less than in the file (--zero-based keeps the file's ids)", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mgmatch")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
              default="info", show_default=True,
              help="Level of the 'mgmatch' log on stderr. When stderr is not a terminal (a batch job), progress "
                   "is logged there, a line per round or Louvain sweep, at level info.")
def main(log_level):
    """Matchings and communities on large graphs: CPU, one GPU, or a Dask cluster of GPUs."""
    _configure_log(log_level)


def _configure_log(level: str) -> None:
    """Send the ``mgmatch`` logger to stderr, unless the embedding program gave it a handler."""
    log = logging.getLogger("mgmatch")
    log.setLevel(level.upper())
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
        log.addHandler(handler)
        log.propagate = False


# ---------------------------------------------------------------------------------- run
@main.command()
@click.argument("input_path", metavar="INPUT", type=_PATH)
@click.option("--algorithm", "-a", type=click.Choice(ALGORITHM_CHOICES), default="auto", show_default=True,
              help="suitor/bsuitor/ld/handshake: 1/2-approximate weighted (b-)matching; gpr/apfb/apsb: "
                   "maximum cardinality bipartite matching; louvain: communities; stable-marriage (the fastest "
                   "for the device), gale-shapley, mcvitie-wilson: the man-optimal stable matching of a preference "
                   "table (man, woman, man_rank, woman_rank) or of a weighted graph. auto: the fastest weighted "
                   "matching (suitor, on a GPU as on a CPU).")
@click.option("--output", "-o", type=_PATH, default=None,
              help="Result table (.parquet, .pq, .csv or .tsv); the JSON summary goes beside it (.json). Required "
                   "unless INPUT is a pipeline file.")
@click.option("--summary", type=_PATH, default=None, help="Where to write the JSON summary.")
@click.option("--b", "b", default=None, help="b-Suitor capacity: an integer, or a file of one integer per vertex.")
@click.option("--init", "init", type=click.Choice(["cheap", "karp-sipser", "none"]), default="cheap",
              show_default=True, help="Initial matching of gpr/apfb/apsb.")
@click.option("--deterministic", is_flag=True,
              help="apfb/apsb: the same matching on every run and device (races resolved by the smallest id; "
                   "slower on a GPU, whose default kernels may match different pairs from run to run).")
@click.option("--resolution", type=float, default=1.0, show_default=True, help="Louvain resolution (gamma).")
@click.option("--all-levels", is_flag=True, help="Louvain: write every level, with a level column.")
@click.option("--device", type=click.Choice(["auto", "cpu", "gpu"]), default="auto", show_default=True)
@click.option("--partitions", type=int, default=None,
              help="Partitions the matching rounds run over (default: one per Dask worker; in-process on a CPU, "
                   "one per thread on a large graph, else 1). The result does not depend on it.")
@click.option("--threads", type=int, default=None, metavar="N",
              help="CPU threads of a run in this process (partitions stepped at once, Numba's parallel loops). "
                   "Default: every CPU the process may use (capped by NUMBA_NUM_THREADS). The result does not "
                   "depend on it.")
@click.option("--workers", type=int, default=None,
              help="Start an embedded local Dask cluster of N workers (on GPUs: the first N GPUs, one worker each; "
                   "else N CPU worker processes).")
@click.option("--scheduler", default=None, metavar="ADDRESS", help="Run on the Dask cluster at ADDRESS.")
@click.option("--scheduler-file", type=_PATH, default=None,
              help="Run on the Dask cluster described by this scheduler file.")
@click.option("--wait-for-workers", type=int, default=None, metavar="N",
              help="Start once N workers have joined the cluster (--scheduler or --scheduler-file), one partition "
                   "each; without it a run starts with the workers there, at least one.")
@click.option("--wait-timeout", type=float, default=300.0, show_default=True, metavar="SECONDS",
              help="How long --wait-for-workers waits before giving up.")
@click.option("--report", type=_PATH, default=None,
              help="Write Dask's performance report of the run to this HTML file.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display or summary table (notices that change "
                                                  "how the result reads, such as ids read as 1-based, still show).")
@click.option("--read-on-workers", is_flag=True,
              help="Build the partitions on the Dask workers, each reading its pieces of INPUT (Parquet or a "
                   "text edge list on storage every worker sees), so the graph never passes through this "
                   "process. Needs --workers, --scheduler or --scheduler-file and a matching algorithm.")
@_canon_options
@_friendly
def run(input_path, algorithm, output, summary, b, init, deterministic, resolution, all_levels, device, partitions,
        threads, workers, scheduler, scheduler_file, wait_for_workers, wait_timeout, report, quiet, read_on_workers,
        fmt, one_based, negative, zeros, duplicates, random_weights, bipartite, weighted):
    """Run an algorithm on INPUT and write the result to OUTPUT (plus a JSON summary).

    With --workers, --scheduler or --scheduler-file the matching rounds run on a Dask cluster,
    one partition per worker; otherwise in this process. INPUT may also be a pipeline file
    (.yaml, see pipelines/README.md) listing several jobs, or - for standard input (with --format).
    """
    input_path = _input(input_path)
    given = _given_options(click.get_current_context())
    cluster_opts = dict(workers=workers, scheduler=scheduler, scheduler_file=scheduler_file,
                        wait_for_workers=wait_for_workers, wait_timeout=wait_timeout)
    if threads is not None:
        if workers is not None or scheduler is not None or scheduler_file is not None:
            raise ParameterError("--threads sets the threads of a run in this process; a Dask worker's are set "
                                 "where it starts (dask worker --nthreads)")
        from .engine import cpu_threads  # noqa: PLC0415

        click.get_current_context().with_resource(cpu_threads(threads))  # until the command ends
    if input_path.suffix.lower() in (".yaml", ".yml"):
        from .pipeline import run_pipeline  # noqa: PLC0415

        for_jobs = {name: option for name, option in given.items() if name not in _PIPELINE_CLI_OPTIONS}
        if for_jobs:
            raise ParameterError(f"{', '.join(for_jobs.values())} do{'es' if len(for_jobs) == 1 else ''} not apply to a "
                                 "pipeline file: set job options in its 'defaults' or 'jobs' (the command line takes "
                                 "--quiet, --threads and the cluster options --workers, --scheduler, "
                                 "--scheduler-file, --wait-for-workers, --wait-timeout, which replace the file's "
                                 "'cluster')")
        run_pipeline(input_path, quiet=quiet, run_job=run_job,
                     cluster={k: v for k, v in cluster_opts.items() if k in given} or None)
        return
    if output is None:
        raise ParameterError("--output is required (a .parquet, .pq, .csv or .tsv path)")
    from ._options import check_options_apply  # noqa: PLC0415

    check_options_apply(AUTO_ALGORITHM if algorithm == "auto" else algorithm, given.values())
    on_cluster = workers is not None or scheduler is not None or scheduler_file is not None
    if (wait_for_workers is not None or "wait_timeout" in given) and not on_cluster:
        raise ParameterError("--wait-for-workers and --wait-timeout need a Dask cluster (--scheduler, "
                             "--scheduler-file or --workers)")
    from .io import summary_path_for  # noqa: PLC0415

    # before a cluster starts: the report is opened with it
    _check_output(output, Path(summary) if summary else summary_path_for(output), input_path, report=report, b=b)
    if read_on_workers:
        _check_read_on_workers(on_cluster, AUTO_ALGORITHM if algorithm == "auto" else algorithm, bipartite, input_path)
    with _maybe_cluster(on_cluster, cluster_opts, device, quiet, report) as client:
        run_job(input_path, output, algorithm=algorithm, summary=summary, b=b, init=init,
                deterministic=deterministic, resolution=resolution,
                all_levels=all_levels, device=device, partitions=partitions, quiet=quiet, client=client,
                report=report, on_cluster=on_cluster, read_on_workers=read_on_workers,
                read_options=dict(fmt=fmt, one_based=one_based, negative=negative, zeros=zeros,
                                  duplicates=duplicates, random_weights=random_weights, bipartite=bipartite,
                                  weighted=weighted))


#: Options of ``mgmatch run`` that a pipeline file takes from the command line.
_PIPELINE_CLI_OPTIONS = ("quiet", "threads", "workers", "scheduler", "scheduler_file", "wait_for_workers",
                         "wait_timeout")


def _given_options(ctx) -> dict:
    """The options given on the command line (or through the environment), not left at their
    defaults: parameter name -> the option as a message names it."""
    from click.core import ParameterSource  # noqa: PLC0415

    given = {}
    for param in ctx.command.params:
        if not isinstance(param, click.Option):
            continue
        if ctx.get_parameter_source(param.name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            given[param.name] = "/".join(param.opts[:1] + param.secondary_opts[:1])
    return given


#: What ``--algorithm auto`` runs: Suitor, the fastest weighted matching on CPUs and GPUs alike
#: (on an H200 its 128-bit-key kernel beat warp handshaking, LD and b-Suitor: kron k=21 took
#: 8 ms against 25 ms for handshaking and 141 ms for LD). All of them return the same matching.
AUTO_ALGORITHM = "suitor"


def run_job(input_path, output, *, algorithm="auto", summary=None, b=None, init="cheap", deterministic=False,
            resolution=1.0, all_levels=False, device="auto", partitions=None, quiet=False, client=None, report=None,
            on_cluster=None, read_options=None, read_on_workers=False):
    """One job: read INPUT, run the algorithm, write the table and its summary atomically.

    With ``read_on_workers`` the Dask workers build the partitions from INPUT themselves
    (:func:`mgmatch.distributed.read_partitions`) and the summary records ``"read": "workers"``."""
    from .io import summary_path_for  # noqa: PLC0415

    output = Path(output)
    summary_path = Path(summary) if summary else summary_path_for(output)
    _check_output(output, summary_path, input_path, report=report, b=b)
    if algorithm == "auto":
        algorithm = AUTO_ALGORITHM
    if algorithm not in ALGORITHM_CHOICES:
        raise ParameterError(f"unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHM_CHOICES)}")
    if not isinstance(deterministic, bool):
        raise ParameterError(f"deterministic must be true or false, not {deterministic!r}")
    if algorithm == "louvain":  # before the graph is read, which may take long
        from .algorithms.louvain import validate_louvain_params  # noqa: PLC0415

        validate_louvain_params(resolution, device=device)
    on_cluster = client is not None if on_cluster is None else on_cluster
    if report is not None and not on_cluster:
        raise ParameterError("--report needs a Dask cluster (--workers, --scheduler or --scheduler-file)")
    opts = {"fmt": None, "one_based": None, "negative": "error", "zeros": "keep", "duplicates": "max",
            "random_weights": None, "bipartite": None, "weighted": True} | (read_options or {})
    if algorithm in STABLE:
        return _run_stable_job(input_path, output, summary_path, algorithm, device=device, partitions=partitions,
                               quiet=quiet, read_options=opts, client=client)
    if algorithm in BIPARTITE:
        opts = _as_matrix_pattern(opts)
    t0 = time.perf_counter()
    details = {}
    if read_on_workers:
        _check_read_on_workers(on_cluster, algorithm, opts["bipartite"], input_path)
        from .distributed import read_partitions  # noqa: PLC0415

        graph = read_partitions(client, input_path, partitions=partitions, format=opts["fmt"],
                                one_based=opts["one_based"], duplicates=opts["duplicates"], zeros=opts["zeros"],
                                negative=opts["negative"], random_weights=opts["random_weights"],
                                weighted=opts["weighted"])
        partitions = None  # the partitions are built
    else:
        graph, details = _read(input_path, **opts, with_details=True)
        _note_shifted_ids(details, opts["one_based"], input_path)
    t_read = time.perf_counter() - t0
    _check_graph_kind(graph, algorithm, input_path)
    result = _run_algorithm(graph, algorithm, b=b, init=init, deterministic=deterministic, resolution=resolution,
                            device=device, partitions=partitions, quiet=quiet, client=client)
    record = result.summary()
    if client is not None:
        record["workers"] = len(client.scheduler_info()["workers"])
    record.update({
        "input": str(input_path),
        "reading": details,
        "id_offset": getattr(graph, "id_offset", 0),
        "canonicalisation": graph.summary.as_dict(),
        "versions": versions(),
    })
    if read_on_workers:
        record["read"] = "workers"
    record.setdefault("time_s", {})["read"] = t_read
    table = result.to_table(all_levels=all_levels) if algorithm in COMMUNITY else result.to_table()
    t1 = time.perf_counter()
    _write_outputs(output, table, summary_path, record)
    record["time_s"]["write"] = time.perf_counter() - t1
    if not quiet:
        _print_summary(record, output, summary_path)
    return record


def _run_stable_job(input_path, output, summary_path, algorithm, *, device, partitions, quiet, read_options,
                    client=None):
    """A stable-marriage job: a preference table (or a weighted graph) in, ``man, woman`` out."""
    from .algorithms.stable_marriage import stable_marriage  # noqa: PLC0415
    from .io.preferences import read_instance  # noqa: PLC0415

    t0 = time.perf_counter()
    prefs = read_instance(input_path, graph_reader=lambda path: _read(path, **read_options))
    t_read = time.perf_counter() - t0
    with _progress(algorithm, quiet) as callback:
        result = stable_marriage(prefs, algorithm=algorithm, device=device, partitions=partitions, client=client,
                                 progress=None if callback is None else
                                 (lambda r: callback(r["round"], r["messages"], r.get("matched"))))
    record = result.summary() | {"input": str(input_path), "versions": versions()}
    if client is not None:
        record["workers"] = len(client.scheduler_info()["workers"])
    record.setdefault("time_s", {})["read"] = t_read
    _write_outputs(output, result.to_table(), summary_path, record)
    if not quiet:
        _print_summary(record, output, summary_path)
    return record


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


def _check_output(output: Path, summary: Path, input_path=None, *, report=None, b=None):
    """Refuse outputs that cannot be written as asked, before any work: a table of unknown
    format, any output on a file the job reads (the input, a --b file) or on another output
    (:func:`mgmatch._paths.check_job_paths`), or where it cannot be written
    (:func:`mgmatch.io.writers.unwritable`)."""
    from ._paths import check_job_paths  # noqa: PLC0415
    from .io.writers import unwritable  # noqa: PLC0415

    if Path(output).suffix.lower() not in (".parquet", ".pq", ".csv", ".tsv"):
        raise ParameterError(f"output {output} must end in .parquet, .pq, .csv or .tsv")
    b_file = None if b is None or isinstance(b, int) or str(b).strip().lstrip("-").isdigit() else Path(str(b))
    writes = {"output": output, "summary": summary, "report": report}
    check_job_paths({"input": input_path, "--b": b_file}, writes)
    for what, path in writes.items():
        why = None if path is None else unwritable(path)  # before the job runs, which may take long
        if why is not None:
            raise ParameterError(f"{what} {path} cannot be written: {why}")


def _parse_b(b, n):
    if b is None:
        raise ParameterError("--algorithm bsuitor needs --b (an integer or a file of integers)")
    try:
        return int(b)
    except (TypeError, ValueError):
        pass
    import warnings  # noqa: PLC0415

    path = Path(str(b))
    if not path.is_file():
        raise ParameterError(f"--b must be an integer or an existing file, not {b!r}")
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
def _maybe_cluster(on_cluster, cluster_opts, device, quiet, report):
    """A Dask client when the job runs on a cluster (printing the dashboard link and how many
    workers the run has), else None."""
    if not on_cluster:
        yield None
        return
    from ._dasklogs import held_dask_logs  # noqa: PLC0415
    from .distributed import cluster  # noqa: PLC0415  (imports distributed, which sets up its loggers)

    opts = dict(cluster_opts)
    if opts.get("scheduler_file") is not None:
        opts["scheduler_file"] = str(opts["scheduler_file"])
    with held_dask_logs(), cluster(**opts, device=device, check_cores=True) as client, _cluster_lost():
        if not quiet:
            n_workers = len(client.scheduler_info()["workers"])
            _console().print(f"Dask dashboard: {client.dashboard_link} ({n_workers} worker"
                             f"{'s' if n_workers != 1 else ''})")
        if report is None:
            yield client
            return
        from distributed import performance_report  # noqa: PLC0415

        from .io import atomic_path  # noqa: PLC0415

        with atomic_path(report) as tmp, performance_report(filename=str(tmp)):
            yield client


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
                   deterministic=False):
    progress = _progress(algorithm, quiet)
    with progress as callback:
        if algorithm in MATCHING:
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
            self.status = _console().status(f"{self.algorithm}: starting")
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
    for phase, secs in record.get("time_s", {}).items():
        if isinstance(secs, (int, float)):
            t.add_row(f"time {phase}", f"{secs:.3f} s")
    t.add_row("output", str(output))
    t.add_row("summary", str(summary_path))
    _console().print(t)


# --------------------------------------------------------------------------------- info
@main.command()
@click.argument("input_path", metavar="FILE", type=_PATH)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--format", "fmt", default=None, help=_FORMAT_HELP)
@click.option("--bipartite/--no-bipartite", default=None)
@_weighted_option
@_friendly
def info(input_path, as_json, fmt, bipartite, weighted):
    """Describe a graph file (- for standard input, with --format): size, degrees, weights, what
    canonicalisation found."""
    from .io import graph_info  # noqa: PLC0415

    input_path = _input(input_path)
    facts = graph_info(input_path, fmt, bipartite=bipartite, negative="abs", weighted=weighted)
    if as_json:
        click.echo(json.dumps(facts, indent=2, default=str))
        return
    from rich.table import Table  # noqa: PLC0415

    t = Table(title=str(input_path), show_header=False)
    for key, val in facts.items():
        if isinstance(val, dict):
            for k2, v2 in val.items():
                t.add_row(f"{key}.{k2}", str(v2))
        else:
            t.add_row(key, f"{val:.6g}" if isinstance(val, float) else str(val))
    _console(stderr=False).print(t)


# ----------------------------------------------------------------------------- generate
@main.command()
@click.argument("name")
@click.option("--output", "-o", type=_PATH, required=True,
              help="Where to write the graph (.mtx, .parquet, .npz, .csv).")
@click.option("--param", "-p", "params", multiple=True, metavar="KEY=VALUE",
              help="Generator parameter, e.g. -p k=18 -p seed=1 (see the generator's docs).")
@_friendly
def generate(name, output, params):
    """Generate a graph of family NAME (delaunay, rgg, kron, grid2d, random_bipartite, erdos_renyi), or a
    stable-marriage preference table (sm_easy, sm_hard, sm_random; .parquet, .csv or .tsv).

    Example: mgmatch generate kron -p k=18 -p seed=1 -o kron18.parquet
    """
    from . import generators  # noqa: PLC0415
    from .io import write_graph  # noqa: PLC0415

    spec = name + (":" + ",".join(params) if params else "")
    if name in generators.PREFERENCE_GENERATORS:
        from .io.preferences import write_preferences  # noqa: PLC0415
        from .io.writers import TABLE_FORMATS  # noqa: PLC0415

        if output.suffix.lower() not in TABLE_FORMATS:
            raise ParameterError(f"a preference table is written as {', '.join(TABLE_FORMATS)}, not {output.name}")
        prefs = generators.parse_preferences_spec(spec)
        write_preferences(output, prefs)
        click.echo(f"wrote {output}: {prefs!r}")
        return
    graph = generators.parse_graph_spec(spec)
    write_graph(output, graph)
    click.echo(f"wrote {output}: {graph!r}")


# ------------------------------------------------------------------------------- verify
@main.command()
@click.argument("graph_path", metavar="GRAPH", type=_PATH)
@click.argument("result_path", metavar="RESULT", type=_PATH)
@click.option("--b", "b", default=None, help="Capacity the result was computed with (b-matchings).")
@_canon_options
@_friendly
def verify(graph_path, result_path, b, fmt, one_based, negative, zeros, duplicates, random_weights, bipartite,
           weighted):
    """Check a written RESULT against GRAPH.

    A matching (u, v, weight) must be valid, maximal, with the graph's weights (or a b-matching
    with --b); a bipartite matching (row, col) valid and of maximum cardinality (against SciPy);
    communities (vertex, community[, level]) must give every vertex one community; marriages (man, woman)
    must be stable and man-optimal for GRAPH, a preference table or a weighted graph. Exit status
    0 when the result passes, 1 when it does not.
    """
    from .io import read_table  # noqa: PLC0415
    from .verify import verify_bipartite_result, verify_communities, verify_result  # noqa: PLC0415

    columns = read_table(result_path)
    opts = dict(fmt=fmt, one_based=one_based, negative=negative, zeros=zeros, duplicates=duplicates,
                random_weights=random_weights, bipartite=bipartite, weighted=weighted)
    try:
        if {"man", "woman"} <= set(columns):
            from .io.preferences import read_instance  # noqa: PLC0415
            from .verify_stable import verify_stable_result  # noqa: PLC0415

            report = verify_stable_result(read_instance(graph_path, graph_reader=lambda p: _read(p, **opts)), columns)
        elif {"row", "col"} <= set(columns):
            report = verify_bipartite_result(_read(graph_path, **_as_matrix_pattern(opts)), columns)
        elif {"vertex", "community"} <= set(columns):
            report = verify_communities(_read(graph_path, **opts), columns)
        elif {"u", "v"} <= set(columns):
            graph = _read(graph_path, **opts)
            report = verify_result(graph, columns, b=None if b is None else _parse_b(b, graph.n))
        else:
            raise InputError(f"result has columns {', '.join(columns)}; expected u, v[, weight], or row, col, "
                             "or vertex, community, or man, woman", path=result_path)
    except InputError as exc:
        if exc.path is None:  # a problem of the result's columns: name the result
            raise InputError(exc.message, path=result_path) from None
        raise
    click.echo(json.dumps(report, indent=2))
    if not report["ok"]:
        sys.exit(1)


# -------------------------------------------------------------------------------- bench
@main.command()
@click.option("--family", type=click.Choice(["matching", "bipartite", "louvain", "distributed", "stable-marriage",
                                            "io", "all"]),
              default="matching", show_default=True,
              help="distributed: local mode against Dask clusters of 1, 2, ... workers. io: the graph readers "
                   "against the library route for each format; --graphs names formats (mtx;csv;parquet).")
@click.option("--device", type=click.Choice(["auto", "cpu", "gpu"]), default="auto", show_default=True)
@click.option("--graphs", default=None, help="Graph specs or graph files, ';' between graphs, e.g. "
                                             "'kron:k=18;delaunay:k=18;file:graphs/road.mtx'.")
@click.option("--repeats", type=int, default=5, show_default=True,
              help="Timed runs of each case (at least 1); the report gives their median.")
@click.option("--quick", is_flag=True, help="Small graphs: a smoke test of the benchmark itself.")
@click.option("--output", "-o", type=_PATH, default=None, help="Write the rows as JSON here.")
@click.option("--workers", default=None, help="distributed: comma-separated worker counts (default: 1 to the "
                                              "number of GPUs, or 1,2 CPU processes).")
@click.option("--threads", default=None, metavar="N[,N...]",
              help="Run every case once per thread count, mgmatch and its peers alike (e.g. 1,2,4,8,16: the "
                   "scaling curve); each row records its threads. Default: one pass on every CPU the process "
                   "may use.")
@_friendly
def bench(family, device, graphs, repeats, quick, output, workers, threads):
    """Time mgmatch against its peers (NetworKit, SciPy) side by side on the same graphs."""
    from .bench import run_family, write_report  # noqa: PLC0415

    if repeats < 1:
        raise ParameterError(f"--repeats must be at least 1 (the timed runs of each case), not {repeats}")
    specs = [s for s in graphs.split(";") if s] if graphs else None
    families = ["matching", "bipartite", "louvain", "distributed", "stable-marriage"] if family == "all" else [family]
    counts = _parse_counts(workers)
    thread_counts = _parse_counts(threads, "--threads")
    rows = []
    for fam in families:
        extra = {"workers": counts} if fam == "distributed" else {}
        rows += run_family(fam, graphs=specs, device=device, repeats=repeats, quick=quick, threads=thread_counts,
                           **extra)
    write_report(rows, output, console=_console())


def _parse_counts(text, option="--workers"):
    if text is None:
        return None
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ParameterError(f"{option} takes comma-separated positive integers, not {text!r}") from None
    if not counts or min(counts) < 1:
        raise ParameterError(f"{option} takes comma-separated positive integers, not {text!r}")
    return counts


# --------------------------------------------------------------------------------- demo
@main.command()
@click.option("--output", "-o", "out_dir", type=_PATH, default=Path("out"), show_default=True)
@click.option("--device", type=click.Choice(["auto", "cpu", "gpu"]), default="auto", show_default=True)
@click.option("--workers", type=int, default=None,
              help="Workers of the local cluster (default: one per GPU, else 2 CPU worker processes).")
@_friendly
def demo(out_dir, device, workers):
    """Run the main job on a built-in graph on an embedded local Dask cluster.

    Starts a local cluster (one worker per GPU when dask-cuda and GPUs are present, else CPU
    worker processes), generates a Delaunay mesh of 2^16 points with random weights, computes its
    Suitor matching and its b-Suitor b-matching (b=3) with one partition per worker, checks both
    against the sequential greedy algorithm, and writes the results and their JSON summaries
    under OUT.
    """
    from rich.table import Table  # noqa: PLC0415

    from . import generators, verify as checks  # noqa: PLC0415
    from .algorithms.matching import match  # noqa: PLC0415
    from .distributed import cluster  # noqa: PLC0415
    from .io import summary_path_for  # noqa: PLC0415

    console = _console()
    t0 = time.perf_counter()
    graph = generators.builtin_demo_graph()
    console.print(f"built-in graph: {graph!r} ({time.perf_counter() - t0:.2f} s)")
    table = Table(title="mgmatch demo")
    for col in ("algorithm", "device", "partitions", "cardinality", "weight", "rounds", "equals greedy",
                "time (s)", "output"):
        table.add_column(col)
    with cluster(workers=workers, device=device) as client:
        n_workers = len(client.scheduler_info()["workers"])
        console.print(f"local Dask cluster: {n_workers} workers; dashboard: {client.dashboard_link}")
        for algorithm, b in (("suitor", None), ("bsuitor", 3)):
            with _progress(algorithm, False) as callback:
                result = match(graph, algorithm, b=b, device=device, client=client, progress=callback)
            if b is None:
                same = bool(np.array_equal(result.mate, checks.greedy_matching(graph)))
            else:
                eu, ev, _ = checks.greedy_b_matching(graph, b)
                same = bool(np.array_equal(result.u, eu) and np.array_equal(result.v, ev))
            path = out_dir / f"demo-{algorithm}.parquet"
            record = result.summary() | {"input": "builtin:delaunay:k=16,seed=1", "equals_greedy": same,
                                         "versions": versions()}
            _write_outputs(path, result.to_table(), summary_path_for(path), record)
            table.add_row(algorithm + (f" (b={b})" if b else ""), result.device, str(result.n_parts),
                          str(result.cardinality), f"{result.weight:.4f}", str(result.rounds.rounds),
                          "yes" if same else "NO", f"{result.timings['total']:.3f}", str(path))
            if not same:
                raise MgmatchError(f"{algorithm} differs from the greedy reference on the demo graph")
    _console(stderr=False).print(table)


if __name__ == "__main__":  # pragma: no cover
    main()
