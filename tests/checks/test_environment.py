"""The environment's checks without a machine to ask: how a ``java -version`` string reads (pure)."""

from __future__ import annotations

import pytest

from hudi_cdc.checks.environment import _java_major


@pytest.mark.parametrize(
    ("version", "major"),
    [("17.0.12", 17), ("21", 21), ("1.8.0_392", 8), ("11.0.2-ea", 11), ("openjdk", None)],
)
def test_the_major_version_of_old_and_new_numbering(version: str, major: int | None) -> None:
    assert _java_major(version) == major
