"""The ``mgmatch`` command line: ``run``, ``info``, ``generate``, ``verify``, ``report``, ``bench``, ``demo``.

Every error a user can cause (bad file, bad parameter, a job that will not fit) prints one line
``mgmatch: error: ...`` on standard error and exits with status 2; no partial output is left.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import signal
import sys
import time
from pathlib import Path

import click
import numpy as np

from . import __version__
from ._versions import versions
from .errors import InputError, MgmatchError, ParameterError
from .jobs import (
    ALGORITHM_CHOICES, AUTO_ALGORITHM, _as_matrix_pattern, _b_file, _check_output, _check_read_on_workers,
    _check_reorder, _cluster_lost, _parse_b, _progress, _read, _write_outputs, column_options, run_job,
)
from .jobs import console as _console
from .jobs import print_table

__all__ = ["main", "run_job", "versions"]


class _Exit(click.ClickException):
    exit_code = 2

    def show(self, file=None):
        message = "; ".join(line.strip() for line in self.message.splitlines() if line.strip())  # one line
        click.echo(f"mgmatch: error: {message}", err=True)


def _os_error(exc: OSError) -> str:
    """One line for an operating-system error, as an :class:`InputError` names its file: the
    path (shortened in the middle when long) and why (``File name too long``)."""
    name = None if exc.filename is None else str(exc.filename)
    if name is not None and len(name) > 120:
        name = name[:60] + "..." + name[-40:]
    return str(InputError(exc.strerror or str(exc), path=name))


def _friendly(fn):
    """Turn MgmatchError into one line and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from ._signals import Terminated, stopped_after_outputs, terminate_as_interrupt, written  # noqa: PLC0415

        from ._signals import raise_if_stopped  # noqa: PLC0415

        try:
            with terminate_as_interrupt():  # SIGTERM/SIGHUP clean up as Ctrl-C does
                try:
                    result = fn(*args, **kwargs)
                except Exception:
                    # a stop that landed inside an import leaves the module half made, and the
                    # next use of it fails: the stop is the cause, and is reported as such
                    raise_if_stopped()
                    raise
                late = stopped_after_outputs()
            if late:  # the outputs were complete; the closing (a cluster's shutdown) went on
                click.echo(f"mgmatch: {late} came after the outputs were written; they are complete", err=True)
            if _AS_PROGRAM:  # (the process winds down from here: click's closing, the interpreter's)
                from ._signals import exit_at_once_on_stop  # noqa: PLC0415

                exit_at_once_on_stop()
            return result
        except Terminated as stop:
            _quiet_after_stop()
            done = written()
            click.echo(f"mgmatch: {'interrupted' if stop.signum == signal.SIGINT else 'stopped by ' + stop.name}; "
                       + (f"written before it: {', '.join(done)}; nothing after" if done else "no output written"),
                       err=True)
            sys.exit(128 + stop.signum)
        except MgmatchError as exc:
            raise _Exit(str(exc)) from None
        except MemoryError:
            raise _Exit("ran out of memory; no output written (try fewer vertices, a cluster with "
                        "more workers, or --device cpu)") from None
        except OSError as exc:  # the file system said no where no check named it first: the user's to fix
            raise _Exit(_os_error(exc)) from None
        except KeyboardInterrupt:
            _quiet_after_stop()
            click.echo("mgmatch: interrupted; no output written", err=True)
            sys.exit(130)

    return wrapper


def _quiet_after_stop() -> None:
    """After a stop, what an embedded cluster's shutdown prints is not news: the client's
    cancelled futures ("Task exception was never retrieved", from asyncio as they are freed)
    and the nannies' warnings that they kill their workers."""
    logging.getLogger("asyncio").setLevel(logging.CRITICAL + 1)
    logging.getLogger("distributed").setLevel(logging.ERROR)


# ------------------------------------------------------------------------------ options
#: The input formats, as mgmatch.io reads them (kept here so that --help needs no import of the readers;
#: a test checks the two lists agree).
_FORMAT_HELP = "Input format: mtx, csv, tsv, edgelist, metis, gml, parquet or npz (default: from the suffix)."


