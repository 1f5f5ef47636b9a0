"""The pipeline file: defaults, per-table sections, templates, the environment, and errors that name the place."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.errors import ConfigError
from hudi_cdc.service.spec import TableRef, load_pipeline, select

KAFKA = """
name = "inv"
[source]
source = "kafka"
bootstrap_servers = "127.0.0.1:1"
schema_registry_url = "http://127.0.0.1:2"
tables = ["dbserver1.inventory.*", "other.public.keep"]
exclude = "dbserver1.inventory.audit_*"

[defaults]
target_base_path = "/lake/{server}/{schema}/{table}"
target_table = "{schema}_{table}"
table_type = "mor"
source_limit = 500
[defaults.hoodie_conf]
"hoodie.a" = "1"
"kafka.security.protocol" = "PLAINTEXT"

[tables."inventory.orders"]
partition_path_field = "region"
table_type = "cow"
[tables."inventory.orders".hoodie_conf]
"hoodie.b" = "2"

[tables."dbserver1.inventory.customers"]
record_key_fields = "id,email"

[tables."inventory.skipped"]
enabled = false

[run]
max_concurrent_tables = 3
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pipe.toml"
    path.write_text(text)
    return path


def test_defaults_overrides_and_templates(tmp_path: Path) -> None:
    spec = load_pipeline(_write(tmp_path, KAFKA))
    assert spec.name == "inv" and spec.run.max_concurrent_tables == 3
    assert spec.run.state_dir == str(tmp_path / "inv.state")
    orders = spec.table_config(TableRef("dbserver1.inventory.orders"), env={})
    assert orders.target_base_path == "/lake/dbserver1/inventory/orders" and orders.target_table == "inventory_orders"
    assert orders.table_type == "COPY_ON_WRITE" and orders.partition_path_field == "region"
    assert dict(orders.hoodie_conf) == {"hoodie.a": "1", "hoodie.b": "2", "kafka.security.protocol": "PLAINTEXT"}
    assert (orders.source, orders.topic, orders.source_limit) == ("kafka", "dbserver1.inventory.orders", 500)
    customers = spec.table_config(TableRef("dbserver1.inventory.customers"), env={})  # section named by topic
    assert customers.record_key_fields == ("id", "email") and customers.table_type == "MERGE_ON_READ"
    assert spec.source.matches("dbserver1.inventory.x") and spec.source.matches("other.public.keep")
    assert not spec.source.matches("dbserver1.inventory.audit_log") and not spec.source.matches("other.public.x")
    assert not spec.enabled(TableRef("dbserver1.inventory.skipped")) and spec.enabled(TableRef("dbserver1.inventory.x"))


def test_the_environment_wins_over_the_file_and_source_settings_are_refused_once_at_load(tmp_path: Path) -> None:
    spec = load_pipeline(_write(tmp_path, KAFKA), env={})
    env = {"HUDI_CDC__SOURCE_LIMIT": "7", "HUDI_CDC__TABLE_TYPE": "cow", "HUDI_CDC__PARTITION_PATH_FIELD": "x"}
    other = spec.table_config(TableRef("dbserver1.inventory.other"), env=env)
    assert (other.source_limit, other.table_type, other.partition_path_field) == (7, "COPY_ON_WRITE", "x")
    orders = spec.table_config(TableRef("dbserver1.inventory.orders"), env=env)
    assert orders.partition_path_field == "x"  # defaults < the table's section < the environment
    # Read once, when the file is loaded: every table takes them.
    loaded = load_pipeline(_write(tmp_path, KAFKA), env={"HUDI_CDC__PARTITION_PATH_FIELD": "day"})
    assert loaded.table_config(TableRef("dbserver1.inventory.orders")).partition_path_field == "day"
    for variable, value, message in (
        ("HUDI_CDC__TOPIC", "x", "topic is a setting of the pipeline's source: a pipeline takes it from \\[source\\]"),
        ("HUDI_CDC__SOURCE_PATH", "/x", "source_path is a setting of the pipeline's source"),
        ("HUDI_CDC__CONTINUOUS", "true", r"continuous of a pipeline .* \(--continuous, --max-rounds\)"),
    ):
        with pytest.raises(ConfigError, match=f"^environment variable {variable}: {message}.*unset {variable}"):
            load_pipeline(_write(tmp_path, KAFKA), env={variable: value})
    # The runner compacts off the rounds' path too: async (the default) and inline are both a pipeline's to choose.
    inline = load_pipeline(_write(tmp_path, KAFKA), env={"HUDI_CDC__COMPACTION": "inline"})
    assert inline.table_config(TableRef("dbserver1.inventory.orders")).compaction == "inline"
    with pytest.raises(ConfigError, match="HUDI_CDC__TABLE_TYP.*did you mean table_type"):
        load_pipeline(_write(tmp_path, KAFKA), env={"HUDI_CDC__TABLE_TYP": "cow"})
    # Lineage is pipeline-wide in the file, and the environment's lineage settings reach every table.
    lineage = load_pipeline(_write(tmp_path, KAFKA), env={"HUDI_CDC__LINEAGE_TRANSPORT": "console"})
    assert lineage.table_config(TableRef("dbserver1.inventory.orders")).lineage_transport == "console"


