"""Where the Spark-side jars come from: the pinned coordinates, a folder, the checkout's ``.jars``."""

from __future__ import annotations

import ast
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import hudi_cdc.jars as jars
from hudi_cdc.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def _pom_coordinates() -> set[str]:
    root = ET.parse(REPO / "jars" / "hudi" / "pom.xml").getroot()
    props = {p.tag.split("}")[1]: p.text for p in root.find("m:properties", POM_NS)}

    def expand(text: str) -> str:
        for name, value in props.items():
            text = text.replace("${" + name + "}", value)
        return text

    return {
        ":".join(expand(dep.find(f"m:{part}", POM_NS).text) for part in ("groupId", "artifactId", "version"))
        for dep in root.iter("{http://maven.apache.org/POM/4.0.0}dependency")
    }


@pytest.fixture(autouse=True)
def _no_checkout_s3a(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The checkout's own .jars/s3a (make jars) stays out of these tests unless one puts a folder there.
    monkeypatch.setattr(jars, "_s3a_checkout_folder", lambda: tmp_path / "no-s3a-here")
    monkeypatch.delenv(jars.S3A_ENV, raising=False)


def _s3a_folder(folder: Path) -> tuple[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    names = ("aws-java-sdk-bundle-1.12.262.jar", "hadoop-aws-3.3.4.jar")
    for name in names:
        (folder / name).write_bytes(b"")
    return str(folder / names[0]), str(folder / names[1])


def _s3a_pom_properties() -> dict[str, str]:
    root = ET.parse(REPO / "jars" / "s3a" / "pom.xml").getroot()
    return {p.tag.split("}")[1]: p.text for p in root.find("m:properties", POM_NS)}


def test_s3a_jars_match_sparks_hadoop_client() -> None:
    # hadoop-aws must be the Hadoop client Spark ships (its classes call into hadoop-client-api's internals),
    # and the SDK bundle the one that hadoop-aws release is built against (1.12.262 for 3.3.4).
    import pyspark

    shipped = [p.name for p in (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar")]
    (client,) = shipped
    props = _s3a_pom_properties()
    assert client == f"hadoop-client-api-{props['hadoop.version']}.jar"
    assert (props["hadoop.version"], props["aws.sdk.version"]) == ("3.3.4", "1.12.262")


def test_s3a_jars_go_on_a_local_drivers_classpath_and_to_a_clusters_executors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk, aws = _s3a_folder(tmp_path / "s3a")
    monkeypatch.setattr(jars, "_s3a_checkout_folder", lambda: tmp_path / "s3a")
    bundle = tmp_path / "hudi" / "hudi-spark3.5-bundle_2.12-1.2.0.jar"
    bundle.parent.mkdir()
    bundle.write_bytes(b"")
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(bundle.parent))
    source = jars.resolve_jars()
    assert source.s3a == (sdk, aws)
    # Local: the JVM's own classpath, not spark.jars (which Spark copies into every session's scratch).
    assert source.spark_conf() == {jars.DRIVER_CLASSPATH: f"{bundle}:{sdk}:{aws}"}
    assert source.submit_args(local=True) == ["--driver-class-path", f"{bundle}:{sdk}:{aws}"]
    # A cluster's executors get them as any added jar.
    assert source.spark_conf(local=False) == {"spark.jars": f"{bundle},{sdk},{aws}"}
    assert source.submit_args() == ["--jars", f"{bundle},{sdk},{aws}"]
    monkeypatch.setenv(jars.S3A_ENV, "off")
    assert jars.resolve_jars().s3a == ()
    assert jars.resolve_jars().spark_conf() == {jars.DRIVER_CLASSPATH: str(bundle)}


def test_s3a_jars_in_the_operators_folder_are_split_out_and_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "jars"
    sdk, aws = _s3a_folder(folder)
    (folder / "hudi-spark3.5-bundle_2.12-1.2.0.jar").write_bytes(b"")
    _s3a_folder(tmp_path / "checkout-s3a")
    monkeypatch.setattr(jars, "_s3a_checkout_folder", lambda: tmp_path / "checkout-s3a")
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(folder))
    source = jars.resolve_jars()
    assert source.s3a == (sdk, aws)
    assert source.jars == (str(folder / "hudi-spark3.5-bundle_2.12-1.2.0.jar"),)


def test_one_s3a_jar_alone_is_no_connector(tmp_path: Path) -> None:
    (tmp_path / "hadoop-aws-3.3.4.jar").write_bytes(b"")
    assert jars.s3a_jars(tmp_path) == ()
    (tmp_path / "aws-java-sdk-bundle-1.12.262.jar").write_bytes(b"")
    assert len(jars.s3a_jars(tmp_path)) == 2


def test_coordinates_name_the_versions_make_jars_fetches() -> None:
    # The wheel resolves PACKAGES, a checkout fetches the POM: both must give one classpath.
    assert set(jars.PACKAGES) <= _pom_coordinates()


def test_coordinates_match_the_installed_pyspark() -> None:
    # The project's venv runs the Spark the jars are built for (constraints.txt); a user's may be another 3.5.x.
    import pyspark

    assert pyspark.__version__ == jars.SPARK_VERSION
    assert all(c.endswith(":" + jars.SPARK_VERSION) for c in jars.PACKAGES if c.startswith("org.apache.spark:"))


def test_every_excluded_artifact_ships_with_pyspark() -> None:
    # An exclusion of something Spark does not carry would leave a class missing at run time.
    import pyspark

    shipped = {p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    for coordinate in jars.EXCLUDES:
        artifact = coordinate.split(":")[1]
        assert any(name.startswith(artifact + "-") for name in shipped), coordinate


def test_folder_named_by_the_environment_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("org.apache.hudi_hudi-spark3.5-bundle_2.12-1.2.0.jar", "spark-avro_2.12-3.5.7.jar"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(tmp_path))
    source = jars.resolve_jars()
    assert source.kind == "folder" and source.folder == str(tmp_path) and len(source.jars) == 2
    assert source.spark_conf() == {jars.DRIVER_CLASSPATH: ":".join(source.jars)}
    assert source.spark_conf(local=False) == {"spark.jars": ",".join(source.jars)}
    assert source.submit_args() == ["--jars", ",".join(source.jars)]


def test_a_folder_without_the_bundle_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "spark-avro_2.12-3.5.7.jar").write_bytes(b"")
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(tmp_path))
    with pytest.raises(ConfigError, match=str(tmp_path)) as err:
        jars.resolve_jars()
    assert "hudi-cdc jars --fetch" in str(err.value)


def test_without_a_folder_spark_resolves_the_coordinates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jars.JARS_DIR_ENV, raising=False)
    monkeypatch.setattr(jars, "_checkout_folder", lambda: tmp_path / "nothing-here")
    source = jars.resolve_jars()
    assert source.kind == "packages"
    conf = source.spark_conf()
    assert conf["spark.jars.packages"].split(",") == list(jars.PACKAGES)
    assert conf["spark.jars.excludes"].split(",") == list(jars.EXCLUDES)
    assert source.submit_args()[0] == "--packages"


