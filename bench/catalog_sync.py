"""What catalog sync costs a round (issue 45; docs/catalog.md): the check every round pays, and each kind of sync.

    python -m bench.catalog_sync [--rows 10000] [--rounds 8] [--metastore thrift://127.0.0.1:59083] [--results DIR]

One Spark session, the Python API (``hudi_cdc.ingest``), a folder source of Debezium files, a table partitioned
by ``region``, COW and MOR, against a Hive metastore (the stack's by default). Per table type:

- the first round (``--rows`` inserts) with its first sync (tables created: one for COW, three for MOR);
- ``--rounds`` rounds of 100 updates in the existing partitions: no sync, only the "is one needed?" check;
  the same rounds into a twin table without a catalog, alternating, give the round's overhead;
- a round adding a partition, a round adding a column: each syncs;
- a "process start" (what the process knows dropped) with the catalog behind by commits that need nothing (the
  check a restart makes), and behind by a new partition written without a sync (the sync a restart makes);
- HiveSyncTool run with nothing to do: what syncing after every commit would add instead of the check;
- a sync against a metastore that is down (a closed port): what a round waits before it goes on.

Every table is read back at the end: each key once, the newest name, and the metastore holding the new column.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import results

METASTORE = "thrift://127.0.0.1:59083"
COLUMNS = [("id", "long"), ("name", ["null", "string"]), ("region", ["null", "string"])]


class Source:
    """A folder of Debezium change files for ``dbserver1.public.<table>``."""

    def __init__(self, root: Path, table: str) -> None:
        self.folder = root / f"dbserver1.public.{table}" / "partition=0"
        self.columns = list(COLUMNS)
        self.lsn = 100
        self.files = 0
        self.rows: dict[int, dict[str, Any]] = {}

    @property
    def path(self) -> str:
        return str(self.folder.parent)

    def write(self, rows: list[dict[str, Any]]) -> None:
        from hudi_cdc.testing.envelopes import envelope_schema, pg_event, write_events

        events = []
        for row in rows:
            self.lsn += 10
            events.append(pg_event("c" if row["id"] not in self.rows else "u", lsn=self.lsn, after=row))
            self.rows[row["id"]] = row
        name = self.folder.parent.name
        write_events(self.folder / f"{name}+0+{self.files:010d}.avro", envelope_schema("t", self.columns), events)
        self.files += 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _options(source: Source, base: Path, table_type: str, database: str, uri: str | None) -> dict[str, Any]:
    catalog = {"catalog": "hms", "catalog_uri": uri, "catalog_database": database} if uri else {}
    return {
        "source_path": source.path, "target_base_path": str(base), "target_table": base.name,
        "record_key_fields": "id", "table_type": table_type, "partition_path_field": "region",
        "schema_change_behavior": "evolve", "env": {}, **catalog,
    }  # fmt: skip


def _round(spark: Any, options: dict[str, Any]) -> tuple[float, dict[str, Any]]:  # noqa: ANN401
    import hudi_cdc

    started = time.monotonic()
    result = hudi_cdc.ingest(spark=spark, **options)
    return time.monotonic() - started, result.details.get("catalog") or {}


def measure(spark: Any, work: Path, table_type: str, args: argparse.Namespace) -> list[dict[str, Any]]:  # noqa: ANN401
    from hudi_cdc.config import load_config
    from hudi_cdc.sink import catalog

    database = f"bench_{int(time.time())}"
    synced, plain = Source(work / "in", f"s_{table_type}"), Source(work / "in", f"p_{table_type}")
    with_catalog = _options(synced, work / f"s_{table_type}", table_type, database, args.metastore)
    without = _options(plain, work / f"p_{table_type}", table_type, database, None)
    rows: list[dict[str, Any]] = []

    def row(what: str, seconds: list[float], **extra: Any) -> None:  # noqa: ANN401
        rows.append({"table_type": table_type, "what": what, "median_s": round(statistics.median(seconds), 3),
                     "max_s": round(max(seconds), 3), "n": len(seconds), **extra})  # fmt: skip

    first = [{"id": i, "name": f"n{i}", "region": ("eu", "us", "apac")[i % 3]} for i in range(args.rows)]
    for source in (synced, plain):
        source.write(first)
    _, outcome = _round(spark, with_catalog)
    _round(spark, without)
    row("first round's sync (tables created)", [outcome["sync_s"]])
    checks, overhead_on, overhead_off = [], [], []
    for n in range(args.rounds):
        changes = [{"id": i, "name": f"r{n}-{i}", "region": ("eu", "us", "apac")[i % 3]} for i in range(100)]
        for source in (synced, plain):
            source.write(changes)
        seconds, outcome = _round(spark, with_catalog)
        assert outcome["synced"] is False, outcome
        checks.append(outcome["check_s"])
        overhead_on.append(seconds)
        overhead_off.append(_round(spark, without)[0])
    row("round without change: the check", checks)
    row("round without change: whole round, catalog on", overhead_on)
    row("round without change: whole round, no catalog", overhead_off)
    for what, change in (("new partition", {"region": "latam"}), ("new column", {"email": "x@example.com"})):
        if what == "new column":
            synced.columns.append(("email", ["null", "string"]))
        synced.write([{"id": 0, "name": "changed", "region": "eu", **change}])
        _, outcome = _round(spark, with_catalog)
        assert outcome["synced"] is True, outcome
        row(f"sync: {what}", [outcome["sync_s"]])
    start_checks, start_syncs = [], []
    for n in range(3):
        synced.write([{"id": 1, "name": f"again{n}", "region": "us"}])
        _round(spark, with_catalog)  # a commit that needs no sync: the catalog's property stays behind
        catalog.forget()  # a process start
        synced.write([{"id": 2, "name": f"again{n}", "region": "apac"}])
        _, outcome = _round(spark, with_catalog)
        assert outcome["synced"] is False, outcome  # behind only by commits that need nothing
        start_checks.append(outcome["check_s"])
        synced.write([{"id": 5, "name": f"moved{n}", "region": f"new{n}"}])
        _round(spark, dict(with_catalog, catalog="none"))  # a new partition, written with no sync after it
        catalog.forget()
        synced.write([{"id": 2, "name": f"later{n}", "region": "apac"}])
        _, outcome = _round(spark, with_catalog)
        assert outcome["synced"] is True, outcome
        start_syncs.append(outcome["sync_s"])
    row("process start, catalog behind by commits that need nothing: the check", start_checks)
    row("process start, catalog behind by a new partition: the sync", start_syncs)
    config = load_config(**with_catalog)
    target = catalog.CatalogTarget.of(config)
    forced = []
    for _ in range(5):
        started = time.monotonic()
        catalog._run_sync(spark, config, target)  # noqa: SLF001 - the tool alone, nothing to do
        forced.append(time.monotonic() - started)
    row("HiveSyncTool with nothing to do", forced)
    down = dict(with_catalog, catalog_uri=f"thrift://127.0.0.1:{_closed_port()}")
    synced.write([{"id": 3, "name": "down", "region": "eu", "email": "d@example.com"}])
    seconds, outcome = _round(spark, down)
    assert outcome.get("error"), outcome
    row("sync, metastore down (the round goes on)", [outcome["sync_s"]], note=outcome["error"][:80])
    _check(spark, synced, work / f"s_{table_type}", target)
    return rows


def _check(spark: Any, source: Source, base: Path, target: Any) -> None:  # noqa: ANN401
    from hudi_cdc.sink import catalog

    frame = spark.read.format("hudi").load(str(base)).select("id", "name").collect()
    assert len(frame) == len(source.rows) and {r.id: r.name for r in frame} == {
        k: v["name"] for k, v in source.rows.items()
    }, "the table does not hold the source's rows"
    client = catalog._metastore_client(spark, target)  # noqa: SLF001
    try:
        cols = {str(c.getName()) for c in client.getTable(target.database, target.table).getSd().getCols()}
    finally:
        client.close()
    assert "email" in cols, "the metastore does not hold the new column"


COLUMNS_OUT = [
    results.column("table_type", "table"), results.column("what"), results.column("median_s", "median", "s"),
    results.column("max_s", "max", "s"), results.column("n", "rounds"), results.column("note"),
]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    from hudi_cdc.spark import spark_session

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--metastore", default=METASTORE)
    parser.add_argument("--results", type=Path, help="folder of result files (default .bench/results)")
    args = parser.parse_args(argv)
    started_utc = results.now_utc()
    spark = spark_session()
    work = Path(tempfile.mkdtemp(prefix="catalog-sync-"))
    try:
        rows = [r for t in ("COPY_ON_WRITE", "MERGE_ON_READ") for r in measure(spark, work, t, args)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in rows:
        print(f"{r['table_type']:14} {r['what']:48} median {r['median_s']:.3f}s  max {r['max_s']:.3f}s  n={r['n']}")
    results.write(
        "catalog-sync",
        parameters={"rows": args.rows, "rounds": args.rounds, "partitioned_by": "region", "metastore": "HMS 3.1.3"},
        tables={"costs": results.table(COLUMNS_OUT, rows, title="Catalog sync: the per-round check and each sync")},
        directory=args.results or results.LOCAL,
        started_utc=started_utc,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
