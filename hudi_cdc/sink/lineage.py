"""OpenLineage run events for each committed round, with the table's schema and its column lineage.

Off unless ``lineage_transport`` is set (docs/lineage.md). A round that commits rows emits a START and a
COMPLETE event of one run (the job ``hudi-cdc.ingest.<target_table>``); a round that fails while planning or
writing emits START and FAIL. The inputs are what the round read: the Kafka topic (``kafka://host:port``,
the topic), the folder of change files (``file``, its path; ``s3://bucket``, its key; ...) or, for JDBC, the
database table (``postgres://host:port``, ``db.schema.table``); the output is the Hudi table, named by its
base path the same way. The output carries the schema facet (the table's columns as committed) and the
columnLineage facet: each table column from the envelope fields it was made of (``after.email``,
``source.lsn``, ``op``), through renames, masks and computed columns (whose inputs come from Spark's
analysis of the expression).

Never fails or stalls a round: the events go out on a daemon thread the round waits for at most
``lineage_timeout_seconds``; an error or a late endpoint is a warning naming the URL without credentials.
Events still in flight when the process exits are lost.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from hudi_cdc._version import __version__
from hudi_cdc.config import parse_mask, redact_url
from hudi_cdc.errors import ConfigError
from hudi_cdc.sink.catalog import render_source_name, source_parts
from payloads.base import DELETED_COLUMN, INGESTED_AT_COLUMN, INTERNAL_PREFIX, OP_COLUMN, ORDER_COLUMN, SOURCE_TS_COLUMN

if TYPE_CHECKING:
    from types import TracebackType

    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType, StructType

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.envelope.events import Batch
    from payloads.base import MergePolicy

__all__ = ["Edge", "RoundLineage", "column_lineage", "dataset_of_path", "input_datasets", "job_name"]

log = logging.getLogger("hudi_cdc.lineage")

PRODUCER = f"urn:hudi-cdc:{__version__}"
"""Who made the events (the spec asks for a URI; hudi-cdc has no public home page to name)."""
FILTER = "__row_filter__"
_MASK_TEXT = {"hash": "HMAC-SHA256 with a secret salt", "redact": "replaced by [redacted]", "keep_last": "keep_last"}
_HISTORY_COLUMNS = {
    "_source_deleted": ("op", "marks a deleted row (soft_delete)"),
    "_valid_from": ("source.ts_ms", "the version's source commit time (scd2)"),
    "_valid_to": ("source.ts_ms", "the next version's source commit time (scd2)"),
}


# -- naming (OpenLineage's dataset naming conventions) ------------------------------------------------
def dataset_of_path(path: str) -> tuple[str, str]:
    """A table or folder at ``path`` as ``(namespace, name)``: ``file`` and the absolute path for a local
    one, ``s3://bucket`` and the key for S3 (``s3a``, ``s3n`` too), ``gs://bucket``, ``hdfs://host:port``..."""
    parts = urlsplit(path)
    scheme = parts.scheme.lower()
    if scheme in ("", "file"):
        return "file", os.path.abspath(parts.path if scheme else path)
    if scheme in ("s3a", "s3n"):
        scheme = "s3"
    if scheme in ("s3", "gs"):
        return f"{scheme}://{parts.hostname}", parts.path.lstrip("/")
    return f"{scheme}://{parts.netloc.rpartition('@')[2]}", parts.path


def _jdbc_dataset(url: str, table: str) -> tuple[str, str] | None:
    """A JDBC source table as ``(namespace, name)``: ``postgres://host:port`` and ``db.schema.table``, or
    ``mysql://host:port`` and ``db.table`` (MariaDB too)."""
    rest = url.removeprefix("jdbc:")
    kind, _, rest = rest.partition("://")
    parts = urlsplit("x://" + rest)
    if kind == "postgresql":
        database = parts.path.strip("/").split("/")[0]
        name = table if table.count(".") >= 2 else f"{database}.{table if '.' in table else 'public.' + table}"
        return f"postgres://{parts.hostname}:{parts.port or 5432}", name
    if kind in ("mysql", "mariadb"):
        database = parts.path.strip("/").split("/")[0]
        return f"mysql://{parts.hostname}:{parts.port or 3306}", table if "." in table else f"{database}.{table}"
    return None


