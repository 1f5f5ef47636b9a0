"""The pipeline file's ``[tables."…"]`` sections: one that matches no table is refused (a typo must not turn a
mask off), patterns with one precedence, and where each setting of a table comes from.

A files source on the local disk: its folders are listed without Spark, as ``validate`` and ``run`` list them.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from hudi_cdc.errors import ConfigError
from hudi_cdc.ops.validate_pipeline import validate_pipeline
from hudi_cdc.service.discovery import discover
from hudi_cdc.service.spec import TableRef, load_pipeline
from tests.support import files_pipeline


def _pipeline(tmp_path: Path, sections: str, *, folders: tuple[str, ...] = ("acc.public.customers",)) -> Path:
    return files_pipeline(tmp_path, sections, folders=folders)


def test_a_section_one_letter_short_is_refused_with_the_table_it_meant(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, '[tables."public.customer"]\nmasks = { name = "redact" }\n')
    spec = load_pipeline(path, env={})
    with pytest.raises(ConfigError) as refused:
        validate_pipeline(spec)  # no Spark: the local folders are listed by Python
    message = str(refused.value)
    assert message.startswith(f'{path}: [tables."public.customer"] matches no table of the source; ')
    assert "did you mean public.customers?" in message and "expected = true" in message
    # The same check the runner makes at its first discovery, before any round.
    with pytest.raises(ConfigError, match=r'\[tables."public.customer"\] matches no table'):
        spec.check_sections(discover(None, spec))
    assert not (tmp_path / "lake").exists()

    # Corrected, the mask applies.
    path.write_text(path.read_text().replace('"public.customer"', '"public.customers"'))
    spec = load_pipeline(path, env={})
    spec.check_sections(discover(None, spec))
    assert spec.table_config(TableRef("acc.public.customers")).masks == {"name": "redact"}


def test_what_counts_as_matching_a_table(tmp_path: Path) -> None:
    folders = ("acc.public.customers", "acc.public.audit", "acc.shop_1.orders", "acc.shop_2.orders")
    routes = '[[routes]]\ntables = ["shop_*.orders"]\ntarget = "orders"\nshard_columns = ["schema"]\n'
    ok = (
        '[tables."acc.public.customers"]\ntable_type = "mor"\n'  # by topic
        '[tables."public.audit"]\nenabled = false\n'  # a disabled table that exists
        '[tables."shop_1.orders"]\nenabled = false\n'  # a routed source table, disabled before routing
        '[tables."orders"]\ntable_type = "mor"\n'  # a route's target
        '[tables."public.invoices"]\nexpected = true\nmasks = { iban = "redact" }\n'  # created later
        '[tables."public.*"]\nsource_limit = 5\n'
    )
    spec = load_pipeline(_pipeline(tmp_path, ok + routes, folders=folders), env={})
    found = discover(None, spec)
    spec.check_sections(found)
    tables, refused = spec.routed([r for r in found if spec.enabled(r)])
    assert sorted(t.name for t in tables if spec.enabled(t)) == ["orders", "public.customers"] and not refused

    # Settings on a routed source table would apply to nothing: the target's section takes them.
    routed_away = '[tables."shop_2.orders"]\nmasks = { email = "hash" }\n'
    spec = load_pipeline(_pipeline(tmp_path, routed_away + routes, folders=folders), env={})
    with pytest.raises(ConfigError, match=r"shop_2.orders\"\] names shop_2.orders, which \[\[routes\]\] #1 .*"
                       r'set them in \[tables."orders"\]'):  # fmt: skip
        spec.check_sections(discover(None, spec))

    # A pattern that matches nothing, and an excluded table, are refused like a name.
    spec = load_pipeline(_pipeline(tmp_path, '[tables."pubic.*"]\nsource_limit = 1\n', folders=folders), env={})
    with pytest.raises(
        ConfigError, match=r'\[tables."pubic.\*"\] matches no table of the source; did you mean public.\*'
    ):
        spec.check_sections(discover(None, spec))
    excluded = _pipeline(tmp_path, '[tables."acc.public.audit"]\nsource_limit = 1\n', folders=folders)
    excluded.write_text(
        excluded.read_text().replace('tables = "acc.*"', 'tables = "acc.*"\nexclude = "acc.public.audit"')
    )
    spec = load_pipeline(excluded, env={})
    with pytest.raises(ConfigError, match=r"matches no table of the source \(it is excluded by \[source\] exclude\)"):
        spec.check_sections(discover(None, spec))


def test_patterns_merge_in_file_order_and_the_exact_name_wins(tmp_path: Path) -> None:
    sections = (
        '[tables."public.customers"]\ntable_type = "mor"\nmasks = { name = "redact" }\n'  # first in the file
        '[tables."*.customers"]\ntable_type = "cow"\nsource_limit = 10\n[tables."*.customers".hoodie_conf]\n"a" = "1"\n'
        '[tables."public.*"]\nsource_limit = 20\nmin_sync_interval_seconds = 3\n'
        '[tables."public.audit*"]\nenabled = false\n'
        '[tables."public.audit_keep"]\nenabled = true\n'
    )
    path = _pipeline(
        tmp_path, sections, folders=("acc.public.customers", "acc.public.audit_x", "acc.public.audit_keep")
    )
    spec = load_pipeline(path, env={})
    spec.check_sections(discover(None, spec))
    customers = TableRef("acc.public.customers")
    config, origins = spec.table_config_with_origins(customers)
    assert config.table_type == "MERGE_ON_READ" and config.masks == {"name": "redact"}  # exact beats any pattern
    assert config.source_limit == 20 and config.min_sync_interval_seconds == 3  # the later pattern wins
    assert dict(config.hoodie_conf) == {"a": "1"}
    assert origins["table_type"] == f'{path} [tables."public.customers"]'
    assert origins["source_limit"] == f'{path} [tables."public.*"]'
    assert origins["hoodie_conf.a"] == f'{path} [tables."*.customers"]'
    assert origins["record_key_fields"] == f"{path} [defaults]" and origins["compaction"] == "default"
    assert origins["source_path"].startswith(f"{path} [source]")
    assert [s.key for s in spec.sections_for(customers)] == ["*.customers", "public.*", "public.customers"]
    assert not spec.enabled(TableRef("acc.public.audit_x")) and spec.enabled(TableRef("acc.public.audit_keep"))


def test_the_environment_beats_every_section_and_errors_say_where_the_value_came_from(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, '[tables."public.*"]\ntable_type = "mor"\ntombstone_retention_hours = -1\n')
    env = {"HUDI_CDC__TABLE_TYPE": "cow", "HUDI_CDC__LINEAGE_TRANSPORT": "console"}
    spec = load_pipeline(path, env=env)
    with pytest.raises(ConfigError) as refused:
        spec.table_config(TableRef("acc.public.customers"))
    assert f'tombstone_retention_hours from {path} [tables."public.*"]' in str(refused.value)
    path.write_text(path.read_text().replace("tombstone_retention_hours = -1\n", ""))
    spec = load_pipeline(path, env=env)
    config, origins = spec.table_config_with_origins(TableRef("acc.public.customers"))
    assert (config.table_type, config.lineage_transport) == ("COPY_ON_WRITE", "console")
    assert origins["table_type"] == "environment variable HUDI_CDC__TABLE_TYPE"
    assert origins["lineage_transport"] == "environment variable HUDI_CDC__LINEAGE_TRANSPORT"
    # Arguments beat the environment.
    config, origins = spec.table_config_with_origins(TableRef("acc.public.customers"), arguments={"table_type": "mor"})
    assert config.table_type == "MERGE_ON_READ" and origins["table_type"] == "argument table_type"
    with pytest.raises(ConfigError, match=r"^environment variable HUDI_CDC__BOOTSTRAP_SERVERS: bootstrap_servers is "):
        load_pipeline(path, env={"HUDI_CDC__BOOTSTRAP_SERVERS": "k:9092"})


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        ('[tables."public.customers"]\nenable = false\n', "unknown setting 'enable'; did you mean enabled?"),
        ('[tables."public.customers"]\nexpected = "yes"\n', "expected must be true or false"),
        ("[tables.public.customers]\nsource_limit = 1\n", r'goes in quotes: \[tables."public.customers"\]'),
        (
            '[tables."public.customers"]\nsource_limit = 1\n[tables."acc.public.customers"]\nsource_limit = 2\n',
            "name the same table",
        ),
        ('[tables."public.customers"]\ntopic = "x"\n', "topic cannot be set per table"),
        (
            "[run]\nmax_concurent_tables = 1\n",
            r"\[run\]: unknown setting 'max_concurent_tables'; did you mean max_conc",
        ),
    ],
)
def test_section_errors_name_the_place_and_the_closest_name(tmp_path: Path, sections: str, message: str) -> None:
    path = _pipeline(tmp_path, sections)
    with pytest.raises(ConfigError, match=message) as refused:
        load_pipeline(path, env={})
    assert str(path) in str(refused.value)


def test_old_source_catalog_and_lineage_names_work_with_a_warning_naming_the_new_one(tmp_path: Path) -> None:
    path = tmp_path / "old.toml"
    path.write_text(
        f"""