def test_an_empty_checkout_folder_falls_back_to_coordinates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jars.JARS_DIR_ENV, raising=False)
    monkeypatch.setattr(jars, "_checkout_folder", lambda: tmp_path)
    assert jars.resolve_jars().kind == "packages"


# --- what the wheel carries, and the versions the project pins ---------------------------------------------


def _setup_py_wheel_jars() -> tuple[str, ...]:
    tree = ast.parse((REPO / "setup.py").read_text())
    (value,) = [n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "WHEEL_JARS"]
    return tuple(ast.literal_eval(value))


def test_the_wheel_carries_every_own_jar_and_the_writers_client() -> None:
    # setup.py cannot import the package; its list must be the one resolution looks for.
    assert _setup_py_wheel_jars() == (*jars.OWN_JARS, jars.JAVA_CLIENT_JAR)
    # ... and they are the files `make jars` builds (the Makefile's targets and the POMs' final names).
    makefile = (REPO / "Makefile").read_text()
    for name in jars.OWN_JARS:
        assert f"$(JARS_DIR)/{name}" in makefile, name
    assert jars.JAVA_CLIENT_JAR == f"hudi-java-client-{_pom_properties()['hudi.version']}.jar"


def _pom_properties() -> dict[str, str]:
    root = ET.parse(REPO / "jars" / "hudi" / "pom.xml").getroot()
    return {p.tag.split("}")[1]: p.text or "" for p in root.find("m:properties", POM_NS)}