#: Paths as given: mgmatch checks them itself (:func:`mgmatch.io.read_graph`, the output checks)
#: and says what is wrong in one ``mgmatch: error:`` line, where click's own readability check
#: would print a usage block instead.
_PATH = click.Path(path_type=Path, readable=False)
#: INPUT, kept as given until :func:`_input` reads it: a ``Path`` would make ``./-`` (a file
#: named ``-``) into ``-`` (standard input).
_INPUT = click.Path(path_type=str, readable=False)


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
                     help="Read a square matrix as rows x columns (default: only rectangular ones; for gpr, "
                          "apfb and apsb also an edge table, each edge a row, column pair). --no-bipartite: an "
                          "undirected graph, whose double cover those match.")(f)
    f = _weighted_option(f)
    f = _column_options(f)
    return f


def _column_options(f):
    """--src, --dst, --weight and --columns: which columns of a CSV, TSV, edge list or Parquet
    table hold the edges (:func:`mgmatch.jobs.column_options`)."""
    number = " (a name from the header, or a field number from 1)"
    f = click.option("--columns", "columns", default=None, metavar="SRC,DST[,WEIGHT]",
                     help="The source, target and weight columns at once, as --src, --dst and --weight.")(f)
    f = click.option("--weight", "weight_column", default=None, metavar="COLUMN",
                     help="The weight column of a CSV/TSV/edge list or Parquet table" + number + "; a text file "
                          "of more columns keeps its weights this way (default: 'weight' in Parquet; a text "
                          "file's header 'weight' column, or its third field).")(f)
    f = click.option("--dst", "dst_column", default=None, metavar="COLUMN",
                     help="The target column" + number + " (default: 'dst' in Parquet, the second field of text).")(f)
    f = click.option("--src", "src_column", default=None, metavar="COLUMN",
                     help="The source column" + number + " (default: 'src' in Parquet, the first field of text). "
                          "Ids that are not integers (labels), or sparse or negative 64-bit integers, are renumbered "
                          "and the output names vertices by the input's ids (the summary says \"renumbered\").")(f)
    return f


def _weighted_option(f):
    return click.option("--weighted/--unweighted", "weighted", default=True,
                        help="Use the weights the input holds, or ignore them: every edge weighs 1 (or gets "
                             "--random-weights), and an edge list's lines are read for their first two fields only.  "
                             "[default: weighted]")(f)


def _input(path: str) -> Path:
    """INPUT as given, ``-`` alone standing for standard input (``./-`` is a file)."""
    return Path("/dev/stdin") if path == "-" else Path(path)


class _UsageLine(click.UsageError):
    """A usage error (an unknown option or command, a missing argument, a value click's types
    refuse) as one ``mgmatch: error:`` line with the help to read, where click prints the usage
    block, a hint and the error: a batch job's log then holds one line per failed job, as for
    every other error. Still a ``click.UsageError`` for a program that calls :func:`main`."""

    def __init__(self, exc: click.UsageError):
        super().__init__(exc.format_message(), ctx=exc.ctx)

    def show(self, file=None):
        command = self.ctx.command_path if self.ctx is not None else "mgmatch"
        click.echo(f"mgmatch: error: {self.message} (see '{command} --help')", err=True)


def _one_line_usage(call, *args, **kwargs):
    """``call(*args, **kwargs)`` with its usage errors as :class:`_UsageLine`; a bare ``mgmatch``
    still prints its help (click's ``NoArgsIsHelpError``, itself a usage error)."""
    no_args = getattr(click.exceptions, "NoArgsIsHelpError", ())
    try:
        return call(*args, **kwargs)
    except click.UsageError as exc:
        if isinstance(exc, (no_args, _UsageLine)):
            raise
        raise _UsageLine(exc) from None


