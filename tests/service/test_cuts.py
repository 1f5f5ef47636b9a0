"""Where a consistent cut falls (pure: no Kafka, no Spark), and how cuts are kept and picked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hudi_cdc.errors import ConfigError
from hudi_cdc.service.cuts import CutPlan, CutStore, TableScan, new_cut, plan_cut, plan_or_why
from hudi_cdc.service.spec import TableRef
from hudi_cdc.sources.transactions import TableEvent, TransactionEnd


def _end(offset: int, tx: str, **counts: int) -> TransactionEnd:
    return TransactionEnd(offset, tx, {f"s.{k}": v for k, v in counts.items()})


def _scan(name: str, transactions: list[str | None], *, head: int = 0, start: int = 0) -> TableScan:
    """A one-partition table whose messages from offset ``start`` belong to ``transactions`` ("~": tombstone)."""
    events = [
        TableEvent(0, start + k, None if tx == "~" else tx, tombstone=tx == "~") for k, tx in enumerate(transactions)
    ]
    return TableScan(f"s.{name}", {0: head}, events, {0: start + len(transactions)})


def test_the_newest_transaction_whose_events_all_arrived_is_the_cut() -> None:
    ends = [_end(1, "t1", a=1, b=1), _end(3, "t2", a=2), _end(5, "t3", a=1, b=1)]
    a = _scan("a", ["t1", "t2", "t2", "t3"])
    b = _scan("b", ["t1"])  # t3's event for b has not arrived: the cut is t2
    plan = plan_cut(ends, [a, b])
    assert plan is not None and plan.end.id == "t2"
    assert plan.offsets == {"s.a": {0: 3}, "s.b": {0: 1}}


def test_a_tombstone_goes_with_its_delete_and_snapshot_reads_come_first() -> None:
    ends = [_end(1, "t1", a=2)]
    a = _scan("a", [None, None, "t1", "t1", "~", "t9"])  # t9: not ended yet
    plan = plan_cut(ends, [a])
    assert plan is not None and plan.offsets == {"s.a": {0: 5}}


def test_no_cut_before_what_a_table_already_holds() -> None:
    ends = [_end(1, "t1", a=1), _end(2, "t2", a=1)]
    a = _scan("a", ["t1", "t2", "t3"], head=3)  # its newest commit holds t3, not ended yet
    assert plan_cut(ends, [a]) is None
    # Once t3 ends, the cut is t3 and the table needs no bounded round.
    plan = plan_cut([*ends, _end(3, "t3", a=1)], [a])
    assert plan is not None and plan.end.id == "t3" and plan.offsets == {"s.a": {0: 3}}


def test_a_redelivered_transaction_is_never_split() -> None:
    # After a connector restart t2 is sent again behind t3: a cut at t2 would leave its copy after t3 out.
    ends = [_end(1, "t1", a=1), _end(2, "t2", a=1), _end(3, "t3", a=1), _end(4, "t2", a=1)]
    a = _scan("a", ["t1", "t2", "t3", "t2", "t4"])
    plan = plan_cut(ends, [a])
    assert plan is not None and plan.end.id == "t3" and plan.offsets == {"s.a": {0: 4}}
    early = plan_cut(ends[:2], [a])  # t3 not ended yet: t2's copy after it keeps the cut at t1
    assert early is not None and early.end.id == "t1" and early.offsets == {"s.a": {0: 1}}


def test_a_transaction_whose_end_was_not_read_is_never_taken_for_an_old_one() -> None:
    # t4 before t5: t4 ended before the transaction topic was read from (a redelivery of an old transaction),
    # or is a redelivery of one not ended: either way no cut until its END is read (from the topic's start).
    a = _scan("a", ["t4", "t5", "t6"], head=1, start=10)
    assert plan_cut([_end(7, "t5", a=1)], [a]) is None
    plan = plan_cut([_end(2, "t4", a=1), _end(7, "t5", a=1)], [a])
    assert plan is not None and plan.end.id == "t5" and plan.offsets == {"s.a": {0: 12}}


def test_a_table_joining_a_cut_reads_all_ends_and_the_others_skip_those_before_their_scan() -> None:
    # b was in the previous cut (END offset 2): t1 wrote to it before its scan starts; a joins from its start.
    ends = [_end(2, "t1", a=1, b=1), _end(4, "t2", a=1, b=1)]
    a = _scan("a", ["t1", "t2"], head=1)
    b = TableScan("s.b", {0: 6}, [TableEvent(0, 6, "t2")], {0: 7}, ended_before=2)
    plan = plan_cut(ends, [a, b])
    assert plan is not None and plan.end.id == "t2" and plan.offsets == {"s.a": {0: 2}, "s.b": {0: 7}}
    assert plan_cut(ends, [a, TableScan("s.b", {0: 6}, [TableEvent(0, 6, "t2")], {0: 7})]) is None


def test_nothing_ended_means_no_cut() -> None:
    assert plan_cut([], [_scan("a", ["t1"])]) is None


def test_counts_are_matched_by_the_source_collections_a_table_reads_summed_over_a_merge() -> None:
    # A table fed by two source collections (a merge, or a topic renamed by a transform), named after neither:
    # matched by the collections its events' source blocks name. t1 wrote 2 events to shop_1.orders.
    ends = [TransactionEnd(1, "t1", {"shop_1.orders": 2})]
    half = [TableEvent(0, 0, "t1", collection="shop_1.orders", order=1)]
    assert plan_or_why(ends, [TableScan("orders", {0: 0}, half, {0: 1})]) == (
        "orders holds 1 of the 2 events transaction t1 wrote to shop_1.orders"
    )
    # Collections known from the topic's name or the previous cut count even when no event names them yet;
    # a merge's are summed: t1 wrote 1 event to each of two.
    ends = [TransactionEnd(1, "t1", {"shop_1.orders": 1, "shop_2.orders": 1})]
    known = frozenset({"shop_1.orders", "shop_2.orders"})
    assert plan_or_why(ends, [TableScan("orders", {0: 0}, half, {0: 1}, -1, known)]) == (
        "orders holds 1 of the 2 events transaction t1 wrote to shop_1.orders, shop_2.orders"
    )
    whole = [*half, TableEvent(0, 1, "t1", collection="shop_2.orders", order=1)]
    plan = plan_cut(ends, [TableScan("orders", {0: 0}, whole, {0: 2})])
    assert plan is not None and plan.offsets == {"orders": {0: 2}}


def test_a_message_delivered_twice_counts_once() -> None:
    # t1 wrote e1 and e2 to s.a; e1 came twice (a producer's resend) and e2 not yet: t1 is not complete.
    ends = [TransactionEnd(1, "t1", {"s.a": 2})]
    e1 = TableEvent(0, 0, "t1", collection="s.a", order=1)
    twice = TableScan("s.a", {0: 0}, [e1, TableEvent(0, 1, "t1", collection="s.a", order=1)], {0: 2})
    assert plan_cut(ends, [twice]) is None
    assert plan_or_why(ends, [twice]) == "s.a holds 1 of the 2 events transaction t1 wrote to s.a"
    e2 = TableEvent(0, 2, "t1", collection="s.a", order=2)
    plan = plan_cut(ends, [TableScan("s.a", {0: 0}, [*twice.events, e2], {0: 3})])
    assert plan is not None and plan.end.id == "t1" and plan.offsets == {"s.a": {0: 3}}


def test_a_message_that_does_not_decode_is_no_snapshot_read_and_a_cut_never_passes_it() -> None:
    # t2 has not ended; the message at 1 does not decode (it may be t2's): a cut at t1 ends before it, where
    # ranking it as a snapshot read put it in the cut.
    bad = TableEvent(0, 1, None, undecodable=True)
    a = TableScan("s.a", {0: 0}, [TableEvent(0, 0, "t1"), bad, TableEvent(0, 2, "t2")], {0: 3})
    plan = plan_cut([_end(1, "t1", a=1)], [a])
    assert plan is not None and plan.offsets == {"s.a": {0: 1}}
    # Once t2 ends, the cut still ends before it; a message that does not decode before every ended one
    # leaves no boundary, and the plan says so.
    plan = plan_cut([_end(1, "t1", a=1), _end(2, "t2", a=1)], [a])
    assert plan is not None and plan.offsets == {"s.a": {0: 1}}
    first = TableScan("s.a", {0: 0}, [bad, TableEvent(0, 2, "t1")], {0: 3})
    assert plan_or_why([_end(1, "t1", a=1)], [first]) == (
        "s.a's message at partition 0 offset 1 does not decode, before events of ended transactions"
    )


def test_why_no_cut_names_what_blocks_it() -> None:
    assert plan_or_why([], [_scan("a", ["t1"])]) == "no transaction END on the transaction topic since the previous cut"
    # An END that does not decode: no cut at or past it.
    ends = [_end(1, "t1", a=1), TransactionEnd(2, "", undecodable=True), _end(3, "t3", a=1)]
    plan = plan_or_why(ends, [_scan("a", ["t1", "t2", "t3"])])
    assert isinstance(plan, CutPlan) and plan.end.id == "t1"
    assert plan_or_why(ends[1:], [_scan("a", ["t2", "t3"])]) == (
        "the transaction topic's message at offset 2 does not decode"
    )
    # An event whose END was not read (expired by retention) before events of an ended transaction.
    assert plan_or_why([_end(7, "t5", a=1)], [_scan("a", ["t4", "t5"], start=10)]) == (
        "s.a's message at partition 0 offset 10 is of transaction t4, whose END was not read (not ended yet, "
        "expired from the transaction topic, or a redelivery), before events of ended transactions"
    )
    # A head already past the newest possible boundary.
    assert plan_or_why([_end(1, "t1", a=1)], [_scan("a", ["t1", "t2"], head=2)]) == (
        "s.a's newest commit holds events after transaction t1 of a transaction whose END was not read yet"
    )


def test_cuts_are_kept_atomically_and_picked_by_latest_transaction_offset_or_time(tmp_path: Path) -> None:
    store = CutStore.load(str(tmp_path))
    with pytest.raises(ConfigError, match="no consistent cut"):
        store.pick()
    for n, tx in enumerate(["t1", "t2"], start=1):
        plan = CutPlan(_end(10 * n, tx), {"s.a": {0: n}})
        store.record(new_cut(plan, "srv.transaction", {"s.a": {"path": "/a", "commit": f"c{n}"}}, {"s.b": "paused"}, n))
    again = CutStore.load(str(tmp_path))
    assert [c["transaction"] for c in again.cuts] == ["t1", "t2"]
    assert again.pick()["tables"]["s.a"]["commit"] == "c2" and again.pick()["left_out"] == {"s.b": "paused"}
    assert again.pick("t1")["id"] == 1 and again.pick(15)["id"] == 1 and again.pick(20)["id"] == 2
    assert again.pick(datetime.now(UTC))["id"] == 2
    with pytest.raises(ConfigError, match="no consistent cut at"):
        again.pick(datetime.now(UTC) - timedelta(days=1))
    assert [p.name for p in tmp_path.iterdir()] == ["cuts.json"]  # no temporary file left behind


def test_status_shows_the_newest_cut_and_how_far_each_head_is_past_it(tmp_path: Path) -> None:
    from hudi_cdc.ops.status import PipelineStatus, TableStatus, _newest_cut
    from hudi_cdc.service.spec import load_pipeline

    path = tmp_path / "p.toml"
    path.write_text(
        "[source]\nsource = 'kafka'\nbootstrap_servers = 'x:1'\nschema_registry_url = 'http://x:2'\ntables = '*'\n"
        "[defaults]\ntarget_base_path = '/lake/{table}'\ntarget_table = '{table}'\n"
    )
    spec = load_pipeline(path)
    assert _newest_cut(spec, []) is None
    store = CutStore.load(spec.run.state_dir)
    tables = {"s.a": {"path": "/lake/a", "commit": "c1", "offsets": {0: 5}}, "s.b": {"path": "/lake/b", "commit": "c2",
              "offsets": {0: 7}}}  # fmt: skip
    store.record(new_cut(CutPlan(_end(3, "42:99"), {}), "srv.transaction", tables, {"s.c": "paused"}, 1))
    statuses = [
        TableStatus("s.a", "srv.s.a", "/lake/a", "waiting", checkpoint='{"kind": "kafka/v1", "offsets": {"0": 9}}'),
        TableStatus("s.b", "srv.s.b", "/lake/b", "waiting", checkpoint=None),
    ]
    cut = _newest_cut(spec, statuses)
    assert cut is not None and cut["behind"] == {"s.a": 4, "s.b": None} and cut["commits"] == {"s.a": "c1", "s.b": "c2"}
    text = PipelineStatus("p", None, statuses, cut).describe()
    assert "newest consistent cut 1 at" in text and "s ago, transaction 42:99)" in text and cut["age_s"] >= 0
    assert "s.a 4, s.b ?" in text and "left out: s.c (paused)" in text
    runner = {"pid": 1, "alive": True, "updated_at": "-", "cut_underway": {"transaction": "43:1", "pending": ["s.b"]}}
    text = PipelineStatus("p", runner, statuses, cut).describe()
    assert "a consistent cut is under way at transaction 43:1: bounded rounds of s.b" in text


class _Reader:
    """The transaction metadata of a fake source: ENDs, and each topic's events."""

    def __init__(self, ends: list[TransactionEnd], topics: dict[str, list[str | None]]) -> None:
        self._ends, self._topics = ends, topics

    def watermarks(self, topic: str) -> dict[int, tuple[int, int]]:
        return {0: (0, max((e.offset for e in self._ends), default=-1) + 1)}

    def ends(self, topic: str, after: int | None) -> list[TransactionEnd]:
        return [e for e in self._ends if after is None or e.offset > after]

    def events(self, topic: str, starts: dict[int, int]) -> tuple[list[TableEvent], dict[int, int]]:
        txs = self._topics[topic]
        start = starts.get(0, 0)
        return [TableEvent(0, k, tx) for k, tx in enumerate(txs) if k >= start], {0: len(txs)}


