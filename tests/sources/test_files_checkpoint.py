"""The files source's checkpoint rules, without Spark: which listed files are pending."""

from __future__ import annotations

import pytest

from hudi_cdc.config import IngestConfig
from hudi_cdc.errors import CheckpointError, SourceError
from hudi_cdc.sources.files import FileSource, ListedFile, _hidden


def _source(limit: int | None = None) -> FileSource:
    config = IngestConfig(
        source_path="/in", target_base_path="/o", target_table="t", record_key_fields=("id",), source_limit=limit
    )
    return FileSource(None, config)  # type: ignore[arg-type]  # listing is not used here


def _f(relative: str, mtime: int = 100, size: int = 10) -> ListedFile:
    return ListedFile("file:/in/" + relative, relative, size, mtime)


def test_first_run_takes_everything() -> None:
    files = [_f("p=0/a.avro"), _f("p=1/a.avro")]
    assert _source()._pending(files, None) == files


def test_marks_are_per_folder() -> None:
    files = [_f("p=0/t+0+0000000000.avro"), _f("p=0/t+0+0000000100.avro"), _f("p=1/t+1+0000000000.avro")]
    checkpoint = {
        "kind": "files/v1",
        "folders": {"p=0": "t+0+0000000000.avro", "p=1": "t+1+0000000000.avro"},
        "max_mtime_ms": 100,
    }
    assert [f.relative for f in _source()._pending(files, checkpoint)] == ["p=0/t+0+0000000100.avro"]


def test_late_or_rewritten_file_stops_the_run() -> None:
    files = [_f("a.avro", mtime=100), _f("b.avro", mtime=500), _f("c.avro", mtime=100)]
    checkpoint = {"kind": "files/v1", "folders": {"": "c.avro"}, "max_mtime_ms": 200}
    with pytest.raises(SourceError, match=r"b\.avro sorts at or before c\.avro.*never ingested"):
        _source()._pending(files, checkpoint)


def test_source_limit_takes_a_prefix_but_at_least_one_file() -> None:
    files = [_f("a.avro", size=60), _f("b.avro", size=60), _f("c.avro", size=10)]
    assert [f.name for f in _source(limit=100)._within_limit(files)] == ["a.avro"]
    assert [f.name for f in _source(limit=10)._within_limit(files)] == ["a.avro"]
    assert [f.name for f in _source(limit=130)._within_limit(files)] == ["a.avro", "b.avro", "c.avro"]


@pytest.mark.parametrize(
    ("relative", "hidden"),
    [("_SUCCESS", True), ("p/.x.avro.crc", True), ("+tmp/x.avro", True), ("p=1/x.avro", False)],
)
def test_hidden_files(relative: str, hidden: bool) -> None:
    assert _hidden(relative) is hidden


def test_checkpoint_parsing() -> None:
    source = _source()
    assert source.parse_checkpoint("earliest")["folders"] == {}
    with pytest.raises(CheckpointError, match="not JSON"):
        source.parse_checkpoint("{oops")
    with pytest.raises(CheckpointError, match="not a files checkpoint"):
        source.parse_checkpoint('{"kind": "kafka/v1"}')