class _Main(click.Group):
    """The ``mgmatch`` group; keeps the arguments it was started with, which summaries and
    reports show as the user's command line (:func:`mgmatch.report.command_line`), and says a
    usage error in one line (:class:`_UsageLine`)."""

    def make_context(self, info_name, args, parent=None, **extra):
        argv = list(args)
        ctx = _one_line_usage(super().make_context, info_name, args, parent=parent, **extra)
        from .report import ARGV_KEY  # noqa: PLC0415

        ctx.meta[ARGV_KEY] = argv
        return ctx

    def invoke(self, ctx):
        return _one_line_usage(super().invoke, ctx)

    def main(self, args=None, *rest, **options):
        global _AS_PROGRAM
        _AS_PROGRAM = args is None  # this process's own command line: the process ends with it
        if _AS_PROGRAM:
            from ._signals import stop_at_once_until_handled  # noqa: PLC0415

            stop_at_once_until_handled()
        return super().main(args, *rest, **options)


#: Whether the command runs as the ``mgmatch`` program (its arguments the process's own), not
#: called by another program (tests, an embedding application), whose signals it leaves alone.
_AS_PROGRAM = False


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
@click.argument("input_path", metavar="INPUT", type=_INPUT)
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
              help="Write Dask's performance report of the run to this HTML file (readable offline).")
@click.option("--run-report", type=_PATH, default=None, metavar="FILE.html",
              help="Write a page of charts about the run to this HTML file, readable offline: messages and time per "
                   "round, matched share per round, modularity per level, community sizes, load per partition "
                   "(mgmatch report makes one later from the JSON summary).")
@click.option("--quiet", "-q", is_flag=True, help="No progress display or summary table (notices that change "
                                                  "how the result reads, such as ids read as 1-based, still show).")
@click.option("--read-on-workers", is_flag=True,
              help="Build the partitions on the Dask workers, each reading its pieces of INPUT (Parquet or a "
                   "text edge list on storage every worker sees), so the graph never passes through this "
                   "process. Needs --workers, --scheduler or --scheduler-file and a matching algorithm.")
@click.option("--reorder", type=click.Choice(["none", "rcm"]), default="none", show_default=True,
              help="Number the vertices again before the run so that neighbours get nearby ids (rcm: reverse "
                   "Cuthill-McKee). Partitions are ranges of ids, so a graph whose ids are random crosses most "
                   "edges between them; this makes the rounds cheaper. The output still names the input's "
                   "vertices; where weights tie, a matching may pick other pairs of the same weight.")
@_canon_options
@_friendly
def run(input_path, algorithm, output, summary, b, init, deterministic, resolution, all_levels, device, partitions,
        threads, workers, scheduler, scheduler_file, wait_for_workers, wait_timeout, report, run_report, quiet,
        read_on_workers, reorder, fmt, one_based, negative, zeros, duplicates, random_weights, bipartite, weighted, src_column,
        dst_column, weight_column, columns):
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
    chosen = column_options(src_column, dst_column, weight_column, columns)
    from ._options import check_options_apply  # noqa: PLC0415

    check_options_apply(AUTO_ALGORITHM if algorithm == "auto" else algorithm, given.values())
    on_cluster = workers is not None or scheduler is not None or scheduler_file is not None
    if (wait_for_workers is not None or "wait_timeout" in given) and not on_cluster:
        raise ParameterError("--wait-for-workers and --wait-timeout need a Dask cluster (--scheduler, "
                             "--scheduler-file or --workers)")
    from .io import summary_path_for  # noqa: PLC0415

    # before a cluster starts: the report is opened with it
    _check_output(output, Path(summary) if summary else summary_path_for(output), input_path, report=report, b=b,
                  run_report=run_report)
    if read_on_workers:
        _check_read_on_workers(on_cluster, AUTO_ALGORITHM if algorithm == "auto" else algorithm, bipartite, input_path)
    _check_reorder(reorder, read_on_workers, b, algorithm)
    from ._signals import outputs_complete  # noqa: PLC0415

    with _maybe_cluster(on_cluster, cluster_opts, device, quiet, report) as client:
        run_job(input_path, output, algorithm=algorithm, summary=summary, b=b, init=init,
                deterministic=deterministic, resolution=resolution,
                all_levels=all_levels, device=device, partitions=partitions, quiet=quiet, client=client,
                report=report, run_report=run_report, on_cluster=on_cluster, read_on_workers=read_on_workers,
                reorder=reorder, read_options=dict(fmt=fmt, one_based=one_based, negative=negative, zeros=zeros,
                                  duplicates=duplicates, random_weights=random_weights, bipartite=bipartite,
                                  weighted=weighted, columns=chosen), on_outputs=outputs_complete)
        outputs_complete()  # (the cluster's shutdown that follows is not cut off by a stop signal)


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
        from .report import command_line, dask_performance_report  # noqa: PLC0415

        with dask_performance_report(report, command_line()):
            yield client