def _cutter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, heads: dict[str, int]):  # noqa: ANN202
    from hudi_cdc.service import cutter
    from hudi_cdc.service.spec import load_pipeline
    from hudi_cdc.service.states import TableState

    path = tmp_path / "p.toml"
    path.write_text(
        "[source]\nsource = 'kafka'\nbootstrap_servers = 'x:1'\nschema_registry_url = 'http://x:2'\ntables = '*'\n"
        "[defaults]\ntarget_base_path = '/lake/{table}'\ntarget_table = '{table}'\n"
        "[run]\nconsistent_cut_interval_seconds = 10\n"
    )
    spec = load_pipeline(path)
    monkeypatch.setattr(
        cutter, "head_commit", lambda spark, base: (f"c{heads[base]}", {0: heads[base]}) if base in heads else None
    )
    cut = cutter.Cutter(spec, None, 10, now=0.0)  # type: ignore[arg-type]
    cut.reader = _Reader(  # type: ignore[assignment]
        [_end(1, "t1", a=1, b=1), _end(2, "t2", a=1, b=1)],
        {"srv.s.a": ["t1", "t2"], "srv.s.b": ["t1", "t2"], "srv.s.c": ["t1"], "srv.s.d": []},
    )
    tables = {n: TableState(n, f"srv.{n}", f"/lake/{n[2:]}") for n in ("s.a", "s.b", "s.c", "s.d")}
    for table in tables.values():
        table.config = spec.table_config(TableRef(table.topic))
    return cut, tables


