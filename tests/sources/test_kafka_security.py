"""The Kafka security settings: their checks (naming the setting, where it came from and the fix), their one
translation to librdkafka's and to the Java client's properties, the raw ``kafka.*`` passthrough over it, the
password read when used and never shown. Against a real secured broker: tests/stack/test_kafka_security.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.config import load_config, load_config_with_origins, redact
from hudi_cdc.errors import ConfigError
from hudi_cdc.service.spec import TableRef, load_pipeline
from hudi_cdc.sources.kafka import client_conf, java_client_conf
from hudi_cdc.sources.kafka_security import KafkaSecurity

KAFKA = dict(
    source="kafka",
    topic="db.public.t",
    bootstrap_servers="broker:9093",
    schema_registry_url="http://registry:8081",
    target_base_path="/out",
    target_table="t",
)
SASL = dict(
    kafka_security_protocol="SASL_SSL",
    kafka_sasl_mechanism="SCRAM-SHA-512",
    kafka_sasl_username="hudi",
    kafka_sasl_password_env="KAFKA_PW",
    kafka_ssl_ca_file="ca.pem",  # in the test's folder (read when a client is made): see in_tmp_path
)
PASSWORD = 'pa"ss\\word-7'  # a quote and a backslash: the JAAS line must escape both


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")


def test_sasl_ssl_translates_to_each_client_and_the_password_is_read_when_used(monkeypatch) -> None:
    config = load_config(env={}, **KAFKA, **SASL)
    security = KafkaSecurity.of(config)
    monkeypatch.setenv("KAFKA_PW", PASSWORD)
    assert client_conf(config.hoodie_conf, security) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "hudi",
        "sasl.password": PASSWORD,
        "ssl.ca.location": "ca.pem",
    }
    assert java_client_conf(config.hoodie_conf, security) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="hudi" '
        'password="pa\\"ss\\\\word-7";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "ca.pem",
    }
    monkeypatch.setenv("KAFKA_PW", "rotated")  # read again at the next client, not kept from the first
    assert client_conf(config.hoodie_conf, security)["sasl.password"] == "rotated"
    assert PASSWORD not in repr(config) and "rotated" not in repr(config)


def test_plain_mechanism_a_password_file_and_ssl_alone(tmp_path: Path, monkeypatch) -> None:
    secret = tmp_path / "kafka.pw"
    secret.write_text("from-file\n")
    plain = dict(SASL, kafka_sasl_mechanism="PLAIN", kafka_sasl_password_env=None, kafka_sasl_password_file=secret)
    config = load_config(env={}, **KAFKA, **plain)
    java = java_client_conf({}, KafkaSecurity.of(config))
    assert java["sasl.jaas.config"] == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="hudi" password="from-file";'
    )
    assert client_conf({}, KafkaSecurity.of(config))["sasl.password"] == "from-file"
    tls = load_config(env={}, **KAFKA, kafka_security_protocol="SSL", kafka_ssl_ca_file="ca.pem")
    assert client_conf({}, KafkaSecurity.of(tls)) == {"security.protocol": "SSL", "ssl.ca.location": "ca.pem"}
    assert java_client_conf({}, KafkaSecurity.of(tls)) == {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "ca.pem",
    }
    # PLAINTEXT, the default: nothing added, as before.
    assert client_conf({"kafka.client.id": "x"}, KafkaSecurity.of(load_config(env={}, **KAFKA))) == {"client.id": "x"}


def test_the_raw_passthrough_wins_for_the_keys_it_sets_and_printed_settings_hide_the_secret(monkeypatch) -> None:
    monkeypatch.setenv("KAFKA_PW", PASSWORD)
    raw = {
        "kafka.ssl.ca.location": "/raw/ca.pem",  # librdkafka's own name: only librdkafka gets it from here
        "kafka.ssl.truststore.location": "/raw/truststore.pem",
        "kafka.basic.auth.user.info": "reg:secret",  # the registry's, never a broker setting
        "hoodie.x": "1",
    }
    config = load_config(env={}, **KAFKA, **SASL, hoodie_conf=raw)
    security = KafkaSecurity.of(config)
    librdkafka, java = client_conf(config.hoodie_conf, security), java_client_conf(config.hoodie_conf, security)
    assert librdkafka["ssl.ca.location"] == "/raw/ca.pem" and librdkafka["sasl.username"] == "hudi"
    assert java["ssl.truststore.location"] == "/raw/truststore.pem" and java["ssl.truststore.type"] == "PEM"
    assert "basic.auth.user.info" not in java and "hoodie.x" not in java
    for shown in (redact(librdkafka), redact(java)):
        assert PASSWORD not in str(shown)
    assert redact(java)["sasl.jaas.config"] == "***" and redact(librdkafka)["sasl.password"] == "***"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            dict(kafka_security_protocol="SASL_SSL", kafka_sasl_mechanism="PLAIN", kafka_sasl_password_env="P"),
            r"kafka_security_protocol='SASL_SSL' needs kafka_sasl_username",
        ),
        (
            dict(kafka_security_protocol="SASL_SSL", kafka_sasl_mechanism="PLAIN", kafka_sasl_username="u"),
            r"needs the password by reference, in one of kafka_sasl_password_env .* or kafka_sasl_password_file",
        ),
        (
            dict(kafka_security_protocol="SASL_PLAINTEXT", kafka_sasl_username="u", kafka_sasl_password_env="P"),
            r"needs kafka_sasl_mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
        ),
        (
            dict(kafka_sasl_mechanism="SCRAM-SHA-256"),
            r"kafka_sasl_mechanism is a SASL login setting, but kafka_security_protocol='PLAINTEXT': set "
            r"kafka_security_protocol to SASL_SSL",
        ),
        (
            dict(
                kafka_security_protocol="SASL_PLAINTEXT",
                kafka_sasl_mechanism="PLAIN",
                kafka_sasl_username="u",
                kafka_sasl_password_env="P",
                kafka_ssl_ca_file="/ca.pem",
            ),
            r"kafka_ssl_ca_file is for TLS, but kafka_security_protocol='SASL_PLAINTEXT'",
        ),  # fmt: skip
        (dict(kafka_sasl_mechanism="GSSAPI"), r"kafka_sasl_mechanism='GSSAPI' is not one of PLAIN, SCRAM-SHA-256"),
    ],
)
def test_incomplete_or_contradictory_settings_are_refused_naming_the_fix(settings: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(env={}, **KAFKA, **settings)


def test_the_error_says_where_the_value_came_from() -> None:
    env = {"HUDI_CDC__KAFKA_SASL_MECHANISM": "PLAIN"}
    with pytest.raises(ConfigError, match=r"\(kafka_sasl_mechanism from HUDI_CDC__KAFKA_SASL_MECHANISM"):
        load_config_with_origins(env=env, **KAFKA)


def test_a_missing_password_variable_names_it_not_a_value(monkeypatch) -> None:
    monkeypatch.delenv("KAFKA_PW", raising=False)
    config = load_config(env={}, **KAFKA, **SASL)
    with pytest.raises(ConfigError, match=r"^environment variable KAFKA_PW \(the Kafka SASL password\) is not set$"):
        client_conf({}, KafkaSecurity.of(config))


PIPELINE = """
[source]
source = "kafka"
bootstrap_servers = "broker:9093"
schema_registry_url = "http://registry:8081"
tables = ["db.public.*"]
{security}
[defaults]
target_base_path = "/lake/{{table}}"
target_table = "{{table}}"
"""


def test_a_pipeline_takes_them_from_source_for_every_table(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        PIPELINE.format(
            security='kafka_security_protocol = "SASL_SSL"\nkafka_sasl_mechanism = "SCRAM-SHA-256"\n'
            'kafka_sasl_username = "hudi"\nkafka_sasl_password_file = "/run/secrets/kafka"\n'
            'kafka_ssl_ca_file = "ca.pem"'
        )
    )
    spec = load_pipeline(path, env={})
    config, origins = spec.table_config_with_origins(TableRef("db.public.orders"), env={})
    assert (
        KafkaSecurity.of(config)
        == KafkaSecurity.of(spec.source)
        == KafkaSecurity("SASL_SSL", "SCRAM-SHA-256", "hudi", None, "/run/secrets/kafka", "ca.pem")
    )
    assert origins["kafka_sasl_username"] == f"{path} [source]"


def test_a_pipeline_refuses_them_in_a_table_section_and_an_incomplete_source(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(PIPELINE.format(security='kafka_security_protocol = "SASL_SSL"\nkafka_sasl_mechanism = "PLAIN"'))
    with pytest.raises(ConfigError, match=rf"^{path} \[source\]: kafka_security_protocol='SASL_SSL' needs "):
        load_pipeline(path, env={})
    path.write_text(PIPELINE.format(security="") + '[tables."public.orders"]\nkafka_sasl_username = "x"\n')
    with pytest.raises(ConfigError, match=r"kafka_sasl_username"):
        load_pipeline(path, env={})


def test_an_unreadable_ca_file_is_named_when_a_client_is_made(tmp_path: Path) -> None:
    config = load_config(env={}, **KAFKA, kafka_security_protocol="SSL", kafka_ssl_ca_file=tmp_path / "none.pem")
    with pytest.raises(ConfigError, match=rf"^kafka_ssl_ca_file {tmp_path}/none.pem: No such file or directory: "):
        client_conf({}, KafkaSecurity.of(config))
