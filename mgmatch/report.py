"""Pages about a run: the run report, and Dask's performance report made to read offline.

The run report (``mgmatch run ... --run-report FILE.html``, or ``mgmatch report SUMMARY.json``
afterwards) turns a run's JSON summary into one standalone HTML page drawn with Bokeh, its
JavaScript inline, so that it opens from a cluster's shared disk or a mail attachment with no
network: a header with the command line, the algorithm, the graph, the device and the times;
messages per round; the seconds of each round spent computing, exchanging and idle; the share
of vertices matched after each round (matchings); modularity, time and communities per level
and the distribution of community sizes (Louvain); and the load of each partition (vertices,
stored entries, entries whose neighbour another partition owns). A chart whose numbers the
summary lacks (an older summary, a run without rounds) is left out and the page says so.

Dask's performance report (``--report``) is written by the scheduler with Bokeh's resources
inline instead of from a CDN, and names the user's command instead of the line of mgmatch
that opened it.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import shlex
from pathlib import Path

import numpy as np

from .errors import InputError, ResourceError

__all__ = ["RoundTrace", "command_line", "dask_performance_report", "partition_load", "read_summary",
           "render_run_report", "run_fields", "run_report_written", "write_run_report"]

#: Where the command line keeps the arguments it was started with (in ``click.Context.meta``,
#: which every context of one invocation shares).
ARGV_KEY = "mgmatch.argv"


# ---------------------------------------------------------------------- summary fields
def command_line() -> str | None:
    """The command that started this run, quoted as a shell would need it (``mgmatch run g.mtx
    -o m.csv``), or ``None`` when mgmatch was not started from its command line."""
    import click  # noqa: PLC0415

    ctx = click.get_current_context(silent=True)
    argv = None if ctx is None else ctx.meta.get(ARGV_KEY)
    return None if argv is None else shlex.join(["mgmatch", *argv])


class RoundTrace:
    """The matched fraction after each round a progress callback heard of, for the summary.

    In-process runs report every round; a cluster run reports a round at most every
    ``EngineConfig.progress_interval_s`` and always the last one, so its trace may skip rounds.

    >>> trace = RoundTrace()
    >>> shown = []
    >>> callback = trace.wrap(lambda r, k, f: shown.append(r))
    >>> callback(1, 10, 0.5); callback(2, 0, 0.75)
    >>> trace.as_dict(), shown
    ({'round': [1, 2], 'fraction': [0.5, 0.75]}, [1, 2])
    """

    def __init__(self):
        self.rounds: list[int] = []
        self.fractions: list[float] = []

    def wrap(self, callback):
        """A ``progress(round, messages, matched_fraction)`` that records and then calls
        ``callback`` (which may be ``None``)."""
        def record(rounds, messages, matched=None):
            if matched is not None:
                self.rounds.append(int(rounds))
                self.fractions.append(float(matched))
            if callback is not None:
                callback(rounds, messages, matched)

        return record

    def as_dict(self) -> dict | None:
        return {"round": list(self.rounds), "fraction": list(self.fractions)} if self.rounds else None


def partition_load(graph, n_parts) -> dict | None:
    """Each partition's share of ``graph`` when it is split into ``n_parts`` as the engine
    splits it (:meth:`mgmatch.Graph.partition`): owned vertices, stored CSR entries of the
    owned rows, and how many of those entries have a neighbour that another partition owns
    (the edges whose proposals cross partitions). ``None`` for a bipartite graph or a
    preference table, which are not split by vertex ranges here.

    A graph built on the workers (:class:`~mgmatch.distributed.DistributedGraph`) gives its
    vertex ranges only; its rows never reach this process.

    >>> import mgmatch
    >>> g = mgmatch.Graph.from_edges([0, 1, 2], [1, 2, 3])  # a path 0-1-2-3
    >>> partition_load(g, 2)
    {'lo': [0, 2], 'vertices': [2, 2], 'entries': [3, 3], 'cut_entries': [1, 1]}
    """
    from .graph import Graph, partition_bounds  # noqa: PLC0415

    if n_parts is None or getattr(graph, "bipartite", True):
        return None
    n_parts = int(n_parts)
    if not isinstance(graph, Graph):
        bounds = getattr(graph, "bounds", None)
        if bounds is None or len(bounds) != n_parts + 1:
            return None
        bounds = np.asarray(bounds, dtype=np.int64)
        return {"lo": bounds[:-1].tolist(), "vertices": np.diff(bounds).tolist()}
    from ._array import to_numpy  # noqa: PLC0415

    indptr = to_numpy(graph.indptr).astype(np.int64, copy=False)
    bounds = np.array([0, graph.n], dtype=np.int64) if n_parts == 1 else partition_bounds(indptr, n_parts)
    entries = np.diff(indptr[bounds])
    cut = [0] * n_parts
    if n_parts > 1:
        indices = to_numpy(graph.indices)
        for p in range(n_parts):  # one partition's entries at a time: no temporary as long as the graph
            lo, hi = int(bounds[p]), int(bounds[p + 1])
            own = indices[indptr[lo]:indptr[hi]]
            cut[p] = int(np.count_nonzero(own < lo) + np.count_nonzero(own >= hi))
    return {"lo": bounds[:-1].tolist(), "vertices": np.diff(bounds).tolist(), "entries": entries.tolist(),
            "cut_entries": cut}


def run_fields(record: dict, graph=None, trace: RoundTrace | None = None) -> dict:
    """What a job adds to its result's summary for the run report: the ``command``, the graph's
    edge count ``m`` where the result has none, the ``partition_load`` (:func:`partition_load`)
    and the ``matched_fraction_per_round`` (:class:`RoundTrace`). Only keys ``record`` lacks."""
    fields = {}
    command = command_line()
    if command is not None:
        fields["command"] = command
    if graph is not None and not getattr(graph, "bipartite", True) and "n_rows" not in record:
        fields["m"] = int(graph.m)
    n_parts = record.get("partitions") or record.get("time_s", {}).get("partitions")
    load = None if graph is None else partition_load(graph, n_parts)
    if load is not None:
        fields["partition_load"] = load
    matched = None if trace is None else trace.as_dict()
    if matched is not None:
        fields["matched_fraction_per_round"] = matched
    return {k: v for k, v in fields.items() if k not in record}


# ---------------------------------------------------------------------- reading, writing
def read_summary(path) -> dict:
    """A run's JSON summary, checked to be one (an object with an ``algorithm``).

    Raises
    ------
    InputError
        The file is missing, is not JSON, or holds something else than an mgmatch summary.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", path=source) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a JSON summary", path=source) from None
    except UnicodeDecodeError:
        raise InputError("is not a text file (a JSON summary is UTF-8 text)", path=source) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=source) from None
    try:
        summary = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})", path=source) from None
    except RecursionError:
        raise InputError("is not an mgmatch summary (its JSON is nested too deeply to read)", path=source) from None
    except ValueError as exc:  # (an integer of more digits than Python converts)
        raise InputError(f"is not an mgmatch summary ({exc})", path=source) from None
    if not isinstance(summary, dict) or not isinstance(summary.get("algorithm"), str):
        raise InputError("is not an mgmatch summary (a JSON object with an 'algorithm', as mgmatch run writes "
                         "beside its result)", path=source)
    return summary


