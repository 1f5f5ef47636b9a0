"""A repair is a cut boundary (no Kafka, no Spark): a table whose newest commit carries a repair at ``P`` is in no
cut at a transaction from before the repair's snapshot, and is again from the first transaction after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hudi_cdc.ops.repair import _Rank, _Snapshot
from hudi_cdc.service import cutter
from hudi_cdc.service.cut_repairs import after_repair, held_by_repairs
from hudi_cdc.service.cuts import CutStore
from hudi_cdc.service.spec import TableRef, load_pipeline
from hudi_cdc.service.states import TableState
from hudi_cdc.sink import options as opt
from hudi_cdc.sink.hudi import CommitInfo, HudiTable
from hudi_cdc.sources.transactions import TableEvent, TransactionEnd

# What a Postgres repair at WAL 0/3E8 carries in its commit, and every later commit of the table.
PG_REPAIR = _Snapshot(_Rank("postgres", 1000), None, set(), set(), {"lsn": 1000}).repaired_at()
# A MariaDB repair whose snapshot was taken when the server had logged GTID 0-1-41.
MARIA_REPAIR = _Snapshot(_Rank("mysql", 4711, "mysql-bin.000003"), None, set(), set(), {"gtid": "0-1-41"}).repaired_at()


def _end(offset: int, raw: str) -> TransactionEnd:
    return TransactionEnd(offset, raw, {"s.a": 1, "s.b": 1}, key=raw.split(":", 1)[0])


def test_a_transaction_is_after_a_repair_when_its_end_id_is_past_the_repairs_position() -> None:
    assert PG_REPAIR == {"position": "0/3E8", "lsn": 1000}
    assert after_repair("101:1100", PG_REPAIR) and not after_repair("100:900", PG_REPAIR)
    assert not after_repair("100", PG_REPAIR)  # an id without its LSN cannot tell: not after
    assert MARIA_REPAIR == {"position": "mysql-bin.000003:4711", "gtid": "0-1-41"}
    assert after_repair("0-1-42", MARIA_REPAIR) and not after_repair("0-1-41", MARIA_REPAIR)
    assert after_repair("1-1-1", MARIA_REPAIR)  # a domain the server had not logged yet


def test_no_cut_spans_a_repair_before_a_transaction_after_its_snapshot() -> None:
    ends = [_end(1, "100:900"), _end(2, "101:1100")]
    repaired = {"s.a": PG_REPAIR, "s.b": None}
    held = held_by_repairs(ends, ends[0], repaired, None)
    assert list(held) == ["s.a"] and "repaired at 0/3E8" in held["s.a"]
    assert held_by_repairs(ends, ends[1], repaired, None) == {}
    # Passed already: by the previous cut's transaction, or by a cut that held the table with this repair.
    assert held_by_repairs(ends[:1], ends[0], repaired, {"transaction": "99:1050", "tables": {}}) == {}
    previous = {"transaction": "99:990", "tables": {"s.a": {"repaired": dict(PG_REPAIR)}}}
    assert held_by_repairs(ends[:1], ends[0], repaired, previous) == {}


class _Topics:
    """Transactions 100, 101, ... each wrote one event to s.a and one to s.b; ``ends`` of them have ended."""

    def __init__(self, ends: list[TransactionEnd]) -> None:
        self.ends_ = ends

    def watermarks(self, topic: str) -> dict[int, tuple[int, int]]:
        return {0: (0, max(e.offset for e in self.ends_) + 1)}

    def ends(self, topic: str, after: int | None) -> list[TransactionEnd]:
        return [e for e in self.ends_ if after is None or e.offset > after]

    def events(self, topic: str, starts: dict[int, int]) -> tuple[list[TableEvent], dict[int, int]]:
        n = len(self.ends_)
        return [TableEvent(0, k, str(100 + k)) for k in range(starts.get(0, 0), n)], {0: n}


def test_the_cutter_leaves_a_repaired_table_out_until_a_transaction_after_the_repair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's scenario: s.a repaired (its commit carries the repair, checkpoint unchanged) while
    transaction 100 (before the repair's snapshot) is the newest that ended. A cut at 100 would show s.a's
    repaired rows as of 0/3E8 beside s.b as of 100."""
    path = tmp_path / "p.toml"
    path.write_text(
        "[source]\nsource = 'kafka'\nbootstrap_servers = 'x:1'\nschema_registry_url = 'http://x:2'\ntables = '*'\n"
        "[defaults]\ntarget_base_path = '/lake/{table}'\ntarget_table = '{table}'\n"
        "[run]\nconsistent_cut_interval_seconds = 10\n"
    )
    spec = load_pipeline(path)
    heads = {"/lake/a": 1, "/lake/b": 1}

    def checkpoint_commit(self: HudiTable) -> CommitInfo:
        extra = {opt.CHECKPOINT_KEY: json.dumps({"kind": "kafka/v1", "offsets": {"0": heads[self.base_path]}})}
        if self.base_path == "/lake/a":  # the repair's commit, and every later one, carry it
            extra[opt.REPAIRED_AT_KEY] = json.dumps(PG_REPAIR)
        return CommitInfo(f"c{heads[self.base_path]}", "commit", extra)

    monkeypatch.setattr(HudiTable, "checkpoint_commit", checkpoint_commit)
    cut = cutter.Cutter(spec, None, 10, now=0.0)  # type: ignore[arg-type]
    topics = cut.reader = _Topics([_end(1, "100:900")])  # type: ignore[assignment]
    tables = {}
    for name in ("s.a", "s.b"):
        config = spec.table_config(TableRef(f"srv.{name}"))
        tables[name] = TableState(name, f"srv.{name}", config.target_base_path, config=config)

    cut.step(10.0, tables.values())
    first = CutStore.load(spec.run.state_dir).newest
    assert first is not None and first["transaction"] == "100:900"
    assert set(first["tables"]) == {"s.b"}, "the cut at 100 spans s.a's repair"
    assert "repaired at 0/3E8" in first["left_out"]["s.a"]
    # Transaction 101 committed after the repair's snapshot (its END's LSN 1100 > 1000): s.a is cut again.
    topics.ends_.append(_end(2, "101:1100"))
    heads.update({"/lake/a": 2, "/lake/b": 2})
    cut.step(20.0, tables.values())
    second = CutStore.load(spec.run.state_dir).newest
    assert second is not None and second["transaction"] == "101:1100" and set(second["tables"]) == {"s.a", "s.b"}
    assert second["tables"]["s.a"]["repaired"] == PG_REPAIR


