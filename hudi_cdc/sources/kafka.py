"""The main production source: a Kafka topic of Debezium envelopes in Avro, Confluent wire format.

The driver plans: it asks the brokers for each partition's offsets and
cuts offset ranges from the checkpoint, capped by ``source_limit`` events
(split across partitions as HoodieStreamer's KafkaOffsetGen does). Executors
read the ranges with Spark's Kafka source and decode them in the JVM with
``from_avro``; a small round's messages are read by the process's own consumer
instead, and a small MERGE_ON_READ round may be decoded and planned in the
driver (``kafka_driver``, ``small_plan``). When the registry
subject's versions resolve to one reader schema (the usual case) the batch
decodes in a single pass straight from Kafka, nothing cached; otherwise the
messages are held once and decoded per writer schema. The checkpoint is the
next offset of every partition.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hudi_cdc.console import kafka_logger
from hudi_cdc.envelope.avro_schemas import merged_reader_schema
from hudi_cdc.envelope.flatten import ORIGIN_COLUMN
from hudi_cdc.errors import CheckpointError, ConfigError, DecodeError, SourceError, TransientError
from hudi_cdc.sources.base import json_checkpoint
from hudi_cdc.sources.kafka_json import SAMPLED
from hudi_cdc.sources.kafka_json import key_fields as json_key_fields
from hudi_cdc.sources.kafka_security import KafkaSecurity, java_properties, librdkafka_properties
from hudi_cdc.sources.registry import RegistryLogin, SchemaRegistry
from payloads.base import ARRIVAL_COLUMN, ERROR_COLUMN, RAW_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.envelope.events import Batch, BatchPart
    from hudi_cdc.sources.kafka_json import JsonDecoder

__all__ = [
    "KafkaSource",
    "OffsetRange",
    "broker_conf",
    "client_conf",
    "end_offsets",
    "java_client_conf",
    "java_security_error",
    "list_topics",
    "new_consumer",
    "plan_ranges",
    "parse_kafka_checkpoint",
]

log = logging.getLogger("hudi_cdc")

CHECKPOINT_KIND = "kafka/v1"
CLIENT_PREFIX = "kafka."
"""``--hoodie-conf kafka.<setting>=v`` passes a Kafka client setting (security, SASL...)."""
FETCH_DEFAULTS = {
    "max.partition.fetch.bytes": str(8 << 20),
    "fetch.max.bytes": str(64 << 20),
    # A round's last fetch of a partition, at its end, waited the broker's 500 ms default for data
    # that was never going to come: 0.6 s -> 0.2 s for the read of a 1-message round here.
    "fetch.max.wait.ms": "20",
}


@dataclass(frozen=True)
class OffsetRange:
    partition: int
    start: int
    end: int  # exclusive

    @property
    def count(self) -> int:
        return self.end - self.start


def client_conf(hoodie_conf: Mapping[str, str], security: KafkaSecurity | None = None) -> dict[str, str]:
    """librdkafka's settings: ``security`` translated (its password read now), then the raw Kafka client
    settings among ``hoodie_conf`` (``kafka.<setting>``, without the prefix), which win for the keys they set."""
    raw = {k[len(CLIENT_PREFIX) :]: v for k, v in hoodie_conf.items() if k.startswith(CLIENT_PREFIX)}
    if security is None:
        return raw
    return {**librdkafka_properties(security, security.password()), **raw}


def java_client_conf(hoodie_conf: Mapping[str, str], security: KafkaSecurity | None = None) -> dict[str, str]:
    """Spark's Java Kafka client's settings (without ``kafka.``): ``security`` translated for Java, then the
    raw ``kafka.<setting>`` ones (winning), the registry's credentials left out."""
    raw = {k[len(CLIENT_PREFIX) :]: v for k, v in hoodie_conf.items() if k.startswith(CLIENT_PREFIX)}
    raw.pop("basic.auth.user.info", None)
    if security is None:
        return raw
    return {**java_properties(security, security.password()), **raw}


# librdkafka's own default for network requests is 60 s: a round would sit that long on a dead broker.
DEFAULT_REQUEST_TIMEOUT_S = 15.0


def request_timeout_s(conf: Mapping[str, str]) -> float:
    """How long to wait for the broker's metadata or offsets: the client's ``socket.timeout.ms`` when the user
    set it (``kafka.socket.timeout.ms``: the default timeout of its network requests), else 15 s."""
    value = conf.get("socket.timeout.ms")
    if value is None:
        return DEFAULT_REQUEST_TIMEOUT_S
    try:
        return max(int(value), 1) / 1000
    except ValueError:
        raise ConfigError(f"kafka.socket.timeout.ms={value!r}: expected milliseconds, a whole number") from None


def broker_conf(hoodie_conf: Mapping[str, str], security: KafkaSecurity | None = None) -> dict[str, str]:
    """:func:`client_conf` without ``basic.auth.user.info``: the registry's credentials, not a broker setting."""
    conf = client_conf(hoodie_conf, security)
    conf.pop("basic.auth.user.info", None)
    return conf