def write_run_report(path, summary: dict) -> Path:
    """Render ``summary`` (:func:`render_run_report`) and write it to ``path`` atomically."""
    with run_report_written(path, summary):
        pass
    return Path(path)


@contextlib.contextmanager
def run_report_written(path, summary: dict):
    """Render the page now, and write it to ``path`` when the block (writing the result and its
    summary) succeeds: the three files appear together, and a job that fails leaves none.
    Nothing happens for ``path`` ``None``."""
    if path is None:
        yield
        return
    from .io import atomic_path  # noqa: PLC0415

    page = render_run_report(summary)
    try:
        with atomic_path(path) as partial:
            partial.write_text(page, encoding="utf-8")
            yield
    except OSError as exc:  # a full disk: one line, as for the result itself
        raise ResourceError(f"cannot write the run report {path}: {exc.strerror or exc}") from exc


# ------------------------------------------------------------------------------ the page
#: Chart size in pixels; two charts side by side fit a laptop screen.
_WIDTH, _HEIGHT = 620, 320
_TOOLS = "pan,box_zoom,wheel_zoom,reset,save"
#: Colours of compute, exchange and idle (and of the other stacked phases), colour-blind safe.
_PHASE_COLOURS = ("#1f77b4", "#ff7f0e", "#9e9e9e")
_ACCENT = "#2ca02c"