def input_datasets(config: IngestConfig) -> list[tuple[str, str]]:
    """What a round reads, as ``(namespace, name)``: each topic (one; a merged table's shards), each folder of
    change files, or the JDBC table (none for a JDBC query: it names no table)."""
    if config.source == "jdbc":
        found = _jdbc_dataset(str(config.jdbc_url), config.jdbc_table) if config.jdbc_table else None
        return [found] if found else []
    if config.source == "kafka":
        first = str(config.bootstrap_servers).split(",")[0].strip()
        host = first.rpartition("://")[2]
        return [(f"kafka://{host}", topic) for topic in (config.shard_sources or (str(config.topic),))]
    return [dataset_of_path(folder) for folder in (config.shard_sources or (str(config.source_path),))]


# The source table's default name per database kind (OpenLineage's naming: a Postgres table is
# database.schema.table, a MySQL one database.table).
_SOURCE_NAMES = {"postgres": "{database}.{schema}.{table}", "mysql": "{database}.{table}"}


def source_table_dataset(config: IngestConfig) -> tuple[str, str] | None:
    """The database table behind a Debezium source as ``(namespace, name)``, when ``lineage_source_namespace``
    says where the database is (None otherwise, and for a merged table: its shards are many tables)."""
    namespace = config.lineage_source_namespace
    if namespace is None or config.shard_sources:
        return None
    scheme = namespace.partition("://")[0]
    template = config.lineage_source_name or _SOURCE_NAMES.get(scheme)
    if template is None:
        raise ConfigError(
            f"lineage_source_name: no default name for a {scheme}:// source; give one, e.g. "
            '"inventory.{schema}.{table}" (--lineage-source-name)'
        )
    name, unknown = render_source_name("lineage_source_name", template, source_parts(config))
    if unknown or not name.strip("."):
        fields = ", ".join("{" + f + "}" for f in unknown)
        raise ConfigError(
            f"{config.target_table}: lineage_source_name {template!r} renders {name!r} ({fields} not known for "
            'this source): give the name, e.g. "inventory.{schema}.{table}" (--lineage-source-name)'
        )
    return namespace, name


def job_name(config: IngestConfig) -> str:
    return f"hudi-cdc.ingest.{config.target_table}"


# -- column lineage (pure) ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Edge:
    """One input field of a table column, and how the column's value comes from it."""

    field: str
    subtype: str = "IDENTITY"
    """DIRECT transformations: IDENTITY (the value as it is), TRANSFORMATION (computed from it); FILTER is the
    row filter's INDIRECT one."""
    description: str = ""
    masking: bool = False

    def as_(self, subtype: str, description: str) -> Edge:
        return Edge(self.field, subtype, description, self.masking)


def _unique(edges: Sequence[Edge]) -> list[Edge]:
    seen: dict[str, Edge] = {}
    for edge in edges:
        seen.setdefault(edge.field, edge)
    return list(seen.values())