def test_the_project_venv_pins_the_spark_the_jars_are_built_for_and_the_range_admits_it() -> None:
    pins = dict(
        line.split("==")
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert pins["pyspark"] == jars.SPARK_VERSION == _pom_properties()["spark.version"]
    for pom in ("pick", "writer"):
        assert f"<spark.version>{jars.SPARK_VERSION}</spark.version>" in (REPO / "jars" / pom / "pom.xml").read_text()
    setup_cfg = (REPO / "setup.cfg").read_text()
    assert f"pyspark>={jars.SPARK_SERIES},<3.6" in setup_cfg and "pyspark==" not in setup_cfg
    assert jars.SPARK_VERSION.startswith(jars.SPARK_SERIES + ".")


def _jar_files(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"")
    return folder


_WHEEL_JARS = ("hudi-cdc-pick-1.jar", "hudi-cdc-writer-1.jar", "hudi-cdc-localfs-1.jar", "hudi-java-client-1.2.0.jar")


def test_a_local_session_gets_the_local_file_system_on_the_drivers_own_classpath(tmp_path: Path) -> None:
    folder = _jar_files(tmp_path, "hudi-spark3.5-bundle_2.12-1.2.0.jar", "hudi-cdc-localfs-1.jar")
    source = jars.JarSource("folder", jars=jars.folder_jars(folder), folder=str(folder), s3a=("/s3a/aws.jar",))
    local = source.spark_conf(local=True)
    assert local[jars.LOCAL_FS_CONF] == jars.LOCAL_FS_CLASS
    assert local[jars.DRIVER_CLASSPATH].split(":") == [*source.jars, "/s3a/aws.jar"]
    assert "spark.jars" not in local
    assert source.submit_args(local=True)[:4] == [
        "--driver-class-path",
        local[jars.DRIVER_CLASSPATH],
        "--conf",
        f"{jars.LOCAL_FS_CONF}={jars.LOCAL_FS_CLASS}",
    ]
    assert jars.LOCAL_FS_CONF not in source.spark_conf(local=False)  # a cluster's executors keep Hadoop's
    assert "--conf" not in source.submit_args()
    without = jars.JarSource("folder", jars=(str(folder / "hudi-spark3.5-bundle_2.12-1.2.0.jar"),), folder=str(folder))
    assert jars.LOCAL_FS_CONF not in without.spark_conf(local=True)


def test_the_wheels_own_jars_join_the_coordinates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jars.JARS_DIR_ENV, raising=False)
    monkeypatch.setattr(jars, "_checkout_folder", lambda: tmp_path / "nothing-here")
    packaged = _jar_files(tmp_path / "_jars", *_WHEEL_JARS)
    monkeypatch.setattr(jars, "packaged_folder", lambda: packaged)
    source = jars.resolve_jars()
    assert source.kind == "packages" and source.folder == str(packaged)
    assert [Path(j).name for j in source.jars] == list(_WHEEL_JARS)
    conf = source.spark_conf()
    # The bundle Spark resolves is not on the JVM's own classpath: only the jar that needs no Hudi goes there.
    assert conf["spark.jars"].split(",") == [str(packaged / n) for n in _WHEEL_JARS if n != "hudi-cdc-localfs-1.jar"]
    assert conf[jars.DRIVER_CLASSPATH] == str(packaged / "hudi-cdc-localfs-1.jar")
    assert conf["spark.jars.packages"].split(",") == list(jars.packages())
    args = source.submit_args()
    assert args[0] == "--packages" and args[-2:] == ["--jars", ",".join(str(packaged / n) for n in _WHEEL_JARS)]
    assert jars.own_jars(source) == {n: str(packaged / n) for n in jars.OWN_JARS}


def test_a_folder_without_our_jars_gets_the_wheels_and_keeps_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = "hudi-spark3.5-bundle_2.12-1.2.0.jar"
    packaged = _jar_files(tmp_path / "_jars", *_WHEEL_JARS)
    monkeypatch.setattr(jars, "packaged_folder", lambda: packaged)
    # A folder `hudi-cdc jars --fetch` filled before the wheel carried our jars: the wheel's join it.
    fetched = _jar_files(tmp_path / "fetched", bundle)
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(fetched))
    source = jars.resolve_jars()
    assert source.kind == "folder" and source.folder == str(fetched)
    assert source.jars == (str(fetched / bundle), *(str(packaged / n) for n in _WHEEL_JARS))
    # A folder with its own copies (a checkout's `make jars`) keeps them; its Java client wins over the wheel's.
    full = _jar_files(tmp_path / "full", bundle, "hudi-cdc-pick-1.jar", "hudi-java-client-1.2.1.jar")
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(full))
    names = [Path(j).parent.name + "/" + Path(j).name for j in jars.resolve_jars().jars]
    assert sorted(names) == sorted(
        [
            "full/" + bundle,
            "full/hudi-cdc-pick-1.jar",
            "full/hudi-java-client-1.2.1.jar",
            "_jars/hudi-cdc-writer-1.jar",
            "_jars/hudi-cdc-localfs-1.jar",
        ]
    )