def render_run_report(summary: dict) -> str:
    """The run report of ``summary`` (a run's JSON summary as a dict) as one HTML page.

    Bokeh's JavaScript and CSS are inline (:data:`bokeh.resources.INLINE`): the page needs no
    network. Each chart's data is a ``ColumnDataSource`` named after the summary key it shows
    (``messages_per_round``, ``time_per_round``, ``matched_fraction_per_round``,
    ``modularity_per_level``, ``time_per_level``, ``community_sizes``, ``partition_load``).
    """
    from bokeh.embed import file_html  # noqa: PLC0415
    from bokeh.layouts import column, gridplot  # noqa: PLC0415
    from bokeh.models import Div  # noqa: PLC0415
    from bokeh.resources import INLINE  # noqa: PLC0415

    charts, missing = [], []
    for make in (_messages_chart, _round_time_chart, _matched_chart, _modularity_chart, _level_time_chart,
                 _community_chart, _load_chart):
        chart, why = make(summary)
        if chart is not None:
            charts.append(chart)
        elif why:
            missing.append(why)
    parts = [Div(text=_header_html(summary, missing), width=2 * _WIDTH)]
    if charts:
        parts.append(gridplot(charts, ncols=2, toolbar_location="right", merge_tools=False))
    title = f"mgmatch {summary.get('algorithm', '')}: {summary.get('input', 'run report')}"
    return file_html(column(*parts), resources=INLINE, title=title)


#: Counts that Louvain's ``time_s`` holds beside its seconds.
_COUNTS_IN_TIMES = ("partitions", "rounds")


def _header_html(summary: dict, missing: list[str]) -> str:
    esc = html.escape
    algorithm = str(summary.get("algorithm", "?"))
    lines = [f"<h1 style='margin-bottom:4px'>mgmatch {esc(algorithm)}</h1>"]
    command = summary.get("command")
    if command:
        lines.append("<pre style='background:#f4f4f4;padding:6px 10px;white-space:pre-wrap'>$ "
                     f"{esc(str(command))}</pre>")
    rows = [(name, value) for name, value in _facts(summary) if value is not None]
    cells = "".join(f"<tr><th style='text-align:left;padding-right:14px;font-weight:600'>{esc(name)}</th>"
                    f"<td>{esc(str(value))}</td></tr>" for name, value in rows)
    lines.append(f"<table style='font-size:14px;display:inline-table;vertical-align:top;margin-right:40px'>"
                 f"{cells}</table>")
    times = [(str(k).removesuffix("_s"), v) for k, v in _mapping(summary, "time_s").items()
             if _is_number(v) and k not in _COUNTS_IN_TIMES]
    if times:
        cells = "".join(f"<tr><th style='text-align:left;padding-right:14px;font-weight:600'>{esc(k)}</th>"
                        f"<td style='text-align:right'>{v:.3f} s</td></tr>" for k, v in times)
        lines.append(f"<table style='font-size:14px;display:inline-table;vertical-align:top'>"
                     f"<tr><th colspan=2 style='text-align:left'>time</th></tr>{cells}</table>")
    for why in missing:
        lines.append(f"<p style='color:#666;margin:2px 0'>{esc(why)}</p>")
    return "\n".join(lines)