def column_lineage(
    columns: Sequence[str],
    config: IngestConfig,
    *,
    meta_fields: Mapping[str, str],
    order_fields: Sequence[str],
    reads: Mapping[str, Sequence[str]],
    keys: Sequence[str] = (),
) -> tuple[dict[str, list[Edge]], list[Edge]]:
    """Each table column's input fields, and the row filter's (the whole dataset's) ones.

    ``meta_fields``: ``_source_*`` column -> the envelope field it is copied from (the merge policy's);
    ``order_fields``: the fields ``_source_order`` is made of; ``reads``: the table-side columns each computed
    column (and :data:`FILTER`) reads, from Spark's analysis (:func:`expression_reads`); ``keys``: the record
    key (default the configured one; a Kafka table may take it from the Debezium key schema).
    """
    jdbc = config.source == "jdbc"
    sources = {target: source for source, target in config.column_renames.items()}
    images = ("after", "before") if config.history != "none" and not jdbc else ("after",)
    if jdbc:  # rows read by a cursor: their position is the cursor's columns, and there is no envelope
        order_fields = [c for c in (config.jdbc_timestamp_column, config.jdbc_incrementing_column) if c]
        meta_fields = {}

    def data(column: str) -> list[Edge]:
        source = sources.get(column, column)
        renamed = f"renamed from {source}" if source != column else ""
        edges = [Edge(source if jdbc else f"{image}.{source}", description=renamed) for image in images]
        if column in config.masks:
            kind, n = parse_mask(column, config.masks[column])
            text = f"mask {kind}:{n}" if kind == "keep_last" else f"mask {kind}: {_MASK_TEXT[kind]}"
            edges = [Edge(e.field, "TRANSFORMATION", text, masking=True) for e in edges]
        return edges

    fixed = _meta_edges(config, meta_fields, order_fields)
    out: dict[str, list[Edge]] = {}

    def resolve(column: str) -> list[Edge]:
        if column in out:
            return out[column]
        if column in fixed:
            return fixed[column]
        return [] if column.startswith("_") else data(column)

    for name, sql in config.computed_columns.items():
        read = [resolve(r) for r in reads.get(name, ())]
        if len(read) == 1 and sql.strip().strip("`") == reads[name][0]:
            out[name] = [e.as_(e.subtype, f"computed: {sql}") for e in read[0]]  # a plain copy of one column
        else:
            out[name] = _unique(
                [Edge(e.field, "TRANSFORMATION", f"computed: {sql}", e.masking) for edges in read for e in edges]
            )
    key_columns = [*(keys or config.record_key_fields), *([ORDER_COLUMN] if config.history == "scd2" else [])]
    key = [e.as_("TRANSFORMATION", "the record key") for k in key_columns for e in resolve(k)]
    partition = config.partition_path_field
    lineage: dict[str, list[Edge]] = {}
    for column in columns:
        if column == "_hoodie_record_key":
            lineage[column] = _unique(key)
        elif column == "_hoodie_partition_path":
            lineage[column] = (
                [e.as_("TRANSFORMATION", "the partition") for e in resolve(partition)] if partition else []
            )
        else:
            lineage[column] = resolve(column)
    row_filter = [
        e.as_("FILTER", f"row_filter: {config.row_filter}") for r in reads.get(FILTER, ()) for e in resolve(r)
    ]
    return lineage, _unique(row_filter)


def _meta_edges(
    config: IngestConfig, meta_fields: Mapping[str, str], order_fields: Sequence[str]
) -> dict[str, list[Edge]]:
    """The input fields of hudi-cdc's own columns (``_source_*``, the delete flag, history's)."""
    jdbc = config.source == "jdbc"

    def cursor(column: str | None) -> list[Edge]:
        return [Edge(column, "TRANSFORMATION", "the JDBC cursor")] if column else []

    fixed: dict[str, list[Edge]] = {
        OP_COLUMN: [] if jdbc else [Edge("op")],
        DELETED_COLUMN: [] if jdbc else [Edge("op", "TRANSFORMATION", "op = 'd'")],
        ORDER_COLUMN: [Edge(f, "TRANSFORMATION", "the change's position in the source") for f in order_fields],
        INGESTED_AT_COLUMN: [],
        "_source_cursor_ts": cursor(config.jdbc_timestamp_column),
        "_source_cursor_id": cursor(config.jdbc_incrementing_column),
        "_source_database": [] if jdbc else [Edge("source.db", description="the shard's database")],
        "_valid_to_order": [Edge(f, "TRANSFORMATION", "the next version's position") for f in order_fields],
    }
    fixed.update({c: [Edge(f)] for c, f in meta_fields.items()})
    if not jdbc:
        fixed.update({c: [Edge(f, "TRANSFORMATION", what)] for c, (f, what) in _HISTORY_COLUMNS.items()})
    return fixed


# -- what Spark knows -------------------------------------------------------------------------------------
def expression_reads(spark: SparkSession, config: IngestConfig, schema: StructType) -> dict[str, list[str]]:
    """The columns each computed column (and the row filter, as :data:`FILTER`) reads: the attributes Spark's
    analyser resolves in the expression over ``schema`` (the table's columns and those it does not keep)."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([], schema)
    expressions = dict(config.computed_columns)
    if config.row_filter:
        expressions[FILTER] = config.row_filter
    reads: dict[str, list[str]] = {}
    for name, sql in expressions.items():
        analysed = frame.select(F.expr(sql).alias("_lineage"))._jdf.queryExecution().analyzed()
        attributes = analysed.references().toSeq()
        found = [str(attributes.apply(i).name()) for i in range(attributes.size())]
        reads[name] = sorted(set(found), key=lambda c: sql.find(c) if c in sql else len(sql))
    return reads


def _analysis_schema(table: StructType, batch: Batch, config: IngestConfig) -> StructType:
    """The table's columns plus the source columns it does not keep (dropped ones: expressions may read them)."""
    from pyspark.sql.types import StructField, StructType

    fields = list(table.fields)
    names = {f.name for f in fields}
    for part in batch.parts:
        after = part.envelopes.schema["after"].dataType if "after" in part.envelopes.columns else None
        for f in getattr(after, "fields", ()):
            name = config.column_renames.get(f.name, f.name)
            if name not in names:
                fields.append(StructField(name, f.dataType))
                names.add(name)
    return StructType(fields)