def test_files_source_reads_a_folder_per_table(tmp_path: Path) -> None:
    spec = load_pipeline(
        _write(
            tmp_path,
            '[source]\nsource = "files"\nsource_path = "/landing"\ntables = "*"\n'
            '[defaults]\ntarget_base_path = "/lake/{table}"\ntarget_table = "{table}"\nrecord_key_fields = "id"\n',
        )
    )
    config = spec.table_config(TableRef("db.public.t1"), env={})
    assert (config.source, config.source_path, config.record_key_fields) == ("files", "/landing/db.public.t1", ("id",))
    assert TableRef("db.public.t1").name == "public.t1"
    assert select([TableRef("db.public.t1"), TableRef("db.public.t2")], ["db.public.t2"]) == [TableRef("db.public.t2")]
    with pytest.raises(ConfigError, match=r"--tables names public\.nope, not among.*public\.t1, public\.t2"):
        select([TableRef("db.public.t1"), TableRef("db.public.t2")], ["public.nope"])


def test_jdbc_source_names_tables_by_schema_and_keys_them_by_their_primary_key(tmp_path: Path) -> None:
    spec = load_pipeline(
        _write(
            tmp_path,
            '[source]\nsource = "jdbc"\njdbc_url = "jdbc:postgresql://db:5432/shop"\njdbc_user = "replicator"\n'
            'jdbc_password_env = "SHOP_PW"\ntables = "public.*"\n'
            '[defaults]\ntarget_base_path = "/lake/{schema}/{table}"\ntarget_table = "{table}"\n'
            'jdbc_timestamp_column = "updated_at"\njdbc_incrementing_column = "id"\n'
            '[tables."public.codes"]\njdbc_mode = "full"\n[tables."public.lines"]\nrecord_key_fields = "line_id"\n',
        )
    )
    orders = spec.table_config(TableRef("public.orders", ("order_id", "region")), env={})
    assert (orders.source, orders.jdbc_table, orders.jdbc_user, orders.jdbc_password_env) == (
        "jdbc",
        "public.orders",
        "replicator",
        "SHOP_PW",
    )
    assert orders.record_key_fields == ("order_id", "region") and orders.target_base_path == "/lake/public/orders"
    assert orders.jdbc_mode == "timestamp+incrementing"
    codes = spec.table_config(TableRef("public.codes", ("code",)), env={})
    assert (codes.jdbc_mode, codes.record_key_fields) == ("full", ("code",))
    lines = spec.table_config(TableRef("public.lines", ("id",)), env={})
    assert lines.record_key_fields == ("line_id",)  # the pipeline's own key wins over the primary key
    with pytest.raises(ConfigError, match=r"pipe.toml: table public\.nokey: record_key_fields is empty"):
        spec.table_config(TableRef("public.nokey"), env={})  # no primary key and none set
    assert TableRef("public.orders").name == "public.orders"