def _facts(summary: dict) -> list[tuple[str, object]]:
    """The header's rows: what ran, on what, and what came out."""
    s = summary
    if "n_rows" in s:
        graph = f"{_count(s.get('n_rows'))} rows x {_count(s.get('n_cols'))} columns, {_count(s.get('m'))} entries"
    elif "n_men" in s:
        graph = f"{_count(s.get('n_men'))} men, {_count(s.get('n_women'))} women, {_count(s.get('pairs'))} pairs"
    else:
        graph = f"{_count(s.get('n'))} vertices" + (f", {_count(s['m'])} edges" if "m" in s else "")
    partitions = s.get("partitions") or _mapping(s, "time_s").get("partitions")
    result = []
    if "cardinality" in s:
        result.append(f"{_count(s['cardinality'])} matched pairs")
    if _is_number(s.get("weight")):
        result.append(f"weight {s['weight']:.6g}")
    if "matched" in s and "n_men" in s:
        result.append(f"{_count(s['matched'])} marriages")
    if _is_number(s.get("modularity")):
        result.append(f"modularity {s['modularity']:.6f}")
    if "n_communities" in s:
        result.append(f"{_count(s['n_communities'])} communities")
    rounds = s.get("rounds") if "rounds" in s else _mapping(s, "time_s").get("rounds")
    counts = _mapping(s, "counts")
    version = _mapping(s, "versions").get("mgmatch")
    return [
        ("input", s.get("input")),
        ("graph", graph),
        ("result", ", ".join(result) or None),
        ("device", s.get("device")),
        ("partitions", partitions),
        ("workers", s.get("workers")),
        ("transport", s.get("transport")),
        ("rounds", rounds),
        ("counts", ", ".join(f"{k.replace('_', ' ')} {_count(v)}" for k, v in counts.items()) or None),
        ("gpu", _mapping(s, "versions").get("gpu")),
        ("mgmatch", version),
    ]


def _mapping(summary: dict, key: str) -> dict:
    """``summary[key]`` when it is a JSON object, else empty (a summary edited by hand, or of
    another version, may hold anything there)."""
    value = summary.get(key)
    return value if isinstance(value, dict) else {}


def _count(value) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numbers(value) -> list | None:
    """``value`` as a list of numbers, or ``None`` when it is not one (a summary is user input)."""
    if not isinstance(value, list) or not all(_is_number(v) for v in value):
        return None
    return value


def _figure(title, x_label, y_label, **kw):
    from bokeh.plotting import figure  # noqa: PLC0415

    fig = figure(title=title, width=_WIDTH, height=_HEIGHT, tools=_TOOLS, x_axis_label=x_label,
                 y_axis_label=y_label, **kw)
    fig.title.text_font_size = "13pt"
    return fig


def _hover(fig, renderers, tooltips):
    from bokeh.models import HoverTool  # noqa: PLC0415

    fig.add_tools(HoverTool(renderers=list(renderers), tooltips=tooltips))


def _source(name: str, data: dict):
    from bokeh.models import ColumnDataSource  # noqa: PLC0415

    return ColumnDataSource(data=data, name=name)


def _messages_chart(s):
    messages = _numbers(s.get("messages_per_round"))
    if messages is None:  # bipartite matching runs on one device, without rounds of messages
        return None, None if s.get("family") == "bipartite" else "No messages per round in this summary."
    if not messages:
        return None, "The run had no rounds."
    if not any(messages):
        return None, "No messages crossed partitions" + (": the run had one partition." if s.get("partitions") == 1
                                                         or _mapping(s, "time_s").get("partitions") == 1 else ".")
    src = _source("messages_per_round", {"round": list(range(1, len(messages) + 1)), "messages": messages})
    fig = _figure("Messages per round", "round", "messages")
    bars = fig.vbar(x="round", top="messages", width=0.8, source=src, color=_PHASE_COLOURS[0])
    fig.y_range.start = 0
    _hover(fig, [bars], [("round", "@round"), ("messages", "@messages{0,0}")])
    return fig, None