def test_the_writer_counts_only_beside_hudis_java_client(tmp_path: Path) -> None:
    folder = _jar_files(tmp_path, "hudi-spark3.5-bundle_2.12-1.2.0.jar", "hudi-cdc-pick-1.jar", "hudi-cdc-writer-1.jar")
    source = jars.JarSource("folder", jars=jars.folder_jars(folder), folder=str(folder))
    assert jars.own_jars(source) == {
        "hudi-cdc-pick-1.jar": str(folder / "hudi-cdc-pick-1.jar"),
        "hudi-cdc-writer-1.jar": None,
        "hudi-cdc-localfs-1.jar": None,
    }


def test_spark_coordinates_follow_the_spark_in_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # SPARK_HOME is what pyspark's launcher starts: its spark-core jar names the version.
    home = tmp_path / "spark"
    _jar_files(home / "jars", "spark-core_2.12-3.5.0.jar")
    monkeypatch.setenv("SPARK_HOME", str(home))
    assert jars.spark_version() == "3.5.0"
    coordinates = jars.packages()
    assert "org.apache.spark:spark-avro_2.12:3.5.0" in coordinates
    assert "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.0" in coordinates
    assert coordinates[0] == jars.PACKAGES[0]  # the Hudi bundle is one for all of 3.5.x
    # A Spark outside 3.5 gets the built-for coordinates, and --version says it is unsupported.
    (home / "jars" / "spark-core_2.12-3.5.0.jar").unlink()
    _jar_files(home / "jars", "spark-core_2.13-4.0.1.jar", "spark-core_2.12-3.4.4.jar")
    assert jars.spark_version() == "3.4.4" and jars.packages() == jars.PACKAGES
    assert jars.runtime_versions()["spark"] == "3.4.4 (unsupported: hudi-cdc needs Spark 3.5.x)"


def test_without_spark_home_the_installed_pyspark_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyspark

    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert jars.spark_version() == pyspark.__version__
    assert f"org.apache.spark:spark-avro_2.12:{pyspark.__version__}" in jars.packages()


def test_runtime_versions_read_the_jdk_release_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "bin" / "java").write_text("#!/bin/sh\nexit 3\n")  # never run: the versions come from files
    (jdk / "release").write_text('IMPLEMENTOR="x"\nJAVA_VERSION="17.0.99"\n')
    monkeypatch.setenv("JAVA_HOME", str(jdk))
    bundle = _jar_files(tmp_path / "jars", "org.apache.hudi_hudi-spark3.5-bundle_2.12-1.2.0.jar")
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(bundle))
    versions = jars.runtime_versions()
    assert versions["java"] == f"17.0.99 ({jdk / 'bin' / 'java'})"
    assert versions["hudi"] == f"1.2.0 (from {bundle})"
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert jars.runtime_versions()["java"].startswith("none found")


def test_version_option_prints_ours_and_what_a_session_would_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyspark
    from click.testing import CliRunner

    from hudi_cdc._version import __version__
    from hudi_cdc.cli import main

    monkeypatch.delenv("SPARK_HOME", raising=False)
    bundle = _jar_files(tmp_path / "jars", "hudi-spark3.5-bundle_2.12-1.2.0.jar")
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(bundle))
    done = CliRunner().invoke(main, ["--version"])
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert lines[:3] == [f"hudi-cdc {__version__}", f"Spark {pyspark.__version__}", f"Hudi 1.2.0 (from {bundle})"]
    assert lines[3].startswith("Java ") and len(lines) == 4
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_jars_command_says_which_own_jars_are_there_and_what_is_off_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from hudi_cdc.cli import main

    monkeypatch.setattr(jars, "packaged_folder", lambda: tmp_path / "no-wheel-jars")
    folder = _jar_files(tmp_path / "jars", "hudi-spark3.5-bundle_2.12-1.2.0.jar", "hudi-cdc-pick-1.jar")
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(folder))
    monkeypatch.setenv("HUDI_CDC_JVM_ARCHIVE", "off")
    done = CliRunner().invoke(main, ["jars"])
    assert done.exit_code == 0, done.output
    assert f"  hudi-cdc-pick-1.jar: {folder / 'hudi-cdc-pick-1.jar'} (from {jars.JARS_DIR_ENV})" in done.output
    assert "  hudi-cdc-writer-1.jar: missing, so this faster path is off: small MERGE_ON_READ rounds" in done.output
    info = json.loads(CliRunner().invoke(main, ["jars", "--json"]).output)
    assert info["own_jars"] == {
        "hudi-cdc-pick-1.jar": str(folder / "hudi-cdc-pick-1.jar"),
        "hudi-cdc-writer-1.jar": None,
        "hudi-cdc-localfs-1.jar": None,
    }
