"""`make bench-report`: docs/benchmarks.md's result tables and docs/img/'s plots, from bench/results/.

    python -m bench.report [--results bench/results] [--doc docs/benchmarks.md] [--img docs/img]

For each benchmark, the newest result file of its newest series (or of each series
``SERIES`` names: variants measured side by side) becomes a table block between
``<!-- results:<benchmark>:begin -->`` and ``<!-- results:<benchmark>:end -->`` on
the page that holds those markers (the doc, or a page beside it named like
docs/benchmarks-rounds.md), each under a one-line header (run time, machine,
versions, commit) that links to its file; a file's ``notes`` and the other series
stay in the files. The prose around the blocks is left alone; a benchmark without
markers gets a section at the end of the doc. Three plots are drawn from the same files:
hudi-cdc's rate against the anchors (``make bench``), the freshness distribution
(``make bench-freshness``) and the cost per event against the backlog
(``make bench-scale``). The output depends on the files only, so running it twice
changes nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.results import RESULTS, load_all

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "benchmarks.md"
IMG = REPO / "docs" / "img"


# The page writes the table types short (its introduction says so).
TYPES = {"COPY_ON_WRITE": "COW", "MERGE_ON_READ": "MOR", "cow": "COW", "mor": "MOR"}


@dataclass(frozen=True)
class Shown:
    """A table of a result as the page shows it: turned (a column per row), some columns left to the file."""

    table: str
    turned: bool = False
    hide: tuple[str, ...] = ()


# Rows of the pipeline's turned table left to the file: parameters the page's prose gives, and constants.
PIPELINE_HIDE = ("turn", "hot_share_pct", "cold_every_s", "tables_p99_within_15s", "tables_without_samples",
                 "idle_rounds", "idle_rounds_per_table_s", "load_5m")  # fmt: skip

# Columns of a commit's table left to the file: the table type (the series names it), the spread, constants and
# the steps that stay near zero.
COMMIT_COST_HIDE = ("table_type", "min_s", "max_s", "writes", "stages", "markers_s", "clean_archive_s", "other_s")

# Columns of a small round's table left to the file: the spread, the steps of a few milliseconds, and the JVM
# CPU of the compacting rounds.
SMALL_ROUND_HIDE = ("min_s", "max_s", "open_s", "read_s", "tombstones_s", "scheduling_cpu_s", "compact_cpu_s")

# The tables each benchmark shows on the page (none: the benchmark is not on the page); the others, and the
# hidden columns, stay in the result files.
SHOW: dict[str, list[Shown]] = {
    "bench": [Shown("runs", hide=("note",))],
    "scale": [Shown("runs", hide=("keys", "rounds_planned", "note"))],
    "freshness": [Shown("latency", hide=("compaction", "seconds"))],
    "pipeline": [Shown("runs", turned=True, hide=PIPELINE_HIDE)],
    "rounds": [Shown("rounds"), Shown("outcome")],
    "oneshot": [
        Shown("oneshot", hide=("min_s", "max_s", "python_s", "cli_to_session_s", "read_s", "tombstones_s", "other_s"))
    ],
    "commit-cost": [Shown("commits", hide=COMMIT_COST_HIDE)],
    "java-client": [Shown("rounds", hide=("min_s", "max_s", "writes", "build_s"))],
    "small-round": [Shown("rounds", hide=SMALL_ROUND_HIDE)],
    "small-round-wheel": [Shown("rounds", hide=SMALL_ROUND_HIDE)],
    "history-cost": [Shown("rounds", hide=("min_s", "max_s", "tombstones_s", "compacting_s", "build_s"))],
    "shape-cost": [Shown("runs")],
    "history-size": [Shown("runs")],
    "catalog-sync": [Shown("costs", hide=("n", "note"))],
    "index": [Shown("upserts", hide=("round_min_s", "data_files"))],
    "formats": [Shown("runs", hide=("note",))],
    "toast": [Shown("lookup")],
    "pick": [Shown("pick")],
    "small-plan": [Shown("rounds")],
    "verify": [Shown("verify", turned=True)],
    "first-load": [Shown("load", turned=True)],
    "overlap": [],  # an experiment on a design hudi-cdc does not have; tuning.md says what it found
    "compaction-cost": [],  # inline against async compaction; tuning.md#compaction says what it found
    "bucket-growth": [],  # a table rewritten into more buckets; tuning.md#buckets-that-grow says what it found
    # s3a against the local disk, reduced sizes on a loaded machine: object-storage.md#s3a-against-the-local-disk
    "object-storage-small-round": [],
    "object-storage-oneshot": [],
    "jar-placement": [],  # where a local session puts the jars: tuning.md#local-disk-and-the-driver-jvm
}


# The series a benchmark shows, in this order, when more than its newest: variants measured side by side that
# the page compares. A benchmark not named here shows its newest series only; an older design, a reduced or a
# reverted run stays in bench/results/, and the block names the series it leaves out.
SERIES: dict[str, tuple[str, ...]] = {
    "scale": ("COPY_ON_WRITE", "MERGE_ON_READ"),
    "pipeline": ("pipeline", "skewed", "cuts"),
    "commit-cost": ("1,000,000 rows, COW", "1,000,000 rows, MOR"),
    "java-client": ("bucket index, metadata table off, direct markers", "bucket index, metadata table on"),
    "small-plan": (
        "100,000 rows, 1,000 changes a round, timestamp/date/decimal/time columns",
        "100,000 rows, 1,000 changes a round, from Kafka, timestamp/date/decimal/time columns",
    ),
    "small-round": (
        "1,000,000 rows, 1,000 changes a round, 0% of updates placeholders, 0% deletes",
        "1,000,000 rows, 1,000 changes a round, 50% of updates placeholders, 0% deletes",
    ),
    "index": ("1,000,000 rows, uniform updates", "10,000,000 rows, recent updates"),
    "toast": ("COPY_ON_WRITE", "MERGE_ON_READ"),
    "repair": ("repair", "repair-mariadb"),
}


def _begin(name: str) -> str:
    return f"<!-- results:{name}:begin (generated by make bench-report) -->"


def _end(name: str) -> str:
    return f"<!-- results:{name}:end -->"


def latest(results: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Per benchmark, the newest result of each series (series in name order)."""
    newest: dict[tuple[str, str], Mapping[str, Any]] = {}
    for r in results:
        key = (r["benchmark"], r["series"])
        if key not in newest or _when(r) >= _when(newest[key]):
            newest[key] = r
    out: dict[str, list[Mapping[str, Any]]] = {}
    for (benchmark, _), r in sorted(newest.items()):
        out.setdefault(benchmark, []).append(r)
    return out


