"""Pipeline files: batch jobs that ``mgmatch run FILE.yaml`` executes.

A pipeline is YAML with an optional ``cluster`` (where matching jobs run), optional ``defaults``
(options every job gets unless it sets them) and a list of ``jobs``, each naming an ``input``,
an ``output`` and the ``mgmatch run`` options it needs (same names, ``-`` or ``_``). Relative
paths are relative to the pipeline file. Jobs run in order; the first failing job stops the
pipeline with its error (outputs of jobs already done stay, each written atomically).

Example::

    cluster:
      workers: 2                 # or scheduler: tcp://host:8786, or scheduler_file: sched.json
    defaults:
      device: auto
    jobs:
      - input: graphs/road.mtx
        algorithm: suitor
        output: out/road-suitor.parquet
      - input: graphs/road.mtx
        algorithm: bsuitor
        b: 3
        output: out/road-b3.parquet
      - input: graphs/follows.csv  # header: follower,followee,strength,since
        src: follower
        dst: followee
        weight: strength         # user names: renumbered, written back as names
        output: out/follows-suitor.parquet
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from .errors import InputError, ParameterError

__all__ = ["load_pipeline", "run_pipeline"]

JOB_KEYS = {
    "name", "input", "output", "algorithm", "summary", "b", "init", "deterministic", "resolution", "all_levels",
    "device",
    "partitions", "format", "one_based", "negative", "zeros", "duplicates", "random_weights", "bipartite",
    "weighted", "src", "dst", "weight", "columns", "reorder",
}
READ_KEYS = {"format": "fmt", "one_based": "one_based", "negative": "negative", "zeros": "zeros",
             "duplicates": "duplicates", "random_weights": "random_weights", "bipartite": "bipartite",
             "weighted": "weighted"}
#: A job's columns of an edge table, as ``mgmatch run --src/--dst/--weight/--columns`` takes them.
COLUMN_KEYS = ("src", "dst", "weight", "columns")
CLUSTER_KEYS = {"workers", "scheduler", "scheduler_file", "device", "wait_for_workers", "wait_timeout"}


def load_pipeline(path) -> dict:
    """Read and check a pipeline file; returns ``{"cluster": dict|None, "jobs": [dict, ...]}``."""
    import yaml  # noqa: PLC0415

    path = Path(path)
    if not path.is_file():
        raise InputError("pipeline file does not exist" if not path.exists() else "is not a file", path=path)
    if path.stat().st_size > MAX_PIPELINE_BYTES:
        raise InputError(f"is larger than {MAX_PIPELINE_BYTES:,} bytes; a pipeline file lists jobs, not data",
                         path=path)
    try:
        doc = yaml.load(path.read_text(), Loader=_unique_keys_loader())  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise InputError(f"not valid YAML ({getattr(exc, 'problem', exc)})", path=path,
                         line=None if line is None else line + 1) from None
    except UnicodeDecodeError:
        raise InputError("is not a text file", path=path) from None
    except RecursionError:
        raise InputError(f"is nested too deeply to read (more than {MAX_PIPELINE_DEPTH} levels are refused)",
                         path=path) from None
    _check_expansion(doc, path)
    unknown = set(doc) - {"cluster", "defaults", "jobs"} if isinstance(doc, dict) else set()
    if unknown:
        raise InputError(f"unknown top-level key {sorted(unknown)[0]!r} (cluster, defaults, jobs)", path=path)
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list) or not doc["jobs"]:
        raise InputError("a pipeline needs a non-empty 'jobs' list", path=path)
    base = path.parent
    cluster = doc.get("cluster")
    if cluster is not None:
        cluster = _keys(cluster, "cluster", path)
        bad = set(cluster) - CLUSTER_KEYS
        if bad:
            raise InputError(f"unknown cluster key {sorted(bad)[0]!r} ({', '.join(sorted(CLUSTER_KEYS))})", path=path)
        if "scheduler_file" in cluster:
            cluster["scheduler_file"] = str(base / cluster["scheduler_file"])
    defaults = _keys(doc.get("defaults") or {}, "defaults", path)
    jobs = []
    for i, raw in enumerate(doc["jobs"], 1):
        raw = _keys(raw, f"job {i}", path)
        # a job's columns replace the defaults' in full: its `columns` their src, dst and weight, and the other way
        replaced = ("src", "dst", "weight") if "columns" in raw else ("columns",) if set(raw) & {"src", "dst",
                                                                                                "weight"} else ()
        job = {k: v for k, v in defaults.items() if k not in replaced} | raw
        bad = set(job) - JOB_KEYS
        if bad:
            raise InputError(f"job {i}: unknown option {sorted(bad)[0]!r}", path=path)
        for required in ("input", "output"):
            if required not in job:
                raise InputError(f"job {i}: missing {required!r}", path=path)
        job["input"] = base / str(job["input"])
        job["output"] = base / str(job["output"])
        if "summary" in job:
            job["summary"] = base / str(job["summary"])
        if "b" in job:
            job["b"] = _b_option(job["b"], base, f"job {i}", path)
        if "reorder" in job:  # before any job runs, as every other check here
            from .jobs import _check_reorder  # noqa: PLC0415

            try:
                _check_reorder(job["reorder"], False, job.get("b"), job.get("algorithm", "auto"))
            except ParameterError as exc:
                raise InputError(f"job {i}: {exc}", path=path) from None
        for key in _SWITCHES:
            if key in job and not isinstance(job[key], bool) and not (job[key] is None and key in _MAYBE):
                raise InputError(f"job {i}: {key} must be true or false, not {job[key]!r}", path=path)
        job.setdefault("name", f"job {i}")
        jobs.append(job)
    _check_pipeline_paths(path, cluster, jobs)
    return {"cluster": cluster, "jobs": jobs}


#: Job keys that switch something on or off (YAML's true and false: a string such as "false"
#: would read as on), and those of them that may also be left to detection (null).
_SWITCHES = ("deterministic", "all_levels", "weighted", "one_based", "bipartite")
_MAYBE = ("one_based", "bipartite")


def _unique_keys_loader():
    """YAML's safe loader, refusing a mapping that names a key twice (plain YAML keeps the last,
    so a mistyped second ``output`` would silently decide where a job writes)."""
    import yaml  # noqa: PLC0415

    class Loader(yaml.SafeLoader):
        pass

    def mapping(loader, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # (``<<: *alias``, merged by the constructor)
                continue
            key = loader.construct_object(key_node, deep=deep)
            try:
                again = key in seen
                seen.add(key)
            except TypeError:  # (an unhashable key: the constructor below names it)
                continue
            if again:
                raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} appears twice in one mapping",
                                                        key_node.start_mark)
        return loader.construct_mapping(node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return Loader


def _check_pipeline_paths(path: Path, cluster, jobs) -> None:
    """Refuse a pipeline in which a job would write over a file that any job reads (its graph,
    its b values), the pipeline file or the scheduler file, or over another job's output."""
    from ._paths import check_job_paths  # noqa: PLC0415
    from .io import summary_path_for  # noqa: PLC0415

    reads = {"pipeline": path, "scheduler_file": (cluster or {}).get("scheduler_file")}
    writes = {}
    for job in jobs:
        name = job["name"]
        reads[f"{name}'s input"] = job["input"]
        if isinstance(job.get("b"), str):
            reads[f"{name}'s b"] = job["b"]
        writes[f"{name}'s output"] = job["output"]
        writes[f"{name}'s summary"] = job.get("summary") or summary_path_for(job["output"])
    try:
        check_job_paths(reads, writes)
    except (InputError, ParameterError) as exc:
        raise InputError(str(exc), path=path) from None