# --------------------------------------------------------------------------------- info
@main.command()
@click.argument("input_path", metavar="FILE", type=_INPUT)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--format", "fmt", default=None, help=_FORMAT_HELP)
@click.option("--bipartite/--no-bipartite", default=None)
@_weighted_option
@_column_options
@_friendly
def info(input_path, as_json, fmt, bipartite, weighted, src_column, dst_column, weight_column, columns):
    """Describe a graph file (- for standard input, with --format): size, degrees, weights, what
    canonicalisation found, whether ids were renumbered."""
    from .io import graph_info  # noqa: PLC0415

    input_path = _input(input_path)
    facts = graph_info(input_path, fmt, bipartite=bipartite, negative="abs", weighted=weighted, renumber="auto",
                       columns=column_options(src_column, dst_column, weight_column, columns))
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
    print_table(t, stderr=False)


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
           weighted, src_column, dst_column, weight_column, columns):
    """Check a written RESULT against GRAPH.

    A matching (u, v, weight) must be valid, maximal, with the graph's weights (or a b-matching
    with --b); a bipartite matching (row, col) valid and of maximum cardinality (against SciPy);
    communities (vertex, community[, level]) must give every vertex one community; marriages (man, woman)
    must be stable and man-optimal for GRAPH, a preference table or a weighted graph. Exit status
    0 when the result passes, 1 when it does not. A GRAPH whose ids ``run`` renumbered is read
    the same way (the same --src, --dst, --weight), and the result's ids are taken as its ids.
    """
    from .io import read_table  # noqa: PLC0415
    from .verify import verify_bipartite_result, verify_communities, verify_result  # noqa: PLC0415

    for what, path in (("GRAPH", graph_path), ("RESULT", result_path)):
        if str(path) == "-":  # (it was looked for as a file named '-')
            raise ParameterError(f"verify reads {what} from a file; '-' (standard input) is read by run only")
    table = read_table(result_path)
    if b is not None and not ({"u", "v"} <= set(table) and not {"man", "woman"} <= set(table)):
        raise ParameterError(f"--b is the capacity of a b-matching (columns u, v[, weight]); {result_path} is "
                             "not one, and its check does not use it")
    opts = dict(fmt=fmt, one_based=one_based, negative=negative, zeros=zeros, duplicates=duplicates,
                random_weights=random_weights, bipartite=bipartite, weighted=weighted,
                columns=column_options(src_column, dst_column, weight_column, columns))
    try:
        if {"man", "woman"} <= set(table):
            from .io.preferences import read_instance  # noqa: PLC0415
            from .verify_stable import verify_stable_result  # noqa: PLC0415

            graph_reader = lambda p: _read(p, **opts, renumber=False).graph  # noqa: E731
            report = verify_stable_result(read_instance(graph_path, graph_reader=graph_reader), table)
        elif {"row", "col"} <= set(table):
            read = _read(graph_path, **_as_matrix_pattern(opts))
            report = verify_bipartite_result(read.graph, _in_dense_ids(table, read, result_path))
        elif {"vertex", "community"} <= set(table):
            read = _read(graph_path, **opts)
            report = verify_communities(read.graph, _in_dense_ids(table, read, result_path))
        elif {"u", "v"} <= set(table):
            read = _read(graph_path, **opts)
            if read.renumbered and b is not None and _b_file(b) is not None:
                raise ParameterError(f"--b {b} gives one value per vertex 0 .. n-1, but the ids of {graph_path} are "
                                     "renumbered: give one b for all vertices")
            report = verify_result(read.graph, _in_dense_ids(table, read, result_path),
                                   b=None if b is None else _parse_b(b, read.graph.n))
        else:
            raise InputError(f"result has columns {', '.join(table)}; expected u, v[, weight], or row, col, "
                             "or vertex, community, or man, woman", path=result_path)
    except InputError as exc:
        if exc.path is None:  # a problem of the result's columns: name the result
            raise InputError(exc.message, path=result_path) from None
        raise
    click.echo(json.dumps(report, indent=2))
    if not report["ok"]:
        sys.exit(1)