def end_offsets(
    bootstrap_servers: str, topics: Sequence[str], conf: Mapping[str, str] | None = None
) -> dict[tuple[str, int], int]:
    """The next offset to be written per ``(topic, partition)``; a missing topic has none.

    Asked through the process's planning consumer (the one the sources plan with), so a
    runner refreshing its tables' backlog every few seconds opens no connection of its own.
    """
    from confluent_kafka import KafkaException, TopicPartition

    conf = dict(conf or {})
    key, lock, consumer = _planner(bootstrap_servers, conf, lambda: new_consumer(bootstrap_servers, conf))
    wait_s = request_timeout_s(conf)
    try:
        with lock:
            consumer.poll(0)  # hands its queued log lines to the logger (see _PLANNERS)
            # One metadata request and one offsets request for all topics: asked topic by topic,
            # 105 topics took 0.4-1.0 s here, as one 10-100 ms (a runner asks every half second).
            metadata = list_topics(consumer, bootstrap_servers, wait_s).topics
            wanted = [
                TopicPartition(topic, partition, OFFSET_LATEST)
                for topic in topics
                if (meta := metadata.get(topic)) is not None and meta.error is None
                for partition in sorted(meta.partitions)
            ]
            found = consumer.offsets_for_times(wanted, timeout=wait_s) if wanted else []
    except ConfigError:
        _drop_planner(key)  # a refused login: no client left retrying it
        raise
    except KafkaException as exc:
        _drop_planner(key)
        raise TransientError(f"cannot reach Kafka at {bootstrap_servers}: {exc}") from None
    failed = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in found if tp.error is not None or tp.offset < 0]
    if failed:
        raise TransientError(f"Kafka at {bootstrap_servers} gave no end offset for {', '.join(failed[:5])}")
    return {(tp.topic, tp.partition): tp.offset for tp in found}


OFFSET_LATEST = -1
"""ListOffsets' timestamp for "the next offset to be written" (Kafka's protocol; librdkafka passes it on)."""


MESSAGE_SCHEMA = "key binary, value binary, partition int, offset long"
"""What a batch reads of each message, from either reader."""

# Consumers for reading small rounds on the driver, kept per cluster and settings like the planners
# (a new one spent ~50 ms connecting): one per round under way, returned after its read.
_READERS: dict[_PlannerKey, list[Any]] = {}


def read_ranges(
    bootstrap_servers: str, topic: str, ranges: Sequence[OffsetRange], conf: Mapping[str, str], *, what: str
) -> list[tuple[bytes | None, bytes | None, int, int]]:
    """Every message of ``ranges`` as ``(key, value, partition, offset)``, read by a consumer of the process.

    Offsets with no message (a compacted topic, transaction markers) are skipped, as Kafka skips them. A
    range whose start is no longer retained is data loss (as Spark's ``failOnDataLoss``): an error.
    """
    wanted = [r for r in ranges if r.count]
    if not wanted:
        return []
    key = (os.getpid(), bootstrap_servers, tuple(sorted(conf.items())))
    with _PLANNERS_LOCK:
        pool = _READERS.setdefault(key, [])
        consumer = pool.pop() if pool else None
    consumer = consumer or _reader_consumer(bootstrap_servers, conf)
    try:
        found = _consume(consumer, topic, wanted, request_timeout_s(conf), what)
    except BaseException:
        _close_quietly(consumer)  # its state is unknown: not back into the pool
        raise
    with _PLANNERS_LOCK:
        _READERS.setdefault(key, []).append(consumer)
    return found


def _reader_consumer(bootstrap_servers: str, conf: Mapping[str, str]) -> Any:  # noqa: ANN401 - a Consumer
    reading = {
        "enable.partition.eof": True,  # the end of a partition is an event: no waiting to learn it
        "fetch.wait.max.ms": 20,  # as FETCH_DEFAULTS, for librdkafka
    }
    return new_consumer(bootstrap_servers, conf, group_id="hudi-cdc-reader", defaults=reading)


def new_consumer(
    bootstrap_servers: str,
    conf: Mapping[str, str],
    *,
    group_id: str = "hudi-cdc-planner",
    defaults: Mapping[str, Any] | None = None,
) -> Any:  # noqa: ANN401 - confluent_kafka.Consumer
    """A consumer that never commits offsets, with the user's ``kafka.*`` settings over ``defaults``; its log
    lines go to hudi-cdc's logger."""
    failures: list[Any] = []

    def on_error(error: Any) -> None:  # noqa: ANN401 - confluent_kafka.KafkaError
        if _refused(error):
            failures[:] = [error]  # the latest only: a client retrying for hours keeps one

    consumer = _consumer_class()(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": group_id,
            "enable.auto.commit": False,
            **(defaults or {}),
            **conf,
            "logger": kafka_logger(),
            # librdkafka reports a refused login or TLS handshake only here (its requests just time out).
            "error_cb": on_error,
        }
    )
    consumer.security_failures = failures
    return consumer


@functools.cache
def _consumer_class() -> type:
    """confluent-kafka's Consumer, as a class whose instances carry the security failures their client saw."""
    from confluent_kafka import Consumer

    class _Consumer(Consumer):  # type: ignore[misc]
        security_failures: list[Any]

    return _Consumer


def _refused(error: Any) -> bool:  # noqa: ANN401 - confluent_kafka.KafkaError
    """Whether ``error`` is the broker refusing the login, or this client refusing the broker's certificate:
    a setting to fix. Another TLS failure (a connection cut mid-handshake by a restarting broker) is not."""
    from confluent_kafka import KafkaError

    code = error.code()
    return code == KafkaError._AUTHENTICATION or (code == KafkaError._SSL and "certificate" in error.str().lower())


def security_error(consumer: Any, bootstrap_servers: str) -> ConfigError | None:  # noqa: ANN401 - a Consumer
    """The error for a login or TLS handshake ``consumer``'s client saw refused (served by a poll), or None.

    One clear error naming the listener and the fix instead of a request timing out: librdkafka retries
    both forever and reports them only to its error callback. Its message names the broker, the mechanism
    and what failed; never the password.
    """
    from confluent_kafka import KafkaError

    failures = getattr(consumer, "security_failures", None)
    if not failures:
        return None
    error = failures[-1]
    if error.code() == KafkaError._AUTHENTICATION:
        return _login_refused(bootstrap_servers, error.str())
    return _tls_refused(bootstrap_servers, error.str())


