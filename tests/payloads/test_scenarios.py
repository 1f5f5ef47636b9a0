"""Change semantics, table-driven, through the real ``hudi-cdc ingest`` path on COW and MOR.

Each scenario is a list of batches of events for one record key and the row
the table must end with (None: absent). All scenarios share the same few
commits: scenario N uses key N, and batch k of every scenario goes into the
k-th file. Scenarios cover Hudi's payload tests (TestPostgresDebeziumAvroPayload,
TestMySqlDebeziumAvroPayload, TestDebeziumTransformerMerge) and the gaps they leave.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.testing import envelope_schema, mysql_event, oracle_event, pg_event, sqlserver_event, write_events
from tests.support import SETTINGS, apply_events, compact, ingest_args, ingest_batches, run_cli, table_state

pytestmark = pytest.mark.hudi

PH = "__debezium_unavailable_value"
PH_BYTES = PH.encode()
COLUMNS = [
    ("id", "long"),
    ("name", ["null", "string"]),
    ("bio", ["null", "string"]),
    ("data", ["null", "bytes"]),
    ("tags", ["null", {"type": "array", "items": "string"}]),
]
NAMES = tuple(name for name, _ in COLUMNS)


def row(name: str | None = None, bio: Any = "bio", data: Any = b"d", tags: Any = ("t",)) -> dict[str, Any]:
    return {"name": name, "bio": bio, "data": data, "tags": list(tags) if tags is not None else None}


def pg(op: str, lsn: int | None, **values: Any) -> tuple[str, dict[str, Any]]:
    return op, {"lsn": lsn, **values}


# (name, batches of (op, position+values), expected values after all batches or None)
PG_SCENARIOS: list[tuple[str, list[list[tuple[str, dict]]], dict | None]] = [
    ("insert", [[pg("c", 100, **row("a"))]], row("a")),
    (
        "precombine: newer insert beats older update",
        [[pg("c", 120, **row("c120")), pg("u", 99, **row("u99"))]],
        row("c120"),
    ),
    ("precombine: delete beats older update", [[pg("d", 111, **row()), pg("u", 99, **row("u99"))]], None),
    (
        "precombine: older delete loses to newer insert",
        [[pg("d", 111, **row()), pg("c", 120, **row("c120"))]],
        row("c120"),
    ),
    ("merge: newer update wins", [[pg("c", 99, **row("c99"))], [pg("u", 100, **row("u100"))]], row("u100")),
    ("merge: late update ignored", [[pg("c", 99, **row("c99"))], [pg("u", 98, **row("u98"))]], row("c99")),
    ("merge: newer delete removes", [[pg("u", 99, **row("u99"))], [pg("d", 100, **row())]], None),
    ("merge: stale delete ignored", [[pg("u", 99, **row("u99"))], [pg("d", 98, **row())]], row("u99")),
    ("tie: later arrival wins", [[pg("c", 100, **row("first"))], [pg("u", 100, **row("second"))]], row("second")),
    (
        "tie in batch: later arrival wins",
        [[pg("c", 100, **row("first")), pg("u", 100, **row("second"))]],
        row("second"),
    ),
    (
        "snapshot ranks below streaming at the same LSN, same batch",
        [[pg("u", 500, **row("stream")), pg("r", 500, **row("snap"))]],
        row("stream"),
    ),
    (
        "snapshot ranks below streaming at the same LSN, later batch",
        [[pg("u", 500, **row("stream"))], [pg("r", 500, **row("snap"))]],
        row("stream"),
    ),
    (
        "snapshot with null LSN is allowed and oldest",
        [[pg("r", None, **row("snap"))], [pg("u", 5, **row("u5"))]],
        row("u5"),
    ),
    (
        "RFC limit: late update after delete does not resurrect",
        [[pg("c", 100, **row("c"))], [pg("d", 300, **row())], [pg("u", 200, **row("zombie"))]],
        None,
    ),
    (
        "out-of-order delete inside one batch",
        [[pg("c", 100, **row("c"))], [pg("u", 200, **row("u")), pg("d", 300, **row()), pg("u", 250, **row("z"))]],
        None,
    ),
    (
        "HUDI-9169: delete then re-insert across batches",
        [[pg("c", 100, **row("c100"))], [pg("d", 200, **row())], [pg("c", 300, **row("c300"))]],
        row("c300"),
    ),
    (
        "HUDI-9169: delete then re-insert in one batch",
        [[pg("c", 100, **row("c100")), pg("d", 200, **row()), pg("c", 300, **row("c300"))]],
        row("c300"),
    ),
    (
        "re-insert then a late update below the re-insert",
        [
            [pg("c", 100, **row("c100"))],
            [pg("d", 200, **row())],
            [pg("c", 300, **row("c300"))],
            [pg("u", 250, **row("z"))],
        ],
        row("c300"),
    ),
    ("delete of a key never seen", [[pg("d", 100, **row())]], None),
    (
        "TOAST: placeholder in a later batch keeps the stored value",
        [[pg("c", 100, **row("a", bio="long text"))], [pg("u", 110, **row("b", bio=PH))]],
        row("b", bio="long text"),
    ),
    (
        "TOAST: value and placeholder in the same batch",
        [[pg("c", 100, **row("a", bio="long text")), pg("u", 110, **row("b", bio=PH))]],
        row("b", bio="long text"),
    ),
    (
        "TOAST: placeholder arrives before its value in the batch",
        [[pg("u", 110, **row("b", bio=PH)), pg("c", 100, **row("a", bio="long text"))]],
        row("b", bio="long text"),
    ),
    (
        "TOAST: chain of placeholders across batches",
        [
            [pg("c", 100, **row("a", bio="v1"))],
            [pg("u", 110, **row("b", bio=PH)), pg("u", 120, **row("c", bio=PH))],
            [pg("u", 130, **row("d", bio=PH))],
        ],
        row("d", bio="v1"),
    ),
    (
        "TOAST: new value then placeholder in a later batch",
        [
            [pg("c", 100, **row("a", bio="v1"))],
            [pg("u", 110, **row("b", bio="v2"))],
            [pg("u", 120, **row("c", bio=PH))],
        ],
        row("c", bio="v2"),
    ),
    (
        "TOAST: bytea and text[] placeholders",
        [
            [pg("c", 100, **row("a", data=b"\x00\x01big", tags=("x", "y")))],
            [pg("u", 110, **row("b", data=PH_BYTES, tags=(PH,)))],
        ],
        row("b", data=b"\x00\x01big", tags=("x", "y")),
    ),
    (
        "TOAST: explicit NULL is a value and is kept",
        [
            [pg("c", 100, **row("a", bio="v1"))],
            [pg("u", 110, **row("b", bio=None))],
            [pg("u", 120, **row("c", bio=PH))],
        ],
        row("c", bio=None),
    ),
    (
        "TOAST: a replayed older value in the batch does not beat the newer stored value",
        [
            [pg("c", 100, **row("a", bio="v1"))],
            [pg("u", 200, **row("b", bio="v2"))],
            [pg("c", 100, **row("a", bio="v1")), pg("u", 300, **row("c", bio=PH))],
        ],
        row("c", bio="v2"),
    ),
    (
        "TOAST: a replayed placeholder older than the stored row is stale, not an error",
        [
            [pg("c", 100, **row("a", bio="v1"))],
            [pg("u", 150, **row("x", bio=PH)), pg("u", 200, **row("y", bio="v2"))],
            [pg("u", 150, **row("x", bio=PH))],
        ],
        row("y", bio="v2"),
    ),
    (
        "TOAST: placeholder after delete and re-insert takes the re-inserted value",
        [
            [pg("c", 100, **row("a", bio="old"))],
            [pg("d", 200, **row()), pg("c", 300, **row("b", bio="new"))],
            [pg("u", 310, **row("c", bio=PH))],
        ],
        row("c", bio="new"),
    ),
]

MYSQL_SCENARIOS: list[tuple[str, list[list[tuple[str, dict]]], dict | None]] = [
    (
        "binlog rollover: .000010 pos 4 is after .000009 pos 900",
        [
            [("c", {"file": "mysql-bin.000009", "pos": 900, **row("old")})],
            [("u", {"file": "mysql-bin.000010", "pos": 4, **row("new")})],
        ],
        row("new"),
    ),
    (
        "numeric position: 123 is after 23, same batch",
        [
            [
                ("u", {"file": "mysql-bin.000001", "pos": 123, **row("p123")}),
                ("c", {"file": "mysql-bin.000001", "pos": 23, **row("p23")}),
            ]
        ],
        row("p123"),
    ),
    (
        "numeric position: stale pos 23 in a later batch",
        [
            [("u", {"file": "mysql-bin.000001", "pos": 123, **row("p123")})],
            [("c", {"file": "mysql-bin.000001", "pos": 23, **row("p23")})],
        ],
        row("p123"),
    ),
    (
        "row within the event orders events at one position",
        [
            [
                ("u", {"file": "mysql-bin.000002", "pos": 50, "row": 3, **row("r3")}),
                ("u", {"file": "mysql-bin.000002", "pos": 50, "row": 1, **row("r1")}),
            ]
        ],
        row("r3"),
    ),
    (
        "stale delete ignored",
        [
            [("u", {"file": "mysql-bin.000003", "pos": 100, **row("u")})],
            [("d", {"file": "mysql-bin.000002", "pos": 900, **row()})],
        ],
        row("u"),
    ),
    (
        "RFC limit: late update after delete does not resurrect",
        [
            [("c", {"file": "mysql-bin.000001", "pos": 100, **row("c")})],
            [("d", {"file": "mysql-bin.000001", "pos": 300, **row()})],
            [("u", {"file": "mysql-bin.000001", "pos": 200, **row("zombie")})],
        ],
        None,
    ),
    (
        "delete then re-insert",
        [
            [("c", {"file": "mysql-bin.000001", "pos": 100, **row("a")})],
            [("d", {"file": "mysql-bin.000001", "pos": 200, **row()})],
            [("c", {"file": "mysql-bin.000001", "pos": 300, **row("b")})],
        ],
        row("b"),
    ),
    (
        "snapshot ranks below streaming at the same position",
        [
            [("u", {"file": "mysql-bin.000004", "pos": 10, **row("stream")})],
            [("r", {"file": "mysql-bin.000004", "pos": 10, **row("snap")})],
        ],
        row("stream"),
    ),
]


def ms(op: str, commit: int | None, change: int | None, serial: int = 1, **values: Any) -> tuple[str, dict]:
    """A SQL Server event at commit LSN ``commit`` and change LSN ``change`` (small numbers, written as LSNs)."""

    def lsn(n: int | None) -> str | None:
        return None if n is None else f"{n >> 48:08x}:{(n >> 16) & 0xFFFFFFFF:08x}:{n & 0xFFFF:04x}"

    return op, {"commit_lsn": lsn(commit), "change_lsn": lsn(change), "event_serial_no": serial, **values}


SQLSERVER_SCENARIOS: list[tuple[str, list[list[tuple[str, dict]]], dict | None]] = [
    ("insert then update", [[ms("c", 100, 90, **row("a"))], [ms("u", 200, 150, **row("b"))]], row("b")),
    (
        "commit order beats change order: a change made earlier but committed later wins",
        [[ms("u", 300, 120, **row("committed later")), ms("u", 200, 180, **row("committed earlier"))]],
        row("committed later"),
    ),
    (
        "LSN bytes compare as numbers across a VLF boundary (0x0000ffff:... < 0x00010000:...)",
        [[ms("c", 0x0000FFFF_FFFFFFFF_0001, 1, **row("old"))], [ms("u", 0x00010000_00000000_0001, 2, **row("new"))]],
        row("new"),
    ),
    (
        "event_serial_no orders events at one change LSN (a primary-key update is a delete and a create there)",
        [[ms("c", 400, 400, 2, **row("second")), ms("u", 400, 400, 1, **row("first"))]],
        row("second"),
    ),
    (
        "stale update in a later batch ignored",
        [[ms("u", 500, 450, **row("new"))], [ms("u", 300, 250, **row("old"))]],
        row("new"),
    ),
    (
        "late update after delete does not resurrect",
        [[ms("c", 100, 100, **row("c"))], [ms("d", 300, 300, **row())], [ms("u", 200, 200, **row("zombie"))]],
        None,
    ),
    (
        "delete then re-insert",
        [[ms("c", 1, 1, **row("a"))], [ms("d", 2, 2, **row())], [ms("c", 3, 3, **row("b"))]],
        row("b"),
    ),
    (
        "snapshot read (no change LSN) ranks below streaming at its LSN",
        [[ms("u", 700, 700, **row("stream"))], [ms("r", 700, None, None, **row("snap"))]],
        row("stream"),
    ),
]


def ora(
    op: str, commit: int | None, scn: int | None, seq: int | None = None, ssn: int = 0, **values: Any
) -> tuple[str, dict]:  # noqa: E501
    return op, {"commit_scn": None if commit is None else str(commit), "scn": None if scn is None else str(scn),
                "tx_seq": seq, "ssn": ssn, **values}  # fmt: skip


ORACLE_SCENARIOS: list[tuple[str, list[list[tuple[str, dict]]], dict | None]] = [
    ("insert then update", [[ora("c", 100, 90, **row("a"))], [ora("u", 200, 150, **row("b"))]], row("b")),
    (
        "SCNs compare as numbers: 1000 is after 999",
        [[ora("u", 1000, 995, **row("1000"))], [ora("u", 999, 990, **row("999"))]],
        row("1000"),
    ),
    (
        "commit SCN beats the change's SCN",
        [[ora("u", 3000, 1200, **row("committed later")), ora("u", 2000, 1800, **row("committed earlier"))]],
        row("committed later"),
    ),
    (
        "txSeq orders a transaction's changes, even at one SCN",
        [[ora("u", 500, 450, 3, **row("third")), ora("u", 500, 450, 2, **row("second"))]],
        row("third"),
    ),
    (
        "without txSeq, ssn orders statements that share an SCN",
        [[ora("u", 600, 550, None, 7, **row("ssn 7")), ora("u", 600, 550, None, 5, **row("ssn 5"))]],
        row("ssn 7"),
    ),
    (
        "late update after delete does not resurrect",
        [[ora("c", 100, 100, **row("c"))], [ora("d", 300, 300, **row())], [ora("u", 200, 200, **row("zombie"))]],
        None,
    ),
    (
        "snapshot read (no commit SCN) ranks below streaming at its SCN",
        [[ora("u", 700, 690, **row("stream"))], [ora("r", None, 700, **row("snap"))]],
        row("stream"),
    ),
    (
        "a LOB the change left alone keeps the stored value",
        [[ora("c", 800, 800, **row("a", bio="long clob"))], [ora("u", 900, 900, **row("b", bio=PH))]],
        row("b", bio="long clob"),
    ),
]


def _events(scenarios: list, flavor: str) -> list[list[dict]]:
    batches: list[list[dict]] = [[] for _ in range(max(len(s[1]) for s in scenarios))]
    for key, (_, scenario_batches, _) in enumerate(scenarios):
        for number, batch in enumerate(scenario_batches):
            for op, spec in batch:
                spec = dict(spec)
                values = {"id": key, **{c: spec.pop(c) for c in ("name", "bio", "data", "tags")}}
                image = {"before": values} if op == "d" else {"after": values}
                if flavor == "postgres":
                    batches[number].append(pg_event(op, lsn=spec["lsn"], **image))
                elif flavor == "sqlserver":
                    batches[number].append(sqlserver_event(op, **spec, **image))
                elif flavor == "oracle":
                    batches[number].append(oracle_event(op, **spec, **image))
                else:
                    batches[number].append(
                        mysql_event(op, file=spec["file"], pos=spec["pos"], row=spec.get("row", 0), **image)
                    )
    return batches


def _expected(scenarios: list) -> dict[int, tuple]:
    out = {}
    for key, (_, _, expected) in enumerate(scenarios):
        if expected is not None:
            out[key] = (
                key,
                expected["name"],
                expected["bio"],
                expected["data"],
                list(expected["tags"]) if expected["tags"] is not None else None,
            )
    return out


def _check(actual: dict, scenarios: list) -> None:
    expected = _expected(scenarios)
    wrong = [
        f"{name}: expected {expected.get(key)}, table has {actual.get(key)}"
        for key, (name, _, _) in enumerate(scenarios)
        if actual.get(key) != expected.get(key)
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("table_type", ["cow", "mor"])
@pytest.mark.parametrize(
    ("flavor", "scenarios"),
    [("postgres", PG_SCENARIOS), ("mysql", MYSQL_SCENARIOS), ("sqlserver", SQLSERVER_SCENARIOS),
     ("oracle", ORACLE_SCENARIOS)],
    ids=["postgres", "mysql", "sqlserver", "oracle"],
)  # fmt: skip
def test_scenarios(spark, tmp_path: Path, table_type: str, flavor: str, scenarios: list) -> None:
    _run_scenarios(spark, tmp_path, table_type, flavor, scenarios)


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_scenarios_with_a_bucket_index_and_no_metadata_table(spark, tmp_path: Path, table_type: str) -> None:
    _run_scenarios(spark, tmp_path, table_type, "postgres", PG_SCENARIOS, SETTINGS["low-latency"], _written_as_asked)


def _written_as_asked(base: Path) -> None:
    """Before the compaction (whose procedure uses Hudi's defaults): two buckets, no metadata table."""
    files = [p.name.lstrip(".") for p in base.iterdir() if ".parquet" in p.name or ".log." in p.name]
    assert files and {name[:8] for name in files} <= {"00000000", "00000001"}, files
    assert not (base / ".hoodie" / "metadata").exists()


def _run_scenarios(
    spark,
    tmp_path: Path,
    table_type: str,
    flavor: str,
    scenarios: list,
    hoodie_conf: tuple[str, ...] = (),
    check_layout: Callable[[Path], None] | None = None,
) -> None:
    schema = envelope_schema("customers", COLUMNS, flavor=flavor)
    # MOR: no inline compaction, so snapshot reads merge log files; compaction is checked last.
    conf = ["hoodie.compact.inline=false", *hoodie_conf]
    flags = ["--flavor", flavor, *(a for c in conf for a in ("--hoodie-conf", c))]
    base = ingest_batches(
        spark, tmp_path, schema, _events(scenarios, flavor), table_type=table_type, flavor=flavor, extra=flags[2:]
    )
    _check(table_state(spark, base, NAMES), scenarios)
    assert not spark.read.format("hudi").load(base).filter("_hoodie_is_deleted").count()

    # Idempotence: the same events again, all in one batch, change nothing.
    replay = [event for batch in _events(scenarios, flavor) for event in batch]
    write_events(tmp_path / "events" / "zz-replay.avro", schema, replay)
    result = run_cli(*ingest_args(str(tmp_path / "events"), base, table_type=table_type, extra=flags))
    assert result.exit_code == 0, result.output
    _check(table_state(spark, base, NAMES), scenarios)
    if check_layout:
        check_layout(Path(base))

    if table_type == "mor":
        compact(spark, base)
        _check(table_state(spark, base, NAMES, query_type="read_optimized"), scenarios)


def test_placeholder_for_an_unseen_key_fails_the_batch(spark, tmp_path: Path) -> None:
    schema = envelope_schema("customers", COLUMNS)
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(source / "a.avro", schema, [pg_event("c", lsn=10, after={"id": 1, **row("a")})])
    assert run_cli(*ingest_args(str(source), base)).exit_code == 0
    write_events(source / "b.avro", schema, [pg_event("u", lsn=20, after={"id": 2, **row("b", bio=PH)})])
    result = run_cli(*ingest_args(str(source), base))
    assert result.exit_code == 1
    assert "TOAST placeholder" in result.output and "id=2" in result.output and "never seen" in result.output
    assert table_state(spark, base, NAMES) == {1: (1, "a", "bio", b"d", ["t"])}


@pytest.mark.parametrize("table_type", ["cow", "mor"])
@pytest.mark.parametrize("split", [False, True], ids=["one-round", "halves-in-two-rounds"])
def test_primary_key_change_keeps_unchanged_out_of_line_values(
    spark, tmp_path: Path, table_type: str, split: bool
) -> None:
    """``UPDATE t SET id = 2 WHERE id = 1`` under REPLICA IDENTITY DEFAULT, leaving TOASTed values alone.

    Debezium sends a delete of key 1 and a create of key 2, both at the update's
    LSN; the create carries placeholders, and key 2 has no past. The values are
    key 1's: from the same round, or, when the delete was applied a round
    earlier, from the table as of an earlier commit.
    """
    schema = envelope_schema("customers", COLUMNS)
    first = [
        pg_event("c", lsn=10, after={"id": 1, **row("a", bio="long bio", data=b"blob", tags=["x"])}),
        pg_event("u", lsn=15, after={"id": 1, **row("a2", bio=PH, data=PH_BYTES, tags=[PH])}),
        pg_event("c", lsn=16, after={"id": 5, **row("other", bio="bio5")}),
    ]
    gone = row(None, bio=None, data=None, tags=None)  # REPLICA IDENTITY DEFAULT: the before image is the key
    move = [
        pg_event("d", lsn=20, before={"id": 1, **gone}),
        pg_event("c", lsn=20, after={"id": 2, **row("moved", bio=PH, data=PH_BYTES, tags=[PH])}),
    ]
    touched = [pg_event("u", lsn=25, after={"id": 2, **row("touched", bio=PH, data=PH_BYTES, tags=["y"])})]
    again = [  # the same row moved a second time
        pg_event("d", lsn=40, before={"id": 2, **gone}),
        pg_event("c", lsn=40, after={"id": 3, **row("twice", bio=PH, data=PH_BYTES, tags=[PH])}),
    ]
    later = [pg_event("u", lsn=30, after={"id": 5, **row("other2", bio=PH)})]  # a commit after the move's delete
    if split:
        batches = [first, move[:1], later, [*move[1:], *touched], again]
    else:
        batches = [first, [*move, *touched, *again]]
    base = ingest_batches(spark, tmp_path, schema, batches, table_type=table_type)
    expected = apply_events([event for batch in batches for event in batch])
    assert expected[3] == {"id": 3, **row("twice", bio="long bio", data=b"blob", tags=["y"])}
    assert table_state(spark, base, NAMES) == {k: tuple(v[n] for n in NAMES) for k, v in expected.items()}


def test_a_map_column_is_merged_like_any_other(spark, tmp_path: Path) -> None:
    """A map cannot be ordered, so the per-key pass picks with ``max_by`` instead of ``max`` over a struct."""
    from pyspark.sql.types import ArrayType, MapType, StringType, StructField, StructType

    from payloads.base import _orderable

    assert not _orderable(StructType([StructField("m", MapType(StringType(), StringType()))]))
    assert not _orderable(ArrayType(MapType(StringType(), StringType())))
    assert _orderable(StructType([StructField("a", StringType())]))

    schema = envelope_schema("customers", [*COLUMNS, ("attrs", ["null", {"type": "map", "values": "string"}])])
    batches = _events(PG_SCENARIOS, "postgres")
    for event in (e for batch in batches for e in batch):
        image = event["after"] or event["before"]
        image["attrs"] = {"name": str(image["name"])}
    base = ingest_batches(spark, tmp_path, schema, batches, table_type="cow")
    _check(table_state(spark, base, NAMES), PG_SCENARIOS)
    attrs = table_state(spark, base, ("id", "attrs"))
    assert {key: value[1] for key, value in attrs.items()} == {
        key: {"name": str(expected[1])} for key, expected in _expected(PG_SCENARIOS).items()
    }
