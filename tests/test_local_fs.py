"""The local file system a local session's ``file://`` paths go through (jars/writer, io.hudicdc.fs): the modes
Hadoop asks for, set in the JVM, where Hadoop without its native library runs a ``chmod`` process per file."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.jars import LOCAL_FS_CLASS


def _local_fs(spark: Any) -> Any:  # noqa: ANN401
    jvm = spark._jvm
    return jvm.org.apache.hadoop.fs.FileSystem.getLocal(spark.sparkContext._jsc.hadoopConfiguration())


def test_a_local_session_uses_it(spark: Any) -> None:  # noqa: ANN401
    fs = _local_fs(spark)
    assert fs.getClass().getName() == LOCAL_FS_CLASS
    assert fs.getRawFileSystem().getClass().getName() == "io.hudicdc.fs.NioRawLocalFileSystem"


@pytest.mark.parametrize("mode", [0o644, 0o755, 0o700, 0o640, 0o000, 0o777, 0o751])
def test_the_mode_asked_is_the_mode_set(spark: Any, tmp_path: Path, mode: int) -> None:  # noqa: ANN401
    jvm = spark._jvm
    target = tmp_path / "file"
    target.write_text("x")
    fs = _local_fs(spark)
    fs.setPermission(jvm.org.apache.hadoop.fs.Path(str(target)), jvm.org.apache.hadoop.fs.permission.FsPermission(mode))
    assert stat.S_IMODE(os.stat(target).st_mode) == mode
    status = fs.getFileStatus(jvm.org.apache.hadoop.fs.Path(str(target)))
    assert status.getPermission().toShort() == mode


def test_folders_and_files_hadoop_creates_get_its_modes(spark: Any, tmp_path: Path) -> None:  # noqa: ANN401
    jvm = spark._jvm
    fs = _local_fs(spark)
    permission = jvm.org.apache.hadoop.fs.permission.FsPermission
    folder = jvm.org.apache.hadoop.fs.Path(str(tmp_path / "a" / "b"))
    assert fs.mkdirs(folder, permission(0o750))
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "b").st_mode) == 0o750
    out = fs.create(jvm.org.apache.hadoop.fs.Path(folder, "f"), permission(0o600), False, 4096, 1, 1 << 20, None)
    out.write(b"data")
    out.close()
    assert (tmp_path / "a" / "b" / "f").read_bytes() == b"data"
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "b" / "f").st_mode) == 0o600  # umask 022 leaves 0600 as is
    assert (tmp_path / "a" / "b" / ".f.crc").exists()  # still the checksummed local file system


def test_a_missing_file_is_file_not_found(spark: Any, tmp_path: Path) -> None:  # noqa: ANN401
    jvm = spark._jvm
    with pytest.raises(Exception, match="FileNotFoundException"):
        _local_fs(spark).setPermission(
            jvm.org.apache.hadoop.fs.Path(str(tmp_path / "missing")),
            jvm.org.apache.hadoop.fs.permission.FsPermission(0o644),
        )


def test_a_sticky_bit_is_set_by_hadoop_s_own_way(spark: Any, tmp_path: Path) -> None:  # noqa: ANN401
    jvm = spark._jvm
    folder = tmp_path / "shared"
    folder.mkdir()
    _local_fs(spark).setPermission(
        jvm.org.apache.hadoop.fs.Path(str(folder)), jvm.org.apache.hadoop.fs.permission.FsPermission(0o1777)
    )
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o1777


def test_a_local_session_loads_hudi_from_the_jvms_own_classpath(spark: Any) -> None:  # noqa: ANN401
    # Not spark.jars: Spark would stream the bundle into the session's scratch folder for its executor, load
    # its classes a second time there, and the JVM's class-data archive could not hold them.
    jvm = spark._jvm
    system = jvm.java.lang.ClassLoader.getSystemClassLoader()
    for name in ("org.apache.hudi.DefaultSource", "io.hudicdc.writer.SmallWrite", LOCAL_FS_CLASS):
        assert jvm.java.lang.Class.forName(name, False, system).getClassLoader().equals(system), name
    assert spark.sparkContext._jsc.sc().listJars().size() == 0
