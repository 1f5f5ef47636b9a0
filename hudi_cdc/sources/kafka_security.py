"""The Kafka security settings, translated once for each of the two Kafka clients hudi-cdc uses.

The same settings (``kafka_security_protocol``, ``kafka_sasl_*``, ``kafka_ssl_ca_file``) reach
librdkafka (confluent-kafka: planning, small reads on the driver, discovery, backlog, cuts,
validate, bootstrap) and Spark's Java Kafka client (a round read by the executors), whose property
names differ. A user's raw ``--hoodie-conf kafka.<key>=v`` is laid over either translation, winning
for the keys it sets. The password is read from its file or variable each time a client's settings
are made, never stored in a setting, and never printed: the keys that carry it (``sasl.password``,
``sasl.jaas.config``) are among those :func:`hudi_cdc.config.redact` hides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hudi_cdc.config import resolve_password
from hudi_cdc.errors import ConfigError

__all__ = ["KafkaSecurity", "java_properties", "librdkafka_properties"]

_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


@dataclass(frozen=True)
class KafkaSecurity:
    """The settings, as given (the password by reference only)."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password_env: str | None = None
    password_file: str | None = None
    ca_file: str | None = None

    @classmethod
    def of(cls, settings: Any) -> KafkaSecurity:  # noqa: ANN401 - IngestConfig or a pipeline's [source]
        """From anything with the settings as attributes (``IngestConfig``, ``SourceSettings``)."""
        return cls(
            protocol=getattr(settings, "kafka_security_protocol", None) or "PLAINTEXT",
            mechanism=getattr(settings, "kafka_sasl_mechanism", None),
            username=getattr(settings, "kafka_sasl_username", None),
            password_env=getattr(settings, "kafka_sasl_password_env", None),
            password_file=getattr(settings, "kafka_sasl_password_file", None),
            ca_file=getattr(settings, "kafka_ssl_ca_file", None),
        )

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    def password(self) -> str | None:
        """The SASL password, read now from its file or variable (None without SASL); also checks that the CA
        file can be read, which librdkafka would only report as an ``x509 ... BIO lib`` failure."""
        if self.tls and self.ca_file:
            try:
                with open(self.ca_file, "rb"):
                    pass
            except OSError as exc:
                raise ConfigError(
                    f"kafka_ssl_ca_file {self.ca_file}: {exc.strerror}: give the PEM file of the CA that signed "
                    "the brokers' certificates"
                ) from None
        if not self.sasl:
            return None
        return resolve_password(self.password_file, self.password_env, what="the Kafka SASL password")

    def describe(self) -> str:
        """What an error may say about the login: protocol, mechanism, user; never the password."""
        if not self.sasl:
            return self.protocol
        return f"{self.protocol}, {self.mechanism} as user {self.username!r}"


def librdkafka_properties(security: KafkaSecurity, password: str | None) -> dict[str, str]:
    """librdkafka's properties for ``security`` (``password``: :meth:`KafkaSecurity.password`'s)."""
    if security.protocol == "PLAINTEXT":
        return {}
    out = {"security.protocol": security.protocol}
    if security.sasl:
        out.update(
            {
                "sasl.mechanisms": str(security.mechanism),
                "sasl.username": str(security.username),
                "sasl.password": str(password),
            }
        )
    if security.tls and security.ca_file:
        out["ssl.ca.location"] = security.ca_file
    return out


def java_properties(security: KafkaSecurity, password: str | None) -> dict[str, str]:
    """The Java Kafka client's properties for ``security``: a JAAS login line instead of user and password,
    a PEM trust store instead of librdkafka's CA location."""
    if security.protocol == "PLAINTEXT":
        return {}
    out = {"security.protocol": security.protocol}
    if security.sasl:
        module = _JAAS_MODULES[str(security.mechanism)]
        out["sasl.mechanism"] = str(security.mechanism)
        out["sasl.jaas.config"] = (
            f'{module} required username="{_jaas_quoted(str(security.username))}" '
            f'password="{_jaas_quoted(str(password))}";'
        )
    if security.tls and security.ca_file:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = security.ca_file
    return out


def _jaas_quoted(value: str) -> str:
    """``value`` inside a JAAS quoted string (Kafka's parser reads it with backslash escapes)."""
    return value.replace("\\", "\\\\").replace('"', '\\"')