def _login_refused(bootstrap_servers: str, detail: str) -> ConfigError:
    return ConfigError(
        f"Kafka at {bootstrap_servers} refused hudi-cdc's login: {detail}. Check kafka_sasl_mechanism, "
        "kafka_sasl_username and the password kafka_sasl_password_env or kafka_sasl_password_file points to "
        "(the user the broker knows: kafka-configs --describe --entity-type users)"
    )


def _tls_refused(bootstrap_servers: str, detail: str) -> ConfigError:
    return ConfigError(
        f"the TLS handshake with Kafka at {bootstrap_servers} failed: {detail}. If the broker's certificate "
        "is not signed by a CA this machine trusts, set kafka_ssl_ca_file to the PEM file of the CA that signed "
        "it; check that kafka_security_protocol matches the listener (SSL or SASL_SSL)"
    )


# Spark's Java Kafka client (the executors' reads, the driver's offset lookups of a Spark read): the classes of
# a refused login and of a refused TLS handshake (its cause, javax.net.ssl's, says why: an unknown CA...).
_JAVA_LOGIN_REFUSED = "org.apache.kafka.common.errors.SaslAuthenticationException"
_JAVA_TLS_REFUSED = ("org.apache.kafka.common.errors.SslAuthenticationException", "javax.net.ssl.SSLHandshakeException")


def java_security_error(exc: BaseException, bootstrap_servers: str) -> ConfigError | None:
    """The error :func:`security_error` gives librdkafka's refusals, for the same refusal seen by Spark's Java
    client (a Spark job failed by it: ``exc`` a py4j error), or None. Found by the Java causes' classes, or, for
    a task's failure Spark reports as text only, by their names in its message: ``Class: message`` of the
    innermost, which names what failed and never the password (the JAAS line is not in Kafka's messages)."""
    found: list[tuple[str, str]] = []  # (class, message), outermost first
    throwable = getattr(exc, "java_exception", None)
    try:
        while throwable is not None and len(found) < 20:
            found.append((str(throwable.getClass().getName()), str(throwable.getMessage() or "")))
            cause = throwable.getCause()
            throwable = None if cause is None or cause.equals(throwable) else cause
    except Exception:  # noqa: BLE001 - the JVM may be gone: the text below still tells
        pass
    text = "\n".join(message for _, message in found) or str(exc)
    login = [(c, m) for c, m in found if c == _JAVA_LOGIN_REFUSED]
    tls = [(c, m) for c, m in found if c in _JAVA_TLS_REFUSED]
    if login or _JAVA_LOGIN_REFUSED in text:
        return _login_refused(bootstrap_servers, _java_detail(login, _JAVA_LOGIN_REFUSED, text))
    if tls or any(name in text for name in _JAVA_TLS_REFUSED):
        return _tls_refused(bootstrap_servers, _java_detail(tls, _JAVA_TLS_REFUSED[0], text))
    return None


def _java_detail(causes: list[tuple[str, str]], name: str, text: str) -> str:
    """``Class: message`` of the innermost matching cause, else the line of ``text`` that names ``name``."""
    if causes:
        cls, message = causes[-1]
        return f"Spark's Kafka client: {cls.rsplit('.', 1)[-1]}: {message.splitlines()[0] if message else ''}"
    line = next((ln for ln in text.splitlines() if name in ln), name)
    return "Spark's Kafka client: " + line[line.index(name) :].split(" at ", 1)[0].strip()[:400]


def list_topics(
    consumer: Any,  # noqa: ANN401 - confluent_kafka.Consumer, made by new_consumer
    bootstrap_servers: str,
    timeout_s: float,
    topic: str | None = None,
) -> Any:  # noqa: ANN401 - ClusterMetadata
    """The cluster's metadata (of ``topic`` only, if given), asked for in slices of at most a second: between
    them the client's error callbacks are served, so a refused login or TLS handshake ends the wait at once
    as :func:`security_error`'s ConfigError instead of a timeout. Never call it on an assigned consumer."""
    from confluent_kafka import KafkaException

    failures = getattr(consumer, "security_failures", None)
    if failures:
        failures.clear()  # one seen before this request (a broker since fixed) is not this request's
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        try:
            return consumer.list_topics(topic, timeout=max(0.05, min(1.0, left)))
        except KafkaException:
            consumer.poll(0)  # serves the error callback (and hands queued log lines to the logger)
            failed = security_error(consumer, bootstrap_servers)
            if failed is not None:
                raise failed from None
            if deadline - time.monotonic() <= 0:
                raise


def _consume(
    consumer: Any,  # noqa: ANN401 - confluent_kafka.Consumer
    topic: str,
    ranges: Sequence[OffsetRange],
    timeout_s: float,
    what: str,
) -> list[tuple[bytes | None, bytes | None, int, int]]:
    from confluent_kafka import KafkaException, TopicPartition

    ends = {r.partition: r.end for r in ranges}
    consumer.assign([TopicPartition(topic, r.partition, r.start) for r in ranges])
    found: list[tuple[bytes | None, bytes | None, int, int]] = []
    after = {r.partition: r.start for r in ranges}  # the next offset expected per partition still read
    deadline = time.monotonic() + timeout_s
    try:
        while after:
            if time.monotonic() > deadline:
                raise TransientError(f"{what}: Kafka did not give offsets up to {ends} within {timeout_s:.0f} s")
            # Asking for exactly what is left returns as soon as it is there (more would wait out the timeout).
            left = sum(ends[p] - n for p, n in after.items())
            for message in consumer.consume(max(1, min(left, 10_000)), timeout=0.1):
                partition = message.partition()
                if partition not in after:
                    continue
                if message.error() is not None:
                    if not _partition_end(message, ends[partition], what):
                        continue
                elif message.offset() < ends[partition]:
                    found.append((message.key(), message.value(), partition, message.offset()))
                    after[partition] = message.offset() + 1
                if message.offset() >= ends[partition] - 1:
                    del after[partition]  # the range's last offset read, or one past it
        lost = [
            r
            for r in ranges
            if consumer.get_watermark_offsets(TopicPartition(topic, r.partition), cached=True)[0] > r.start
        ]
    except KafkaException as exc:
        raise TransientError(f"cannot read {what} from Kafka: {exc}") from None
    finally:
        consumer.unassign()
    if lost:
        r = lost[0]
        raise SourceError(f"{what}-{r.partition}: offset {r.start} is gone from Kafka: data was lost upstream")
    return found