def _schema_fields(schema: StructType) -> list[Any]:
    from openlineage.client.generated.schema_dataset import SchemaDatasetFacetFields

    def field(name: str, data_type: DataType, position: int) -> Any:  # noqa: ANN401 - a generated attrs class
        nested = getattr(data_type, "fields", None)
        return SchemaDatasetFacetFields(
            name=name,
            type=data_type.simpleString(),
            ordinal_position=position,
            fields=[field(f.name, f.dataType, i) for i, f in enumerate(nested, 1)] if nested else [],
        )

    return [field(f.name, f.dataType, i) for i, f in enumerate(schema.fields, 1)]


# -- events ------------------------------------------------------------------------------------------------
def table_edges(edges: Sequence[Edge]) -> list[Edge]:
    """The edges as the source database table's columns: a change event's ``after.x`` / ``before.x`` is the
    table's column ``x``; its other fields (``source.*``, ``op``) are the stream's, not the table's."""
    out = []
    for edge in edges:
        image, _, column = edge.field.partition(".")
        if image in ("after", "before") and column:
            out.append(Edge(column, edge.subtype, edge.description, edge.masking))
    return _unique(out)


def _facet_edges(
    edges: Sequence[Edge], inputs: Sequence[tuple[str, str]], table: tuple[str, str] | None = None
) -> list[Any]:
    from openlineage.client.generated.column_lineage_dataset import InputField, Transformation

    out = []
    for (namespace, name), of_input in [
        *((i, edges) for i in inputs),
        *([(table, table_edges(edges))] if table else []),
    ]:
        for edge in of_input:
            kind = "INDIRECT" if edge.subtype == "FILTER" else "DIRECT"
            change = Transformation(kind, edge.subtype, edge.description or None, edge.masking)
            out.append(InputField(namespace, name, edge.field, [change]))
    return out


def _policy_fields(policy: MergePolicy) -> tuple[dict[str, str], list[str]]:
    meta = {column: f"source.{field}" for column, field, _, _ in policy.source_meta_columns}
    meta.update({SOURCE_TS_COLUMN: "source.ts_ms", "_source_snapshot": "source.snapshot"})
    order = [f"source.{field}" for _, field, _, required in policy.source_meta_columns if required]
    return meta, order