#: Bounds on what a pipeline file may hold once its aliases are expanded: a job's fields are
#: rendered into messages and summaries, so ``&a [*b, *b, ...]`` chains (an "alias bomb", a few
#: hundred bytes that expand to billions of values) must stop here, not there.
MAX_PIPELINE_BYTES = 1 << 20
MAX_PIPELINE_NODES = 100_000
MAX_PIPELINE_DEPTH = 50


def _check_expansion(doc, path) -> None:
    """Refuse a document that expands (aliases followed) to more than ``MAX_PIPELINE_NODES``
    values or ``MAX_PIPELINE_DEPTH`` levels, or that holds itself (``&a [*a]``). Sizes of
    shared nodes are counted once each and multiplied, so the check costs the size of the
    document as written, not as expanded."""
    sizes = {}
    active = set()

    def size(node, depth):
        if depth > MAX_PIPELINE_DEPTH:
            raise InputError(f"is nested more than {MAX_PIPELINE_DEPTH} levels deep", path=path)
        if isinstance(node, dict):
            children = [x for pair in node.items() for x in pair]
        elif isinstance(node, list):
            children = node
        else:
            return 1
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise InputError("refers to itself through an alias (&name ... *name inside it)", path=path)
        active.add(key)
        total = 1
        for child in children:
            total += size(child, depth + 1)
            if total > MAX_PIPELINE_NODES:
                raise InputError(f"expands to more than {MAX_PIPELINE_NODES:,} values once its aliases (*name) "
                                 "are followed", path=path)
        active.discard(key)
        sizes[key] = total
        return total

    size(doc, 0)


