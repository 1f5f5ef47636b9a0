"""Helpers shared by the tests: run the real CLI in-process and read tables back."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from hudi_cdc.cli import main
from hudi_cdc.testing.faults import kill_group, pending_instants

PLACEHOLDER = "__debezium_unavailable_value"
CUSTOMERS = [("id", "long"), ("name", ["null", "string"]), ("bio", ["null", "string"])]

# The settings the semantic suites prove the guarantees with (docs/semantics.md "Settings the guarantees
# were proven with"): hudi-cdc's defaults, which carry every setting adopted for speed (the record merger,
# zstd, no key bloom filter where no index reads it, a clean every 10th commit, the log block size), and
# the low-latency settings the operations guide recommends (a bucket index: unpartitioned tables only).
SETTINGS: dict[str, tuple[str, ...]] = {
    "defaults": (),
    "low-latency": ("hoodie.index.type=BUCKET", "hoodie.bucket.index.num.buckets=2", "hoodie.metadata.enable=false"),
}
PARTITIONED_SETTINGS = ("defaults",)  # a bucket index finds a key in its own partition only: refused there


def run_cli(*args: str) -> Result:
    """``hudi-cdc ingest ...`` in this process, so it shares the test SparkSession."""
    return CliRunner().invoke(main, ["ingest", *args], catch_exceptions=False)


def ingest_json(*args: str) -> dict[str, Any]:
    """``hudi-cdc ingest ... --json`` in this process: it must succeed; its one JSON line, parsed."""
    result = run_cli(*args, "--json")
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("{")]
    return json.loads(line)


def ingest_args(
    source: str, base: str, *, table_type: str = "cow", keys: str = "id", extra: Sequence[str] = ()
) -> list[str]:
    return [
        "--source",
        "files",
        "--source-path",
        source,
        "--flavor",
        "postgres",
        "--target-base-path",
        base,
        "--target-table",
        "t_" + table_type.lower(),
        "--table-type",
        table_type,
        "--record-key-fields",
        keys,
        *extra,
    ]


def read_rows(spark: Any, base: str, columns: Sequence[str], *, query_type: str = "snapshot") -> list[tuple]:
    frame = spark.read.format("hudi").option("hoodie.datasource.query.type", query_type).load(base)
    return sorted(tuple(r) for r in frame.select(*columns).collect())


class CommittedRows:
    """A table's rows as of its newest completed instant, read through Spark only when the timeline has a new
    one: a test polling a table another process writes asks often, and each read is a Spark job that would
    take CPU from the writer it waits for. ``None`` while the table has no completed commit or is unreadable
    (read while a writer cleans: asked again at the next change)."""

    def __init__(self, spark: Any, base: str | Path, columns: Sequence[str]) -> None:  # noqa: ANN401
        self._spark, self._base, self._columns = spark, str(base), tuple(columns)
        self._seen: tuple[str, ...] | None = None
        self._rows: list[tuple] | None = None

    def _completed(self) -> tuple[str, ...]:
        folder = Path(self._base) / ".hoodie" / "timeline"
        names = os.listdir(folder) if folder.is_dir() else []
        return tuple(sorted(n for n in names if "_" in n and n.rsplit(".", 1)[-1] in ("commit", "deltacommit")))

    def rows(self) -> list[tuple] | None:
        completed = self._completed()
        if completed and completed != self._seen:
            try:
                self._rows = read_rows(self._spark, self._base, self._columns)
                self._seen = completed
            except Exception:  # noqa: BLE001 - read while a writer commits or cleans: read at the next poll
                self._rows = None
        return self._rows


def expected_rows(state: dict[Any, dict[str, Any]], columns: Sequence[str]) -> list[tuple]:
    return sorted(tuple(row[c] for c in columns) for row in state.values())


def commit_instants(spark: Any, base: str) -> list[str]:
    from hudi_cdc.sink.hudi import HudiTable

    return [c.instant for c in HudiTable(spark, base).commits()]


def _base_files(base: str) -> list[Path]:
    """A table's Parquet base files, the metadata table's aside."""
    return [p for p in Path(base).rglob("*.parquet") if ".hoodie" not in p.parts]


def base_file_codecs(base: str) -> dict[str, set[str]]:
    """Each base file of a table (metadata table aside) with the codecs of its column chunks, read from its footer."""
    import pyarrow.parquet as pq

    codecs = {}
    for path in _base_files(base):
        meta = pq.ParquetFile(path).metadata
        codecs[path.name] = {
            meta.row_group(g).column(c).compression for g in range(meta.num_row_groups) for c in range(meta.num_columns)
        }
    return codecs


def base_file_bloom_filters(base: str) -> dict[str, bool]:
    """Each base file of a table (metadata table aside): whether its footer holds Hudi's key bloom filter."""
    import pyarrow.parquet as pq

    return {
        p.name: b"org.apache.hudi.bloomfilter" in (pq.ParquetFile(p).metadata.metadata or {}) for p in _base_files(base)
    }