def _round_time_chart(s):
    compute = _numbers(s.get("compute_s_per_round"))
    exchange = _numbers(s.get("exchange_s_per_round"))
    idle = _numbers(s.get("idle_s_per_round")) or [0.0] * len(compute or [])
    if not compute or exchange is None or not (len(compute) == len(exchange) == len(idle)):
        return None, "No per-round times in this summary." if s.get("messages_per_round") else None
    ms = 1e3
    src = _source("time_per_round", {
        "round": list(range(1, len(compute) + 1)),
        "compute": [v * ms for v in compute], "exchange": [v * ms for v in exchange], "idle": [v * ms for v in idle],
    })
    fig = _figure("Time per round: compute, exchange, idle", "round", "milliseconds")
    bars = fig.vbar_stack(["compute", "exchange", "idle"], x="round", width=0.8, source=src,
                          color=list(_PHASE_COLOURS), legend_label=["compute", "exchange", "idle"])
    fig.y_range.start = 0
    fig.legend.location = "top_right"
    _hover(fig, bars, [("round", "@round"), ("compute", "@compute{0.000} ms"), ("exchange", "@exchange{0.000} ms"),
                       ("idle", "@idle{0.000} ms")])
    return fig, None


def _matched_chart(s):
    trace = s.get("matched_fraction_per_round")
    if not isinstance(trace, dict):
        return None, None
    rounds, fraction = _numbers(trace.get("round")), _numbers(trace.get("fraction"))
    if not rounds or fraction is None or len(rounds) != len(fraction):
        return None, None
    from bokeh.models import NumeralTickFormatter  # noqa: PLC0415

    src = _source("matched_fraction_per_round", {"round": rounds, "fraction": fraction})
    who = "men" if "n_men" in s else "vertices"
    fig = _figure(f"Share of {who} matched after each round", "round", f"{who} matched", y_range=(0, 1.02))
    fig.line(x="round", y="fraction", source=src, color=_ACCENT, line_width=2)
    dots = fig.scatter(x="round", y="fraction", source=src, color=_ACCENT, size=7)
    fig.yaxis.formatter = NumeralTickFormatter(format="0%")
    _hover(fig, [dots], [("round", "@round"), ("matched", "@fraction{0.0%}")])
    return fig, None


def _levels(s) -> list[dict]:
    levels = s.get("levels")
    return [lv for lv in levels if isinstance(lv, dict)] if isinstance(levels, list) else []


def _modularity_chart(s):
    levels = [lv for lv in _levels(s) if _is_number(lv.get("modularity"))]
    if not levels:
        return None, None
    src = _source("modularity_per_level", {
        "level": [int(lv.get("level", i)) for i, lv in enumerate(levels)],
        "modularity": [lv["modularity"] for lv in levels],
        "communities": [lv.get("n_communities", 0) for lv in levels],
        "sweeps": [lv.get("sweeps", 0) for lv in levels],
    })
    fig = _figure("Modularity per level", "level", "modularity")
    fig.line(x="level", y="modularity", source=src, color=_ACCENT, line_width=2)
    dots = fig.scatter(x="level", y="modularity", source=src, color=_ACCENT, size=9)
    fig.xaxis.ticker.desired_num_ticks = min(len(levels), 10)
    _hover(fig, [dots], [("level", "@level"), ("modularity", "@modularity{0.000000}"),
                         ("communities", "@communities{0,0}"), ("sweeps", "@sweeps")])
    return fig, None


def _level_time_chart(s):
    levels = [lv for lv in _levels(s) if isinstance(lv.get("time_s"), dict)]
    if not levels:
        return None, None
    phases = ("moves", "exchange", "aggregation")
    data = {"level": [str(lv.get("level", i)) for i, lv in enumerate(levels)],
            "messages": [lv.get("messages", 0) for lv in levels]}
    for phase in phases:
        data[phase] = [float(lv["time_s"].get(phase, 0.0)) for lv in levels]
    src = _source("time_per_level", data)
    fig = _figure("Time per level: moves, exchange, aggregation", "level", "seconds", x_range=data["level"])
    bars = fig.vbar_stack(list(phases), x="level", width=0.7, source=src, color=list(_PHASE_COLOURS),
                          legend_label=list(phases))
    fig.y_range.start = 0
    fig.legend.location = "top_right"
    _hover(fig, bars, [("level", "@level"), ("moves", "@moves{0.000} s"), ("exchange", "@exchange{0.000} s"),
                       ("aggregation", "@aggregation{0.000} s"), ("messages", "@messages{0,0}")])
    return fig, None


