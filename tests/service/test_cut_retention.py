"""Retained consistent cuts stay readable with Hudi's default cleaner, and one that is not is refused.

The cutter pins each table at the oldest commit of the retained cuts (no Spark: which pins it writes), and a
table's writes then keep every commit from there on (Spark: real commits, Hudi's own cleaner, read back
through ``read_consistent``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc._jvm import jvm
from hudi_cdc.config import IngestConfig
from hudi_cdc.errors import TerminalSinkError
from hudi_cdc.service import cutter
from hudi_cdc.service.cut_retention import CutPins, oldest_commits
from hudi_cdc.service.cuts import CutPlan, CutStore, new_cut, read_consistent
from hudi_cdc.service.spec import TableRef, load_pipeline
from hudi_cdc.service.states import TableState
from hudi_cdc.sink import retention
from hudi_cdc.sources.transactions import TableEvent, TransactionEnd
from hudi_cdc.testing import envelope_schema, pg_event, write_events


class _Reader:
    """A fake connector whose transactions t1..tn each wrote one event to every table."""

    def __init__(self) -> None:
        self.n = 0

    def watermarks(self, topic: str) -> dict[int, tuple[int, int]]:
        return {0: (0, self.n + 1)}

    def ends(self, topic: str, after: int | None) -> list[TransactionEnd]:
        ends = [TransactionEnd(k, f"t{k}", {"s.a": 1, "s.b": 1}) for k in range(1, self.n + 1)]
        return [e for e in ends if after is None or e.offset > after]

    def events(self, topic: str, starts: dict[int, int]) -> tuple[list[TableEvent], dict[int, int]]:
        return [TableEvent(0, k, f"t{k + 1}") for k in range(starts.get(0, 0), self.n)], {0: self.n}


def test_the_cutter_pins_each_table_at_its_oldest_retained_cut_and_a_joining_one_at_its_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = tmp_path / "lake"
    path = tmp_path / "p.toml"
    path.write_text(
        "[source]\nsource = 'kafka'\nbootstrap_servers = 'x:1'\nschema_registry_url = 'http://x:2'\ntables = '*'\n"
        f"[defaults]\ntarget_base_path = '{lake}/{{table}}'\ntarget_table = '{{table}}'\n"
        "[run]\nconsistent_cut_interval_seconds = 10\ncut_retention = 2\n"
    )
    spec = load_pipeline(path)
    heads: dict[str, int] = {}
    monkeypatch.setattr(cutter, "head_commit", lambda spark, base: (f"c{heads[base]:03d}", {0: heads[base]}))
    cut = cutter.Cutter(spec, None, 10, now=0.0)  # type: ignore[arg-type]
    reader = cut.reader = _Reader()  # type: ignore[assignment]
    tables = {}
    for name in ("s.a", "s.b"):
        config = spec.table_config(TableRef(f"srv.{name}"))
        tables[name] = TableState(name, f"srv.{name}", config.target_base_path, config=config)
        Path(config.target_base_path).mkdir(parents=True)
    a, b = (tables[n].target for n in ("s.a", "s.b"))
    b_state = tables.pop("s.b")  # b joins later

    def pinned(base: str) -> str | None:
        return retention.keep_from(base)

    for n in (1, 2, 3):  # each cut at its newest transaction, where a's head already is: recorded at once
        reader.n, heads[a] = n, n
        cut.step(10.0 * n, tables.values())
        assert CutStore.load(spec.run.state_dir).newest["transaction"] == f"t{n}"  # type: ignore[index]
    # Two cuts kept (t2, t3): a is pinned at the older one's commit, no longer at t1's.
    assert [c["transaction"] for c in CutStore.load(spec.run.state_dir).cuts] == ["t2", "t3"]
    assert pinned(a) == "c002" and pinned(b) is None
    # b joins at head 3 while transaction 4 has ended: pinned at its head before its bounded round commits.
    tables["s.b"], heads[b] = b_state, 3
    reader.n = 4
    cut.step(40.0, tables.values())
    assert tables["s.b"].until == {0: 4} and pinned(b) == "c003" and pinned(a) == "c002"
    cut.round_done(tables["s.b"], "c004", 41.0)
    cut.round_done(tables["s.a"], "c004", 41.0)
    kept = CutStore.load(spec.run.state_dir).cuts
    assert [c["transaction"] for c in kept] == ["t3", "t4"] and kept[-1]["tables"]["s.b"]["commit"] == "c004"
    assert pinned(a) == "c003" and pinned(b) == "c004"
    # A table in no retained cut any more is let go.
    cut.pins.keep({a: "c004"})
    assert pinned(b) is None and pinned(a) == "c004"


SCHEMA = envelope_schema("items", [("id", "long"), ("v", ["null", "long"])])
KEYS = range(5)


def _commit(spark, config: IngestConfig, n: int) -> str:  # noqa: ANN001
    """One commit: every key's ``v`` set to ``n`` (inserted at 0)."""
    from hudi_cdc.pipeline import ingest_once

    op = "c" if n == 0 else "u"
    events = [pg_event(op, lsn=1000 * (n + 1) + k, after={"id": k, "v": n}) for k in KEYS]
    write_events(Path(config.source_path) / f"{n:04d}.avro", SCHEMA, events)
    result = ingest_once(config, spark=spark)
    assert result.commit_time is not None
    return result.commit_time


def _pipeline(tmp_path: Path) -> str:
    path = tmp_path / "cuts.toml"
    path.write_text(
        f"[source]\nsource = 'files'\nsource_path = '{tmp_path / 'landing'}'\ntables = '*'\n"
        f"[defaults]\ntarget_base_path = '{tmp_path / 'lake'}/{{table}}'\ntarget_table = '{{table}}'\n"
        f"[run]\nstate_dir = '{tmp_path / 'state'}'\ncut_retention = 2\n"
    )
    return str(path)