class RoundLineage:
    """One round's OpenLineage run: ``with RoundLineage(...) as lineage: lineage.completed(result)``.

    START and COMPLETE go out after a commit that wrote rows; START and FAIL when the block raises (the
    exception goes on). With ``lineage_transport = "none"`` it does nothing at all.
    """

    def __init__(self, config: IngestConfig, batch: Batch, policy: MergePolicy, spark: SparkSession) -> None:
        self.config, self.batch, self.policy, self.spark = config, batch, policy, spark
        self.on = config.lineage_transport != "none"
        self.started = datetime.now(UTC)
        # Rendered now: a name this source cannot give fails the round before anything is written.
        self.table = source_table_dataset(config) if self.on else None

    def __enter__(self) -> RoundLineage:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.on and isinstance(error, Exception):
            self._emit("FAIL", error=error)

    def completed(self, result: Any) -> Any:  # noqa: ANN401 - the round's IngestResult, returned as it is
        if self.on and result.committed and (result.upserts or result.deletes):
            self._emit("COMPLETE", rows=result.upserts + result.deletes)
        return result

    def _emit(self, state: str, *, rows: int = 0, error: Exception | None = None) -> None:
        """Build and send the run's events; never raises (a warning says what went wrong)."""
        started = time.monotonic()
        try:
            events = self._events(state, rows, error)
        except Exception as exc:  # noqa: BLE001 - lineage never fails a round
            log.warning("%s: no lineage events: building them failed: %s", self.config.target_table, exc)
            return
        _send(self.config, events)
        log.info("%s: lineage %s events in %.2fs", self.config.target_table, state, time.monotonic() - started)

    def _events(self, state: str, rows: int, error: Exception | None) -> list[Any]:
        from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
        from openlineage.client.uuid import generate_new_uuid

        config = self.config
        inputs = input_datasets(config)
        namespace, name = dataset_of_path(config.target_base_path)
        run_facets: dict[str, Any] = {}
        output_facets: dict[str, Any] = {}
        input_facets: dict[str, Any] = {}
        statistics: dict[str, Any] = {}
        if error is not None:
            from openlineage.client.generated.error_message_run import ErrorMessageRunFacet

            message = str(error).split("\n")[0][:2000]
            run_facets["errorMessage"] = ErrorMessageRunFacet(message, "python", producer=PRODUCER)
        else:
            output_facets = self._output_facets(inputs)
            input_facets = self._input_facets()
            from openlineage.client.generated.output_statistics_output_dataset import (
                OutputStatisticsOutputDatasetFacet,
            )

            statistics = {"outputStatistics": OutputStatisticsOutputDatasetFacet(rowCount=rows, producer=PRODUCER)}
        run_id = str(generate_new_uuid())
        job = Job(namespace=config.lineage_namespace, name=job_name(config))
        events = []
        for kind, when in (("START", self.started), (state, datetime.now(UTC))):
            last = kind != "START"
            events.append(
                RunEvent(
                    eventTime=when.isoformat(),
                    producer=PRODUCER,
                    eventType=RunState[kind],
                    run=Run(runId=run_id, facets=run_facets if last else {}),
                    job=job,
                    inputs=[
                        *(InputDataset(namespace=ns, name=n, facets=input_facets if last else {}) for ns, n in inputs),
                        *(
                            [InputDataset(*self.table, facets=self._table_facets() if last and not error else {})]
                            if self.table
                            else []
                        ),
                    ],
                    outputs=[
                        OutputDataset(
                            namespace=namespace,
                            name=name,
                            facets=output_facets if last else {},
                            outputFacets=statistics if last else {},
                        )
                    ],
                )
            )
        return events

    def _input_facets(self) -> dict[str, Any]:
        """The input's schema: the change events' fields as read (JDBC: the table's columns), so that the column
        lineage's input fields (``after.email``, ``source.lsn``) name fields the input has."""
        from openlineage.client.generated.schema_dataset import SchemaDatasetFacet
        from pyspark.sql.types import StructType

        if not self.batch.parts:
            return {}
        envelopes = self.batch.parts[0].envelopes.schema
        if self.config.source == "jdbc":
            after = envelopes["after"].dataType
            schema = after if isinstance(after, StructType) else StructType()
        else:
            schema = StructType([f for f in envelopes.fields if not f.name.startswith(INTERNAL_PREFIX)])
        return {"schema": SchemaDatasetFacet(fields=_schema_fields(schema), producer=PRODUCER)}

    def _table_facets(self) -> dict[str, Any]:
        """The source table's schema: the columns of the change events' ``after`` image."""
        from openlineage.client.generated.schema_dataset import SchemaDatasetFacet
        from pyspark.sql.types import StructType

        if not self.batch.parts:
            return {}
        after = self.batch.parts[0].envelopes.schema["after"].dataType
        if not isinstance(after, StructType):
            return {}
        return {"schema": SchemaDatasetFacet(fields=_schema_fields(after), producer=PRODUCER)}

    def _output_facets(self, inputs: Sequence[tuple[str, str]]) -> dict[str, Any]:
        from openlineage.client.generated.column_lineage_dataset import ColumnLineageDatasetFacet, Fields
        from openlineage.client.generated.schema_dataset import SchemaDatasetFacet

        from hudi_cdc.sink.hudi import HudiTable

        config = self.config
        table = HudiTable(self.spark, config.target_base_path).read().schema
        reads = {}
        if config.computed_columns or config.row_filter:
            reads = expression_reads(self.spark, config, _analysis_schema(table, self.batch, config))
        meta, order = _policy_fields(self.policy)
        keys = config.record_key_fields or self.batch.key_fields
        lineage, dataset = column_lineage(
            table.fieldNames(), config, meta_fields=meta, order_fields=order, reads=reads, keys=keys
        )
        fields = {c: Fields(inputFields=_facet_edges(edges, inputs, self.table)) for c, edges in lineage.items()}
        return {
            "schema": SchemaDatasetFacet(fields=_schema_fields(table), producer=PRODUCER),
            "columnLineage": ColumnLineageDatasetFacet(
                fields=fields, dataset=_facet_edges(dataset, inputs, self.table), producer=PRODUCER
            ),
        }