def _community_chart(s):
    sizes = s.get("community_sizes")
    if not isinstance(sizes, dict):
        return None, ("No community sizes in this summary." if s.get("algorithm") == "louvain" else None)
    lows, highs, counts = (_numbers(sizes.get(k)) for k in ("size_from", "size_to", "communities"))
    if not lows or highs is None or counts is None or not (len(lows) == len(highs) == len(counts)):
        return None, None
    labels = [f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}" for lo, hi in zip(lows, highs)]
    src = _source("community_sizes", {"size": labels, "communities": counts})
    fig = _figure(f"Community sizes (largest: {_count(sizes.get('largest'))} vertices)", "vertices in the community",
                  "communities", x_range=labels)
    bars = fig.vbar(x="size", top="communities", width=0.8, source=src, color=_PHASE_COLOURS[1])
    fig.y_range.start = 0
    fig.xaxis.major_label_orientation = 0.8 if len(labels) > 8 else 0.0
    _hover(fig, [bars], [("size", "@size"), ("communities", "@communities{0,0}")])
    return fig, None


def _load_chart(s):
    load = s.get("partition_load")
    if not isinstance(load, dict) or not _numbers(load.get("vertices")):
        return None, None
    from bokeh.models import FactorRange  # noqa: PLC0415
    from bokeh.transform import factor_cmap  # noqa: PLC0415

    measures = [(key, label) for key, label in (("vertices", "vertices"), ("entries", "stored entries"),
                                                 ("cut_entries", "cut entries"))
                if _numbers(load.get(key)) is not None and len(load[key]) == len(load["vertices"])]
    n_parts = len(load["vertices"])
    factors = [(str(p), label) for p in range(n_parts) for _, label in measures]
    values = [load[key][p] for p in range(n_parts) for key, _ in measures]
    src = _source("partition_load", {"x": factors, "count": values})
    fig = _figure("Load per partition", "partition", "count", x_range=FactorRange(*factors))
    labels = [label for _, label in measures]
    bars = fig.vbar(x="x", top="count", width=0.9, source=src,
                    fill_color=factor_cmap("x", palette=list(_PHASE_COLOURS[:len(labels)]), factors=labels, start=1,
                                           end=2),
                    line_color=None)
    fig.y_range.start = 0
    fig.xaxis.major_label_orientation = 0.9
    fig.xgrid.grid_line_color = None
    _hover(fig, [bars], [("partition", "@x"), ("count", "@count{0,0}")])
    return fig, None


# --------------------------------------------------------------- Dask performance report
#: The title Dask gives its report, and links it makes to the web (a favicon), which an
#: offline browser cannot load.
_DASK_TITLE = "<title>Dask Performance Report</title>"
_WEB_LINK = re.compile(r"<link\b[^>]*\bhref=\"https?://[^\"]*\"[^>]*>\s*", re.IGNORECASE)


@contextlib.contextmanager
def dask_performance_report(path, command: str | None = None):
    """Dask's performance report of the block, written to ``path`` atomically.

    Bokeh's resources are inline (``mode="inline"``; by default Dask's page loads them from a
    CDN and is blank offline); the report's "Calling Code" is ``command`` (the user's command
    line), not the mgmatch code that opened the report; its title names the command too, and
    the favicon link to the web is dropped.
    """
    from distributed import get_client, performance_report  # noqa: PLC0415

    from .io import atomic_path  # noqa: PLC0415

    shown = html.escape(f"$ {command}" if command else "mgmatch (called from Python)")

    class _CommandReport(performance_report):
        def __exit__(self, exc_type, exc_value, traceback):  # the code shown: the command, not our frame
            get_client().sync(self.__aexit__, exc_type, exc_value, traceback, code=shown)

    with atomic_path(path) as partial:
        with _CommandReport(filename=str(partial), mode="inline"):
            yield
        page = partial.read_text(encoding="utf-8")
        title = html.escape(command) if command else "mgmatch"
        page = page.replace(_DASK_TITLE, f"<title>{title}: Dask performance report</title>", 1)
        partial.write_text(_WEB_LINK.sub("", page), encoding="utf-8")
