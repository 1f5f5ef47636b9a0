"""The files source's checks on a folder of change files (no Spark, no stack)."""

from __future__ import annotations

from pathlib import Path

from hudi_cdc.checks.validate import validate
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.checks.support import files_config, status
from tests.support import CUSTOMERS


def test_a_files_folder_with_a_file_that_is_not_avro(tmp_path: Path) -> None:
    source = tmp_path / "dbserver1.inventory.customers"
    write_events(source / "0001.avro", envelope_schema("customers", CUSTOMERS), [pg_event("c", lsn=1, after={"id": 1})])
    (source / "0002.avro").write_bytes(b"PAR1 this is not an avro file")
    report = validate(files_config(source, tmp_path / "t"))
    assert status(report, "files.folder")[0] == "ok" and "2 file(s)" in status(report, "files.folder")[1]
    decode_status, decode_detail = status(report, "files.decode")
    assert decode_status == "fail" and "0002.avro: not an Avro Object Container File" in decode_detail
    assert "0001.avro" not in decode_detail
    assert status(report, "files.envelope")[0] == "ok"  # the good file still tells the envelope

    wrong_key = validate(files_config(source, tmp_path / "t", record_key_fields="customer_id"))
    assert status(wrong_key, "files.envelope")[0] == "fail"
    assert "no column customer_id (--record-key-fields)" in status(wrong_key, "files.envelope")[1]
