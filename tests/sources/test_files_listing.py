"""The files source lists a local folder in Python: the same files, paths, sizes and times as Hadoop's listing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hudi_cdc._jvm import hadoop_conf, jvm
from hudi_cdc.sources.files import _list_hadoop, _list_local

pytestmark = pytest.mark.spark


def test_a_local_folder_lists_as_hadoop_lists_it(spark, tmp_path: Path) -> None:  # noqa: ANN001
    root = tmp_path / "in"
    names = [
        "a.avro",
        "partition=0/t+0+0000000000.avro",
        "partition=0/t+0+0000000100.avro",
        "partition=1/deeper/x.avro",
        "with space/ü é.avro",
        "partition=0/not-ours.json",  # another suffix
        "_SUCCESS",
        ".hidden/a.avro",
        "partition=1/.a.avro.crc",
        "+tmp/t+0+0000000200.avro",  # Kafka Connect's HDFS sink's temporary folder
    ]
    for number, name in enumerate(names):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x" * number)
    os.utime(root / "a.avro", ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "linked.avro").write_bytes(b"linked")
    (root / "link").symlink_to(tmp_path / "elsewhere")  # a linked folder is followed, as Hadoop follows it

    path = jvm(spark).org.apache.hadoop.fs.Path(str(root))
    fs = path.getFileSystem(hadoop_conf(spark))
    qualified = fs.makeQualified(path).toString().rstrip("/")
    ours = _list_local(qualified, ".avro")
    assert ours == _list_hadoop(fs, path, qualified, ".avro")
    assert [f.relative for f in ours] == [
        "a.avro",
        "link/linked.avro",
        "partition=0/t+0+0000000000.avro",
        "partition=0/t+0+0000000100.avro",
        "partition=1/deeper/x.avro",
        "with space/ü é.avro",
    ]
    assert ours[0].mtime_ms == 1_700_000_000_123
