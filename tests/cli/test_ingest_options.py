"""``hudi-cdc ingest``'s options as the settings' declaration makes them, refused before Spark starts."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import hudi_cdc
from hudi_cdc.cli import main
from hudi_cdc.errors import ConfigError


def test_an_old_flag_warns_naming_the_new_one_and_still_counts() -> None:
    # No --target-table: the settings are refused before any session starts, after the old flags were read.
    result = CliRunner().invoke(
        main, ["ingest", "--source-path", "/in", "--target-base-path", "/out", "--record-key-field", "id",
               "--mask", "email=hash"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[:2] == [
        "hudi-cdc warning: --record-key-field is deprecated (goes in the next release): use --record-key-fields",
        "hudi-cdc warning: --mask is deprecated (goes in the next release): use --masks",
    ]
    assert "missing required settings: --target-table" in result.stderr


def test_a_bad_value_names_its_variable_and_a_typo_the_closest_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUDI_CDC__TABLE_TYP", "mor")
    result = CliRunner().invoke(main, ["ingest", "--source-path", "/in", "--target-base-path", "/o"])
    assert result.exit_code == 2
    assert "HUDI_CDC__TABLE_TYP: unknown setting 'table_typ'; did you mean table_type?" in result.stderr


def test_the_python_api_refuses_a_typo_with_the_closest_name() -> None:
    with pytest.raises(ConfigError, match=r"^keyword argument maks: unknown setting 'maks'; did you mean masks\?$"):
        hudi_cdc.ingest(source_path="/in", target_base_path="/o", target_table="t", record_key_fields="id", maks={})
