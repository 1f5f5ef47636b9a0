"""The training run behind ``hudi-cdc jvm-archive``: what a round loads, in the JVM that will dump it.

Generated Debezium files (inserts, updates with TOAST placeholders, deletes)
into a COW and a MOR table, two rounds each: the first commit's bulk insert and
a later round's upsert, stored-row lookup and tombstones.
"""

import sys
from pathlib import Path


def main(work: Path) -> None:
    from hudi_cdc.config import load_config
    from hudi_cdc.pipeline import ingest_once
    from hudi_cdc.spark import spark_session
    from hudi_cdc.testing import envelope_schema, pg_event, write_events

    schema = envelope_schema("customers", [("id", "long"), ("name", ["null", "string"]), ("notes", ["null", "string"])])
    placeholder = "__debezium_unavailable_value"
    rounds = [
        [pg_event("c", lsn=10 + i, after={"id": i, "name": f"n{i}", "notes": "x" * 200}) for i in range(300)],
        [pg_event("u", lsn=1_000 + i, after={"id": i, "name": f"m{i}", "notes": placeholder}) for i in range(0, 300, 3)]
        + [pg_event("d", lsn=2_000 + i, before={"id": i, "name": None, "notes": None}) for i in range(1, 300, 7)],
    ]
    spark = spark_session()
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        events = work / f"events-{table_type}"
        config = load_config(
            source="files", source_path=str(events), flavor="postgres", record_key_fields="id",
            target_base_path=str(work / f"table-{table_type}"), target_table=f"training_{table_type.lower()}",
            table_type=table_type,
        )  # fmt: skip
        for number, batch in enumerate(rounds):
            write_events(events / f"{number}.avro", schema, batch)
            ingest_once(config, spark=spark)
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
