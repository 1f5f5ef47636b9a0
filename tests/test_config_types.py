"""Type mappings and the schema-change policy as settings: TOML, environment, CLI, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.cli._common import options_config
from hudi_cdc.config import load_config
from hudi_cdc.errors import ConfigError

BASE = {"target_base_path": "/tmp/t", "target_table": "t", "source_path": "/tmp/s", "record_key_fields": ("id",)}


def test_file_env_and_cli_merge_kind_by_kind(tmp_path: Path) -> None:
    toml = tmp_path / "ingest.toml"
    toml.write_text(
        'type_mappings = { "tinyint(1)" = "boolean", numeric = "decimal(38,10)" }\n'
        'column_types = { created_at = "timestamp:Europe/Paris" }\n'
        '[schema_changes]\ncolumn_dropped = "fail"\ntype_changed = "quarantine"\n'
    )
    env = {"HUDI_CDC__TYPE_MAPPINGS": '{"json": "string"}', "HUDI_CDC__ON_BAD_EVENT": "quarantine"}
    options = {
        "record_key_fields": ("id",),
        "type_mappings": ("bigint unsigned=decimal(20,0)",),
        "column_types": ("doc=json:struct<a:int,b:string>",),
        "on_column_added": "ignore",
        "on_column_dropped": None,
        "on_type_widened": None,
        "on_type_changed": None,
        "on_column_renamed": None,
        **{k: v for k, v in BASE.items() if k != "record_key_fields"},
    }
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        config = options_config(None, str(toml), (), options)
    assert config.type_mappings == {
        "tinyint(1)": "boolean",
        "numeric": "decimal(38,10)",
        "json": "string",
        "bigint unsigned": "decimal(20,0)",
    }
    assert config.column_types == {"created_at": "timestamp:Europe/Paris", "doc": "json:struct<a:int,b:string>"}
    assert config.schema_change_policy == {
        "column_added": "ignore",
        "column_dropped": "fail",
        "type_widened": "evolve",
        "type_changed": "quarantine",
        "column_renamed": "keep_both",
    }


def test_the_single_behavior_maps_onto_the_kinds() -> None:
    assert load_config(**BASE).schema_change_policy["type_changed"] == "fail"
    assert load_config(**BASE, schema_change_behavior="evolve").schema_change_policy["type_changed"] == "evolve"
    ignore = load_config(**BASE, schema_change_behavior="ignore", schema_changes={"type_widened": "fail"})
    assert (ignore.schema_change_policy["column_added"], ignore.schema_change_policy["type_widened"]) == (
        "ignore",
        "fail",
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"schema_changes": {"column_dropped": "evolve"}},
            r"schema_changes.column_dropped='evolve' is not one of keep, fail \(--on-column-dropped\)",
        ),
        ({"schema_changes": {"column_moved": "keep"}}, r"unknown kind\(s\) column_moved"),
        ({"schema_changes": {"type_changed": "quarantine"}}, r"set on_bad_event = quarantine too"),
        (
            {"column_types": {"price": "decimal(40,2)"}},
            r"column_types: 'price' = 'decimal\(40,2\)': decimal\(40,2\) needs",
        ),
        ({"column_types": {"at": "timestamp:Mars/Base"}}, r"unknown time zone 'Mars/Base'"),
        ({"type_mappings": {"json": "yaml"}}, r"type_mappings: 'json' = 'yaml': not a type mapping target"),
    ],
)
def test_bad_settings_are_refused_naming_the_setting(settings: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(**BASE, **settings)


def test_a_pipeline_table_overrides_one_kind_of_the_defaults(tmp_path: Path) -> None:
    from hudi_cdc.service.spec import TableRef, load_pipeline

    path = tmp_path / "pipe.toml"
    path.write_text(
        'name = "p"\n[source]\nsource = "kafka"\nbootstrap_servers = "127.0.0.1:1"\n'
        'schema_registry_url = "http://127.0.0.1:2"\ntables = ["s.inventory.*"]\n'
        '[defaults]\ntarget_base_path = "/lake/{table}"\ntarget_table = "{table}"\non_bad_event = "quarantine"\n'
        'type_mappings = { "tinyint(1)" = "boolean" }\n'
        '[defaults.schema_changes]\ncolumn_added = "ignore"\ntype_changed = "quarantine"\n'
        '[tables."inventory.orders"]\ncolumn_types = { price = "decimal(12,2)" }\n'
        '[tables."inventory.orders".schema_changes]\ncolumn_dropped = "fail"\n'
    )
    config = load_pipeline(path).table_config(TableRef("s.inventory.orders"), env={})
    assert config.schema_change_policy == {
        "column_added": "ignore",
        "column_dropped": "fail",
        "type_widened": "evolve",
        "type_changed": "quarantine",
        "column_renamed": "keep_both",
    }
    assert (config.type_mappings, config.column_types) == ({"tinyint(1)": "boolean"}, {"price": "decimal(12,2)"})
