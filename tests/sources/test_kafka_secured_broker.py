"""`hudi-cdc ingest` through a SASL_SSL listener (SCRAM-SHA-512 over TLS) and a schema registry that asks for a
login, by both Kafka clients: the process's own consumer (librdkafka) for a small round, Spark's Java client on
the executors for another; `run`, `status`, `validate` and discovery through them; a wrong Kafka password, an
untrusted CA and a wrong registry password each end the round at once with one clear error naming the listener
(or registry) and the fix, and no password anywhere in the output.

The listener is the stack's (stack/start.sh: 127.0.0.1:59094, user hudicdc, its CA and password under
.stack/kafka/tls) and the registry's login port the stack's (58081) when they are up: then nothing is started
here. Without them (a stack started before they existed), a private broker (hudi_cdc.testing.secured_kafka,
about 13 s) and the login proxy in-process in front of the stack's registry (or a private Apicurio) stand in;
under CI=true the stack's must be up.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.errors import ConfigError
from hudi_cdc.service.discovery import discover
from hudi_cdc.service.spec import load_pipeline
from hudi_cdc.testing import envelope_schema, pg_event
from hudi_cdc.testing.kafka import Framer, create_topic, produce, register_schema
from hudi_cdc.testing.registry_proxy import serve
from hudi_cdc.testing.secured_kafka import PrivateRegistry, SecuredBroker, make_ca
from tests.stack.conftest import PORTS, REGISTRY, _listening
from tests.stack.test_kafka_source import last_result, row
from tests.support import apply_events, read_rows, run_cli

pytestmark = [pytest.mark.hudi]

STACK = Path(os.environ.get("HUDI_CDC_STACK_DIR") or Path(__file__).resolve().parents[2] / ".stack")
KAFKA_LIB = STACK / "kafka/lib"
PASSWORD_VAR = "HUDI_CDC_TEST_KAFKA_PASSWORD"
COLUMNS = [("id", "long"), ("name", ["null", "string"])]


# The stack's ports (stack/env.sh; the same variables move them, as for a stack under HUDI_CDC_STACK_DIR).
STACK_KAFKA_PORT = int(os.environ.get("HUDI_CDC_KAFKA_PORT") or PORTS["kafka"])
STACK_SASL_PORT = int(os.environ.get("HUDI_CDC_KAFKA_SASL_PORT") or 59094)
STACK_REGISTRY_LOGIN_PORT = int(os.environ.get("HUDI_CDC_APICURIO_AUTH_PORT") or 58081)


@dataclass
class Listener:
    """A broker's SASL_SSL listener (``secured``), its open one (``plaintext``, for producing), the SCRAM user,
    its password and the CA that signed the broker's certificate: the stack's, or a private broker's."""

    plaintext: str
    secured: str
    username: str
    password: str
    ca_file: Path


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listener]:
    """The stack's SASL_SSL listener when it is up; else a private KRaft broker with one (about 13 s to start
    here: certificates, storage format with the SCRAM user, broker up), once for the module."""
    tls = STACK / "kafka/tls"
    if _listening(STACK_KAFKA_PORT) and _listening(STACK_SASL_PORT) and (tls / "hudicdc.password").exists():
        password = (tls / "hudicdc.password").read_text().strip()
        yield Listener(
            f"127.0.0.1:{STACK_KAFKA_PORT}", f"127.0.0.1:{STACK_SASL_PORT}", "hudicdc", password, tls / "ca.pem"
        )
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but the stack's SASL_SSL listener 127.0.0.1:{STACK_SASL_PORT} is down: make stack-up")
    why = SecuredBroker.available(KAFKA_LIB)
    if why:
        _unavailable(f"no secured broker can start: {why}")
    started = SecuredBroker(tmp_path_factory.mktemp("secured-kafka"), KAFKA_LIB).start()
    try:
        yield Listener(started.plaintext, started.secured, started.username, started.password, started.ca_file)
    finally:
        started.stop()