def test_a_cut_never_waits_for_a_round_under_way_holds_no_table_and_leaves_out_paused_and_new_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    heads = {"/lake/a": 1, "/lake/b": 2, "/lake/c": 0}  # d: no commit yet
    cut, tables = _cutter(tmp_path, monkeypatch, heads)
    tables["s.c"].state = "paused"
    cut.step(5.0, tables.values())
    assert cut.underway is None  # not due yet
    # a's round under way has planned to read up to offset 3: an event of t3, whose END is not read yet. The
    # plan takes that as a's head: no cut at t2, which a's commit will have passed; nothing is bound.
    tables["s.a"].state, tables["s.a"].claimed = "running", {0: 3}
    cut.step(10.0, tables.values())
    blocked = cut.blocked_now()
    assert cut.underway is None and tables["s.a"].until is None and blocked is not None
    assert blocked["reason"] == (
        "s.a's newest commit holds events after transaction t2 of a transaction whose END was not read yet"
    )
    # Its next round (under way, not planned yet) is planned against: the cut is planned at once, at t2, and
    # no table is held, none waits for a's round.
    tables["s.a"].claimed = None
    cut.step(cut.next_at, tables.values())
    assert cut.underway_now() == {"transaction": "t2", "pending": ["s.a"]}
    assert tables["s.a"].until == {0: 2} and tables["s.b"].until is None
    # a's round plans its range now, the topic holding more: it ends at the cut's offsets.
    assert cut.claim(tables["s.a"], {0: 3}) == {0: 2} and tables["s.a"].claimed == {0: 2}
    assert CutStore.load(cut.spec.run.state_dir).cuts == []  # nothing recorded before it commits at the cut
    heads["/lake/a"], tables["s.a"].state = 2, "waiting"
    cut.round_ended(tables["s.a"], 13.0)  # the runner, as any round ends: its newest commit is at the cut
    recorded = CutStore.load(cut.spec.run.state_dir).newest
    assert recorded is not None and recorded["transaction"] == "t2"
    assert {n: t["commit"] for n, t in recorded["tables"].items()} == {"s.a": "c2", "s.b": "c2"}
    assert recorded["left_out"] == {"s.c": "paused", "s.d": "new: no commit yet"}
    assert tables["s.a"].until is None and tables["s.a"].claimed is None


