"""The schema registry's login (schema_registry_username, schema_registry_password_env|_file): the settings'
checks, and every registry client's requests against a registry that asks for one: the stack's login port
(stack/start.sh: 58081) when it is up, else the same proxy (hudi_cdc.testing.registry_proxy) started here in
front of the stack's open registry. A refused or missing login is one clear error naming the registry, the
user and the settings, never the password. No Spark: about a second.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hudi_cdc.config import load_config
from hudi_cdc.errors import ConfigError
from hudi_cdc.service.spec import TableRef, load_pipeline
from hudi_cdc.sources.registry import RegistryLogin, SchemaRegistry
from hudi_cdc.testing.kafka import register_schema
from hudi_cdc.testing.registry_proxy import serve
from tests.stack.conftest import PORTS, REGISTRY, _listening

STACK = Path(os.environ.get("HUDI_CDC_STACK_DIR") or Path(__file__).resolve().parents[2] / ".stack")
STACK_LOGIN_PORT = int(os.environ.get("HUDI_CDC_APICURIO_AUTH_PORT") or 58081)  # stack/env.sh's variable
KAFKA = dict(
    source="kafka",
    topic="db.public.t",
    bootstrap_servers="broker:9093",
    schema_registry_url="http://registry:8081",
    target_base_path="/out",
    target_table="t",
)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"schema_registry_username": "hudi"}, "schema_registry_username needs the password by reference"),
        (
            {
                "schema_registry_username": "hudi",
                "schema_registry_password_env": "A",
                "schema_registry_password_file": "f",
            },
            "not both",
        ),
        ({"schema_registry_password_file": "f"}, "schema_registry_password_file needs schema_registry_username"),
    ],
)
def test_a_login_needs_a_user_and_one_password_reference(given: dict[str, str], message: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(**KAFKA, **given)
    source = "\n".join(f'{k} = "{v}"' for k, v in given.items())
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(
        '[source]\nsource = "kafka"\nbootstrap_servers = "b:9092"\nschema_registry_url = "http://r:8081"\n'
        f'tables = ["db.*"]\n{source}\n[defaults]\ntarget_base_path = "/l/{{table}}"\ntarget_table = "{{table}}"\n'
    )
    with pytest.raises(ConfigError, match=rf"{pipeline}.*\[source\].*{message}|{message}"):
        load_pipeline(pipeline, env={})


def test_the_settings_reach_every_table_of_a_pipeline(tmp_path: Path) -> None:
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(
        '[source]\nsource = "kafka"\nbootstrap_servers = "b:9092"\nschema_registry_url = "http://r:8081"\n'
        'tables = ["db.*"]\nschema_registry_username = "hudi"\nschema_registry_password_file = "/run/secrets/r"\n'
        '[defaults]\ntarget_base_path = "/l/{table}"\ntarget_table = "{table}"\n'
    )
    spec = load_pipeline(pipeline, env={})
    assert RegistryLogin.of(spec.source) == RegistryLogin("hudi", None, "/run/secrets/r")
    config = spec.table_config(TableRef("db.s.t"))
    assert (config.schema_registry_username, config.schema_registry_password_file) == ("hudi", "/run/secrets/r")


@dataclass
class Guarded:
    url: str  # the Confluent API behind the login
    username: str
    password_file: Path


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guarded]:
    if not _listening(PORTS["apicurio"]):
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but the stack's registry is down")
        pytest.skip("the stack's registry is down: make stack-up")
    stack_password = STACK / "apicurio/auth/hudicdc.password"
    if _listening(STACK_LOGIN_PORT) and stack_password.exists():
        yield Guarded(f"http://127.0.0.1:{STACK_LOGIN_PORT}/apis/ccompat/v7", "hudicdc", stack_password)
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but the stack's registry login port {STACK_LOGIN_PORT} is down")
    secret = tmp_path_factory.mktemp("registry-login") / "password"
    secret.write_text(f"P-{uuid.uuid4().hex[:12]}\n")
    proxy = serve(f"http://127.0.0.1:{PORTS['apicurio']}", {"hudicdc": secret.read_text().strip()})
    try:
        yield Guarded(f"http://127.0.0.1:{proxy.server_address[1]}/apis/ccompat/v7", "hudicdc", secret)
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_every_way_of_giving_the_login_fetches_the_schema(guarded: Guarded, monkeypatch) -> None:
    subject = f"login.t{uuid.uuid4().hex[:10]}.customers-value"
    schema = {"type": "record", "name": "V", "fields": [{"name": "id", "type": "long"}]}
    schema_id = register_schema(REGISTRY, subject, schema)  # through the open port
    password = guarded.password_file.read_text().strip()
    by_file = SchemaRegistry(
        guarded.url, login=RegistryLogin(guarded.username, password_file=str(guarded.password_file))
    )
    assert by_file.schema(schema_id) == schema
    assert by_file.subject_schema_ids(subject) == [schema_id]
    monkeypatch.setenv("HUDI_CDC_TEST_REGISTRY_PASSWORD", password)
    by_env = SchemaRegistry(guarded.url, login=RegistryLogin(guarded.username, "HUDI_CDC_TEST_REGISTRY_PASSWORD"))
    assert by_env.subject_schema_ids(subject) == [schema_id]
    # The settings win over kafka.basic.auth.user.info, which still works alone.
    assert SchemaRegistry(guarded.url, basic_auth=f"{guarded.username}:{password}").subject_schema_ids(subject) == [
        schema_id
    ]
    winner = SchemaRegistry(
        guarded.url,
        basic_auth="hudicdc:stale",
        login=RegistryLogin(guarded.username, "HUDI_CDC_TEST_REGISTRY_PASSWORD"),
    )
    assert winner.subject_schema_ids(subject) == [schema_id]
    assert password not in repr(by_env)


def test_a_refused_or_missing_login_is_one_clear_error_without_the_password(guarded: Guarded, monkeypatch) -> None:
    subject = f"login.t{uuid.uuid4().hex[:10]}.customers-value"
    schema_id = register_schema(REGISTRY, subject, {"type": "record", "name": "V", "fields": []})
    attempted = "Wr0ng-" + uuid.uuid4().hex[:8]
    monkeypatch.setenv("HUDI_CDC_TEST_REGISTRY_PASSWORD", attempted)
    wrong = SchemaRegistry(guarded.url, login=RegistryLogin(guarded.username, "HUDI_CDC_TEST_REGISTRY_PASSWORD"))
    with pytest.raises(ConfigError) as refused:
        wrong.schema(schema_id)
    message = str(refused.value)
    assert message.startswith(f"the schema registry at {guarded.url} refused hudi-cdc's login as user 'hudicdc'")
    assert f"schema id {schema_id}" in message and "schema_registry_password_env" in message
    assert attempted not in message and guarded.password_file.read_text().strip() not in message
    with pytest.raises(ConfigError, match="asks for a login .*: set schema_registry_username") as missing:
        SchemaRegistry(guarded.url).subject_schema_ids(subject)
    assert guarded.url in str(missing.value)