def random_history(seed: int, keys: int, lsn_start: int) -> tuple[list[dict], int]:
    """A realistic ``customers`` stream: inserts, updates (some keeping TOAST values), deletes and re-inserts."""
    from hudi_cdc.testing import pg_event

    rng = random.Random(seed)
    events, live, lsn = [], {}, lsn_start
    for _ in range(keys * 4):
        lsn += rng.randint(1, 5)
        key = rng.randrange(keys)
        if key not in live:
            live[key] = {"id": key, "name": f"n{lsn}", "bio": f"bio-{lsn}" * 3}
            events.append(pg_event("c", lsn=lsn, after=live[key], txid=lsn))
        elif rng.random() < 0.2:
            events.append(pg_event("d", lsn=lsn, before={"id": key, "name": None, "bio": None}))
            del live[key]
        else:
            keep_bio = rng.random() < 0.5
            live[key] = (
                {**live[key], "name": f"n{lsn}"} if keep_bio else {**live[key], "name": f"n{lsn}", "bio": f"b{lsn}"}
            )
            after = {**live[key], "bio": PLACEHOLDER} if keep_bio else live[key]
            events.append(pg_event("u", lsn=lsn, after=after, txid=lsn))
    return events, lsn


def apply_events(events: Iterable[dict[str, Any]], key: str | Sequence[str] = "id") -> dict[Any, dict[str, Any]]:
    """The source table after ``events`` in LSN order (placeholders keep the old value).

    Keyed by the ``key`` column's value, or by the tuple of the ``key`` columns' values.
    """

    def key_of(image: dict[str, Any]) -> Any:
        return image[key] if isinstance(key, str) else tuple(image[k] for k in key)

    state: dict[Any, dict[str, Any]] = {}
    gone: dict[Any, dict[str, Any]] = {}  # rows deleted, by the position of their delete
    for event in sorted(events, key=lambda e: (e["source"]["lsn"] or 0, e["op"] != "r", e["op"] != "d")):
        if event["op"] == "d":
            gone[event["source"]["lsn"]] = state.pop(key_of(event["before"]), {})
        else:
            row = dict(event["after"])
            # A primary-key change: the delete of the old key at the same position holds the unchanged values.
            old = state.get(key_of(row)) or gone.get(event["source"]["lsn"], {})
            for column, value in row.items():
                if value in (PLACEHOLDER, PLACEHOLDER.encode(), [PLACEHOLDER]):
                    row[column] = old[column]
            state[key_of(row)] = row
    return state


def ingest_batches(
    spark: Any,
    root: Any,
    schema: dict,
    batches: Sequence[Sequence[dict]],
    *,
    table_type: str,
    flavor: str = "postgres",
    extra: Sequence[str] = (),
) -> str:
    """Write each batch as one Avro file and run one ``hudi-cdc ingest`` round per batch."""
    from hudi_cdc.testing import write_events

    source, base = root / "events", str(root / "table")
    for number, batch in enumerate(batches):
        write_events(source / f"batch-{number:04d}.avro", schema, batch)
        args = ingest_args(str(source), base, table_type=table_type, extra=["--flavor", flavor, *extra])
        result = run_cli(*args)
        assert result.exit_code == 0, f"batch {number}: {result.output}"
    return base


def table_state(spark: Any, base: str, columns: Sequence[str], *, query_type: str = "snapshot") -> dict[Any, tuple]:
    """Rows keyed by their first column, with bytes and arrays made comparable."""
    frame = spark.read.format("hudi").option("hoodie.datasource.query.type", query_type).load(base)
    state = {}
    for row in frame.select(*columns).collect():
        values = tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in row)
        state[values[0]] = values
    return state


def compact(spark: Any, base: str) -> None:
    """Schedule and run a MOR compaction now with Hudi's own procedure, so that every delta commit is compacted.

    Nothing to schedule passes only where that already holds: the table's newest commit is a compaction and
    none is pending (a one-shot ingest runs the plan its round's commit scheduled before it exits)."""
    from hudi_cdc.sink.hudi import HudiTable

    rows = spark.sql(
        f"call run_compaction(op => 'scheduleAndExecute', path => '{base}', "
        "options => 'hoodie.compact.inline.max.delta.commits=1')"
    ).collect()
    if not rows:
        table = HudiTable(spark, base)
        newest = next(table.iter_commits(), None)
        assert newest is not None and newest.operation == "compact", f"nothing compacted; newest commit {newest}"
        assert table.pending_compactions() == []
        return
    assert all(r["state"] == "COMPLETED" for r in rows), rows


