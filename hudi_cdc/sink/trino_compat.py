"""A file that lets Trino 476's Hudi connector read a Hudi 1.2 table whose archived timeline is still empty.

Hudi 1.x keeps the archived timeline under ``.hoodie/timeline/history/`` and creates that folder empty with
the table. Trino 476 (Hudi 1.0.2 inside) lists it on every query, and its file system reports an empty folder
as a missing one: every query of a table that has never archived fails with ``Could not load archived commit
timeline ... history does not exist``. One small file in the folder avoids that. Hudi itself only ever lists
``manifest_*`` (not ``*.tmp``), reads ``_version_`` and globs ``*.parquet`` there, so it never sees the file,
and archival and the LSM timeline's compaction leave it alone (docs/catalog.md#reading-them-from-trino says
what it fixes, docs/reliability.md the evidence).

The call belongs after a table's catalog sync: only a table that is registered for other engines needs it.
"""

from __future__ import annotations

from typing import Any

from hudi_cdc._jvm import hadoop_conf, jvm

# Not manifest_*, _version_ or *.parquet (what Hudi's LSM timeline lists), and not hidden (a leading dot or
# underscore), which a reader's listing may skip and then see the folder as empty again.
MARKER_NAME = "hudi-cdc-readers"
_TEXT = (
    "Written by hudi-cdc so that readers which report an empty folder as missing (Trino 476's Hudi connector)\n"
    "can load this table's archived timeline. Hudi lists only manifest_*, _version_ and *.parquet here.\n"
)


def history_folder(base_path: str) -> str:
    """The archived timeline's folder of a table with Hudi 1.x's timeline layout."""
    return base_path.rstrip("/") + "/.hoodie/timeline/history"


def ensure_history_folder(spark: Any, base_path: str) -> bool:  # noqa: ANN401 - a SparkSession
    """Put the marker file in the table's ``.hoodie/timeline/history/``, once; whether it was written now.

    Nothing is done for a table without ``.hoodie/timeline/`` (the older layout keeps ``.hoodie/archived``,
    which Trino reads as it is) and nothing when the marker is already there: one ``exists`` call then.
    Works on any Hadoop file system the session reaches (file, hdfs, s3a).
    """
    path = jvm(spark).org.apache.hadoop.fs.Path
    folder = history_folder(base_path)
    marker = path(folder + "/" + MARKER_NAME)
    fs = marker.getFileSystem(hadoop_conf(spark))
    if fs.exists(marker) or not fs.exists(path(folder.rsplit("/", 1)[0])):
        return False
    fs.mkdirs(path(folder))
    try:
        stream = fs.create(marker, False)
    except Exception:  # py4j: FileAlreadyExistsException from a concurrent writer, whose marker is as good
        if fs.exists(marker):
            return False
        raise
    try:
        stream.write(bytearray(_TEXT.encode()))
    finally:
        stream.close()
    return True
