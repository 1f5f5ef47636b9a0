"""Benchmark results as data: the writer's files, the page and plots made from them, and the stored history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import report, results

REPO = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"
COLUMNS = [results.column("run"), results.column("events", "backlog", "events"),
           results.column("us_per_event", "cost", "µs/event"), results.column("source_limit", unit="messages")]  # fmt: skip


def _result(directory: Path, benchmark: str, time_utc: str, tables: dict, series: str | None = None) -> Path:
    """A result file as an earlier run would have left it (the environment given, not measured)."""
    data = {
        "schema": results.SCHEMA, "benchmark": benchmark, "series": series or benchmark, "parameters": {"events": 10},
        "tables": tables, "notes": None, "imported_from": None,
        "environment": {
            "machine": {"cores": 2, "memory_gib": 24, "cpu": "Intel(R) Xeon(R) Processor", "os": "Linux"},
            "versions": {"python": "3.11.7", "java": "17.0.15", "pyspark": "3.5.7", "hudi": "1.2.0", "hudi_cdc": "0.1"},
            "git": {"commit": "abc1234", "dirty": False}, "time_utc": time_utc,
        },
    }  # fmt: skip
    assert results.check(data) == []
    path = directory / benchmark / results.file_name(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_the_writer_writes_one_whole_file_per_run(tmp_path: Path) -> None:
    table = results.table(COLUMNS, [{"run": "bounded", "events": 100, "us_per_event": 2.5, "extra": "dropped"}])
    path = results.write("scale", parameters={"source_limit": 50}, tables={"runs": table}, series="COPY_ON_WRITE",
                         directory=tmp_path, started_utc="2026-11-27T10:00:00Z")  # fmt: skip
    again = results.write("scale", parameters={}, tables={"runs": table}, directory=tmp_path,
                          started_utc="2026-11-27T10:00:00Z")  # fmt: skip

    data = json.loads(path.read_text())
    assert path.parent == tmp_path / "scale" and path.name.startswith("20261127T100000Z-")
    assert again != path and again.exists()  # the same second and commit: a second file, not an overwrite
    assert results.check(data) == []
    assert data["benchmark"] == "scale" and data["series"] == "COPY_ON_WRITE"
    assert data["parameters"] == {"source_limit": 50}
    # Every column has a value in every row (None when not measured); keys of no column are left out.
    assert data["tables"]["runs"]["rows"] == [
        {"run": "bounded", "events": 100, "us_per_event": 2.5, "source_limit": None}
    ]
    assert data["tables"]["runs"]["columns"][2] == {"key": "us_per_event", "title": "cost", "unit": "µs/event"}
    env = data["environment"]
    assert env["time_utc"] == "2026-11-27T10:00:00Z"
    assert set(env["machine"]) == {*results.MACHINE, "load_average"} and env["machine"]["cores"] >= 1
    assert len(env["machine"]["load_average"]) == 3  # the 1, 5 and 15 min load when written: a shared machine
    assert set(env["versions"]) == set(results.VERSIONS) and env["versions"]["hudi"] == "1.2.0"
    assert set(env["git"]) == {"commit", "dirty"}


def test_the_writer_refuses_a_result_without_numbers(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no tables"):
        results.write("scale", parameters={}, tables={}, directory=tmp_path)
    assert not (tmp_path / "scale").exists()


def test_the_report_renders_the_newest_run_of_each_series_and_draws_the_plots(tmp_path: Path) -> None:
    data, img, doc = tmp_path / "results", tmp_path / "img", tmp_path / "docs" / "benchmarks.md"
    doc.parent.mkdir()
    doc.write_text(
        "# Benchmarks\n\nProse stays.\n\n<!-- results:scale:begin (old) -->\nold table\n<!-- results:scale:end -->\n\nMore prose.\n"
    )
    runs = {"runs": results.table(COLUMNS, [
        {"run": "bounded", "events": 100_000, "us_per_event": 261.4, "source_limit": 500_000},
        {"run": "bounded", "events": 1_000_000, "us_per_event": 79.6, "source_limit": 500_000},
        {"run": "one batch", "events": 1_000_000, "us_per_event": 26.4, "source_limit": None},
    ])}  # fmt: skip
    older = {"runs": results.table(COLUMNS, [{"run": "bounded", "events": 5, "us_per_event": 999.0}])}
    _result(data, "scale", "2026-11-20T10:00Z", older, series="COPY_ON_WRITE")
    _result(data, "scale", "2026-11-21T10:00Z", runs, series="COPY_ON_WRITE")
    _result(data, "scale", "2026-11-19", runs, series="MERGE_ON_READ")
    ratios = [{"anchor": a, "table_type": t, "settings": "same", "ratio": r}
              for a, t, r in (("HoodieStreamer 0.14.0", "COPY_ON_WRITE", 1.5), ("decode-only limit", "COPY_ON_WRITE", 0.37))]  # fmt: skip
    _result(data, "bench", "2026-11-27T00:49Z", {"ratios": results.table(
        [results.column("anchor"), results.column("table_type"), results.column("settings"),
         results.column("ratio", unit="x")], ratios)})  # fmt: skip
    latency = [{"settings": "defaults", "table_type": "MERGE_ON_READ", "rate": 2000, "p50_s": 5.0, "p99_s": 10.5,
                "max_s": 11.0}]  # fmt: skip
    profile = [{"settings": "defaults", "table_type": "MERGE_ON_READ", "rate": 2000, "tail_capture_s": 0.6,
                "tail_queue_s": 7.0, "tail_round_s": 3.4}]  # fmt: skip
    _result(data, "freshness", "2026-11-26T17:38Z", {
        "latency": results.table([results.column(k) for k in latency[0]], latency),
        "profile": results.table([results.column(k) for k in profile[0]], profile),
    })  # fmt: skip

    written = report.render(data, doc, img)

    text = doc.read_text()
    assert "Prose stays." in text and "More prose." in text and "old table" not in text
    block = text.split("<!-- results:scale:begin", 1)[1].split("<!-- results:scale:end -->", 1)[0]
    assert "| run | backlog (events) | cost (µs/event) | source limit (messages) |" in block
    assert "| bounded | 100,000 | 261.4 | 500,000 |" in block and "| one batch | 1,000,000 | 26.4 | - |" in block
    assert "999" not in block  # the older run of the series is history, not the current table
    assert "**COW**: run of 2026-11-21 10:00 UTC · 2 cores, Intel Xeon, 24 GiB" in block
    assert "commit abc1234" in block and "1 earlier run in bench/results/scale/" in block
    assert "**MOR**: run of 2026-11-19 ·" in block
    assert "](../results/scale/20261121T1000Z-abc1234.json)" in block  # the data link, relative to the doc
    assert "## bench" in text and "## freshness" in text  # benchmarks without a block yet get a section
    for name in ("bench-ratios.png", "freshness.png", "scale-cost-per-event.png"):
        png = img / name
        assert png in written and png.read_bytes().startswith(PNG) and png.stat().st_size < 100_000

    before = {p: p.read_bytes() for p in [doc, *img.iterdir()]}
    report.render(data, doc, img)
    assert {p: p.read_bytes() for p in [doc, *img.iterdir()]} == before  # the same files, the same output


def test_the_report_shows_a_benchmarks_newest_series_and_leaves_notes_and_older_series_to_the_files(
    tmp_path: Path,
) -> None:
    data, img, doc = tmp_path / "results", tmp_path / "img", tmp_path / "docs" / "benchmarks.md"
    doc.parent.mkdir()
    doc.write_text("# Benchmarks\n\n<!-- results:rounds:begin -->\n<!-- results:rounds:end -->\n")
    assert "rounds" not in report.SERIES  # a benchmark that shows its newest series only
    old = {"rounds": results.table(COLUMNS, [{"run": "old design", "events": 7, "us_per_event": 111.0}])}
    new = {"rounds": results.table(COLUMNS, [{"run": "current", "events": 8, "us_per_event": 2.5}])}
    _result(data, "rounds", "2026-11-20T10:00Z", old, series="before the fix")
    path = _result(data, "rounds", "2026-11-21T10:00Z", new, series="after the fix")
    stored = json.loads(path.read_text())
    path.write_text(json.dumps({**stored, "notes": "A long history paragraph that belongs in the file."}))

    report.render(data, doc, img)

    block = doc.read_text().split("<!-- results:rounds:begin", 1)[1].split("<!-- results:rounds:end -->", 1)[0]
    assert "| current | 8 | 2.5 |" in block and "old design" not in block
    assert "**after the fix**: run of 2026-11-21 10:00 UTC" in block
    assert f"[data and notes](../results/rounds/{path.name})" in block
    assert "history paragraph" not in block  # the notes stay in the file
    assert "Other series in bench/results/rounds/, not shown here: `before the fix`." in block


def test_a_block_on_a_sibling_page_is_rewritten_there_and_a_new_one_goes_to_the_main_page(tmp_path: Path) -> None:
    data, img, doc = tmp_path / "results", tmp_path / "img", tmp_path / "docs" / "benchmarks.md"
    doc.parent.mkdir()
    doc.write_text("# Benchmarks\n")
    sibling = doc.parent / "benchmarks-rounds.md"
    sibling.write_text("# Rounds\n\n<!-- results:rounds:begin -->\nold table\n<!-- results:rounds:end -->\n")
    row = {"rounds": results.table(COLUMNS, [{"run": "current", "events": 8, "us_per_event": 2.5}])}
    path = _result(data, "rounds", "2026-11-21T10:00Z", row)
    _result(data, "pick", "2026-11-21T10:00Z", row)

    written = report.render(data, doc, img)

    assert doc in written and sibling in written
    rounds = sibling.read_text()
    assert "| current | 8 | 2.5 |" in rounds and "old table" not in rounds
    assert f"[data](../results/rounds/{path.name})" in rounds  # links from the sibling, in the same folder
    assert "results:rounds:begin" not in doc.read_text()
    assert "## pick" in doc.read_text() and "results:pick:begin" not in rounds


@pytest.mark.parametrize(
    "path", sorted((REPO / "bench" / "results").glob("*/*.json")), ids=lambda p: p.parent.name + "/" + p.name
)
def test_every_stored_result_is_whole(path: Path) -> None:
    data = json.loads(path.read_text())
    assert results.check(data) == [], path
    assert path.parent.name == data["benchmark"]
    assert path.name.startswith(results.file_name(data).removesuffix(".json"))
    for table in data["tables"].values():
        assert table["rows"], f"{path}: a table without rows"
        for column in table["columns"]:
            assert set(column) == {"key", "title", "unit"}
    if data.get("imported_from"):
        assert data["imported_from"].startswith("docs/benchmarks.md@")


def test_the_history_is_not_empty_and_the_page_shows_every_benchmark_of_it() -> None:
    stored = results.load_all()
    assert {r["benchmark"] for r in stored} >= {"bench", "scale", "freshness", "pipeline", "rounds", "commit-cost",
                                                "index", "formats", "toast", "verify", "first-load"}  # fmt: skip
    pages = [(REPO / "docs" / "benchmarks.md").read_text()]
    pages += [p.read_text() for p in sorted((REPO / "docs").glob("benchmarks-*.md"))]
    for name in {r["benchmark"] for r in stored}:
        holding = sum(f"<!-- results:{name}:begin" in page for page in pages)
        assert holding == (1 if report.SHOW.get(name, True) else 0), name  # shown on one page, or on none


def _whole(tables: dict) -> None:
    data = {"schema": 1, "benchmark": "b", "series": "b", "parameters": {}, "tables": tables,
            "environment": {"machine": dict.fromkeys(results.MACHINE), "versions": dict.fromkeys(results.VERSIONS),
                            "git": {"commit": None, "dirty": None}, "time_utc": "2026-11-27"}}  # fmt: skip
    assert results.check(data) == []
    json.dumps(data)


def test_each_benchmark_turns_its_own_numbers_into_tables() -> None:
    """The conversion each entry point runs at the end, on numbers shaped as its run makes them (no stack)."""
    from bench import commit_cost, formats, freshness, index_cost, rounds, run, scale

    runs = [{"tool": t, "table_type": "COPY_ON_WRITE", "settings": "same", "seconds": s, "peak_rss_mib": 3000.4,
             "rows_ok": t == "hudi-cdc", "note": ""} for t, s in (("hudi-cdc", 40.0), (run.ANCHOR, 48.0))]  # fmt: skip
    report_ = {"events": 1000, "final_rows": 99, "runs": runs, "parquet_write_s": 1.0,
               "decode": {"spark_from_avro": {"events_per_s": 100, "seconds": 10.0},
                          "python_fastavro_count": {"events_per_s": 500, "seconds": 2.0}}}  # fmt: skip
    tables = run.result_tables(report_)
    _whole(tables)
    assert {(r["anchor"], r["ratio"]) for r in tables["ratios"]["rows"]} == {
        (run.ANCHOR, 1.2), (run.DECODE_LIMIT, 0.25), (run.PARQUET_LIMIT, 0.03)}  # fmt: skip

    bounded = {"label": "bounded", "events": 10, "keys": 1, "messages": 11, "source_limit": 5, "rounds_planned": 2,
               "rounds": [{"events": 5, "seconds": 1.0, "events_per_s": 5, "table_rows_after": 1}], "seconds": 2.0,
               "events_per_s": 5, "us_per_event": 2e5, "peak_rss_mib": 100, "rows_ok": True, "note": ""}  # fmt: skip
    _whole(scale.result_tables([bounded, {**bounded, "label": "unbounded", "source_limit": None}]))

    profile = {"capture_p50_s": 0.5, "tail_queue_s": 1.0}
    fresh = [{"settings": "defaults", "table_type": t, "compaction": "inline", "rate": 2000, "seconds": 90,
              "transactions": 9, "not_visible": 0, "p50_s": 1.0, "p90_s": 2.0, "p99_s": 3.0, "max_s": 4.0,
              "load_behind_s": 0.0, "commits": 3, "profile": profile} for t in ("mor", "cow")]  # fmt: skip
    tables = freshness.result_tables(fresh)
    _whole(tables)
    assert [r["compaction"] for r in tables["latency"]["rows"]] == ["inline", None]

    measured = {"table_type": "cow", "keys": 5, "rows": 9, "repeats": 2, "continuous": {"1": [4.0, 5.0], "100": [],
                "10000": [6.0]}, "idle": [0.1], "split": {"1": 0, "100": 2, "10000": 0},
                "one_shot": {"nothing new": [(10.0, 6.0)], "1 message": []}, "failed": [], "correct": True}  # fmt: skip
    _whole(rounds.result_tables([measured]))

    steps = dict.fromkeys(commit_cost.STEP_NAMES, 0.1)
    writes = [{"round": n, "pattern": p, "seconds": 1.0 + n, "jobs": 9, "stages": 17, "steps": steps,
               "compacted": n == 3} for n in (1, 2, 3) for p in commit_cost.PATTERNS]  # fmt: skip
    tables = commit_cost.result_tables({"MERGE_ON_READ": {
        name: {"build": 9.0, "first": "bulk_insert", "writes": writes, "files": 2, "bytes": 2**21}
        for name in commit_cost.default_variants(4)}})  # fmt: skip
    _whole(tables)
    assert {(r["median_s"], r["compaction_write_s"]) for r in tables["commits"]["rows"]} == {(3.0, 4.0)}
    _whole(index_cost.result_tables({"MERGE_ON_READ": {"bloom": {"build": 5.0, "first": "bulk_insert",
                                                                 "rounds": [9.0, 1.0, 2.0], "files": 3, "bytes": 2**21}}}))  # fmt: skip
    _whole({"runs": results.table(formats.COLUMNS, formats.result_rows(
        [{"format": f, "table_type": "COPY_ON_WRITE", "seconds": s, "events_per_s": 10.0, "peak_rss_mib": 1.0,
          "topic_mib": 1.0, "rows_ok": True, "note": ""} for f, s in (("avro", 10.0), ("json-embedded", 15.0))]))})  # fmt: skip


def test_the_caption_says_how_loaded_the_machine_was(tmp_path: Path) -> None:
    path = _result(tmp_path, "shape-cost", "2026-11-28T06:00Z", {"runs": results.table(COLUMNS, [{"run": "x"}])})
    data = results.load(path)
    assert "load average" not in report.caption(data, relative_to=tmp_path)  # an older file: none recorded
    data["environment"]["machine"]["load_average"] = [12.5, 9.1, 4.0]
    assert "24 GiB, load average 12.5 / 9.1 / 4.0 (1/5/15 min) at the end ·" in report.caption(
        data, relative_to=tmp_path
    )


def test_a_pipeline_variant_puts_run_settings_in_run_and_the_rest_in_defaults(tmp_path: Path) -> None:
    import tomllib

    from bench import pipeline

    conf = {"consistent_cut_interval_seconds": "10", "java_writer_max_rows": "0", "hoodie.metadata.enable": "false"}
    spec = tomllib.loads(pipeline._write_pipeline(tmp_path, "abc", 4, conf, []).read_text())
    assert spec["run"]["consistent_cut_interval_seconds"] == 10 and spec["run"]["max_concurrent_tables"] == 4
    assert "consistent_cut_interval_seconds" not in spec["defaults"] and spec["defaults"]["java_writer_max_rows"] == 0
    assert spec["defaults"]["hoodie_conf"] == {"hoodie.metadata.enable": "false"}
    assert (
        "consistent_cut_interval_seconds"
        not in tomllib.loads(pipeline._write_pipeline(tmp_path, "abd", 4, {}, []).read_text())["run"]
    )


def test_the_pipeline_round_profile_sums_committed_rounds_per_step_and_splits_them_by_writer() -> None:
    from bench import pipeline

    def line(writer: str, commit: float, events: int, committed: bool = True) -> dict[str, object]:
        steps = {"read": 0.5, "plan": 0.25, "commit": commit}
        return {"commit_time": "20261130" if committed else None, "events": events, "duration_s": 1.0 + commit,
                "steps_s": steps, "details": {"writer": writer}}  # fmt: skip

    profile = pipeline._round_profile(
        [line("java", 1.0, 10), line("java", 3.0, 30), line("spark", 4.0, 20), line("spark", 9.0, 99, False)]
    )
    assert profile["rounds_commit_s"] == 8.0 and profile["rounds_read_s"] == 1.5 and profile["rounds_open_s"] == 0
    assert profile["rounds_s"] == 11.0 and profile["round_events_p50"] == 20
    assert (profile["java_rounds"], profile["java_commit_p50_s"]) == (2, 2.0)
    assert (profile["spark_rounds"], profile["spark_commit_p50_s"]) == (1, 4.0)
    assert pipeline._round_profile([])["java_commit_p50_s"] is None
