"""Pins in a table's folder and the cleaner settings a write takes from them (no Spark: the files and the
arithmetic; tests/service/test_cut_retention.py reads cuts back through Hudi's cleaner)."""

from __future__ import annotations

from pathlib import Path

from hudi_cdc.sink import options as opt
from hudi_cdc.sink import retention
from hudi_cdc.sink.hudi import _file_instant


def test_the_oldest_live_pin_holds_a_table_and_a_lapsed_or_dropped_one_does_not(tmp_path: Path) -> None:
    base = str(tmp_path / "orders")
    (tmp_path / "orders").mkdir()
    assert retention.keep_from(base) is None
    assert retention.pin(base, "20261128100000000", owner="/state/a", expires_at=2000.0)
    assert retention.pin(base, "20261128090000000", owner="/state/b", expires_at=1000.0)
    assert retention.keep_from(base, now=500.0) == "20261128090000000"  # both live: the older
    assert retention.keep_from(base, now=1500.0) == "20261128100000000"  # b's lapsed
    assert retention.pin(base, "20261128110000000", owner="/state/a", expires_at=2000.0)  # a's moved on, replaced
    assert sorted(p.keep_from for p in retention.pins(base)) == ["20261128090000000", "20261128110000000"]
    retention.unpin(base, owner="/state/b")
    retention.unpin(base, owner="/state/b")  # already gone: nothing to do
    assert retention.keep_from(base, now=500.0) == "20261128110000000"
    # No table folder: nothing pinned, nothing made.
    assert not retention.pin(str(tmp_path / "absent"), "1", owner="/state/a", expires_at=2000.0)
    assert not (tmp_path / "absent").exists()


def test_a_pin_raises_the_cleaners_retention_and_archival_above_it_only_upward() -> None:
    # 25 commits since the pin: the write's own commit and one to spare on top.
    raised = retention.clean_options({}, 25)
    assert raised == {
        opt.CLEAN_COMMITS_RETAINED: "27",
        opt.CLEAN_COMMITS_RETAINED_OLD: "27",
        opt.KEEP_MIN_COMMITS: "28",
        opt.KEEP_MAX_COMMITS: "38",
    }
    assert retention.clean_options({}, 3) == {}  # Hudi's 10 already keeps them
    assert retention.clean_options({opt.CLEAN_COMMITS_RETAINED_OLD: "100"}, 25) == {}  # the user's larger one stays
    kept = retention.clean_options({opt.KEEP_MIN_COMMITS: "50", opt.KEEP_MAX_COMMITS: "70"}, 25)
    assert kept[opt.KEEP_MIN_COMMITS] == "50" and kept[opt.KEEP_MAX_COMMITS] == "70"
    # Another policy is the user's: read_consistent refuses what it removed.
    assert retention.clean_options({opt.CLEAN_POLICY: "KEEP_LATEST_FILE_VERSIONS"}, 25) == {}


def test_a_cleaned_files_instant_is_read_from_its_name() -> None:
    assert _file_instant("p/9c2e-0_0-21-30_20261128101010123.parquet") == "20261128101010123"
    assert _file_instant(".9c2e-0_20261128101010123.log.1_0-5-7") == "20261128101010123"
    assert _file_instant("hoodie_partition_metadata") is None
