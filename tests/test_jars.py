"""Where the Spark-side jars come from: the pinned coordinates, a folder, the checkout's ``.jars``."""

from __future__ import annotations

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


def test_coordinates_name_the_versions_make_jars_fetches() -> None:
    # The wheel resolves PACKAGES, a checkout fetches the POM: both must give one classpath.
    assert set(jars.PACKAGES) <= _pom_coordinates()


def test_coordinates_match_the_installed_pyspark() -> None:
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
    assert source.spark_conf() == {"spark.jars": ",".join(source.jars)}
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