def _when(result: Mapping[str, Any]) -> tuple[str, str]:
    return result["environment"]["time_utc"], Path(str(result.get("path", ""))).name


def current(name: str, newest: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Of a benchmark's newest result per series, those the page shows: ``SERIES``'s in its order, else the newest."""
    by_series = {r["series"]: r for r in newest}
    shown = [by_series[s] for s in SERIES.get(name, ()) if s in by_series]
    return shown or ([max(newest, key=_when)] if newest else [])


def cell(value: Any, unit: str | None = None) -> str:
    if value is None:
        return "-"
    if unit == "x" and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.2f}x"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value.is_integer() and abs(value) >= 100:
            return f"{int(value):,}"
        return f"{value:,}"
    if isinstance(value, Mapping):
        return ", ".join(f"`{k}={v}`" for k, v in value.items()) or "-"
    return TYPES.get(str(value), str(value)).replace("|", "\\|").replace("\n", " ")


def _header(column: Mapping[str, Any]) -> str:
    unit = column.get("unit")
    return f"{column['title']} ({unit})" if unit and unit not in ("#", "x", column["title"]) else column["title"]


def render_table(table: Mapping[str, Any], turned: bool = False, hide: Sequence[str] = ()) -> str:
    """A markdown table; a column no row has a value for is left out (an older run that did not measure it).

    Turned, the first column's values head the columns and every other column is a row.
    """
    rows = table["rows"]
    columns = [c for c in table["columns"] if c["key"] not in hide and any(r.get(c["key"]) is not None for r in rows)]
    lines = [f"{table['title']}:", ""] if table.get("title") else []
    if turned:
        first, rest = columns[0], columns[1:]
        lines.append(f"| {first['title']} | " + " | ".join(cell(r.get(first["key"])) for r in rows) + " |")
        lines.append("| --- |" + " ---: |" * len(rows))
        for c in rest:
            lines.append(f"| {_header(c)} | " + " | ".join(cell(r.get(c["key"]), c.get("unit")) for r in rows) + " |")
    else:
        lines.append("| " + " | ".join(_header(c) for c in columns) + " |")
        lines.append("| " + " | ".join("---:" if c.get("unit") else "---" for c in columns) + " |")
        for r in rows:
            lines.append("| " + " | ".join(cell(r.get(c["key"]), c.get("unit")) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def _cpu(machine: Mapping[str, Any]) -> str | None:
    """The CPU model without trademark signs: "Intel(R) Xeon(R) Processor" -> "Intel Xeon"."""
    return re.sub(r"\((R|TM)\)| (CPU|Processor)\b", "", machine.get("cpu") or "").strip() or None


def caption(result: Mapping[str, Any], earlier: int = 0, relative_to: Path = DOC.parent) -> str:
    env = result["environment"]
    m, v, g = env["machine"], env["versions"], env["git"]
    when = env["time_utc"].replace("T", " ").replace("Z", " UTC")
    box = ", ".join(
        x for x in (f"{m['cores']} cores" if m.get("cores") else None, _cpu(m),
                    f"{m['memory_gib']} GiB" if m.get("memory_gib") else None,
                    "load average {} / {} / {} (1/5/15 min) at the end".format(*m["load_average"])
                    if m.get("load_average") else None) if x
    )  # fmt: skip
    names = {"python": "Python", "java": "Java", "pyspark": "PySpark", "hudi": "Hudi", "hudi_cdc": "hudi-cdc"}
    stack = ", ".join(f"{names.get(k, k)} {x}" for k, x in v.items() if x)
    commit = f"commit {g['commit']}" if g.get("commit") else "commit not recorded"
    if g.get("dirty"):
        commit += " + uncommitted changes"
    path = Path(str(result.get("path", "")))
    data = "data and notes" if result.get("notes") else "data"
    link = f"[{data}]({os.path.relpath(path, relative_to)})" if path.name else ""
    name = TYPES.get(result["series"], result["series"])
    series = f"**{name}**: " if result["series"] != result["benchmark"] else ""
    text = series + " · ".join(
        p for p in (f"{'run' if series else 'Run'} of {when.strip()}", box, stack, commit, link) if p
    )
    if result.get("imported_from"):
        text += " (imported)"
    if earlier:
        text += f"; {earlier} earlier run{'s' if earlier > 1 else ''} in bench/results/{result['benchmark']}/"
    return text + ".\n"


def render_benchmark(name: str, newest: Sequence[Mapping[str, Any]], counts: Mapping[tuple[str, str], int],
                     relative_to: Path = DOC.parent) -> str:  # fmt: skip
    """The block of a benchmark: each shown result's header and tables, then the series left to the files."""
    blocks = []
    shown_results = current(name, newest)
    for result in shown_results:
        earlier = counts.get((name, result["series"]), 1) - 1
        parts = [caption(result, earlier, relative_to)]
        for shown in SHOW.get(name) or [Shown(t) for t in result["tables"]]:
            table = result["tables"].get(shown.table)
            if table and table["rows"]:
                parts.append(render_table(table, shown.turned, shown.hide))
        blocks.append("\n".join(parts))
    left = sorted({r["series"] for r in newest} - {r["series"] for r in shown_results})
    if left:
        names = ", ".join(f"`{TYPES.get(s, s)}`" for s in left)
        blocks.append(f"Other series in bench/results/{name}/, not shown here: {names}.\n")
    return "\n".join(blocks)


def update_doc(doc: Path, blocks: Mapping[str, str]) -> None:
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    for name, block in blocks.items():
        begin, end = _begin(name), _end(name)
        pattern = re.compile(rf"<!-- results:{re.escape(name)}:begin[^>]*-->.*?{re.escape(end)}", re.S)
        replacement = f"{begin}\n{block}{end}"
        if pattern.search(text):
            text = pattern.sub(lambda _, r=replacement: r, text, count=1)
        else:
            text = text.rstrip() + f"\n\n## {name}\n\n{replacement}\n"
    doc.write_text(text)


# Plots: one function per picture, each from the newest results; Agg, small, no metadata that changes.


def _figure(width: float = 7.0, height: float = 3.4) -> tuple[Any, Any]:
    try:
        import matplotlib
    except ImportError as e:
        raise SystemExit("bench/report.py draws with matplotlib: pip install -e '.[bench]'") from e

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8, "axes.spines.top": False, "axes.spines.right": False})
    return plt.figure(figsize=(width, height), dpi=100), plt