def _unavailable(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {why}")
    pytest.skip(why)


@dataclass
class Registry:
    """A registry's open Confluent API (``open``: for registering the test's schemas) and the same registry
    behind a login (``url``), its user and the file of its password."""

    open: str
    url: str
    username: str
    password_file: Path

    def login_args(self, password_file: Path | None = None) -> list[str]:
        return [
            "--schema-registry-url", self.url, "--schema-registry-username", self.username,
            "--schema-registry-password-file", str(password_file or self.password_file),
        ]  # fmt: skip

    def login_toml(self) -> str:
        return (
            f'schema_registry_url = "{self.url}"\nschema_registry_username = "{self.username}"\n'
            f'schema_registry_password_file = "{self.password_file}"\n'
        )


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """The stack's registry and its login port when they are up; else the login proxy started here in front of
    the stack's registry, or of a private Apicurio (about 25 s to start here) when that is down too."""
    password = STACK / "apicurio/auth/hudicdc.password"
    api = "/apis/ccompat/v7"
    if _listening(PORTS["apicurio"]) and _listening(STACK_REGISTRY_LOGIN_PORT) and password.exists():
        yield Registry(REGISTRY, f"http://127.0.0.1:{STACK_REGISTRY_LOGIN_PORT}{api}", "hudicdc", password)
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but the stack's registry login port {STACK_REGISTRY_LOGIN_PORT} is down: make stack-up")
    secret = tmp_path_factory.mktemp("registry-login") / "password"
    secret.write_text(f"R-{uuid.uuid4().hex[:12]}\n")
    private = None
    if _listening(PORTS["apicurio"]):
        open_url = REGISTRY
    else:
        dist = STACK / "apicurio/dist"
        if not list(dist.glob("apicurio-registry-app-*-runner.jar")):
            _unavailable(f"no registry: the stack's is down and {dist} has no Apicurio jar (stack/setup.sh fetches it)")
        private = PrivateRegistry(dist, tmp_path_factory.mktemp("registry")).start()
        open_url = private.url
    upstream = open_url[: -len(api)]
    proxy = serve(upstream, {"hudicdc": secret.read_text().strip()})
    try:
        yield Registry(open_url, f"http://127.0.0.1:{proxy.server_address[1]}{api}", "hudicdc", secret)
    finally:
        proxy.shutdown()
        proxy.server_close()
        if private is not None:
            private.stop()


class Topic:
    """A fresh Debezium-like topic, written through the broker's open listener, its schemas in the registry."""

    def __init__(self, broker: Listener, registry: Registry, server: str = "sec") -> None:
        self.broker = broker
        self.name = f"{server}.t{uuid.uuid4().hex[:10]}.customers"
        create_topic(broker.plaintext, self.name)
        key = {"type": "record", "name": "Key", "namespace": self.name, "fields": [{"name": "id", "type": "long"}]}
        value = envelope_schema("customers", COLUMNS, schema=self.name.split(".")[1])
        self.key = Framer(register_schema(registry.open, f"{self.name}-key", key), key)
        self.value = Framer(register_schema(registry.open, f"{self.name}-value", value), value)

    def send(self, events: Sequence[dict[str, Any]]) -> None:
        def key_of(event: dict[str, Any]) -> int:
            return int((event["after"] or event["before"])["id"])

        produce(self.broker.plaintext, self.name, ((self.key({"id": key_of(e)}), self.value(e), 0) for e in events))


def ingest(
    broker: Listener,
    registry: Registry,
    topic: Topic,
    base: str,
    *extra: str,
    ca_file: Path | None = None,
    registry_password_file: Path | None = None,
) -> Any:
    return run_cli(
        "--source", "kafka", "--topic", topic.name, "--bootstrap-servers", broker.secured,
        *registry.login_args(registry_password_file), "--target-base-path", base, "--target-table", "customers", "--json",
        "--kafka-security-protocol", "SASL_SSL", "--kafka-sasl-mechanism", "SCRAM-SHA-512",
        "--kafka-sasl-username", broker.username, "--kafka-ssl-ca-file", str(ca_file or broker.ca_file), *extra,
    )  # fmt: skip


def test_ingest_through_sasl_ssl_by_both_kafka_clients(
    spark, broker: Listener, registry: Registry, tmp_path: Path, monkeypatch
) -> None:
    topic, base = Topic(broker, registry), str(tmp_path / "t")
    first = [pg_event("c", lsn=10 + k, after=row(k, f"n{k}")) for k in range(5)]
    topic.send(first)
    monkeypatch.setenv(PASSWORD_VAR, broker.password)
    done = ingest(broker, registry, topic, base, "--kafka-sasl-password-env", PASSWORD_VAR)
    assert done.exit_code == 0, done.output
    result = last_result(done.output)
    assert result["details"]["read"] == "driver" and result["checkpoint"]["offsets"] == {"0": 5}

    later = [pg_event("u", lsn=100, after=row(1, "m1")), pg_event("d", lsn=101, before=row(3, None))]
    topic.send(later)
    secret = tmp_path / "kafka.password"
    secret.write_text(broker.password + "\n")
    monkeypatch.delenv(PASSWORD_VAR)  # the second round's password comes from the file alone
    done = ingest(
        broker,
        registry,
        topic,
        base,
        "--kafka-sasl-password-file",
        str(secret),
        "--kafka-driver-read-max-messages",
        "0",
    )
    assert done.exit_code == 0, done.output
    result = last_result(done.output)
    assert result["details"]["read"] == "executors" and result["checkpoint"]["offsets"] == {"0": 7}
    assert broker.password not in done.output
    expected = apply_events(first + later)
    assert read_rows(spark, base, ["id", "name"]) == sorted((r["id"], r["name"]) for r in expected.values())


@pytest.mark.parametrize("wrong", ["password", "ca", "registry password"])
def test_a_wrong_password_or_an_untrusted_ca_is_one_clear_error_without_the_secret(
    spark, broker: Listener, registry: Registry, tmp_path: Path, monkeypatch, capfd, wrong: str
) -> None:
    topic = Topic(broker, registry)
    topic.send([pg_event("c", lsn=10, after=row(1, "a"))])
    attempted = "Wr0ng-" + uuid.uuid4().hex[:8]
    monkeypatch.setenv(PASSWORD_VAR, attempted if wrong == "password" else broker.password)
    other_ca = make_ca(tmp_path / "other-ca", "other") if wrong == "ca" else None
    wrong_registry = tmp_path / "registry.password"
    wrong_registry.write_text(attempted)
    began = time.monotonic()
    done = ingest(
        broker, registry, topic, str(tmp_path / "t"), "--kafka-sasl-password-env", PASSWORD_VAR, ca_file=other_ca,
        registry_password_file=wrong_registry if wrong == "registry password" else None,
    )  # fmt: skip
    took = time.monotonic() - began
    assert done.exit_code == 2, done.output  # a ConfigError: terminal, fixed by the user
    if wrong == "password":
        assert f"Kafka at {broker.secured} refused hudi-cdc's login" in done.output
        assert "Authentication failed" in done.output and "kafka_sasl_password_env" in done.output
    elif wrong == "ca":
        assert f"the TLS handshake with Kafka at {broker.secured} failed" in done.output
        assert "certificate verify failed" in done.output and "set kafka_ssl_ca_file" in done.output
    else:
        assert f"the schema registry at {registry.url} refused hudi-cdc's login as user 'hudicdc'" in done.output
        assert "schema_registry_password_file points to" in done.output
    if wrong == "registry password":
        assert done.output.count("refused hudi-cdc's login") == 1, done.output  # one error
    else:
        assert done.output.count(broker.secured) == 2, done.output  # one error (the listener named twice in it)
    assert took < 12, f"{took:.1f}s: the round waited out the request timeout instead of failing at once"
    captured = capfd.readouterr()
    secrets = (attempted, broker.password, registry.password_file.read_text().strip())
    for text in (done.output, captured.out, captured.err):
        assert not any(secret in text for secret in secrets)


def test_discovery_lists_the_topics_through_sasl_ssl(broker: Listener, tmp_path: Path) -> None:
    name = f"sec.t{uuid.uuid4().hex[:10]}.orders"
    create_topic(broker.plaintext, name)
    secret = tmp_path / "kafka.password"
    secret.write_text(broker.password)
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(
        f'[source]\nsource = "kafka"\nbootstrap_servers = "{broker.secured}"\nschema_registry_url = "http://127.0.0.1:1"\n'
        f'tables = ["sec.*"]\nkafka_security_protocol = "SASL_SSL"\nkafka_sasl_mechanism = "SCRAM-SHA-512"\n'
        f'kafka_sasl_username = "{broker.username}"\nkafka_sasl_password_file = "{secret}"\n'
        f'kafka_ssl_ca_file = "{broker.ca_file}"\n'
        f'[defaults]\ntarget_base_path = "{tmp_path}/lake/{{table}}"\ntarget_table = "{{table}}"\n'
    )
    found = discover(None, load_pipeline(pipeline, env={}))
    assert name in [ref.topic for ref in found]
    secret.write_text("Wr0ng-discovery")  # read again by the next client: a refused login, at once
    began = time.monotonic()
    with pytest.raises(ConfigError, match=rf"^Kafka at {broker.secured} refused hudi-cdc's login: ") as refused:
        discover(None, load_pipeline(pipeline, env={}))
    assert time.monotonic() - began < 10 and "Wr0ng-discovery" not in str(refused.value)


def test_a_pipeline_run_and_its_status_through_sasl_ssl(
    spark, broker: Listener, registry: Registry, tmp_path: Path
) -> None:
    """``[source]`` gives the settings once: discovery, every table's round and the backlog status reads use them."""
    from click.testing import CliRunner

    from hudi_cdc.cli import main

    server = f"run{uuid.uuid4().hex[:6]}"
    topics = [Topic(broker, registry, server=server) for _ in range(2)]
    for n, topic in enumerate(topics):
        topic.send([pg_event("c", lsn=10 + k, after=row(k, f"{n}-{k}")) for k in range(3 + n)])
    secret = tmp_path / "kafka.password"
    secret.write_text(broker.password)
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(
        f'[source]\nsource = "kafka"\nbootstrap_servers = "{broker.secured}"\n{registry.login_toml()}'
        f'tables = ["{server}.*"]\nkafka_security_protocol = "SASL_SSL"\nkafka_sasl_mechanism = "SCRAM-SHA-512"\n'
        f'kafka_sasl_username = "{broker.username}"\nkafka_sasl_password_file = "{secret}"\n'
        f'kafka_ssl_ca_file = "{broker.ca_file}"\n'
        f'[defaults]\ntarget_base_path = "{tmp_path}/lake/{{schema}}"\ntarget_table = "{{schema}}_{{table}}"\n'
    )
    done = CliRunner().invoke(main, ["run", "--pipeline", str(pipeline), "--json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert broker.password not in done.output and registry.password_file.read_text().strip() not in done.output
    for n, topic in enumerate(topics):
        base = str(tmp_path / "lake" / topic.name.split(".")[1])
        assert read_rows(spark, base, ["id", "name"]) == [(k, f"{n}-{k}") for k in range(3 + n)]
    status = CliRunner().invoke(main, ["status", "--pipeline", str(pipeline), "--json"], catch_exceptions=False)
    assert status.exit_code == 0, status.output
    tables = json.loads(status.output.strip().splitlines()[-1])["tables"]
    assert sorted((t["name"], t["behind"]) for t in tables) == sorted(
        (f"{t.name.split('.')[1]}.customers", 0) for t in topics
    )


def test_validate_checks_the_topic_through_sasl_ssl_and_names_a_refused_login(
    spark, broker: Listener, registry: Registry, tmp_path: Path, monkeypatch
) -> None:
    from click.testing import CliRunner

    from hudi_cdc.cli import main

    topic = Topic(broker, registry)
    topic.send([pg_event("c", lsn=10, after=row(1, "a")), pg_event("c", lsn=11, after=row(2, "b"))])
    args = [
        "validate", "--source", "kafka", "--topic", topic.name, "--bootstrap-servers", broker.secured,
        *registry.login_args(), "--target-base-path", str(tmp_path / "t"), "--target-table", "t",
        "--kafka-security-protocol", "SASL_SSL", "--kafka-sasl-mechanism", "SCRAM-SHA-512",
        "--kafka-sasl-username", broker.username, "--kafka-sasl-password-env", PASSWORD_VAR,
        "--kafka-ssl-ca-file", str(broker.ca_file), "--json",
    ]  # fmt: skip
    monkeypatch.setenv(PASSWORD_VAR, broker.password)
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    checks = {c["name"]: c for c in json.loads(done.output)["checks"]}
    assert checks["kafka.topic"]["status"] == "ok", done.output
    monkeypatch.setenv(PASSWORD_VAR, "Wr0ng-validate")
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 1, done.output
    checks = {c["name"]: c for c in json.loads(done.output)["checks"]}
    assert checks["kafka.topic"]["status"] == "fail"
    assert checks["kafka.topic"]["detail"].startswith(f"Kafka at {broker.secured} refused hudi-cdc's login")
    assert checks["kafka.retention"]["status"] == "skip"
    assert "Wr0ng-validate" not in done.output and broker.password not in done.output


@pytest.mark.parametrize("wrong", ["password", "ca"])
def test_spark_kafka_clients_refusals_are_the_same_clear_errors(
    spark, broker: Listener, registry: Registry, tmp_path: Path, monkeypatch, wrong: str
) -> None:
    """A round read by the executors meets the broker through Spark's Java client, whose refusals reach the
    driver as a failed Spark job: the pipeline maps them (java_security_error) to the errors librdkafka's get.
    Its read is made here directly, so that the process's own client (which would refuse first) is not asked."""
    from hudi_cdc.config import load_config
    from hudi_cdc.sources.kafka import KafkaSource, OffsetRange, java_security_error

    topic = Topic(broker, registry)
    topic.send([pg_event("c", lsn=10, after=row(1, "a"))])
    attempted = "Wr0ng-" + uuid.uuid4().hex[:8]
    monkeypatch.setenv(PASSWORD_VAR, attempted if wrong == "password" else broker.password)
    ca_file = make_ca(tmp_path / "other-ca", "other") if wrong == "ca" else broker.ca_file
    config = load_config(
        source="kafka", topic=topic.name, bootstrap_servers=broker.secured, schema_registry_url=registry.url,
        target_base_path=str(tmp_path / "t"), target_table="t", kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="SCRAM-SHA-512", kafka_sasl_username=broker.username,
        kafka_sasl_password_env=PASSWORD_VAR, kafka_ssl_ca_file=str(ca_file),
    )  # fmt: skip
    frame = KafkaSource(spark, config)._read_on_executors([OffsetRange(0, 0, 1)])
    began = time.monotonic()
    with pytest.raises(Exception) as failed:  # noqa: PT011 - py4j's error: what it is, is the mapping's job
        frame.count()
    took = time.monotonic() - began
    error = java_security_error(failed.value, broker.secured)
    assert error is not None, str(failed.value)[:2000]
    if wrong == "password":
        assert str(error).startswith(f"Kafka at {broker.secured} refused hudi-cdc's login: Spark's Kafka client: ")
        assert "SaslAuthenticationException" in str(error) and "kafka_sasl_password_env" in str(error)
    else:
        assert str(error).startswith(f"the TLS handshake with Kafka at {broker.secured} failed: Spark's Kafka client")
        assert "set kafka_ssl_ca_file" in str(error)
    assert attempted not in str(error) and broker.password not in str(error)
    assert took < 30, f"{took:.1f}s: Spark's client retried a refusal for long"


def test_a_password_rotated_under_a_round_is_the_clear_error_from_the_executors_read(
    spark, broker: Listener, registry: Registry, tmp_path: Path, monkeypatch, capfd
) -> None:
    """The round plans with the password its file held (librdkafka, accepted); the file then changes before
    the executors' read, whose Java client reads it again and is refused: the round ends with the clear
    error, through the pipeline's own mapping, not a decode or write failure."""
    from hudi_cdc.sources.kafka import KafkaSource

    topic = Topic(broker, registry)
    topic.send([pg_event("c", lsn=10 + k, after=row(k, f"n{k}")) for k in range(3)])
    secret = tmp_path / "kafka.password"
    secret.write_text(broker.password)
    attempted = "Wr0ng-" + uuid.uuid4().hex[:8]
    read = KafkaSource._read_on_executors

    def rotated_then_read(self: KafkaSource, ranges: Any) -> Any:  # noqa: ANN401
        secret.write_text(attempted)  # a rotation between the plan and the read
        return read(self, ranges)

    monkeypatch.setattr(KafkaSource, "_read_on_executors", rotated_then_read)
    done = ingest(
        broker, registry, topic, str(tmp_path / "t"),
        "--kafka-sasl-password-file", str(secret), "--kafka-driver-read-max-messages", "0",
    )  # fmt: skip
    assert done.exit_code == 2, done.output
    assert f"Kafka at {broker.secured} refused hudi-cdc's login: Spark's Kafka client: " in done.output
    assert "SaslAuthenticationException" in done.output and "decoding" not in done.output
    captured = capfd.readouterr()
    for text in (done.output, captured.out, captured.err):
        assert attempted not in text and broker.password not in text