def kill_when_pending(command: list[str], timeline: Path, action: str) -> list[str]:
    """Run ``command`` in a process group of its own; SIGKILL the group once an ``action`` instant is pending."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and process.poll() is None:
            pending = pending_instants(timeline, action)
            if pending:
                kill_group(process)
                return pending
            time.sleep(0.02)
    finally:
        kill_group(process)
    pytest.fail(f"no pending {action} instant appeared before the run ended (exit {process.returncode})")


def tamper(
    spark: Any,  # noqa: ANN401
    base: str,
    *,
    table_name: str,
    table_type: str,
    keys: Sequence[str],
    upserts: Sequence[dict[str, Any]] = (),
    deletes: Sequence[dict[str, Any]] = (),
    duplicates: Sequence[dict[str, Any]] = (),
    conf: Mapping[str, str] | None = None,
) -> None:
    """Write straight into a Hudi table, past hudi-cdc, as corruption would: rows upserted (give them an
    ``_source_order`` above every stored one), deleted, and written again as second rows of their key;
    ``conf``: more Hudi options for these writes."""
    from hudi_cdc.sink import options as opt
    from hudi_cdc.sink.hudi import HudiTable, index_conf
    from payloads.base import ORDER_COLUMN, is_data_column

    frame = spark.read.format("hudi").load(base)
    schema = frame.select(*[c for c in frame.columns if is_data_column(c)]).schema
    options = opt.write_options(
        table_name=table_name,
        table_type={"cow": "COPY_ON_WRITE", "mor": "MERGE_ON_READ"}[table_type],
        record_key_fields=tuple(keys),
        partition_path_field=None,
        ordering_field=ORDER_COLUMN,
        user_conf=index_conf(HudiTable(spark, base), {}, partitioned=False),  # the table's own index
    )
    # bulk_insert adds a second row of a key in a new file group; no inline compaction tidies anything up
    for records, operation in ((upserts, "upsert"), (deletes, "delete"), (duplicates, "bulk_insert")):
        if records:
            spark.createDataFrame(list(records), schema=schema).write.format("hudi").options(
                **{**options, opt.OPERATION: operation, opt.COMPACT_INLINE: "false", **(conf or {})}
            ).mode("append").save(base)


def files_pipeline(tmp_path: Path, sections: str = "", *, folders: Sequence[str] = (), defaults: str = "") -> Path:
    """``tmp_path/acc.toml``: a pipeline of the files source ``tmp_path/landing`` (tables ``acc.*``, the folders
    made), keyed by ``id``, lake ``tmp_path/lake/{table}``; ``defaults`` adds lines to [defaults], then ``sections``."""
    for folder in folders:
        (tmp_path / "landing" / folder).mkdir(parents=True, exist_ok=True)
    path = tmp_path / "acc.toml"
    path.write_text(
        f"""
[source]
source = "files"
source_path = "{tmp_path / "landing"}"
tables = "acc.*"

[defaults]
target_base_path = "{tmp_path / "lake"}/{{table}}"
target_table = "{{table}}"
record_key_fields = "id"
{defaults}
"""
        + sections
    )
    return path


def start_runner(pipeline: Path, log: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen:
    """``hudi-cdc run --pipeline PIPELINE --continuous`` in a process group of its own (``kill_group`` kills it with
    its JVM), its output appended to ``log``; ``env``: added to the test's environment."""
    command = [str(Path(sys.executable).parent / "hudi-cdc"), "run", "--pipeline", str(pipeline), "--continuous"]
    with log.open("ab") as out:
        return subprocess.Popen(
            command, stdout=out, stderr=out, start_new_session=True, env={**os.environ, **(env or {})}
        )


def collect_counting_files(frame: Any) -> tuple[list[Any], int]:  # noqa: ANN401 - a DataFrame
    """``frame``'s rows, and how many files the scan of its one table read (the ``numFiles`` metric of this
    execution: a second collect of the same frame counts none)."""
    rows = frame.collect()
    leaves = frame._jdf.queryExecution().executedPlan().collectLeaves()
    (scan,) = [leaves.apply(i) for i in range(leaves.size()) if "Scan" in leaves.apply(i).nodeName()]
    return rows, int(scan.metrics().apply("numFiles").value())