def _save(fig: Any, plt: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


def _source(result: Mapping[str, Any]) -> str:
    env = result["environment"]
    m = env["machine"]
    box = ", ".join(str(x) for x in (f"{m['cores']} cores" if m.get("cores") else None, _cpu(m)) if x)
    return f"{env['time_utc'][:10]}, {box}, commit {env['git'].get('commit') or 'not recorded'}"


def plot_ratios(result: Mapping[str, Any], path: Path) -> Path:
    """hudi-cdc's events/s over each anchor's, per table type and settings (``make bench``)."""
    rows = [r for r in result["tables"]["ratios"]["rows"] if not str(r["anchor"]).endswith("limit")]
    groups = list(
        dict.fromkeys(f"{TYPES.get(r['table_type'], r['table_type'])}, {r['settings']} settings" for r in rows)
    )
    anchors = list(dict.fromkeys(r["anchor"] for r in rows))
    fig, plt = _figure(height=1.0 + 0.45 * len(groups) * max(1, len(anchors)) / 1.5)
    ax = fig.add_subplot()
    height = 0.8 / max(1, len(anchors))
    for i, anchor in enumerate(anchors):
        ys, xs = [], []
        for r in rows:
            if r["anchor"] == anchor:
                ys.append(groups.index(f"{TYPES.get(r['table_type'], r['table_type'])}, {r['settings']} settings"))
                xs.append(r["ratio"])
        pos = [y + (i - (len(anchors) - 1) / 2) * height for y in ys]
        bars = ax.barh(pos, xs, height=height * 0.9, label=f"against {anchor}", color=f"C{i}")
        ax.bar_label(bars, labels=[f"{x:.2f}x" for x in xs], padding=2)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(groups)), groups)
    ax.invert_yaxis()
    ax.set_xlabel("hudi-cdc events/s ÷ the anchor's (1.0 = as fast)")
    ax.set_xlim(0, max([r["ratio"] for r in rows] + [1.0]) * 1.15)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(anchors), frameon=False)
    fig.suptitle(f"make bench: {result['parameters'].get('events', 0):,} events ({_source(result)})", fontsize=8)
    return _save(fig, plt, path)


