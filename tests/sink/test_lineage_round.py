"""OpenLineage events of real rounds (files source, shaped): validated against the spec's rules, their column
mapping read against the table read back; the http transport to a real local server; a black-hole endpoint."""

from __future__ import annotations

import http.server
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from hudi_cdc.sink.lineage import iter_events
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.support import run_cli

pytestmark = pytest.mark.hudi

SCHEMA_FILE = Path(__file__).parent / "schemas" / "openlineage-run-event.json"
COLUMNS = [
    ("id", "long"),
    ("email_address", ["null", "string"]),
    ("ssn", ["null", "string"]),
    ("status", ["null", "string"]),
    ("notes", ["null", "string"]),
    ("created_at", ["null", "string"]),
]
SCHEMA = envelope_schema("customers", COLUMNS)
CLI_PASSWORD = "pa55-in-url"


def _row(id_: int, status: str) -> dict:
    return {
        "id": id_,
        "email_address": f"u{id_}@example.org",
        "ssn": "123-45-6789",
        "status": status,
        "notes": "n",
        "created_at": "2026-01-05T10:00:00",
    }


def _validate(event: dict) -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(event), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def _mapping(event: dict) -> dict[str, list[tuple[str, str, str, bool]]]:
    """column -> [(input field, type, subtype, masking)] of the event's columnLineage facet."""
    fields = event["outputs"][0]["facets"]["columnLineage"]["fields"]
    return {
        column: [
            (
                f["field"],
                f["transformations"][0]["type"],
                f["transformations"][0]["subtype"],
                f["transformations"][0]["masking"],
            )
            for f in value["inputFields"]
        ]
        for column, value in fields.items()
    }