def test_a_bounded_round_that_fails_or_a_stop_leaves_no_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cut, tables = _cutter(tmp_path, monkeypatch, {"/lake/a": 1, "/lake/b": 1, "/lake/c": 1, "/lake/d": 0})
    cut.step(10.0, tables.values())
    assert {n for n, t in tables.items() if t.until} == {"s.a", "s.b"}
    cut.round_done(tables["s.b"], "c2b", 11.0)
    cut.round_done(tables["s.a"], None, 12.0)  # its round failed: the cut is abandoned
    assert cut.underway is None and cut.next_at == 22.0 and CutStore.load(cut.spec.run.state_dir).cuts == []
    cut.step(22.0, tables.values())
    assert tables["s.a"].until == {0: 2}
    tables["s.a"].state = "paused"  # paused before its bounded round: the cut cannot end, it is given up
    cut.step(23.0, tables.values())
    assert cut.underway is None and tables["s.a"].until is None and tables["s.b"].until is None
    tables["s.a"].state = "waiting"
    cut.step(33.0, tables.values())
    assert tables["s.a"].until == {0: 2}
    cut.release(tables.values())  # the run stops with the cut under way
    assert cut.underway is None and tables["s.a"].until is None and CutStore.load(cut.spec.run.state_dir).cuts == []
