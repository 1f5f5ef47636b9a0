"""``validate``'s transform check against a files source's envelope schema."""

from __future__ import annotations

from pathlib import Path

from hudi_cdc.checks.kit import _Context
from hudi_cdc.checks.shape import check_transforms
from hudi_cdc.checks.validate import _envelope_schema, _run, validate
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.checks.support import files_config, status

COLUMNS = [("id", "long"), ("email", ["null", "string"]), ("age", ["null", "int"]), ("created", ["null", "string"])]


def test_transforms_are_checked_against_the_source_columns(spark, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    source = tmp_path / "dbserver1.public.customers"
    write_events(source / "0001.avro", envelope_schema("customers", COLUMNS), [pg_event("c", lsn=1, after={"id": 1})])
    monkeypatch.setenv("SALT_SET", "s")

    def check(**settings) -> tuple[str, str]:  # noqa: ANN003
        # The check alone: the whole validate (Java, jars, connector...) once, below.
        ctx = _Context(files_config(source, tmp_path / "t", **settings), spark, None, None, None, None)
        done = _run("shape.transforms", lambda c: check_transforms(c, _envelope_schema), ctx)
        return done.status, done.detail

    good = check(
        masks={"email": "hash"},
        mask_salt_env="SALT_SET",
        computed_columns={"month": "substr(created, 1, 7)", "lsn": "_source_lsn + 1"},
        row_filter="age > 17 and month <> ''",
        partition_path_field="month",
    )
    assert good[0] == "ok", good
    report = validate(files_config(source, tmp_path / "t", computed_columns={"x": "nope + 1"}), spark=spark)
    assert status(report, "shape.transforms")[0] == "fail"
    bad_sql = check(computed_columns={"month": "substr(nope, 1, 7)"})
    assert bad_sql[0] == "fail" and "computed_columns.month = 'substr(nope, 1, 7)'" in bad_sql[1], bad_sql
    assert "nope" in bad_sql[1]
    unparsed = check(row_filter="age >")
    assert unparsed[0] == "fail" and "row_filter = 'age >'" in unparsed[1], unparsed
    masks = check(masks={"phone": "redact", "age": "redact"})
    assert masks[0] == "fail" and "no column 'phone'" in masks[1] and "'age' is int" in masks[1], masks
    unsalted = check(masks={"email": "hash"}, mask_salt_env="SALT_UNSET")
    assert unsalted[0] == "fail" and "SALT_UNSET" in unsalted[1], unsalted
    onto = check(column_renames={"email": "age"})
    assert onto[0] == "fail" and "rename onto a column the source does not have" in onto[1], onto
    dropped = check(columns_drop=["created"], partition_path_field="created")
    assert dropped[0] == "fail" and "partition_path_field 'created' is not kept" in dropped[1], dropped
    assert check()[0] == "skip"