def _in_dense_ids(table: dict, read, result_path) -> dict:
    """A result table with its vertex columns mapped from the input's ids, as ``run`` wrote them
    for a renumbered input, to the graph's ``0 .. n-1`` (an id the graph lacks is an error).
    Columns of labels are read again as the text written (``+1`` is a label, not the number 1)."""
    if not read.renumbered:
        return table
    maps = {name: read.column_ids if name == "col" else read.vertices for name in ("u", "v", "vertex", "row", "col")
            if name in table}
    maps = {name: m for name, m in maps.items() if m.renumbered}
    labelled = [name for name, m in maps.items() if m.ids.dtype == object]
    if any(table[name].dtype != object for name in labelled):  # a type guessed for labels
        from .io import read_table  # noqa: PLC0415

        table = read_table(result_path, text=labelled)
    out = dict(table)
    for name, vertex_map in maps.items():
        values = table[name]
        if vertex_map.ids.dtype == object and values.dtype != object:  # a Parquet column of numbers
            values = values.astype(str).astype(object)
        try:
            out[name] = vertex_map.to_dense(values.tolist())
        except InputError as exc:
            raise InputError(f"column {name!r}: {exc.message}") from None
    return out


# ------------------------------------------------------------------------------- report
@main.command("report")
@click.argument("summary_path", metavar="SUMMARY", type=_PATH)
@click.option("--output", "-o", type=_PATH, default=None, metavar="FILE.html",
              help="Where to write the page (default: SUMMARY with the suffix .html).")
@_friendly
def report_command(summary_path, output):
    """Make the run report of a finished run from its JSON SUMMARY: one HTML page of charts
    (messages and time per round, matched share per round, modularity per level, community
    sizes, load per partition) that opens in a browser without a network, as
    ``mgmatch run --run-report`` writes it."""
    from ._paths import check_job_paths  # noqa: PLC0415
    from .report import read_summary, write_run_report  # noqa: PLC0415

    output = Path(output) if output is not None else Path(summary_path).with_suffix(".html")
    check_job_paths({"summary": summary_path}, {"output": output})
    write_run_report(output, read_summary(summary_path))
    click.echo(f"wrote {output}")


# -------------------------------------------------------------------------------- bench
#: What ``bench --family all`` runs: every family (:data:`mgmatch.bench.FAMILIES`, kept here so
#: that --help needs no import of the benchmarks; a test checks the two agree).
ALL_FAMILIES = ("matching", "bipartite", "louvain", "distributed", "stable-marriage", "io")


@main.command()
@click.option("--family", type=click.Choice([*ALL_FAMILIES, "all"]),
              default="matching", show_default=True,
              help="distributed: local mode against Dask clusters of 1, 2, ... workers. io: the graph readers "
                   "against the library route for each format; --graphs names formats (mtx;csv;parquet;metis;gml). "
                   "all: every family, io included.")