def plot_freshness(result: Mapping[str, Any], path: Path) -> Path:
    """Per run: p50, p99 and max of the commit-to-visible latency, and where the slowest 1% waited."""
    latency = result["tables"]["latency"]["rows"]
    profile = {_fresh_key(r): r for r in result["tables"].get("profile", {}).get("rows", [])}
    labels = [_fresh_label(r) for r in latency]
    fig, plt = _figure(width=7.5, height=0.8 + 0.32 * len(latency))
    left, right = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    ys = range(len(latency))
    for y, r in zip(ys, latency, strict=True):
        points = [r.get(k) for k in ("p50_s", "p99_s", "max_s") if r.get(k) is not None]
        if points:
            left.plot([min(points), max(points)], [y, y], color="grey", linewidth=1)
    for key, marker, name in (("p50_s", "o", "p50"), ("p99_s", "D", "p99"), ("max_s", "|", "max")):
        xs = [(r.get(key), y) for y, r in zip(ys, latency, strict=True) if r.get(key) is not None]
        left.scatter([x for x, _ in xs], [y for _, y in xs], marker=marker, label=name, zorder=3, s=18)
    left.set_yticks(list(ys), labels)
    left.invert_yaxis()
    left.set_xlabel("Postgres commit -> visible in a snapshot query (s)")
    left.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
    left.grid(axis="x", linewidth=0.3)
    parts = (("tail_capture_s", "capture"), ("tail_queue_s", "queue"), ("tail_round_s", "round"))
    start = [0.0] * len(latency)
    for i, (key, name) in enumerate(parts):
        widths = [(profile.get(_fresh_key(r)) or {}).get(key) or 0.0 for r in latency]
        right.barh(list(ys), widths, left=start, label=name, color=f"C{i + 3}", height=0.7)
        start = [a + b for a, b in zip(start, widths, strict=True)]
    right.set_xlabel("slowest 1%: where it waited (s)")
    right.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
    fig.suptitle(f"make bench-freshness ({_source(result)})", fontsize=8)
    return _save(fig, plt, path)