def _partition_end(message: Any, end: int, what: str) -> bool:  # noqa: ANN401 - confluent_kafka.Message
    """Whether an error event is the partition's end at or past ``end``; another error is raised."""
    from confluent_kafka import KafkaError

    error = message.error()
    if error.code() != KafkaError._PARTITION_EOF:
        raise TransientError(f"{what}-{message.partition()}: {error}")
    return message.offset() >= end


def parse_kafka_checkpoint(text: str, topic: str) -> dict[str, Any]:
    """Our JSON checkpoint, or HoodieStreamer's ``topic,0:12,1:40`` form."""
    text = text.strip()
    if text.lower() in ("earliest", "latest"):
        return {"kind": CHECKPOINT_KIND, "topic": topic, "start": text.lower(), "offsets": {}}
    if text.startswith("{"):
        data = json_checkpoint(text, source="Kafka", kind=CHECKPOINT_KIND)
    else:
        name, _, rest = text.partition(",")
        try:
            offsets = {str(int(p)): int(o) for p, o in (item.split(":") for item in rest.split(",") if item)}
        except ValueError:
            raise CheckpointError(
                f"cannot parse Kafka checkpoint {text[:200]!r}: expected topic,partition:offset,..."
            ) from None
        data = {"kind": CHECKPOINT_KIND, "topic": name, "offsets": offsets}
    if data.get("topic") != topic:
        raise CheckpointError(
            f"the checkpoint is for topic {data.get('topic')!r}, not {topic!r}; pass --checkpoint earliest to start over"
        )
    return data