def _record(spark, pipeline: str, n: int, commit: str, base: str) -> None:  # noqa: ANN001
    """What the cutter does when a cut is whole: append it (keeping ``cut_retention``), then pin its tables."""
    spec = load_pipeline(pipeline)
    store = CutStore.load(spec.run.state_dir)
    plan = CutPlan(TransactionEnd(n, f"t{n}"), {"s.items": {0: n}})
    store.record(new_cut(plan, "srv.transaction", {"s.items": {"path": base, "commit": commit}}, {}, n), keep=2)
    CutPins(spec.run.state_dir, spark).keep(oldest_commits(store.cuts))


def _rows(frame) -> list[tuple[int, int]]:  # noqa: ANN001
    return sorted((r["id"], r["v"]) for r in frame.select("id", "v").collect())


def test_the_oldest_retained_cut_reads_back_after_many_commits_with_the_default_cleaner(spark, tmp_path: Path) -> None:  # noqa: ANN001
    base = str(tmp_path / "lake" / "items")
    config = IngestConfig(
        source="files", source_path=str(tmp_path / "landing" / "items"), flavor="postgres", target_base_path=base,
        target_table="items", record_key_fields=("id",),
        # Hudi's default policy (KEEP_LATEST_COMMITS) keeping 2 commits, not 10: the pins raise it the same way
        # (the defaults' path: tests/sink/test_retention.py, and Hudi's own defaults are asserted below), and 10
        # commits pass the cleaner where Hudi's 10 needed 31.
        hoodie_conf={"hoodie.clean.commits.retained": "2"},
    )  # fmt: skip
    # The pins' arithmetic (sink.retention) assumes Hudi's defaults: the cleaner this test runs is that one.
    hudi = jvm(spark).org.apache.hudi.config
    defaults = [
        hudi.HoodieCleanConfig.CLEANER_POLICY.defaultValue(),
        hudi.HoodieCleanConfig.CLEANER_COMMITS_RETAINED.defaultValue(),
        hudi.HoodieArchivalConfig.MIN_COMMITS_TO_KEEP.defaultValue(),
        hudi.HoodieArchivalConfig.MAX_COMMITS_TO_KEEP.defaultValue(),
    ]
    assert [str(d) for d in defaults] == [
        retention.KEEP_LATEST_COMMITS,
        *map(str, (retention.HUDI_COMMITS_RETAINED, retention.HUDI_KEEP_MIN_COMMITS, retention.HUDI_KEEP_MAX_COMMITS)),
    ]
    pipeline = _pipeline(tmp_path)
    commits = []
    for n in range(7):  # cuts at v=2, 4, 6, each recorded (and pinned) once its commit is written, as the cutter does
        commits.append(_commit(spark, config, n))
        if n in (2, 4, 6):
            _record(spark, pipeline, n, commits[n], base)
    assert retention.keep_from(base) == commits[4]  # two kept: those at 4 and 6
    commits += [_commit(spark, config, n) for n in range(7, 10)]  # 3 more: a cleaner keeping 2 would pass t4
    # The cleaner ran and kept the oldest retained cut's commit.
    cleans = list((Path(base) / ".hoodie" / "timeline").glob("*.clean"))
    assert cleans, "no clean ran: the test proves nothing"
    tables = read_consistent(spark, pipeline, at="t4")
    assert _rows(tables["s.items"]) == [(k, 4) for k in KEYS]
    assert _rows(read_consistent(spark, pipeline)["s.items"]) == [(k, 6) for k in KEYS]
    # A cut past the cleaner (here: recorded by hand at the first commit, never pinned) is refused, named.
    spec = load_pipeline(pipeline)
    store = CutStore.load(spec.run.state_dir)
    old = new_cut(CutPlan(TransactionEnd(0, "t0"), {}), "srv.transaction",
                  {"s.items": {"path": base, "commit": commits[0]}}, {}, 99)  # fmt: skip
    newest = store.cuts.pop()
    store.cuts.insert(0, old)
    store.record(newest, keep=3)  # kept: the hand-made one, then the cuts at 4 and 6
    with pytest.raises(TerminalSinkError, match=r"consistent cut 99 of cuts .*s\.items .*removed the files of commits"):
        read_consistent(spark, pipeline, at="t0")


def test_a_cut_a_file_versions_cleaner_may_have_cut_short_is_refused_not_read_in_part(spark, tmp_path: Path) -> None:  # noqa: ANN001
    base = str(tmp_path / "lake" / "items")
    config = IngestConfig(
        source="files", source_path=str(tmp_path / "landing" / "items"), flavor="postgres", target_base_path=base,
        target_table="items", record_key_fields=("id",),
        hoodie_conf={"hoodie.clean.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.clean.fileversions.retained": "1",
                     # a clean planned after each commit, not every 10th (sink.options): 5 commits, not 14
                     "hoodie.clean.trigger.max.commits": "1"},
    )  # fmt: skip
    pipeline = _pipeline(tmp_path)
    commits = [_commit(spark, config, n) for n in range(3)]
    _record(spark, pipeline, 2, commits[2], base)
    commits += [_commit(spark, config, n) for n in range(3, 5)]  # keeping one version: the next clean passes t2
    assert list((Path(base) / ".hoodie" / "timeline").glob("*.clean")), "no clean ran: the test proves nothing"
    with pytest.raises(TerminalSinkError, match=r"consistent cut 2 .*KEEP_LATEST_FILE_VERSIONS.*could miss its rows"):
        read_consistent(spark, pipeline, at="t2")