class _Collector(http.server.BaseHTTPRequestHandler):
    received: list[tuple[str, dict, str]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, json.loads(body), self.headers.get("Authorization", "")))
        self.send_response(201)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list]]:
    _Collector.received = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Collector.received
    server.shutdown()
    server.server_close()


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A socket on 127.0.0.1 that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://ol:{CLI_PASSWORD}@127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_events_of_shaped_rounds_over_file_http_and_a_black_hole(
    spark, tmp_path: Path, collector, black_hole, monkeypatch, caplog
) -> None:  # noqa: ANN001
    monkeypatch.setenv("CUSTOMERS_SALT", "s4lt")
    monkeypatch.setenv("OL_API_KEY", "k3y-0f-th3-api")
    caplog.set_level(logging.INFO, logger="hudi_cdc")
    source, base, events_file = tmp_path / "events", tmp_path / "table", tmp_path / "lineage.jsonl"
    write_events(
        source / "0001.avro",
        SCHEMA,
        [pg_event("c", lsn=10, after=_row(1, "live")), pg_event("c", lsn=11, after=_row(2, "test"))],
    )
    args = [
        *("--source", "files", "--source-path", str(source), "--target-base-path", str(base)),
        *("--target-table", "customers", "--record-key-fields", "id", "--column-renames", "email_address=email"),
        *("--masks", "email=hash", "--masks", "ssn=keep_last:4", "--mask-salt-env", "CUSTOMERS_SALT"),
        *(
            "--computed-columns",
            "label=concat(status, '/', cast(id as string))",
            "--computed-columns",
            "changed=_source_ts_ms",
        ),
        *("--computed-columns", "email_len=length(email)"),
        *("--columns-drop", "notes", "--row-filter", "status <> 'test'"),
    ]
    result = run_cli(*args, "--lineage-transport", "file", "--lineage-file", str(events_file), "--json")
    assert result.exit_code == 0, result.output
    start, complete = list(iter_events(str(events_file)))
    for event in (start, complete):
        _validate(event)
    assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
    assert start["run"]["runId"] == complete["run"]["runId"]
    assert complete["job"] == {"namespace": "hudi-cdc", "name": "hudi-cdc.ingest.customers", "facets": {}}
    (read,) = complete["inputs"]
    assert (read["namespace"], read["name"]) == ("file", str(source))
    assert {"before", "after", "source", "op"} <= {f["name"] for f in read["facets"]["schema"]["fields"]}
    output = complete["outputs"][0]
    assert (output["namespace"], output["name"]) == ("file", str(base))
    assert output["outputFacets"]["outputStatistics"]["rowCount"] == 2  # one upsert, one filtered-out delete

    # The schema facet is the table as committed, read back.
    table = spark.read.format("hudi").load(str(base))
    assert [(f["name"], f["type"]) for f in output["facets"]["schema"]["fields"]] == [
        (f.name, f.dataType.simpleString()) for f in table.schema.fields
    ]
    assert "notes" not in table.columns
    mapping = _mapping(complete)
    assert set(mapping) == set(table.columns)
    assert mapping["id"] == [("after.id", "DIRECT", "IDENTITY", False)]
    assert mapping["status"] == [("after.status", "DIRECT", "IDENTITY", False)]
    assert mapping["email"] == [("after.email_address", "DIRECT", "TRANSFORMATION", True)]
    assert mapping["ssn"] == [("after.ssn", "DIRECT", "TRANSFORMATION", True)]
    assert mapping["label"] == [
        ("after.status", "DIRECT", "TRANSFORMATION", False),
        ("after.id", "DIRECT", "TRANSFORMATION", False),
    ]
    assert mapping["email_len"] == [("after.email_address", "DIRECT", "TRANSFORMATION", True)]
    assert mapping["changed"] == [("source.ts_ms", "DIRECT", "IDENTITY", False)]
    assert mapping["_source_lsn"] == [("source.lsn", "DIRECT", "IDENTITY", False)]
    assert mapping["_source_op"] == [("op", "DIRECT", "IDENTITY", False)]
    assert mapping["_hoodie_is_deleted"] == [("op", "DIRECT", "TRANSFORMATION", False)]
    assert mapping["_ingested_at"] == [] and mapping["_hoodie_commit_time"] == []
    # Every input field the lineage names is a field of the input's schema facet.
    known = _paths(read["facets"]["schema"]["fields"])
    named = {f for edges in mapping.values() for f, *_ in edges}
    assert named and named <= known, named - known
    dataset = output["facets"]["columnLineage"]["dataset"]
    assert [(f["field"], f["transformations"][0]["subtype"]) for f in dataset] == [("after.status", "FILTER")]
    rows = {r["id"]: r for r in table.collect()}
    assert sorted(rows) == [1] and (rows[1]["label"], rows[1]["email_len"]) == ("live/1", 64)

    # Round 2 over http, to a real local server, with the API key from the environment.
    write_events(source / "0002.avro", SCHEMA, [pg_event("u", lsn=20, after=_row(1, "gold"))])
    http_args = ["--lineage-transport", "http", "--lineage-url", collector[0], "--lineage-api-key-env", "OL_API_KEY"]
    # ... and naming the database table behind the change files as an input too.
    table_args = ["--lineage-source-namespace", "postgres://db:5432", "--lineage-source-name", "shop.public.{table}"]
    assert run_cli(*args, *http_args, *table_args).exit_code == 0
    received = collector[1]
    assert [(path, event["eventType"]) for path, event, _ in received] == [
        ("/api/v1/lineage", "START"),
        ("/api/v1/lineage", "COMPLETE"),
    ]
    assert {auth for _, _, auth in received} == {"Bearer k3y-0f-th3-api"}
    second = received[1][1]
    _validate(second)
    folder, database_table = second["inputs"]
    assert (database_table["namespace"], database_table["name"]) == ("postgres://db:5432", "shop.public.events")
    assert {f["name"] for f in database_table["facets"]["schema"]["fields"]} >= {"id", "email_address", "status"}
    by_input: dict[str, dict[str, list]] = {}
    for column, value in second["outputs"][0]["facets"]["columnLineage"]["fields"].items():
        for f in value["inputFields"]:
            by_input.setdefault(f["name"], {}).setdefault(column, []).append(f["field"])
    assert {c: sorted(fs) for c, fs in by_input[folder["name"]].items()} == {
        c: sorted(f for f, *_ in edges) for c, edges in mapping.items() if edges
    }
    from_table = by_input["shop.public.events"]
    assert from_table["email"] == ["email_address"] and from_table["label"] == ["status", "id"]
    assert "_source_lsn" not in from_table and "changed" not in from_table  # the stream's, not the table's

    # Round 3: an endpoint that accepts and never answers costs the round at most the timeout, and it commits.
    write_events(source / "0003.avro", SCHEMA, [pg_event("u", lsn=30, after=_row(1, "silver"))])
    caplog.clear()
    began = time.monotonic()
    third = run_cli(
        *args, "--lineage-transport", "http", "--lineage-url", black_hole, "--lineage-timeout-seconds", "1", "--json"
    )
    took = time.monotonic() - began
    assert third.exit_code == 0, third.output
    round_s = next(json.loads(line) for line in third.output.splitlines() if line.startswith("{"))["duration_s"]
    assert took - round_s < 1 + 5, (took, round_s)  # the timeout, and a generous margin for the rest
    assert spark.read.format("hudi").load(str(base)).collect()[0]["status"] == "silver"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "lineage" in r.getMessage()]
    # The round stops waiting at the timeout; on a busy machine the request's own read timeout may end first.
    assert warnings and any(t in warnings[0] for t in ("did not take the round's events", "ReadTimeout")), warnings
    assert "http://ol:***@127.0.0.1" in warnings[0] and CLI_PASSWORD not in caplog.text + third.output

    # Round 4 fails (an event with an unknown op): START and FAIL, with the reason.
    write_events(source / "0004.avro", SCHEMA, [pg_event("x", lsn=40, after=_row(1, "bad"))])
    failed = run_cli(*args, "--lineage-transport", "file", "--lineage-file", str(events_file))
    assert failed.exit_code == 1
    *_, start, fail = list(iter_events(str(events_file)))
    for event in (start, fail):
        _validate(event)
    assert (start["eventType"], fail["eventType"]) == ("START", "FAIL")
    assert "unknown op 'x'" in fail["run"]["facets"]["errorMessage"]["message"]


def _paths(fields: list[dict], prefix: str = "") -> set[str]:
    """The dotted paths of a schema facet's fields, nested ones included."""
    out = set()
    for f in fields:
        out.add(prefix + f["name"])
        out |= _paths(f.get("fields") or [], prefix + f["name"] + ".")
    return out