def _b_option(b, base: Path, what: str, path):
    """A job's ``b``: an integer as it is, a file of b values relative to the pipeline file."""
    if isinstance(b, int) and not isinstance(b, bool):
        return b
    if isinstance(b, str):
        try:
            return int(b)
        except ValueError:
            return str(base / b)
    raise InputError(f"{what}: b must be an integer or the path of a file of integers, not {b!r}", path=path)


def _keys(mapping, what, path):
    if not isinstance(mapping, dict):
        raise InputError(f"{what} must be a mapping of options", path=path)
    return {str(k).replace("-", "_"): v for k, v in mapping.items()}


def _job_arguments(job: dict):
    """A job's name, input, output, read options, columns (as :func:`mgmatch.jobs.column_options`
    takes them) and the rest, :func:`mgmatch.jobs.run_job`'s keyword arguments."""
    args = dict(job)
    name, inp, out = args.pop("name"), args.pop("input"), args.pop("output")
    read = {READ_KEYS[k]: args.pop(k) for k in list(args) if k in READ_KEYS}
    chosen = {k: args.pop(k) for k in COLUMN_KEYS if k in args}
    return name, inp, out, read, chosen, args


def run_pipeline(path, *, quiet: bool = False, run_job=None, cluster: dict | None = None) -> list[dict]:
    """Run every job of a pipeline file; returns the jobs' summaries.

    ``cluster`` (the command line's ``--workers``, ``--scheduler``, ``--scheduler-file``,
    ``--wait-for-workers``, ``--wait-timeout``) replaces the file's ``cluster`` section, whose
    ``device`` alone stays."""
    from ._options import check_options_apply  # noqa: PLC0415
    from .jobs import AUTO_ALGORITHM, _cluster_lost, check_job, column_options  # noqa: PLC0415

    if run_job is None:
        from .jobs import run_job  # noqa: PLC0415

    spec = load_pipeline(path)
    cluster_opts = spec["cluster"]
    if cluster:
        cluster_opts = {k: v for k, v in (cluster_opts or {}).items() if k == "device"} | cluster
    jobs = []  # (name, input, output, read options, run_job's other arguments), checked
    for job in spec["jobs"]:  # every job's options and values, before the first job runs
        algorithm = job.get("algorithm", "auto")
        name, inp, out, read, chosen, args = _job_arguments(job)
        try:
            check_options_apply(AUTO_ALGORITHM if algorithm == "auto" else str(algorithm),
                                [k for k in job if k not in ("name", "input", "output", "summary")])
            read["columns"] = column_options(**chosen)
            check_job(inp, out, read_options=read, on_cluster=bool(cluster_opts),
                      **{k: v for k, v in args.items() if k != "all_levels"})
        except (InputError, ParameterError) as exc:
            raise InputError(f"{name}: {exc}", path=path) from None
        jobs.append((name, inp, out, read, args))
    with contextlib.ExitStack() as stack:
        client = None
        if cluster_opts:
            from .distributed import cluster as start_cluster  # noqa: PLC0415

            if cluster_opts.get("scheduler_file") is not None:
                cluster_opts["scheduler_file"] = str(cluster_opts["scheduler_file"])
            from ._dasklogs import held_dask_logs  # noqa: PLC0415

            stack.enter_context(held_dask_logs())
            client = stack.enter_context(start_cluster(**cluster_opts, check_cores=True))
            stack.enter_context(_cluster_lost())
        records = []
        from ._signals import outputs_complete  # noqa: PLC0415

        for k, (name, inp, out, read, args) in enumerate(jobs):
            last = k == len(jobs) - 1  # (its outputs written, the pipeline's are: a stop no longer undoes it)
            try:
                records.append(run_job(inp, out, quiet=quiet, client=client, read_options=read,
                                       on_outputs=outputs_complete if last else None, **args))
            except (InputError, ParameterError) as exc:
                raise type(exc)(f"{name}: {exc}") from None
        outputs_complete()  # (the cluster's shutdown that follows is not cut off by a stop signal)
        return records

