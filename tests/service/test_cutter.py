"""The runner's cutter (no Kafka, no Spark): which transaction topic and counts a cut is checked against, what
it refuses, how a cut that cannot be made says why and backs off, and a cut marked partial by quarantine."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.ops.status import PipelineStatus
from hudi_cdc.service import cutter
from hudi_cdc.service.cuts import CutStore
from hudi_cdc.service.metrics import PipelineMetrics
from hudi_cdc.service.spec import TableRef, load_pipeline
from hudi_cdc.service.states import TableState
from hudi_cdc.sources.transactions import TableEvent, TransactionEnd


class _Topics:
    """A fake Kafka of one connector: its transaction topic's ENDs (each at its offset) and each table topic's
    messages (their transaction ids). Records which topics were read."""

    def __init__(self, ends: list[TransactionEnd], topics: dict[str, list[str | None]], *, low: int = 0) -> None:
        self.ends_, self.topics, self.low = ends, topics, low
        self.read: list[str] = []  # transaction topics
        self.scanned: list[str] = []  # table topics

    def watermarks(self, topic: str) -> dict[int, tuple[int, int]]:
        return {0: (self.low, max((e.offset for e in self.ends_), default=-1) + 1)}

    def ends(self, topic: str, after: int | None) -> list[TransactionEnd]:
        self.read.append(topic)
        return [e for e in self.ends_ if after is None or e.offset > after]

    def events(self, topic: str, starts: dict[int, int]) -> tuple[list[TableEvent], dict[int, int]]:
        self.scanned.append(topic)
        txs = self.topics[topic]
        return [TableEvent(0, k, tx) for k, tx in enumerate(txs) if k >= starts.get(0, 0)], {0: len(txs)}


def _setup(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    topics: list[str],
    heads: dict[str, int],
    extra: str = "",
) -> tuple[cutter.Cutter, dict[str, TableState]]:
    """A cutter over ``topics`` (routed as ``extra``'s [[routes]] say), whose tables' heads are at
    ``heads`` (table name -> offset); cuts every 10 s."""
    path = tmp_path / "p.toml"
    path.write_text(
        "[source]\nsource = 'kafka'\nbootstrap_servers = 'x:1'\nschema_registry_url = 'http://x:2'\ntables = '*'\n"
        f"{extra}\n[defaults]\ntarget_base_path = '/lake/{{table}}'\ntarget_table = '{{table}}'\n"
        "[run]\nconsistent_cut_interval_seconds = 10\n"
    )
    spec = load_pipeline(path)
    refs, refused = spec.routed([TableRef(t) for t in topics])
    assert not refused
    tables = {}
    for ref in refs:
        config = spec.table_config(ref)
        tables[ref.name] = TableState(ref.name, ref.source_topic, config.target_base_path, config=config)
    by_path = {t.target: heads[n] for n, t in tables.items() if n in heads}
    monkeypatch.setattr(
        cutter,
        "head_commit",
        lambda spark, base: (f"c{by_path[base]}", {0: by_path[base]}) if base in by_path else None,
    )
    return cutter.Cutter(spec, None, 10, now=0.0, metrics=PipelineMetrics("p")), tables  # type: ignore[arg-type]


def _recorded(cut: cutter.Cutter) -> list[dict[str, Any]]:
    return CutStore.load(cut.spec.run.state_dir).cuts


# -- item 2: counts by source collection ----------------------------------------------------------------------
def test_a_routed_table_is_checked_against_its_source_collections_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # crm.customers is routed to crm_customers: t2 wrote 2 events to it, one has arrived. A count looked up by
    # the target's name reads 0 and lets t2 through, half of it in crm_customers.
    routes = "[[routes]]\ntables = ['crm.customers']\ntarget = 'crm_customers'\n"
    cut, tables = _setup(
        tmp_path, monkeypatch, ["srv.crm.customers", "srv.s.orders"], {"crm_customers": 1, "s.orders": 1}, routes
    )
    assert set(tables) == {"crm_customers", "s.orders"} and tables["crm_customers"].topic == "srv.crm.customers"
    cut.reader = _Topics(  # type: ignore[assignment]
        [
            TransactionEnd(1, "t1", {"crm.customers": 1, "s.orders": 1}),
            TransactionEnd(2, "t2", {"crm.customers": 2, "s.orders": 1}),
        ],
        {"srv.crm.customers": ["t1", "t2"], "srv.s.orders": ["t1", "t2"]},
    )
    cut.step(10.0, tables.values())
    assert tables["crm_customers"].until is None  # no bounded round into t2
    [recorded] = _recorded(cut)
    assert recorded["transaction"] == "t1"
    assert recorded["tables"]["crm_customers"]["collections"] == ["crm.customers"]
    assert recorded["tables"]["crm_customers"]["offsets"] == {"0": 1}


def test_sql_server_tables_use_the_prefix_transaction_topic_and_db_schema_table_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "flavor = 'sqlserver'\n"
    cut, tables = _setup(tmp_path, monkeypatch, ["srv.testDB.dbo.orders"], {"dbo.orders": 1}, "")
    spec_file = tmp_path / "p.toml"
    spec_file.write_text(spec_file.read_text().replace("tables = '*'\n", "tables = '*'\n" + text))
    cut.spec = load_pipeline(spec_file)
    assert cut.spec.source.flavor == "sqlserver"
    topics = _Topics(
        [TransactionEnd(1, "t1", {"testDB.dbo.orders": 1}), TransactionEnd(2, "t2", {"testDB.dbo.orders": 2})],
        {"srv.testDB.dbo.orders": ["t1", "t2"]},  # one of t2's two events has arrived
    )
    cut.reader = topics  # type: ignore[assignment]
    cut.step(10.0, tables.values())
    assert topics.read == ["srv.transaction"]  # Debezium's <topic.prefix>.transaction, not srv.testDB.transaction
    [recorded] = _recorded(cut)
    assert recorded["transaction"] == "t1" and recorded["tables"]["dbo.orders"]["collections"] == ["testDB.dbo.orders"]


# -- item 3: one server per cut -----------------------------------------------------------------------------------
def test_tables_of_two_servers_are_refused_with_the_fix_and_no_transaction_topic_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut, tables = _setup(tmp_path, monkeypatch, ["one.s.a", "two.s.b"], {"s.a": 1, "s.b": 1})
    # Postgres txids are small integers: srv two's t1 matches srv one's END by accident.
    topics = _Topics([TransactionEnd(1, "t1", {"s.a": 1, "s.b": 1})], {"one.s.a": ["t1"], "two.s.b": ["t1"]})
    cut.reader = topics  # type: ignore[assignment]
    cut.step(10.0, tables.values())
    assert _recorded(cut) == [] and topics.read == [] and topics.scanned == []  # refused before reading
    blocked = cut.blocked_now()
    assert blocked is not None
    assert "2 Debezium servers (one: one.s.a; two: two.s.b)" in blocked["reason"]
    assert "one pipeline per server" in blocked["reason"] and "consistent_cut_interval_seconds = 0" in blocked["reason"]


# -- item 5: a recreated transaction topic ------------------------------------------------------------------------
def _one_cut_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: list[TransactionEnd], low: int = 0
) -> tuple[cutter.Cutter, dict[str, TableState], _Topics]:
    """A cutter whose first cut is at t5 (transaction-topic offset 10); then the topic holds ``after``."""
    heads = {"s.a": 1}
    cut, tables = _setup(tmp_path, monkeypatch, ["srv.s.a"], heads)
    events: list[str | None] = ["t5"]
    cut.reader = _Topics([TransactionEnd(10, "t5", {"s.a": 1})], {"srv.s.a": events})  # type: ignore[assignment]
    cut.step(10.0, tables.values())
    assert [c["transaction"] for c in _recorded(cut)] == ["t5"]
    events += ["n1", "n2"]  # n2's event for s.a has not arrived (it wrote 2)
    topics = _Topics(after, {"srv.s.a": events}, low=low)
    cut.reader = topics  # type: ignore[assignment]
    return cut, tables, topics


def test_a_recreated_transaction_topic_is_refused_with_the_topic_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The topic was recreated: its new ENDs are at offsets 1 and 3, below the last cut's 10. Their counts must
    # not be skipped as "ended before the previous cut", which would record n2 with half its events.
    cut, tables, _ = _one_cut_then(
        tmp_path, monkeypatch, [TransactionEnd(1, "n1", {"s.a": 1}), TransactionEnd(3, "n2", {"s.a": 2})]
    )
    now = 10.0
    for _ in range(cutter.MISSES_BEFORE_FULL_READ + 2):  # past the plans after which the whole topic is read
        now = max(now, cut.next_at)
        cut.step(now, tables.values())
    assert tables["s.a"].until is None  # no bounded round into n2, half of which has arrived
    assert [c["transaction"] for c in _recorded(cut)] == ["t5"]
    blocked = cut.blocked_now()
    assert blocked is not None and blocked["failed_plans"] == cutter.MISSES_BEFORE_FULL_READ + 2
    assert "the transaction topic srv.transaction was recreated or truncated" in blocked["reason"]
    assert "offsets end at 4, at or below offset 10, the END of transaction t5" in blocked["reason"]
    assert f"move {cut.store.path} aside" in blocked["reason"]


def test_a_recreated_topic_grown_past_the_last_cut_is_refused_and_an_expired_end_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grown = [TransactionEnd(k, f"x{k}", {"other.t": 1}) for k in range(12)]
    cut, tables, _ = _one_cut_then(tmp_path, monkeypatch, grown)
    cut.step(20.0, tables.values())
    blocked = cut.blocked_now()
    assert (
        blocked is not None
        and "offset 10 holds the END of transaction x10, not the END of transaction t5" in (blocked["reason"])
    )
    # The same topic, its old messages expired by retention (oldest retained 11): nothing to compare, no refusal.
    (tmp_path / "b").mkdir()
    cut, tables, _ = _one_cut_then(tmp_path / "b", monkeypatch, [TransactionEnd(12, "n1", {"s.a": 1})], low=11)
    cut.step(20.0, tables.values())
    assert tables["s.a"].until == {0: 2} and cut.blocked_now() is None
    cut.round_done(tables["s.a"], "c2", 21.0)
    assert [c["transaction"] for c in _recorded(cut)] == ["t5", "n1"]


# -- item 7: quarantine makes a cut partial -----------------------------------------------------------------------
def test_events_quarantined_before_a_cut_mark_it_partial_with_the_tables_and_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut, tables = _setup(tmp_path, monkeypatch, ["srv.s.a", "srv.s.b"], {"s.a": 1, "s.b": 2})
    ends = [TransactionEnd(1, "t1", {"s.a": 1, "s.b": 1}), TransactionEnd(2, "t2", {"s.a": 1, "s.b": 1})]
    cut.reader = _Topics(ends, {"srv.s.a": ["t1", "t2"], "srv.s.b": ["t1", "t2"]})  # type: ignore[assignment]
    cut.step(1.0, tables.values())  # the cutter first sees the tables: what they quarantined so far is old
    tables["s.b"].quarantined += 3  # its own round since then set 3 events aside, up to its head (t2)
    cut.step(10.0, tables.values())
    assert tables["s.a"].until == {0: 2}
    cut.round_done(tables["s.a"], "c2a", 11.0, quarantined=1)  # its bounded round set 1 aside
    [recorded] = _recorded(cut)
    assert recorded["transaction"] == "t2"
    assert recorded["partial"] == {"s.a": {"quarantined": 1}, "s.b": {"quarantined": 3}}
    text = PipelineStatus("p", None, [], {**recorded, "behind": {}, "age_s": 0.0}).describe()
    assert "PARTIAL, events quarantined: s.a 1, s.b 3" in text
    # The next cut holds only what was quarantined since this one: none.
    tables["s.a"].quarantined += 1  # the runner counts the bounded round's after round_done
    ends.append(TransactionEnd(3, "t3", {"s.a": 1}))
    cut.reader.topics["srv.s.a"].append("t3")  # type: ignore[attr-defined]
    monkeypatch.setattr(cutter, "head_commit", lambda spark, base: ("c", {0: 3 if base == "/lake/a" else 2}))
    cut.step(cut.next_at, tables.values())
    assert [(c["transaction"], c["partial"]) for c in _recorded(cut)][-1] == ("t3", {})


# -- item 8: a cut that cannot be made says why and backs off -----------------------------------------------------
def test_a_cut_that_cannot_be_made_says_why_in_status_and_metrics_and_backs_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut, tables = _setup(tmp_path, monkeypatch, ["srv.s.a"], {"s.a": 0})
    # t1 wrote 2 events to s.a and one will never come (its END expired, a lost message): no cut, ever.
    cut.reader = _Topics([TransactionEnd(1, "t1", {"s.a": 2})], {"srv.s.a": ["t1"]})  # type: ignore[assignment]
    now, waits = 10.0, []
    for _ in range(9):
        cut.step(now, tables.values())
        assert cut.underway is None  # not left draining: the tables go on with their rounds
        waits.append(cut.next_at - now)
        now = cut.next_at
    assert waits == [2, 4, 8, 16, 32, 64, 80, 80, 80]  # doubling, up to 8 cut intervals
    blocked = cut.blocked_now()
    assert blocked is not None and blocked["failed_plans"] == 9
    assert blocked["reason"] == "s.a holds 1 of the 2 events transaction t1 wrote to s.a"
    assert cut.metrics is not None
    registry = cut.metrics.registry
    assert registry.get_sample_value("hudi_cdc_cut_failed_plans") == 9
    assert registry.get_sample_value("hudi_cdc_cuts_total", {"result": "no_cut"}) == 9
    runner = {"pid": 1, "alive": True, "updated_at": "-", "cut_underway": None, "cut_blocked": blocked}
    text = PipelineStatus("p", runner, [], None).describe()
    assert "consistent cuts not made since" in text and "(9 plan(s) in a row): s.a holds 1 of the 2 events" in text
    # The missing event arrives: the next plan records the cut, and the status and gauge are cleared.
    cut.reader.topics["srv.s.a"].append("t1")  # type: ignore[attr-defined]
    cut.step(now, tables.values())
    assert tables["s.a"].until == {0: 2}
    assert tables["s.a"].until_at == now  # when it was bound: its round's cut_wait_s counts from here
    cut.round_done(tables["s.a"], "c1", now)
    assert [c["transaction"] for c in _recorded(cut)] == ["t1"] and cut.blocked_now() is None
    assert tables["s.a"].until is None and tables["s.a"].until_at is None
    # Each cut says when it was planned and how long the runner's loop spent on it (no round starts meanwhile).
    [recorded] = _recorded(cut)
    assert recorded["planned_at"] <= recorded["at"] and 0 <= recorded["plan_s"] < 5
    assert registry.get_sample_value("hudi_cdc_cut_plan_seconds_count") == 10  # the 9 that made none too
    assert registry.get_sample_value("hudi_cdc_cut_failed_plans") == 0
    assert registry.get_sample_value("hudi_cdc_cuts_total", {"result": "recorded"}) == 1


def test_a_bounded_round_cut_short_by_source_limit_reports_every_round_s_quarantined_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without Kafka or Spark: the rounds' results are given, each committing part of the way to the cut."""
    from types import SimpleNamespace

    from hudi_cdc import pipeline
    from hudi_cdc.pipeline import IngestResult
    from hudi_cdc.service.runner import Runner
    from hudi_cdc.sources import kafka

    rounds = iter([(2, {0: 1}), (1, {0: 2})])  # (quarantined, offsets committed): source_limit cut it in two
    committed: dict[str, Any] = {}

    def one_round(config: Any, **kwargs: Any) -> IngestResult:  # noqa: ANN401
        quarantined, committed["offsets"] = next(rounds)
        return IngestResult(table="a", base_path="/lake/a", commit_time="c", checkpoint=None, events=3,
                            quarantined=quarantined)  # fmt: skip

    monkeypatch.setattr(pipeline, "ingest_once", one_round)
    monkeypatch.setattr(kafka, "KafkaSource", lambda *args, **kwargs: None)
    monkeypatch.setattr(cutter, "head_commit", lambda spark, base: ("c", committed["offsets"]))
    table = TableState("s.a", "srv.s.a", "/lake/a", config=SimpleNamespace(target_base_path="/lake/a"))  # type: ignore[arg-type]
    table.round_started_s = 47.5
    result = Runner._bounded_round(SimpleNamespace(spark=None), table, {0: 2}, planned_at=10.0)  # type: ignore[arg-type]
    assert table.cut_commit == "c" and result.quarantined == 3  # the cut lacks all 3, not the last round's 1
    # It read only to offsets planned 37.5 s before it started: the freshness the cut cost it, said per round.
    assert result.details == {"cut_bound": True, "cut_wait_s": 37.5}


# -- issue 56: a plan reads only what arrived since the previous plan -------------------------------------------
def test_each_plan_reads_only_the_messages_and_ends_that_arrived_since_the_previous_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut, tables = _setup(tmp_path, monkeypatch, ["srv.s.a"], {"s.a": 0})
    topics = _Topics([TransactionEnd(1, "t1", {"s.a": 2})], {"srv.s.a": ["t1"]})  # t1's 2nd event not here yet
    reads: list[tuple[int | None, list[int]]] = []  # per read of the transaction topic: from, offsets read
    scans: list[tuple[dict[int, int], list[int]]] = []  # per read of the table's topic: from, offsets read
    ends, events = topics.ends, topics.events

    def read_ends(topic: str, after: int | None) -> list[TransactionEnd]:
        found = ends(topic, after)
        reads.append((after, [e.offset for e in found]))
        return found

    def read_events(topic: str, starts: dict[int, int]) -> tuple[list[TableEvent], dict[int, int]]:
        found, end = events(topic, starts)
        scans.append((dict(starts), [e.offset for e in found]))
        return found, end

    topics.ends, topics.events = read_ends, read_events  # type: ignore[method-assign]
    cut.reader = topics  # type: ignore[assignment]
    cut.step(10.0, tables.values())
    assert cut.blocked_now() is not None and _recorded(cut) == []  # s.a holds 1 of t1's 2 events
    # t1's second event arrives, and t2 (one event) ends: the next plan reads those, not all since the start.
    topics.topics["srv.s.a"] += ["t1", "t2"]
    topics.ends_.append(TransactionEnd(2, "t2", {"s.a": 1}))
    cut.step(cut.next_at, tables.values())
    assert tables["s.a"].until == {0: 3}
    cut.round_done(tables["s.a"], "c3", cut.next_at)
    assert [c["transaction"] for c in _recorded(cut)] == ["t2"]
    # After the cut: one more transaction; read on from there again.
    topics.topics["srv.s.a"] += ["t3"]
    topics.ends_.append(TransactionEnd(3, "t3", {"s.a": 1}))
    monkeypatch.setattr(cutter, "head_commit", lambda spark, base: ("c3", {0: 3}))
    cut.step(cut.next_at, tables.values())
    assert tables["s.a"].until == {0: 4}
    # The transaction topic: all of it once, then from the newest END read on (itself again: still there?).
    assert reads == [(None, [1]), (0, [1, 2]), (1, [2, 3])]
    # The table's topic: from its oldest message once, then each message once.
    assert scans == [({}, [0]), ({0: 1}, [1, 2]), ({0: 3}, [3])]


def test_a_plan_reads_no_timeline_of_a_table_whose_own_rounds_reported_its_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut, tables = _setup(tmp_path, monkeypatch, ["srv.s.a"], {"s.a": 1})
    table = tables["s.a"]
    table.writer = cutter.THIS_RUNNER
    read = cutter.head_commit
    timelines: list[str] = []
    monkeypatch.setattr(cutter, "head_commit", lambda spark, base: timelines.append(base) or read(spark, base))
    ends = [TransactionEnd(1, "t1", {"s.a": 1})]
    cut.reader = _Topics(ends, {"srv.s.a": ["t1"]})  # type: ignore[assignment]
    cut.step(10.0, tables.values())
    assert [c["tables"]["s.a"]["commit"] for c in _recorded(cut)] == ["c1"] and len(timelines) == 1
    # Its round commits t2's event, and reports it: the next plan takes that head as it is.
    cut.reader.topics["srv.s.a"].append("t2")  # type: ignore[attr-defined]
    ends.append(TransactionEnd(2, "t2", {"s.a": 1}))
    cut.round_ended(table, 15.0, commit="c2", offsets={0: 2})
    cut.step(cut.next_at, tables.values())
    assert [c["tables"]["s.a"]["commit"] for c in _recorded(cut)] == ["c1", "c2"] and len(timelines) == 1
    # Handed over to another runner (which may commit): its timeline is read again.
    table.writer = "handed over to runner 2"
    ends.append(TransactionEnd(3, "t3", {"other.t": 1}))
    cut.step(cut.next_at, tables.values())
    assert len(timelines) == 2


def test_a_repair_committed_while_a_cut_waits_for_its_table_abandons_the_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut, tables = _setup(tmp_path, monkeypatch, ["srv.s.a"], {"s.a": 1})
    table = tables["s.a"]
    cut.reader = _Topics([TransactionEnd(1, "t1", {"s.a": 1})], {"srv.s.a": ["t1"]})  # type: ignore[assignment]
    table.state = "running"  # its round under way (a repair's, as it turns out) is waited for
    cut.step(10.0, tables.values())
    assert cut.underway_now() == {"transaction": "t1", "pending": ["s.a"]}
    repaired = cutter._Head(("r1", {0: 1}))  # noqa: SLF001 - a head as head_commit reads it
    repaired.repaired = {"position": "0/3E8"}
    monkeypatch.setattr(cutter, "head_commit", lambda spark, base: repaired)
    table.state = "waiting"
    cut.round_ended(table, 11.0, commit="r1")  # the repair's commit: at the cut's offsets, but repaired
    blocked = cut.blocked_now()
    assert _recorded(cut) == [] and table.until is None and cut.underway is None
    assert blocked is not None and blocked["reason"] == "abandoned: s.a was repaired while the cut waited for it"


def test_a_plan_on_the_kept_runs_and_counts_is_the_plan_on_every_message() -> None:
    """What the cutter keeps of a table's messages (the first of each run of one transaction, and each
    transaction's distinct events) plans every cut where all the messages would, before and after a cut
    moves the table's place on; over generated topics with redeliveries, tombstones, snapshot reads, messages
    that do not decode and transactions still arriving."""
    import random

    from hudi_cdc.service.cuts import TableScan, plan_or_why

    rng = random.Random(56)
    planned = planned_after = 0
    for _ in range(300):
        ends = [TransactionEnd(o, f"t{o}", {"s.a": 0}) for o in range(1, 9)]
        counts: dict[str, int] = {}
        events: list[TableEvent] = []
        offsets = {0: 0, 1: 0}
        for end in ends + [TransactionEnd(99, "t99")]:  # t99: no END read yet
            for k in range(rng.randint(0, 3)):
                p = rng.randint(0, 1)
                kind = rng.random()
                if kind < 0.05:
                    events.append(TableEvent(p, offsets[p], None))  # a snapshot read
                elif kind < 0.08:
                    events.append(TableEvent(p, offsets[p], None, undecodable=True))
                else:
                    events.append(TableEvent(p, offsets[p], end.id, collection="s.a", order=k))
                    counts[end.id] = k + 1
                    if rng.random() < 0.1:  # redelivered
                        offsets[p] += 1
                        events.append(TableEvent(p, offsets[p], end.id, collection="s.a", order=k))
                    if rng.random() < 0.1:
                        offsets[p] += 1
                        events.append(TableEvent(p, offsets[p], None, tombstone=True))
                offsets[p] += 1
        ends = [TransactionEnd(e.offset, e.id, {"s.a": rng.choice([counts.get(e.id, 0)] * 5 + [9])}) for e in ends]
        end = {p: o for p, o in offsets.items()}
        tail = cutter._TableTail("srv.s.a", {}, dict(end))  # noqa: SLF001
        split = rng.randint(0, len(events))
        tail.add(events[:split])
        tail.add(events[split:])  # read by two plans

        def kept(t: cutter._TableTail) -> TableScan:  # noqa: SLF001
            seen = {x: len(e) for x, e in t.events.items()}
            return TableScan("s.a", {}, list(t.heads), dict(t.end), -1, frozenset({"s.a"}), seen=seen)

        first = ends[: rng.randint(1, len(ends))]  # the ENDs read by the first cut's plan
        whole = plan_or_why(first, [TableScan("s.a", {}, events, end, -1, frozenset({"s.a"}))])
        assert plan_or_why(first, [kept(tail)]) == whole
        if isinstance(whole, str):
            continue
        planned += 1
        # The cut is recorded: the next plan starts from its offsets and its END.
        starts = dict(whole.offsets["s.a"])
        tail.forget_before(starts)
        later = [e for e in ends if e.offset > whole.end.offset]
        rest = [e for e in events if e.offset >= starts[e.partition]]
        after = TableScan("s.a", {}, rest, end, whole.end.offset, frozenset({"s.a"}))
        again = kept(tail)
        again = TableScan("s.a", {}, again.events, again.end, whole.end.offset, again.collections, seen=again.seen)
        assert plan_or_why(later, [again]) == plan_or_why(later, [after])
        planned_after += not isinstance(plan_or_why(later, [after]), str)
    assert planned > 100 and planned_after > 30  # most generated topics have cuts to plan


def test_the_cuts_transaction_reader_logs_in_to_the_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cutter decodes END events with schemas from the registry: with [source]'s login, as every other
    registry client does (a registry asking for one refused every plan when the cutter was built without it)."""
    import base64
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    wanted = "Basic " + base64.b64encode(b"cuts:s3cret").decode()

    class Registry(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            ok = self.headers.get("Authorization") == wanted
            body = json.dumps({"schema": '"string"'} if ok else {"error_code": 401, "message": "Unauthorized"})
            self.send_response(200 if ok else 401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("CUTS_REGISTRY_PASSWORD", "s3cret")
        path = tmp_path / "p.toml"
        path.write_text(
            "[source]\nsource = 'kafka'\nbootstrap_servers = 'x:1'\n"
            f"schema_registry_url = 'http://127.0.0.1:{server.server_port}'\nschema_registry_username = 'cuts'\n"
            "schema_registry_password_env = 'CUTS_REGISTRY_PASSWORD'\ntables = '*'\n"
            "[defaults]\ntarget_base_path = '/lake/{table}'\ntarget_table = '{table}'\n"
            "[run]\nconsistent_cut_interval_seconds = 10\n"
        )
        cut = cutter.Cutter(load_pipeline(path), None, 10, now=0.0)  # type: ignore[arg-type]
        assert cut.reader._registry.schema(4242) == "string"  # the reader's own registry client, logged in
    finally:
        server.shutdown()


def test_a_round_claiming_past_the_cut_while_it_is_planned_makes_the_cutter_plan_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the plan guards against: a round of the table starts (and claims how far it reads) between the
    plan's look at the claims and its bounds. The cut is given up and planned again, never left half bound."""
    cut, tables = _setup(tmp_path, monkeypatch, ["srv.s.a"], {"s.a": 1})
    table = tables["s.a"]
    table.state, table.claimed = "running", {0: 1}
    topics = _Topics([TransactionEnd(1, "t1", {"s.a": 1})], {"srv.s.a": ["t1", "t2", "t3"]})
    events, raced = topics.events, []

    def events_while_a_round_starts(topic: str, starts: dict[int, int]) -> tuple[list[TableEvent], dict[int, int]]:
        if not raced:  # the round's worker thread, as the plan reads the table's topic
            raced.append(cut.claim(table, {0: 3}))
        return events(topic, starts)

    topics.events = events_while_a_round_starts  # type: ignore[method-assign]
    cut.reader = topics  # type: ignore[assignment]
    planner = threading.Thread(target=cut.step, args=(10.0, tables.values()), daemon=True)
    planner.start()
    planner.join(timeout=30)
    assert not planner.is_alive(), "the cutter deadlocked on its own lock"
    assert raced == [None]  # the round was bound by no cut when it claimed
    # Planned again from the new claim: the table reads past t1 with t2 not ended, so no cut now, and none bound.
    assert table.until is None and cut.underway is None and _recorded(cut) == []
    assert cut.blocked_now() is not None


def test_tables_without_a_commit_yet_are_planned_again_each_interval_not_backed_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's first rounds have not committed: no plan failed (nothing was read), so no backoff and no miss
    counted; the first cut follows the first commit by at most one interval."""
    cut, tables = _setup(tmp_path, monkeypatch, ["srv.s.a"], {})  # no head: s.a has no commit yet
    missed: list[dict[str, Any]] = []  # what the metrics were told (an alert rule watches failed plans)
    monkeypatch.setattr(cut.metrics, "cut_missed", lambda **seen: missed.append(seen))
    cut.reader = _Topics([TransactionEnd(1, "t1", {"s.a": 1})], {"srv.s.a": ["t1"]})  # type: ignore[assignment]
    now = 10.0
    for _ in range(6):  # 2, 4, 8, 16, 32, 64 s apart if each counted as a failed plan
        cut.step(now, tables.values())
        assert cut.next_at == now + 10 and cut.misses == 0
        now = cut.next_at
    blocked = cut.blocked_now()
    assert blocked is not None and blocked["reason"] == "no table can take part: s.a (new: no commit yet)"
    assert missed == []
    monkeypatch.setattr(cutter, "head_commit", lambda spark, base: ("c1", {0: 1}))  # its first commit
    cut.step(now, tables.values())
    assert [c["transaction"] for c in _recorded(cut)] == ["t1"] and cut.blocked_now() is None


def test_a_table_hudi_is_still_creating_has_no_head_yet_and_other_errors_still_fail_the_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seen in the pipeline benchmark: a plan read a table while its first round created it (the folder there,
    Hudi's meta client refusing it), and the plan failed as an error. That table has no commit yet."""
    from hudi_cdc.sink import hudi

    class _Creating:
        def __init__(self, spark: object, base_path: str) -> None:
            self.base_path = base_path

        def checkpoint_commit(self) -> None:
            raise RuntimeError(
                "An error occurred while calling o34684.build.\n: org.apache.hudi.exception.TableNotFoundException: "
                "Hoodie table not found in path Table does not exist"
            )

    monkeypatch.setattr(hudi, "HudiTable", _Creating)
    assert cutter.head_commit(None, "/lake/t") is None  # type: ignore[arg-type]

    class _Broken(_Creating):
        def checkpoint_commit(self) -> None:
            raise RuntimeError("An error occurred while calling o1.getCommitMetadata.\n: java.io.IOException: gone")

    monkeypatch.setattr(hudi, "HudiTable", _Broken)
    with pytest.raises(RuntimeError, match="gone"):
        cutter.head_commit(None, "/lake/t")  # type: ignore[arg-type]
