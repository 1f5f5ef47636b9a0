"""The JVM options hudi-cdc's jobs run with, and the Java version rule that picks them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hudi_cdc._jvm import (
    GC_ENV,
    GC_LOCKER_RETRIES,
    JIT_ENV,
    JOL_OPTIONS,
    java_binary,
    java_feature_version,
    jvm_options,
)
from hudi_cdc.errors import ConfigError


@pytest.fixture(autouse=True)
def _java_default_jit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JIT_ENV, raising=False)  # `make test` runs the suite with its JVMs on quick
    monkeypatch.delenv(GC_ENV, raising=False)  # and on the parallel collector


def _jdk(tmp_path: Path, release: str | None) -> str:
    """A JDK folder holding bin/java and, if given, a ``release`` file saying ``JAVA_VERSION``."""
    (tmp_path / "bin").mkdir()
    java = tmp_path / "bin" / "java"
    java.write_text("")
    if release is not None:
        (tmp_path / "release").write_text(f'IMPLEMENTOR="Test"\nJAVA_VERSION="{release}"\n')
    return str(java)


@pytest.mark.parametrize(("release", "feature"), [("17.0.15", 17), ("21", 21), ("1.8.0_392", 8), ("23.0.1", 23)])
def test_the_feature_version_is_read_from_the_jdk_release_file(tmp_path: Path, release: str, feature: int) -> None:
    assert java_feature_version(_jdk(tmp_path, release)) == feature


def test_a_jdk_without_a_release_file_has_no_known_version(tmp_path: Path) -> None:
    assert java_feature_version(_jdk(tmp_path, None)) is None


@pytest.mark.parametrize("release", ["17.0.15", "21.0.2", "1.8.0_392", None])
def test_java_before_23_waits_out_the_gc_locker(tmp_path: Path, release: str | None) -> None:
    options = jvm_options(_jdk(tmp_path, release)).split()
    gc = ["-XX:+UnlockDiagnosticVMOptions", f"-XX:GCLockerRetryAllocationCount={GC_LOCKER_RETRIES}"]
    assert options == [*gc, *JOL_OPTIONS]


def test_java_23_which_dropped_the_option_gets_none(tmp_path: Path) -> None:
    # Java 23 would refuse to start with an option it no longer has.
    assert jvm_options(_jdk(tmp_path, "23.0.1")).split() == list(JOL_OPTIONS)


def test_quick_jit_leaves_the_optimizing_compiler_out_and_a_wrong_mode_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    java = _jdk(tmp_path, "17.0.15")
    monkeypatch.setenv(JIT_ENV, "quick")
    assert jvm_options(java).split()[-2:] == ["-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m"]
    monkeypatch.setenv(JIT_ENV, "Full")
    assert "TieredStopAtLevel" not in jvm_options(java) and "ReservedCodeCacheSize" not in jvm_options(java)
    monkeypatch.setenv(JIT_ENV, "fast")
    with pytest.raises(ConfigError, match=r"HUDI_CDC_JIT='fast': expected one of full, quick"):
        jvm_options(java)


def _code_cache_bytes(java: str, options: str) -> int:
    """The code cache the real ``java`` reserves with ``options`` (as HotSpot reports its flags)."""
    done = subprocess.run(
        [java, *options.split(), "-XX:+PrintFlagsFinal", "-version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    line = next(ln for ln in done.stdout.splitlines() if ln.split()[1:2] == ["ReservedCodeCacheSize"])
    return int(line.split()[3])


def test_quick_jit_keeps_the_code_cache_the_full_jit_has(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first tier alone gets a 48 MB code cache from Java: a continuous runner on quick filled it in one to
    # two minutes, and the JVM then died of "Out of space in CodeCache" (the two-runner chaos run's exit 2).
    java = java_binary()
    assert java is not None, "the tests need the java Spark starts"
    full = _code_cache_bytes(java, jvm_options(java))
    monkeypatch.setenv(JIT_ENV, "quick")
    quick = _code_cache_bytes(java, jvm_options(java))
    assert full >= 240 * 1024 * 1024
    assert quick >= full, f"quick reserves {quick >> 20} MB of code cache, the full JIT {full >> 20} MB"


def test_the_parallel_collector_is_asked_for_by_name_and_a_wrong_mode_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    java = _jdk(tmp_path, "17.0.15")
    assert "UseParallelGC" not in jvm_options(java)  # Java's own choice by default
    monkeypatch.setenv(GC_ENV, "Parallel")
    assert "-XX:+UseParallelGC" in jvm_options(java).split()
    monkeypatch.setenv(GC_ENV, "zgc")
    with pytest.raises(ConfigError, match=r"HUDI_CDC_GC='zgc': expected one of default, parallel"):
        jvm_options(java)
