"""The tombstone store on its own: newest delete per key, crash leftovers, consolidation."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hudi_cdc.sink import tombstones as store_module
from hudi_cdc.sink.tombstones import TombstoneStore

SCHEMA = "id long, _source_order string, _tombstoned_at timestamp"
OLD = datetime(2026, 1, 1, tzinfo=UTC)
NEW = datetime(2026, 6, 1, tzinfo=UTC)


def _rows(store: TombstoneStore) -> list[tuple]:
    frame = store.read()
    return [] if frame is None else sorted((r["id"], r["_source_order"]) for r in frame.collect())


def test_newest_tombstone_per_key_across_batches(spark, tmp_path: Path) -> None:
    store = TombstoneStore(spark, str(tmp_path / "t"), key_fields=("id",))
    assert store.read() is None and store.count() == 0 and store.purge(NEW) == 0
    store.record(spark.createDataFrame([(1, "0005", OLD), (2, "0007", OLD)], SCHEMA))
    store.record(spark.createDataFrame([(1, "0009", NEW)], SCHEMA))
    assert _rows(store) == [(1, "0009"), (2, "0007")]
    assert store.count() == 2


def test_a_path_with_glob_characters_is_taken_literally(spark, tmp_path: Path) -> None:
    # The store finds its directories with a glob; its own path must not act as a pattern.
    (tmp_path / "t1").mkdir()  # what an unescaped "t[12]" would also match
    store = TombstoneStore(spark, str(tmp_path / "t[12]{a,b}*"), key_fields=("id",))
    store.record(spark.createDataFrame([(1, "0005", OLD)], SCHEMA))
    TombstoneStore(spark, str(tmp_path / "t1"), key_fields=("id",)).record(
        spark.createDataFrame([(2, "0007", OLD)], SCHEMA)
    )
    # (Spark's own reader globs the paths it is given too, so only the listing is checked here.)
    assert [Path(d).parent.name for d in store._directories()] == ["t[12]{a,b}*"]


def test_an_unfinished_write_is_not_read(spark, tmp_path: Path) -> None:
    store = TombstoneStore(spark, str(tmp_path / "t"), key_fields=("id",))
    store.record(spark.createDataFrame([(1, "0005", OLD)], SCHEMA))
    # What a crash mid-write leaves: files, but no _SUCCESS marker.
    spark.createDataFrame([(2, "0007", OLD)], SCHEMA).write.parquet(str(tmp_path / "t" / "batch-99999999-crash"))
    (tmp_path / "t" / "batch-99999999-crash" / "_SUCCESS").unlink()
    assert _rows(store) == [(1, "0005")]


def test_purge_expires_old_tombstones_and_consolidates(spark, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(store_module, "CONSOLIDATE_AFTER", 2)
    base = tmp_path / "t"
    store = TombstoneStore(spark, str(base), key_fields=("id",))
    store.record(spark.createDataFrame([(1, "0005", OLD)], SCHEMA))
    store.record(spark.createDataFrame([(2, "0007", NEW)], SCHEMA))
    assert store.purge(OLD + timedelta(days=1)) == 1
    assert _rows(store) == [(2, "0007")]
    assert [p.name.split("-")[0] for p in base.iterdir() if not p.name.startswith(".")] == ["merged"]

    # Nothing expired, but more directories than the threshold: rewritten into one, nothing lost.
    store.record(spark.createDataFrame([(3, "0008", NEW)], SCHEMA))
    store.record(spark.createDataFrame([(4, "0009", NEW)], SCHEMA))
    assert store.purge(OLD) == 0
    assert _rows(store) == [(2, "0007"), (3, "0008"), (4, "0009")]
    assert len([p for p in base.iterdir() if not p.name.startswith(".")]) == 1


@pytest.mark.parametrize("keys", [(), ("id",)])
def test_keys_default_to_the_stored_columns(spark, tmp_path: Path, keys: tuple[str, ...]) -> None:
    TombstoneStore(spark, str(tmp_path / "t"), key_fields=("id",)).record(
        spark.createDataFrame([(1, "0005", OLD), (1, "0006", OLD)], SCHEMA)
    )
    assert _rows(TombstoneStore(spark, str(tmp_path / "t"), key_fields=keys)) == [(1, "0006")]


def _jobs(spark) -> int:
    """The newest job's id: ids only grow, while the tracker forgets old jobs (1,000 kept), so a count shrinks."""
    return max(spark.sparkContext.statusTracker().getJobIdsForGroup(None), default=-1)