def test_a_repairs_commit_and_every_later_one_carry_it(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """Through the real write path: the repair's commit (its source, the ingest's own merge), then an ordinary
    round; the newest checkpoint commit, which the cutter reads for a table's head, names the repair both times."""
    from hudi_cdc.config import IngestConfig
    from hudi_cdc.ops.repair import _RepairSource
    from hudi_cdc.pipeline import ingest_once
    from hudi_cdc.testing import envelope_schema, pg_event, write_events

    schema = envelope_schema("items", [("id", "long"), ("v", ["null", "long"])])
    source, base = tmp_path / "landing", str(tmp_path / "lake" / "items")
    config = IngestConfig(source="files", source_path=str(source), flavor="postgres", target_base_path=base,
                          target_table="items", record_key_fields=("id",))  # fmt: skip

    def head() -> CommitInfo:
        commit = HudiTable(spark, base).checkpoint_commit()
        assert commit is not None
        return commit

    write_events(source / "0001.avro", schema, [pg_event("c", lsn=100, after={"id": 1, "v": 1})])
    ingest_once(config, spark=spark)
    assert opt.REPAIRED_AT_KEY not in head().extra
    # Key 1 repaired to v=5 as the source had it at WAL 0/3E8 (what repair writes after its snapshot read).
    snap = _Snapshot(_Rank("postgres", 1000), spark.createDataFrame([(1, 5)], "id long, v long"), {"1"}, set(),
                     {"lsn": 1000})  # fmt: skip
    nothing = spark.read.format("hudi").load(base).limit(0)
    repair = ingest_once(config, spark=spark, source=_RepairSource(snap, ["1"], nothing, HudiTable(spark, base)))
    assert head().instant == repair.commit_time and json.loads(head().extra[opt.REPAIRED_AT_KEY]) == PG_REPAIR
    write_events(source / "0002.avro", schema, [pg_event("u", lsn=2000, after={"id": 1, "v": 2})])
    later = ingest_once(config, spark=spark).commit_time
    assert head().instant == later and json.loads(head().extra[opt.REPAIRED_AT_KEY]) == PG_REPAIR
    rows = spark.read.format("hudi").load(base).select("id", "v").collect()
    assert [(r["id"], r["v"]) for r in rows] == [(1, 2)]  # the stream's later change outranks the repair