def test_a_kafka_source_of_json_topics_needs_no_registry(tmp_path: Path) -> None:
    spec = load_pipeline(
        _write(
            tmp_path,
            '[source]\nsource = "kafka"\nbootstrap_servers = "k:9092"\nkafka_value_format = "json"\ntables = "db.inv.*"\n'
            '[defaults]\ntarget_base_path = "/lake/{table}"\ntarget_table = "{table}"\n'
            '[tables."db.inv.bare"]\nkafka_value_schema_file = "/schemas/bare.json"\n',
        )
    )
    orders = spec.table_config(TableRef("db.inv.orders"), env={})
    assert (orders.kafka_value_format, orders.schema_registry_url, orders.kafka_value_schema_file) == (
        "json",
        None,
        None,
    )
    bare = spec.table_config(TableRef("db.inv.bare"), env={})
    assert (bare.kafka_value_format, bare.kafka_value_schema_file) == ("json", "/schemas/bare.json")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[source]\nsource = 'kafka'\ntables = '*'\n", r"\[source\]: bootstrap_servers is required"),
        ("[source]\nsource = 'kafka'\nbootstrap_servers = 'k'\ntables = '*'\n", "schema_registry_url is required"),
        (
            "[source]\nsource = 'kafka'\nbootstrap_servers = 'k'\nkafka_value_format = 'protobuf'\ntables = '*'\n",
            'kafka_value_format is "avro" or "json"',
        ),
        (
            "[source]\nsource = 'kafka'\nbootstrap_servers = 'k'\nschema_registry_url = 'r'\ntables = '*'\n"
            "[defaults]\nkafka_value_format = 'json'\n",
            r"kafka_value_format cannot",
        ),
        ("[source]\nsource = 'odbc'\ntables = '*'\n", r"\[source\]: source must be \"kafka\", \"files\" or \"jdbc\""),
        ("[source]\nsource = 'jdbc'\ntables = '*'\n", r"\[source\]: jdbc_url is required"),
        ("[source]\nsource = 'jdbc'\ntables = '*'\njdbc_url = 'jdbc:db2://x'\n", r"jdbc_url 'jdbc:db2://x': expected"),
        (
            "[source]\nsource = 'jdbc'\ntables = '*'\njdbc_url = 'jdbc:postgresql://h/db?password=s3cret'\n",
            "jdbc_url carries a password",
        ),
        (
            "[source]\nsource = 'jdbc'\ntables = '*'\njdbc_url = 'jdbc:mysql://h/db'\npassword = 'x'\n",
            "unknown setting 'password'; did you mean",
        ),
        ("[source]\nsource = 'files'\nsource_path = '/x'\n", "tables is required"),
        (
            "[source]\nsource = 'files'\nsource_path = '/x'\ntables = '*'\n[defaults]\ntopic = 'x'\n",
            r"\[defaults\]: topic cannot",
        ),
        (
            "[source]\nsource = 'files'\nsource_path = '/x'\ntables = '*'\n[defaults]\nsorce_limit = 1\n",
            "unknown setting 'sorce_limit'",
        ),
        (
            "[source]\nsource = 'files'\nsource_path = '/x'\ntables = '*'\n[run]\nmax_concurrent_tables = 0\n",
            "positive integer",
        ),
        (
            "[source]\nsource = 'files'\nsource_path = '/x'\ntables = '*'\n[sources]\n",
            r"unknown section 'sources'; did you mean source\?",
        ),
        (
            "[source]\nsource = 'files'\nsource_path = '/x'\ntables = '*'\nschema_change_topic = 'dbserver1'\n",
            "schema_change_topic is a Kafka topic name",
        ),
        ("[source\n", "cannot read pipeline file"),
        ("name = 'x'\n", "a \\[source\\] section is required"),
    ],
)
def test_errors_name_the_file_and_the_setting(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as caught:
        load_pipeline(path)
    assert str(path) in str(caught.value)


def test_a_table_without_a_target_says_where_to_set_it(tmp_path: Path) -> None:
    spec = load_pipeline(_write(tmp_path, "[source]\nsource = 'files'\nsource_path = '/x'\ntables = '*'\n"))
    with pytest.raises(ConfigError, match=r"target_base_path is not set for public\.t: set it in \[defaults\]"):
        spec.table_config(TableRef("db.public.t"), env={})
    spec = load_pipeline(
        _write(
            tmp_path,
            "[source]\nsource = 'files'\nsource_path = '/x'\ntables = '*'\n[defaults]\ntarget_base_path = '/l/{tabel}'\n",
        )
    )
    with pytest.raises(ConfigError, match="names an unknown field 'tabel'"):
        spec.table_config(TableRef("db.public.t"), env={})


def test_consistent_cuts_are_off_by_default_and_need_a_kafka_avro_source(tmp_path: Path) -> None:
    spec = load_pipeline(_write(tmp_path, KAFKA))
    assert spec.run.consistent_cut_interval_seconds == 0 and spec.source.transaction_topic is None
    on = KAFKA.replace('source = "kafka"', 'source = "kafka"\ntransaction_topic = "dbserver1.transaction"')
    spec = load_pipeline(_write(tmp_path, on + "consistent_cut_interval_seconds = 30\n"))
    assert spec.run.consistent_cut_interval_seconds == 30 and spec.source.transaction_topic == "dbserver1.transaction"
    with pytest.raises(ConfigError, match="consistent_cut_interval_seconds must be a number >= 0"):
        load_pipeline(_write(tmp_path, KAFKA + "consistent_cut_interval_seconds = -1\n"))
    files = "[source]\nsource = 'files'\nsource_path = '/x'\ntables = '*'\n[run]\nconsistent_cut_interval_seconds = 5\n"
    with pytest.raises(ConfigError, match='needs \\[source\\] source = "kafka" with Avro values'):
        load_pipeline(_write(tmp_path, files))


def test_discovery_never_takes_a_transaction_topic_for_a_table(tmp_path: Path) -> None:
    from hudi_cdc.service.discovery import _transaction_topic

    spec = load_pipeline(
        _write(tmp_path, KAFKA.replace('source = "kafka"', 'source = "kafka"\ntransaction_topic = "tx"'))
    )
    assert _transaction_topic(spec, "tx") and _transaction_topic(spec, "dbserver1.transaction")
    assert not _transaction_topic(spec, "dbserver1.inventory.transaction")  # a table named transaction
