"""The target's checks on a real Hudi table (Spark, no stack): an existing table's settings against the
command line's, a path that cannot be written, settings refused before the first ingest."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.checks.validate import validate
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.checks.support import files_config, status
from tests.support import CUSTOMERS, ingest_args, run_cli


def test_an_existing_table_with_another_key_and_type(spark, tmp_path: Path) -> None:
    source, base = tmp_path / "events", tmp_path / "table"
    write_events(source / "a.avro", envelope_schema("customers", CUSTOMERS), [pg_event("c", lsn=1, after={"id": 1})])
    assert run_cli(*ingest_args(str(source), str(base), table_type="cow", keys="id")).exit_code == 0

    same = validate(files_config(source, base), spark=spark)
    assert same.ok, "\n".join(same.lines())
    assert status(same, "target.table_config")[0] == "ok"
    assert "matches the command line" in status(same, "target.table_config")[1]
    assert status(same, "files.decode")[0] == "ok" and status(same, "files.envelope")[0] == "ok"
    assert "files/v1" not in status(same, "target.checkpoint")[1] and "a.avro" in status(same, "target.checkpoint")[1]

    other = files_config(source, base, record_key_fields="id,name", table_type="mor")
    report = validate(other, spark=spark)
    check = report.check("target.table_config")
    assert check.status == "fail", check
    assert "record key 'id', the command line 'id,name'" in check.detail
    assert "table type 'COPY_ON_WRITE', the command line 'MERGE_ON_READ'" in check.detail

    # The ingest runs the same check first and stops before reading anything.
    args = ingest_args(str(source), str(base), table_type="mor", keys="id,name", extra=["--target-table", "t_cow"])
    result = run_cli(*args)
    assert result.exit_code == 2  # a configuration error, as from every command (docs/cli.md)
    assert "preflight failed" in result.output and "table type 'COPY_ON_WRITE'" in result.output


@pytest.mark.parametrize("with_spark", [False, True], ids=["local", "hadoop"])
def test_an_unwritable_target(request, tmp_path: Path, with_spark: bool) -> None:
    # A path below a regular file cannot be created, by root either (chmod would not stop root).
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    source = tmp_path / "events"
    write_events(source / "a.avro", envelope_schema("customers", CUSTOMERS), [pg_event("c", lsn=1, after={"id": 1})])
    spark = request.getfixturevalue("spark") if with_spark else None

    report = validate(files_config(source, blocker / "table"), spark=spark, cheap=True)
    check = report.check("target.writable")
    assert check.status == "fail", check
    assert f"cannot write under {blocker / 'table'}" in check.detail and "is a file" in check.detail

    fine = validate(files_config(source, tmp_path / "new" / "table"), spark=spark, cheap=True)
    assert fine.check("target.writable").status == "ok", fine.check("target.writable")
    # The probe leaves no folder of its own; a parent it made stays (tables probed at once share it).
    assert not (tmp_path / "new" / "table").exists() and not (tmp_path / "new" / "table_hudi_cdc_tombstones").exists()


def test_a_partitioned_composite_key_table_matches_its_own_command_line(spark, tmp_path: Path) -> None:
    source, base = tmp_path / "events", tmp_path / "table"
    write_events(
        source / "a.avro", envelope_schema("customers", CUSTOMERS), [pg_event("c", lsn=1, after={"id": 1, "name": "a"})]
    )
    extra = ["--partition-path-field", "name"]
    assert run_cli(*ingest_args(str(source), str(base), table_type="mor", keys="id,name", extra=extra)).exit_code == 0
    options = {
        "record_key_fields": "id,name",
        "partition_path_field": "name",
        "table_type": "mor",
        "target_table": "t_mor",
    }
    report = validate(files_config(source, base, **options), spark=spark, cheap=True)
    assert report.ok, "\n".join(report.lines())
    assert "MERGE_ON_READ table 't_mor', key id,name, partition name" in status(report, "target.table_config")[1]

    unpartitioned = validate(files_config(source, base, **{**options, "partition_path_field": None}), spark=spark)
    assert "partition field 'name', the command line '(none)'" in status(unpartitioned, "target.table_config")[1]


def test_settings_refused_before_the_table_exists(spark, tmp_path: Path) -> None:  # noqa: ANN001
    source = tmp_path / "events"
    write_events(source / "a.avro", envelope_schema("customers", CUSTOMERS), [pg_event("c", lsn=1, after={"id": 1})])
    bucket = {"hoodie.index.type": "BUCKET"}
    report = validate(
        files_config(source, tmp_path / "t", partition_path_field="name", hoodie_conf=bucket), spark=spark
    )
    check = report.check("target.table_config")
    assert check.status == "fail" and "hoodie.index.type=BUCKET with --partition-path-field" in check.detail, check
    fine = validate(
        files_config(source, tmp_path / "t", hoodie_conf=bucket), spark=spark
    )  # unpartitioned: a bucket index is fine
    assert fine.check("target.table_config").status == "ok", fine.check("target.table_config")
    assert "index BUCKET(SIMPLE, 256, id)" in fine.check("target.table_config").detail  # the user's: Hudi's count
    default = validate(files_config(source, tmp_path / "t"), spark=spark).check("target.table_config")
    assert default.status == "ok" and "index BUCKET (SIMPLE engine, 4-256 by the first commit's rows" in default.detail


def test_the_index_shown_is_the_one_the_table_recorded(spark, tmp_path: Path) -> None:
    """No index on the command line: validate names the table's own (the bucket default of a new table, or
    the simple index a table was created with) and passes; another index on the command line fails."""
    source = tmp_path / "events"
    write_events(source / "a.avro", envelope_schema("customers", CUSTOMERS), [pg_event("c", lsn=1, after={"id": 1})])
    simple = ["--hoodie-conf", "hoodie.index.type=SIMPLE"]
    for base, extra, index in ((tmp_path / "b", [], "BUCKET(SIMPLE, 4, id)"), (tmp_path / "s", simple, "file lookup")):
        assert run_cli(*ingest_args(str(source), str(base), extra=extra)).exit_code == 0
        check = validate(files_config(source, base), spark=spark).check("target.table_config")
        assert check.status == "ok" and f"index {index}: matches the command line" in check.detail, check
    wrong = files_config(source, tmp_path / "b", hoodie_conf={"hoodie.index.type": "SIMPLE"})
    check = validate(wrong, spark=spark).check("target.table_config")
    assert check.status == "fail" and "index 'BUCKET(SIMPLE, 4, id)', the command line 'file lookup'" in check.detail