@click.option("--device", type=click.Choice(["auto", "cpu", "gpu"]), default="auto", show_default=True)
@click.option("--graphs", default=None, help="Graph specs or graph files, ';' between graphs, e.g. "
                                             "'kron:k=18;delaunay:k=18;file:graphs/road.mtx'.")
@click.option("--repeats", type=int, default=5, show_default=True,
              help="Timed runs of each case (at least 1); the report gives their median.")
@click.option("--quick", is_flag=True, help="Small graphs: a smoke test of the benchmark itself.")
@click.option("--output", "-o", type=_PATH, default=None, help="Write the rows as JSON here.")
@click.option("--workers", default=None, help="distributed: comma-separated worker counts (default: 1 to the "
                                              "number of GPUs, or 1,2 CPU processes); louvain: also run on "
                                              "clusters of these worker counts, the graph placed once.")
@click.option("--threads", default=None, metavar="N[,N...]",
              help="Run every case once per thread count, mgmatch and its peers alike (e.g. 1,2,4,8,16: the "
                   "scaling curve); each row records its threads. Default: one pass on every CPU the process "
                   "may use.")
@click.option("--fill-gpus", is_flag=True,
              help="distributed (and louvain with --workers): the capacity runs instead. Every GPU is filled "
                   "until the single-GPU estimate does not fit; the local run must refuse with the memory "
                   "message, and clusters of 2 or more workers must finish with the local result.")
@_friendly
def bench(family, device, graphs, repeats, quick, output, workers, threads, fill_gpus):
    """Time mgmatch against its peers (NetworKit, SciPy) side by side on the same graphs."""
    from .bench import run_family, write_report  # noqa: PLC0415

    if repeats < 1:
        raise ParameterError(f"--repeats must be at least 1 (the timed runs of each case), not {repeats}")
    if output is not None:  # refused now rather than after the runs
        from ._paths import check_job_paths  # noqa: PLC0415

        check_job_paths({}, {"output": output})
    specs = [s for s in graphs.split(";") if s] if graphs else None
    families = list(ALL_FAMILIES) if family == "all" else [family]
    counts = _parse_counts(workers)
    thread_counts = _parse_counts(threads, "--threads")
    if fill_gpus and (family not in ("distributed", "louvain") or (family == "louvain" and not counts)):
        raise ParameterError("--fill-gpus measures capacity on clusters: give --family distributed, or "
                             "--family louvain with --workers")
    if fill_gpus and thread_counts:
        raise ParameterError("--fill-gpus runs on GPU workers; --threads (CPU thread counts) does not apply")
    if counts and family not in ("distributed", "louvain", "all"):  # (they were dropped without a word)
        raise ParameterError(f"--workers gives the worker counts of --family distributed and louvain; "
                             f"--family {family} runs in this process")
    rows = []
    for fam in families:
        extra = {"workers": counts, "fill_gpus": fill_gpus} if fam == "distributed" else {}
        if fill_gpus and fam == "louvain" and counts:  # capacity rows only
            rows += run_family("distributed", graphs=specs, device=device, repeats=repeats, quick=quick,
                               workers=counts, algorithms=("louvain",), fill_gpus=True)
            continue
        # --graphs names graphs for the other families, formats for io: with --family all, io reads its own
        given = specs if fam != "io" or family == "io" else None
        rows += run_family(fam, graphs=given, device=device, repeats=repeats, quick=quick, threads=thread_counts,
                           **extra)
        if fam == "louvain" and counts:  # the same graphs placed on clusters of these worker counts
            rows += run_family("distributed", graphs=specs, device=device, repeats=repeats, quick=quick,
                               workers=counts, algorithms=("louvain",))
    write_report(rows, output, print_table=print_table)


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

    if out_dir.exists() and not out_dir.is_dir():  # refused now rather than after the runs
        raise ParameterError(f"--output {out_dir} is a file; the demo writes its results into a directory")
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
    print_table(table, stderr=False)


if __name__ == "__main__":  # pragma: no cover
    main()