def plan_ranges(
    watermarks: Mapping[int, tuple[int, int]],
    checkpoint: Mapping[str, Any] | None,
    *,
    limit: int | None,
    start_when_new: str,
    allow_data_loss: bool,
    topic: str,
) -> list[OffsetRange]:
    """Offset ranges per partition from ``(low, high)`` watermarks and the checkpoint."""
    offsets = dict((checkpoint or {}).get("offsets", {}))
    start_when_new = (checkpoint or {}).get("start", start_when_new)
    starts = {}
    for partition, (low, high) in sorted(watermarks.items()):
        if str(partition) in offsets:
            start = int(offsets[str(partition)])
            if start < low or start > high:
                where = "before the oldest retained" if start < low else "after the newest"
                if not allow_data_loss:
                    raise SourceError(
                        f"{topic}-{partition}: checkpoint offset {start} is {where} offset (retained {low}..{high}): "
                        f"events {start}..{low - 1 if start < low else start} are gone from Kafka, so data was lost "
                        "upstream. Re-snapshot the table, or rerun with --allow-data-loss to continue from "
                        f"offset {low if start < low else high}"
                    )
                log.warning("%s-%d: data loss accepted, continuing at %d instead of %d", topic, partition, low, start)
                start = low if start < low else high
        else:
            start = low if start_when_new == "earliest" else high
        starts[partition] = (start, high)
    ranges = {p: OffsetRange(p, s, s) for p, (s, _) in starts.items()}
    remaining = limit if limit is not None else sum(h - s for s, h in starts.values())
    open_partitions = [p for p, (s, h) in starts.items() if h > s]
    # Round-robin shares, so one busy partition cannot starve the others.
    while remaining > 0 and open_partitions:
        share = max(1, remaining // len(open_partitions))
        still_open = []
        for p in open_partitions:
            r = ranges[p]
            take = min(share, starts[p][1] - r.end, remaining)
            ranges[p] = OffsetRange(p, r.start, r.end + take)
            remaining -= take
            if ranges[p].end < starts[p][1]:
                still_open.append(p)
            if remaining == 0:
                break
        open_partitions = still_open
    return [ranges[p] for p in sorted(ranges)]


# One planning consumer per cluster and client settings, kept for the process: a consumer made
# per round spent ~50 ms of each round connecting before it could ask for the offsets. Keyed by
# process id as well: librdkafka's clients do not survive a fork. A client with a `logger` queues
# its log lines until polled; a planner is never polled for messages, so each use polls it once.
_PlannerKey = tuple[int, str, tuple[tuple[str, str], ...]]
_PLANNERS: dict[_PlannerKey, tuple[threading.Lock, Any]] = {}
_PLANNERS_LOCK = threading.Lock()


def _planner(
    bootstrap: str, conf: Mapping[str, str], make: Callable[[], Any]
) -> tuple[_PlannerKey, threading.Lock, Any]:
    """The process's planning consumer for ``bootstrap`` and ``conf`` (made on first use), and its lock."""
    key = (os.getpid(), bootstrap, tuple(sorted(conf.items())))
    with _PLANNERS_LOCK:
        if key not in _PLANNERS:
            _PLANNERS[key] = (threading.Lock(), make())
        lock, consumer = _PLANNERS[key]
    return key, lock, consumer


def _drop_planner(key: _PlannerKey) -> None:
    with _PLANNERS_LOCK:
        entry = _PLANNERS.pop(key, None)
    if entry is not None:
        _close_quietly(entry[1])


@atexit.register
def _close_planners() -> None:
    """Close the process's planning and reading consumers (never a parent's, copied by a fork)."""
    with _PLANNERS_LOCK:
        ours = [key for key in _PLANNERS if key[0] == os.getpid()]
        consumers = [_PLANNERS.pop(key)[1] for key in ours]
        ours = [key for key in _READERS if key[0] == os.getpid()]
        consumers += [c for key in ours for c in _READERS.pop(key)]
    for consumer in consumers:
        _close_quietly(consumer)


def _close_quietly(consumer: Any) -> None:  # noqa: ANN401 - confluent_kafka.Consumer
    try:
        consumer.close()
    except Exception:  # noqa: BLE001 - closing a consumer of a vanished broker: nothing to save
        log.debug("closing a planning consumer failed", exc_info=True)


class KafkaSource:
    def __init__(
        self,
        spark: SparkSession,
        config: IngestConfig,
        *,
        reader_schema: Callable[[dict[str, Any]], dict[str, Any]] = lambda schema: schema,
        until: Mapping[int, int] | None = None,
        bound: Callable[[Mapping[int, int]], Mapping[int, int] | None] | None = None,
    ) -> None:
        """``until``: partition -> offset no round reads past (a consistent cut's bounded round). ``bound``:
        called once as the round plans, with each partition's next offset to be written; returns such a bound
        (None: none). The runner's consistent cuts learn there where a round in flight reads to, and cap a
        round that plans after a cut was planned, without waiting for it."""
        self._until = dict(until) if until is not None else None
        self._bound = bound
        self._json = config.kafka_value_format == "json"
        if not (config.topic and config.bootstrap_servers and (config.schema_registry_url or self._json)):
            raise SourceError("--source kafka needs --topic, --bootstrap-servers and --schema-registry-url")
        self._spark = spark
        self._config = config
        self._topic = config.topic
        self.read_by: str | None = None
        """Who read the last batch's messages: ``driver`` (a small round) or ``executors``."""
        self._driver_read: tuple[tuple[bytes | None, bytes | None, int, int], ...] | None = None
        self._reader_schema = reader_schema
        self._security = KafkaSecurity.of(config)
        self._client_conf = client_conf(config.hoodie_conf, self._security)
        basic_auth = self._client_conf.pop("basic.auth.user.info", None)
        self._registry = SchemaRegistry(
            config.schema_registry_url or "", basic_auth=basic_auth, login=RegistryLogin.of(config)
        )
        self._json_decoder: JsonDecoder | None = None
        if self._json:
            from hudi_cdc.sources.kafka_json import JsonDecoder

            self._json_decoder = JsonDecoder(
                config.topic, schema_file=config.kafka_value_schema_file, reader_schema=reader_schema
            )

    def parse_checkpoint(self, text: str) -> dict[str, Any]:
        return parse_kafka_checkpoint(text, self._topic)

    def _consumer(self) -> Any:  # noqa: ANN401 - confluent_kafka.Consumer
        """A consumer for planning: offsets and a peek at a few messages, never committing."""
        return new_consumer(str(self._config.bootstrap_servers), self._client_conf)

    def _watermarks(self) -> dict[int, tuple[int, int]]:
        from confluent_kafka import KafkaException, TopicPartition

        key, lock, consumer = _planner(self._config.bootstrap_servers or "", self._client_conf, self._consumer)
        try:
            with lock:
                consumer.poll(0)  # hands its queued log lines to the logger (see _PLANNERS)
                metadata = list_topics(
                    consumer, str(self._config.bootstrap_servers), request_timeout_s(self._client_conf), self._topic
                )
                topic = metadata.topics.get(self._topic)
                if topic is None or topic.error is not None or not topic.partitions:
                    reason = topic.error if topic is not None and topic.error is not None else "no partitions"
                    raise SourceError(
                        f"topic {self._topic!r} does not exist on {self._config.bootstrap_servers} ({reason})"
                    )
                return {
                    p: consumer.get_watermark_offsets(
                        TopicPartition(self._topic, p), timeout=request_timeout_s(self._client_conf), cached=False
                    )
                    for p in sorted(topic.partitions)
                }
        except ConfigError:
            _drop_planner(key)  # a refused login: no client left retrying it
            raise
        except KafkaException as exc:
            _drop_planner(key)  # the next round starts from a new connection
            raise TransientError(f"cannot reach Kafka at {self._config.bootstrap_servers}: {exc}") from None

    def _bounded(self, watermarks: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
        """The watermarks capped at ``until``: a bounded round plans as if the topic ended there."""
        until = self._until
        if self._bound is not None:
            bound = self._bound({p: high for p, (_, high) in watermarks.items()})
            until = dict(bound) if bound is not None else until
        if until is None:
            return dict(watermarks)
        return {p: (low, min(high, until.get(p, high))) for p, (low, high) in watermarks.items()}

    def _keep_moves_whole(
        self, ranges: list[OffsetRange], watermarks: Mapping[int, tuple[int, int]]
    ) -> list[OffsetRange]:
        """Never end a round between the two halves of a primary-key change.

        Debezium sends an UPDATE of the key as a delete of the old key and a
        create of the new one at the same LSN (Debezium's tombstone between
        them). A round cut by ``--source-limit`` between the two would apply the
        delete first; the create's TOAST placeholders stand for the old row's
        values, which the next round could no longer find if that row was
        never committed. A range whose last event is a delete is extended over
        the events at the delete's LSN that follow it.
        """
        cut = [r for r in ranges if r.count and r.end < watermarks[r.partition][1]]
        if not cut:
            return ranges

        consumer = self._consumer()
        try:
            extended = {r.partition: self._extend_over_move(consumer, r, watermarks[r.partition][1]) for r in cut}
        finally:
            consumer.close()
        return [extended.get(r.partition, r) for r in ranges]

    def _extend_over_move(self, consumer: Any, r: OffsetRange, high: int) -> OffsetRange:  # noqa: ANN401
        from confluent_kafka import TopicPartition

        first, last = max(r.start, r.end - 3), min(high, r.end + 4)
        consumer.assign([TopicPartition(self._topic, r.partition, first)])
        events: list[tuple[int, str | None, int | None]] = []
        deadline = time.monotonic() + 15
        while len(events) < last - first and time.monotonic() < deadline:
            for message in consumer.consume(last - first - len(events), timeout=1):
                if message.error() is None and message.offset() < last:
                    events.append((message.offset(), *self._op_and_lsn(message.value())))
        before = [e for e in events if e[0] < r.end and e[1] is not None]
        if not before or before[-1][1] != "d" or before[-1][2] is None:
            return r
        end = r.end
        for offset, op, lsn in sorted(e for e in events if e[0] >= r.end):
            if op is not None and lsn != before[-1][2]:
                break
            end = offset + 1  # a tombstone (op None) or an event at the delete's LSN
        if end > r.end:
            log.info(
                "%s-%d: round extended to offset %d to keep a primary-key change whole", self._topic, r.partition, end
            )
        return OffsetRange(r.partition, r.start, end)

    def _samples(self, ranges: list[OffsetRange]) -> list[tuple[bytes | None, bytes]]:
        """``(key, value)`` of five evenly spaced messages of each range, first and last included (a few
        fetches; a tombstone gives nothing): every schema a backlog moved through usually shows among them."""
        from confluent_kafka import KafkaException, TopicPartition

        wanted = sorted({(r.partition, r.start + (r.count - 1) * k // 4) for r in ranges for k in range(5)})
        consumer = self._consumer()
        found: list[tuple[bytes | None, bytes]] = []
        try:
            for partition, offset in wanted:
                consumer.assign([TopicPartition(self._topic, partition, offset)])
                message = consumer.poll(10)
                if message is not None and message.error() is None and message.value():
                    key = message.key()
                    found.append((bytes(key) if key is not None else None, bytes(message.value())))
        except KafkaException as exc:
            raise TransientError(f"cannot reach Kafka at {self._config.bootstrap_servers}: {exc}") from None
        finally:
            consumer.close()
        return found

    def _op_and_lsn(self, value: bytes | None) -> tuple[str | None, int | None]:
        """``(op, source.lsn)`` of a framed Debezium value; ``(None, None)`` for a tombstone or what does not decode."""
        import io

        import fastavro

        if self._json:
            from hudi_cdc.sources.kafka_json import op_and_lsn

            return op_and_lsn(value)
        if not value or len(value) < 5 or value[0] != 0:
            return None, None
        try:
            schema = fastavro.parse_schema(self._registry.schema(int.from_bytes(value[1:5], "big")))
            record = fastavro.schemaless_reader(io.BytesIO(value[5:]), schema)
        except Exception:  # noqa: BLE001 - the round's own decode reports a bad message with its place
            return None, None
        from hudi_cdc.sources.kafka_json import op_and_lsn_of

        return op_and_lsn_of(record)

    def _read(self, ranges: list[OffsetRange]) -> DataFrame:
        """The ranges' messages (``key``, ``value``, ``partition``, ``offset``): a small round's through the
        process's own consumer, a larger one's by Spark's executors."""
        from hudi_cdc.spark import ARROW_ENABLED

        small = sum(r.count for r in ranges) <= self._config.kafka_driver_read_max_messages
        if small and str(self._spark.conf.get(ARROW_ENABLED, "false")).lower() == "true":
            self.read_by = "driver"
            return self._read_on_driver(ranges)
        self.read_by = "executors"
        self._driver_read = None
        return self._read_on_executors(ranges)

    def _read_on_driver(self, ranges: list[OffsetRange]) -> DataFrame:
        """Read by a consumer kept for the process and handed to Spark as Arrow batches, one partition.

        A Spark Kafka read costs a fixed 0.2-0.6 s a round here (an admin client and a consumer per read):
        most of a small round's reading. Bounded by ``kafka_driver_read_max_messages``; past it, or in a
        session without Arrow (rows would go through Python workers), the executors read.
        """
        import pandas as pd

        messages = read_ranges(
            str(self._config.bootstrap_servers), self._topic, ranges, self._client_conf, what=self._topic
        )
        self._driver_read = tuple(messages)  # kept for a plan made in the driver (small_plan), once decoded
        frame = pd.DataFrame(messages, columns=["key", "value", "partition", "offset"])
        return self._spark.createDataFrame(frame, schema=MESSAGE_SCHEMA).coalesce(1)

    def _read_on_executors(self, ranges: list[OffsetRange]) -> DataFrame:
        reader = self._spark.read.format("kafka").option("kafka.bootstrap.servers", self._config.bootstrap_servers)
        # Fewer, larger fetches: measured 4.0 s -> 3.1 s for 1.6 GB here. A user's kafka.* settings win.
        java = java_client_conf(self._config.hoodie_conf, self._security)  # its password read now
        for key, value in {**FETCH_DEFAULTS, **java}.items():
            reader = reader.option(CLIENT_PREFIX + key, value)
        return (
            reader.option("assign", json.dumps({self._topic: [r.partition for r in ranges]}))
            .option("startingOffsets", json.dumps({self._topic: {str(r.partition): r.start for r in ranges}}))
            .option("endingOffsets", json.dumps({self._topic: {str(r.partition): r.end for r in ranges}}))
            .option("failOnDataLoss", "true")
            .load()
            .select("key", "value", "partition", "offset")  # all a batch needs: keep the cached copy small
        )

    def next_batch(self, checkpoint: dict[str, Any] | None) -> Batch | None:
        from hudi_cdc.envelope.events import Batch

        watermarks = self._watermarks()
        planned = self._bounded(watermarks)
        ranges = plan_ranges(
            planned,
            checkpoint,
            limit=self._config.source_limit,
            start_when_new=self._config.kafka_starting_offsets,
            allow_data_loss=self._config.allow_data_loss,
            topic=self._topic,
        )
        if self._config.flavor == "postgres":
            ranges = self._keep_moves_whole(ranges, planned)
        next_checkpoint = {
            "kind": CHECKPOINT_KIND,
            "topic": self._topic,
            "offsets": {str(r.partition): r.end for r in ranges},
        }
        total = sum(r.count for r in ranges)
        if total == 0:
            return None
        left = sum(max(0, watermarks[r.partition][1] - r.end) for r in ranges)  # for the next rounds
        spans = ", ".join(f"{r.partition}:{r.start}..{r.end}" for r in ranges if r.count)
        description = f"{total} message(s) of {self._topic} [{spans}]"
        reading = [r for r in ranges if r.count]
        if self._json_decoder is not None:
            samples = self._samples(reading)
            # The key's fields from the sampled messages' keys: no read of the batch for them.
            keys = (json_key_fields(k) for k, _ in samples if k)
            key_fields = () if self._config.record_key_fields else next(keys, ())
            parts = self._json_decoder.parts(self._read(reading), samples=[v for _, v in samples])
            sampled = sum(1 for p in parts if p.where.endswith(SAMPLED))
            decode = f"json: {sampled} schema(s) by sampled prefix, {len(parts) - sampled} by hash"
            details = {"messages": total, "writer_schemas": len(parts), "decode": decode, "behind_after": left}
            details["read"] = self.read_by
            return Batch(parts, next_checkpoint, description, details=details, key_fields=key_fields)

        key_fields = () if self._config.record_key_fields else self._key_fields(reading)

        # The subject's versions are every schema the topic's values can be written with
        # (TopicNameStrategy, Debezium's default): one reader schema for all of them lets the
        # batch decode in one pass over Kafka, with nothing cached.
        subject, ids, writers, reader = self._value_schemas()
        if reader is not None:
            part = self._single_pass(self._read(reading), ids, writers, reader, subject)
            if self._driver_read is not None:  # what a plan in the driver decodes (sources.kafka_driver)
                writer_schemas = {i: self._reader_schema(writers[i]) for i in ids}
                part = dataclasses.replace(part, messages=self._driver_read, writer_schemas=writer_schemas)
            details = {"messages": total, "writer_schemas": len(ids), "decode": "single-pass", "behind_after": left}
            details["read"] = self.read_by
            return Batch([part], next_checkpoint, description, details=details, key_fields=key_fields)
        log.info(
            "%s: %s; decoding per writer schema",
            self._topic,
            f"no registry subject {subject}" if not ids else "its schema versions do not resolve to one reader schema",
        )
        parts = self._per_writer_schema(reading)
        details = {"messages": total, "writer_schemas": len(parts), "decode": "per-writer-schema", "behind_after": left}
        details["read"] = self.read_by
        return Batch(parts, next_checkpoint, description, details=details, key_fields=key_fields)

    def _value_schemas(self) -> tuple[str, list[int], dict[int, dict[str, Any]], dict[str, Any] | None]:
        """The value subject, its schema ids, their schemas, and one reader schema for all (None: none fits)."""
        subject = f"{self._topic}-value"
        ids = self._registry.subject_schema_ids(subject) or []
        writers = {i: self._registry.schema(i) for i in ids}
        reader = merged_reader_schema([writers[i] for i in ids]) if ids else None
        return subject, ids, writers, reader

    def decode(self, messages: DataFrame) -> BatchPart:
        """Messages of this topic (``value``, ``partition``, ``offset``) decoded as a batch is: re-applying
        quarantined events after a fix (a schema registered again, say)."""
        if self._json_decoder is not None:
            parts = self._json_decoder.parts(messages)
            if len(parts) != 1:
                raise DecodeError(f"{len(parts)} JSON schemas among the messages: re-apply them one schema at a time")
            return parts[0]
        subject, ids, writers, reader = self._value_schemas()
        if reader is None:
            raise DecodeError(
                f"registry subject {subject} "
                + ("does not exist" if not ids else "has versions with no common reader")
                + ": the messages cannot be decoded yet"
            )
        return self._single_pass(messages, ids, writers, reader, subject)

    def _single_pass(
        self,
        frame: DataFrame,
        ids: list[int],
        writers: Mapping[int, dict[str, Any]],
        reader: dict[str, Any],
        subject: str,
    ) -> BatchPart:
        """All messages decoded straight from Kafka into ``reader``; a message that cannot be is an error row."""
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import from_avro

        from hudi_cdc.envelope.events import BatchPart

        value = F.col("value")
        envelope_schema = self._reader_schema(reader)
        # PERMISSIVE: a payload that does not decode reads NULL and becomes an error naming its offset.
        options = {"avroSchema": json.dumps(envelope_schema), "mode": "PERMISSIVE"}
        # The schema id once per message, as a column: every branch of the decode tests it.
        messages = frame.filter(value.isNotNull()).select(
            "value",
            _framed().alias("framed"),
            _schema_id().alias("schema_id"),
            _origin(self._topic).alias(ORIGIN_COLUMN),
            F.struct(F.col("partition"), F.col("offset")).alias(ARRIVAL_COLUMN),
        )
        decode = None
        for i in ids:
            decoded = from_avro(_payload(), json.dumps(self._reader_schema(writers[i])), options)
            branch = F.col("schema_id") == F.lit(i)
            decode = F.when(branch, decoded) if decode is None else decode.when(branch, decoded)
        assert decode is not None, "called with the subject's schema ids, never none"
        decoded_frame = messages.select(
            decode.alias("envelope"), "framed", "schema_id", ORIGIN_COLUMN, ARRIVAL_COLUMN, value.alias(RAW_COLUMN)
        )
        schema_id = F.col("schema_id").cast("string")
        error = (
            F.when(~F.col("framed"), _not_framed(F.col(RAW_COLUMN)))
            .when(
                ~F.col("schema_id").isin(*ids),
                F.concat(
                    F.lit("schema id "),
                    schema_id,
                    F.lit(
                        f" is not a version of registry subject {subject} (versions: ids {', '.join(map(str, ids))})"
                    ),
                ),
            )
            .when(
                _decode_failed(envelope_schema),
                F.concat(F.lit("the Avro payload does not decode with its writer schema (id "), schema_id, F.lit(")")),
            )
        )
        envelopes = decoded_frame.select(
            "envelope.*", ORIGIN_COLUMN, ARRIVAL_COLUMN, error.alias(ERROR_COLUMN), RAW_COLUMN
        )
        return BatchPart(envelopes=envelopes, avro_schema=envelope_schema, where=f"schema ids {ids}")

    def _per_writer_schema(self, ranges: list[OffsetRange]) -> list[BatchPart]:
        """One part per schema id found in the messages (kept in memory, read once): the general path."""
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import from_avro

        from hudi_cdc.envelope.events import BatchPart

        frame = self._read(ranges).localCheckpoint(eager=True)
        value = F.col("value")
        # One pass: messages per schema id, the unframed ones (id NULL), and the Kafka tombstones.
        counted = (
            frame.groupBy(value.isNull().alias("tombstone"), F.when(_framed(), _schema_id()).alias("id"))
            .agg(
                F.count(F.lit(1)).alias("n"),
                F.min(F.struct("partition", "offset", F.substring(value, 1, 1).alias("head"))).alias("first"),
            )
            .collect()
        )
        summary = [row for row in counted if not row["tombstone"]]
        bad = [row for row in summary if row["id"] is None]
        if bad:
            first = bad[0]["first"]
            found = FOUND_JSON if first["head"] == b"{" else NOT_FRAMED
            raise DecodeError(f"{self._topic}-{first['partition']}@{first['offset']}: {bad[0]['n']} message(s) {found}")
        parts = []
        for row in sorted(summary, key=lambda r: r["id"]):
            try:
                writer_schema = self._registry.schema(row["id"])
            except DecodeError as exc:
                first = row["first"]
                raise DecodeError(
                    f"{self._topic}-{first['partition']}@{first['offset']} and {row['n'] - 1} later message(s): {exc}"
                ) from None
            envelope_schema = self._reader_schema(writer_schema)
            decoded = frame.filter(value.isNotNull() & (_schema_id() == F.lit(row["id"]))).select(
                from_avro(_payload(), json.dumps(envelope_schema)).alias("envelope"),
                _origin(self._topic).alias(ORIGIN_COLUMN),
                F.struct(F.col("partition"), F.col("offset")).alias(ARRIVAL_COLUMN),
            )
            envelopes = decoded.select("envelope.*", ORIGIN_COLUMN, ARRIVAL_COLUMN)
            parts.append(BatchPart(envelopes=envelopes, avro_schema=envelope_schema, where=f"schema id {row['id']}"))
        return parts

    def _key_fields(self, ranges: list[OffsetRange]) -> tuple[str, ...]:
        """The fields of the Debezium key schema (the table's primary key): the key subject's newest
        version, else the schema of one keyed message."""
        from pyspark.sql import functions as F

        ids = self._registry.subject_schema_ids(f"{self._topic}-key")
        if ids:
            schema_id = ids[-1]
        else:
            sample = (
                self._read(ranges)
                .filter(F.col("key").isNotNull() & _framed("key"))
                .select(_schema_id("key").alias("id"))
                .limit(1)
                .collect()
            )
            if not sample:
                return ()
            schema_id = sample[0]["id"]
        schema = self._registry.schema(schema_id)
        return tuple(f["name"] for f in schema.get("fields", []))


NOT_FRAMED = (
    "not in the Confluent wire format (magic byte 0, 4-byte schema id, Avro): "
    "is the topic written by Debezium with an Avro converter?"
)
FOUND_JSON = (
    "not in the Confluent wire format: found JSON (Kafka Connect's JsonConverter?): use --kafka-value-format json"
)


def _not_framed(value: Column) -> Column:
    from pyspark.sql import functions as F

    return F.when(F.substring(value, 1, 1) == F.lit(bytearray(b"{")), F.lit(FOUND_JSON)).otherwise(F.lit(NOT_FRAMED))


def _decode_failed(reader: dict[str, Any]) -> Column:
    """True where PERMISSIVE ``from_avro`` gave up: it returns a row of NULLs, so a required field is NULL."""
    from pyspark.sql import functions as F

    required = [
        f["name"] for f in reader.get("fields", []) if not (isinstance(f["type"], list) and "null" in f["type"])
    ]
    failed = F.col("envelope").isNull()
    return failed | F.col("envelope")[required[0]].isNull() if required else failed


def _framed(column: str = "value") -> Column:
    """True where ``column`` is in the Confluent wire format: magic byte 0, then a 4-byte schema id."""
    from pyspark.sql import functions as F

    data = F.col(column)
    return (F.length(data) >= 5) & (F.substring(data, 1, 1) == F.lit(bytearray(b"\x00")))


def _schema_id(column: str = "value") -> Column:
    from pyspark.sql import functions as F

    return F.conv(F.hex(F.substring(F.col(column), 2, 4)), 16, 10).cast("int")


def _payload() -> Column:
    from pyspark.sql import functions as F

    return F.expr("substring(value, 6)")


def _origin(topic: str) -> Column:
    from pyspark.sql import functions as F

    return F.concat(F.lit(topic + "-"), F.col("partition"), F.lit("@"), F.col("offset"))
