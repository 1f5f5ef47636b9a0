"""Checkpoint text every source parses the same way: errors name the source and quote the text. No Spark."""

from __future__ import annotations

import re

import pytest

from hudi_cdc.config import IngestConfig, load_config
from hudi_cdc.errors import CheckpointError
from hudi_cdc.sources.base import json_checkpoint
from hudi_cdc.sources.files import FileSource
from hudi_cdc.sources.jdbc import JdbcSource
from hudi_cdc.sources.kafka import parse_kafka_checkpoint
from hudi_cdc.sources.quarantine import QuarantinedEvents


def test_a_checkpoint_of_the_right_kind_is_its_object() -> None:
    assert json_checkpoint('{"kind": "files/v1", "folders": {}}', source="files", kind="files/v1") == {
        "kind": "files/v1",
        "folders": {},
    }
    assert json_checkpoint('{"topic": "t"}', source="the table's") == {"topic": "t"}


def test_text_that_is_not_json_names_the_source_and_quotes_the_text() -> None:
    with pytest.raises(CheckpointError, match=r"^files checkpoint is not JSON \(.*\): '\{oops'$"):
        json_checkpoint("{oops", source="files", kind="files/v1")


@pytest.mark.parametrize("text", ["[1, 2]", '"files/v1"', "42", "null"])
def test_json_that_is_not_an_object_names_the_source(text: str) -> None:
    with pytest.raises(CheckpointError, match=rf"^JDBC checkpoint is JSON but not an object: {re.escape(repr(text))}$"):
        json_checkpoint(text, source="JDBC", kind="jdbc")


def test_another_kind_is_another_sources_checkpoint() -> None:
    with pytest.raises(
        CheckpointError,
        match=r"""^checkpoint '\{"kind": "files/v1"\}' is not a Kafka checkpoint \(kafka/v1\); was this table fed """
        r"by another source\? Pass --checkpoint earliest to start over$",
    ):
        json_checkpoint('{"kind": "files/v1"}', source="Kafka", kind="kafka/v1")


def test_a_long_text_is_quoted_up_to_200_characters() -> None:
    text = "x" * 500
    with pytest.raises(CheckpointError) as raised:
        json_checkpoint(text, source="files")
    assert str(raised.value).endswith(repr("x" * 200))


def _files() -> FileSource:
    config = IngestConfig(source_path="/in", target_base_path="/o", target_table="t", record_key_fields=("id",))
    return FileSource(None, config)  # type: ignore[arg-type]  # parsing needs no Spark


def _jdbc() -> JdbcSource:
    config = load_config(
        source="jdbc",
        jdbc_url="jdbc:postgresql://127.0.0.1:1/db",
        jdbc_table="public.t",
        jdbc_timestamp_column="updated_at",
        jdbc_incrementing_column="id",
        record_key_fields="id",
        target_base_path="/o",
        target_table="t",
        env={},
    )
    return JdbcSource(None, config)  # type: ignore[arg-type]  # parsing needs no Spark


def _quarantined() -> QuarantinedEvents:
    config = IngestConfig(source_path="/in", target_base_path="/o", target_table="t", record_key_fields=("id",))
    return QuarantinedEvents(None, config, None, where="/o_quarantine")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("parse", "source"),
    [
        (lambda text: _files().parse_checkpoint(text), "files"),
        (lambda text: _jdbc().parse_checkpoint(text), "JDBC"),
        (lambda text: parse_kafka_checkpoint(text, "t"), "Kafka"),
        (lambda text: _quarantined().parse_checkpoint(text), "the table's"),
    ],
    ids=["files", "jdbc", "kafka", "quarantine"],
)
def test_each_source_names_itself(parse, source: str) -> None:  # noqa: ANN001
    with pytest.raises(CheckpointError, match=rf"^{source} checkpoint is not JSON .*: '\{{oops'$"):
        parse("{oops")
    if source != "Kafka":  # Kafka reads only text starting with "{" as JSON: the rest is HoodieStreamer's form
        with pytest.raises(CheckpointError, match=rf"^{source} checkpoint is JSON but not an object: '\[1\]'$"):
            parse("[1]")


def test_sources_with_a_kind_refuse_another_sources_checkpoint() -> None:
    other = '{"kind": "something/v1", "topic": "t", "mode": "timestamp+incrementing"}'
    for parse, source, kind in [
        (_files().parse_checkpoint, "files", "files/v1"),
        (_jdbc().parse_checkpoint, "JDBC", "jdbc"),
        (lambda text: parse_kafka_checkpoint(text, "t"), "Kafka", "kafka/v1"),
    ]:
        with pytest.raises(CheckpointError, match=rf"is not a {source} checkpoint \({kind}\)"):
            parse(other)
    # The quarantine's checkpoint is the table's, whatever its kind.
    assert _quarantined().parse_checkpoint(other)["kind"] == "something/v1"
