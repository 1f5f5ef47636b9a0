"""The history-folder marker for Trino 476 (hudi_cdc.sink.trino_compat): written once, only into a Hudi 1.x
table, and invisible to Hudi -- the table reads the same and archival with the LSM timeline's compaction goes
on beside it (tests/stack/test_trino.py shows Trino failing without it and reading with it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.sink.trino_compat import MARKER_NAME, ensure_history_folder, history_folder

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

# Archival after 3 commits, keeping 2: four commits put LSM files into history/ next to the marker.
_ARCHIVE_EARLY = {
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
    "hoodie.clean.commits.retained": "1",
    "hoodie.metadata.enable": "false",
}


def _write(spark: Any, base: str, rows: list[tuple[int, str]]) -> None:  # noqa: ANN401
    frame = spark.createDataFrame(rows, "id int, name string")
    (
        frame.write.format("hudi")
        .option("hoodie.table.name", "marker_t")
        .option("hoodie.datasource.write.recordkey.field", "id")
        .option("hoodie.datasource.write.precombine.field", "id")
        .option("hoodie.datasource.write.operation", "upsert")
        .options(**_ARCHIVE_EARLY)
        .mode("append")
        .save(base)
    )


def test_nothing_is_written_outside_a_hudi_table(spark, tmp_path: Path) -> None:  # noqa: ANN001
    assert ensure_history_folder(spark, str(tmp_path / "absent")) is False
    assert not (tmp_path / "absent").exists()


def test_the_marker_is_written_once_and_hudi_ignores_it_through_archival(spark, tmp_path: Path) -> None:  # noqa: ANN001
    base = str(tmp_path / "t")
    _write(spark, base, [(1, "v1")])
    history = Path(history_folder(base))
    assert history.is_dir() and not [p for p in history.iterdir() if not p.name.startswith(".")]  # empty: Trino fails
    assert ensure_history_folder(spark, base) is True
    assert ensure_history_folder(spark, base) is False
    marker = history / MARKER_NAME
    text = marker.read_text()

    for n in range(2, 5):
        _write(spark, base, [(1, f"v{n}"), (n, "x")])

    names = {p.name for p in history.iterdir() if not p.name.startswith(".")}
    assert marker.read_text() == text
    assert "_version_" in names and any(n.startswith("manifest_") for n in names), names
    assert any(n.endswith(".parquet") for n in names), names
    rows = sorted(tuple(r) for r in spark.read.format("hudi").load(base).select("id", "name").collect())
    assert rows == [(1, "v4"), *((n, "x") for n in range(2, 5))]
    table = HudiTable(spark, base)
    archived = table._meta_client(fresh=True).getArchivedTimeline().getCommitsTimeline().getInstants().size()
    active = len(table.commits())
    assert archived > 0 and archived + active == 4, (archived, active)