def test_a_process_reads_the_store_again_only_when_it_must(spark, tmp_path: Path) -> None:
    base = tmp_path / "t"
    store = TombstoneStore(spark, str(base), key_fields=("id",))
    store.record(spark.createDataFrame([(1, "0005", NEW)], SCHEMA), stamped_at=NEW)
    assert store.purge(OLD) == 0 and store.count() == 1  # read once: the oldest is NEW

    # What a continuous run does between rounds: no tombstone can have expired, the count holds.
    before = _jobs(spark)
    assert store.purge(OLD) == 0 and store.count() == 1
    assert _jobs(spark) == before, "nothing changed, yet the store was read again"

    # A round's deletes, stamped with its start: still nothing to expire, but a new count.
    store.record(spark.createDataFrame([(2, "0007", NEW), (1, "0008", NEW)], SCHEMA), stamped_at=NEW)
    assert store.purge(OLD) == 0 and store.count() == 2
    # Once they are old enough, they go.
    assert store.purge(NEW + timedelta(days=1)) == 2 and store.count() == 0

    # Tombstones recorded without a stamp may be of any age: the next purge reads them.
    store.record(spark.createDataFrame([(3, "0009", OLD)], SCHEMA))
    assert store.purge(OLD + timedelta(days=1)) == 1 and _rows(store) == []

    # Another process purged behind this one's back: what it knew no longer holds.
    store.record(spark.createDataFrame([(4, "0010", NEW)], SCHEMA), stamped_at=NEW)
    assert store.count() == 1
    for directory in [p for p in base.iterdir() if p.name.startswith("batch-")]:
        shutil.rmtree(directory)
    assert store.count() == 0 and store.purge(NEW + timedelta(days=1)) == 0


def test_a_count_stays_known_when_a_record_says_how_many_keys_are_new(spark, tmp_path: Path, monkeypatch) -> None:
    base = tmp_path / "t"
    store = TombstoneStore(spark, str(base), key_fields=("id",))
    # Into an empty store: every key is new.
    store.record(spark.createDataFrame([(1, "0005", NEW), (2, "0006", NEW)], SCHEMA), stamped_at=NEW, new_keys=2)
    before = _jobs(spark)
    assert store.count() == 2 and store.purge(OLD) == 0
    assert _jobs(spark) == before, "the count was known, yet the store was read"
    # Key 2 again (held already) and key 3 (new): the plan says one new key.
    store.record(spark.createDataFrame([(2, "0008", NEW), (3, "0009", NEW)], SCHEMA), stamped_at=NEW, new_keys=1)
    before = _jobs(spark)
    assert store.count() == 3
    assert _jobs(spark) == before
    # Once read, the schema is known too: the next read infers nothing (that was a Spark job).
    assert store.read() is not None
    before = _jobs(spark)
    assert store.read() is not None and _jobs(spark) == before
    # What a process that knows nothing finds: the same.
    monkeypatch.setattr(store_module, "_known", {})
    monkeypatch.setattr(store_module, "_schemas", {})
    assert store.count() == 3 and _rows(store) == [(1, "0005"), (2, "0008"), (3, "0009")]


def test_a_store_changed_behind_a_records_back_is_counted_again(spark, tmp_path: Path) -> None:
    base = tmp_path / "t"
    store = TombstoneStore(spark, str(base), key_fields=("id",))
    store.record(spark.createDataFrame([(1, "0005", NEW)], SCHEMA), stamped_at=NEW, new_keys=1)
    assert store.count() == 1
    # Another writer's directory appears: the plan's "one new key" no longer tells the count.
    spark.createDataFrame([(7, "0007", NEW)], SCHEMA).write.parquet(str(base / "batch-00000000T000000000000-other"))
    store.record(spark.createDataFrame([(2, "0008", NEW)], SCHEMA), stamped_at=NEW, new_keys=1)
    before = _jobs(spark)
    assert store.count() == 3
    assert _jobs(spark) > before, "the count was taken on trust after another writer's change"
    # A directory gone: the next count reads the store, and the schema is inferred again.
    for directory in [p for p in base.iterdir() if p.name.endswith("-other")]:
        shutil.rmtree(directory)
    store.record(spark.createDataFrame([(3, "0009", NEW)], SCHEMA), stamped_at=NEW, new_keys=1)
    assert store.count() == 3 and _rows(store) == [(1, "0005"), (2, "0008"), (3, "0009")]