[source]
kind = "files"
path = "{tmp_path}"
tables = "*"
[defaults]
target_base_path = "/lake/{{table}}"
target_table = "{{table}}"
record_key_fields = "id"
[catalog]
kind = "hms"
uri = "thrift://h:9083"
[lineage]
transport = "console"
"""
    )
    with pytest.warns(FutureWarning) as caught:
        spec = load_pipeline(path, env={})
    said = sorted(str(w.message).split(": ", 1)[1] for w in caught)
    assert said == [
        "kind is an old name of catalog, accepted until the next release: use catalog",
        "kind is an old name of source, accepted until the next release: use source",
        "path is an old name of source_path, accepted until the next release: use source_path",
        "transport is an old name of lineage_transport, accepted until the next release: use lineage_transport",
        "uri is an old name of catalog_uri, accepted until the next release: use catalog_uri",
    ]
    assert all(str(w.message).startswith(str(path)) for w in caught)
    config = spec.table_config(TableRef("a.b.c"))
    assert (config.source, config.source_path, config.catalog, config.lineage_transport) == (
        "files",
        f"{tmp_path}/a.b.c",
        "hms",
        "console",
    )
    path.write_text(path.read_text().replace('kind = "files"', 'kind = "files"\nsource = "files"'))
    with warnings.catch_warnings(), pytest.raises(ConfigError, match=r"\[source\]: kind and source are the same"):
        warnings.simplefilter("ignore", FutureWarning)
        load_pipeline(path, env={})


def test_masks_merge_column_by_column_so_a_table_section_never_lifts_a_patterns_mask(tmp_path: Path) -> None:
    sections = (
        '[tables."*.customers"]\nmasks = { email = "redact", name = "keep_last:2" }\n'
        '[tables."public.customers"]\nmasks = { name = "redact", phone = "redact" }\n'
    )
    spec = load_pipeline(_pipeline(tmp_path, sections), env={})
    config = spec.table_config(TableRef("acc.public.customers"))
    assert dict(config.masks) == {"email": "redact", "name": "redact", "phone": "redact"}