# -- sending ---------------------------------------------------------------------------------------------
_TRANSPORTS: dict[tuple[Any, ...], tuple[Any, threading.Lock]] = {}
_TRANSPORTS_LOCK = threading.Lock()


def _transport(config: IngestConfig) -> tuple[Any, threading.Lock]:
    """The process's transport for ``config``'s settings (an HTTP one keeps its connection between rounds);
    built from our settings alone, never from OPENLINEAGE_* variables or an openlineage.yml."""
    from openlineage.client.transport import get_default_factory

    key = (
        config.lineage_transport,
        config.lineage_url,
        config.lineage_endpoint,
        config.lineage_file,
        config.lineage_timeout_seconds,
        config.lineage_api_key_env,
    )
    with _TRANSPORTS_LOCK:
        if key not in _TRANSPORTS:
            settings: dict[str, Any] = {"type": config.lineage_transport}
            if config.lineage_transport == "http":
                settings.update(
                    url=config.lineage_url,
                    endpoint=config.lineage_endpoint,
                    timeout=config.lineage_timeout_seconds,
                    retry={"total": 0, "connect": 0, "read": 0},  # the client's default retries take 15 s and more
                )
                if config.lineage_api_key_env:
                    settings["auth"] = {"type": "api_key", "apiKey": _api_key(config.lineage_api_key_env)}
            elif config.lineage_transport == "file":
                settings.update(log_file_path=config.lineage_file, append=True)
            _TRANSPORTS[key] = (get_default_factory().create(config=settings), threading.Lock())
        return _TRANSPORTS[key]


def _api_key(env: str) -> str:
    if not os.environ.get(env):
        raise KeyError(f"environment variable {env} (lineage_api_key_env) is not set")
    return os.environ[env]


def _where(config: IngestConfig) -> str:
    if config.lineage_transport == "http":
        return redact_url(str(config.lineage_url).split("?")[0])
    return str(config.lineage_file or config.lineage_transport)


def _send(config: IngestConfig, events: Sequence[Any]) -> None:
    """Send ``events`` in order on a daemon thread; wait for it at most ``lineage_timeout_seconds``."""
    failures: list[str] = []

    def run() -> None:
        try:
            transport, lock = _transport(config)
            with lock:
                for event in events:
                    transport.emit(event)
        except Exception as exc:  # noqa: BLE001 - reported by the round, which goes on
            failures.append(f"{type(exc).__name__}: {_scrub(str(exc), config)}")

    sender = threading.Thread(target=run, name=f"lineage-{config.target_table}", daemon=True)
    sender.start()
    sender.join(config.lineage_timeout_seconds)
    if sender.is_alive():
        log.warning(
            "%s: lineage endpoint %s did not take the round's events within %ss; the round goes on without them",
            config.target_table,
            _where(config),
            config.lineage_timeout_seconds,
        )
    elif failures:
        log.warning("%s: lineage events not sent to %s: %s", config.target_table, _where(config), failures[0])


def _scrub(text: str, config: IngestConfig) -> str:
    """An error's text without the URL's credentials or the API key."""
    url = str(config.lineage_url or "")
    if url:
        text = text.replace(url, redact_url(url))
        password = urlsplit(url).password
        if password:
            text = text.replace(password, "***")
    key = os.environ.get(config.lineage_api_key_env or "", "")
    return text.replace(key, "***") if key else text


def iter_events(path: str) -> Iterator[dict[str, Any]]:
    """The events a ``file`` transport wrote, one JSON object per line (tests, and a reader's check)."""
    import json

    with open(path) as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)