def _fresh_key(r: Mapping[str, Any]) -> tuple:
    return r.get("settings"), r.get("table_type"), r.get("compaction"), r.get("rate")


def _fresh_label(r: Mapping[str, Any]) -> str:
    return f"{r.get('settings')}, {TYPES.get(r['table_type'], r['table_type'])}, {r['rate']:,}/s"


def plot_scale(results: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """Cost per event (µs) against the backlog, per table type, bounded rounds and one batch (``make bench-scale``)."""
    fig, plt = _figure(width=6.0, height=3.2)
    ax = fig.add_subplot()
    for i, result in enumerate(results):
        rows = result["tables"]["runs"]["rows"]
        for style, bounded in (("o-", True), ("s--", False)):
            points = sorted((r["events"], r["us_per_event"]) for r in rows
                            if bool(r.get("source_limit")) == bounded and r.get("us_per_event"))  # fmt: skip
            if not points:
                continue
            label = f"{TYPES.get(result['series'], result['series'])}, " + (
                "rounds of --source-limit" if bounded else "one batch"
            )
            ax.plot([x for x, _ in points], [y for _, y in points], style, color=f"C{i}", label=label)
            for x, y in points:
                ax.annotate(f"{y:g}", (x, y), textcoords="offset points", xytext=(4, 4))
    backlogs = sorted({r["events"] for result in results for r in result["tables"]["runs"]["rows"]})
    ax.set_xscale("log")
    ax.set_xticks(backlogs, [f"{b / 1e6:g}M" if b >= 1e6 else f"{b / 1e3:g}k" for b in backlogs])
    ax.minorticks_off()
    if backlogs:
        ax.set_xlim(backlogs[0] / 1.6, backlogs[-1] * 1.6)
    ax.set_xlabel("backlog (events)")
    ax.set_ylabel("wall time per event (µs)")
    ax.set_ylim(bottom=0)
    ax.legend(frameon=False)
    sources = "\n".join(f"{TYPES.get(r['series'], r['series'])}: {_source(r)}" for r in results)
    fig.suptitle(f"make bench-scale\n{sources}", fontsize=7)
    return _save(fig, plt, path)


PLOTS: dict[str, tuple[str, Callable[[Sequence[Mapping[str, Any]], Path], Path]]] = {
    "bench": ("bench-ratios.png", lambda rs, p: plot_ratios(rs[0], p)),
    "freshness": ("freshness.png", lambda rs, p: plot_freshness(rs[0], p)),
    "scale": ("scale-cost-per-event.png", plot_scale),
}


def _page_of(name: str, pages: Mapping[Path, str]) -> Path:
    """The page (of ``pages``: path -> text, the main page first) that holds ``name``'s block; the main page for
    a block no page has yet."""
    marker = f"<!-- results:{name}:begin"
    return next((page for page, text in pages.items() if marker in text), next(iter(pages)))


def render(results_dir: Path = RESULTS, doc: Path = DOC, img: Path = IMG) -> list[Path]:
    """Rewrite the result blocks of the doc and its sibling pages (``benchmarks-*.md``: a block stays on the page
    that holds it) and draw the plots; return the files written."""
    results = load_all(results_dir)
    counts: dict[tuple[str, str], int] = {}
    for r in results:
        counts[(r["benchmark"], r["series"])] = counts.get((r["benchmark"], r["series"]), 0) + 1
    newest = latest(results)
    shown = {name: rs for name, rs in newest.items() if SHOW.get(name, True)}
    pages = {
        page: page.read_text() if page.exists() else "" for page in [doc, *sorted(doc.parent.glob(f"{doc.stem}-*.md"))]
    }
    by_page: dict[Path, dict[str, str]] = {page: {} for page in pages}
    for name, rs in shown.items():
        by_page[_page_of(name, pages)][name] = render_benchmark(name, rs, counts, doc.parent)
    for page, blocks in by_page.items():
        update_doc(page, blocks)
    written = list(pages)
    for name, (file, draw) in PLOTS.items():
        if newest.get(name):
            written.append(draw(current(name, newest[name]), img / file))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--img", type=Path, default=IMG)
    args = parser.parse_args(argv)
    for path in render(args.results, args.doc, args.img):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
