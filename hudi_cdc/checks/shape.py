"""Checks of a table's column transforms and masks against the source's columns (docs/transforms.md).

Refused: an expression (computed column, row filter) that does not parse or analyse against the
source's columns, a mask on a column the source does not have or that is not text, a hash mask whose
salt cannot be read, a rename onto a column the source has, a partition column that is neither kept
nor computed. Columns named in keep/drop/renames that the source does not have are warnings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hudi_cdc.checks.kit import _fail, _ok, _Outcome, _Skip, _warn
from hudi_cdc.errors import HudiCdcError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from hudi_cdc.checks.kit import _Context

__all__ = ["check_transforms", "transform_problems"]

EnvelopeSchemaOf = Callable[["_Context"], "tuple[str, dict[str, Any]] | None"]


def check_transforms(ctx: _Context, envelope_schema_of: EnvelopeSchemaOf) -> _Outcome:
    """``envelope_schema_of(ctx)``: where the source's newest envelope schema was read, and the schema."""
    config = ctx.config
    settings = (config.columns_keep, config.columns_drop, config.column_renames, config.computed_columns)
    if not any(settings) and not config.row_filter and not config.masks:
        raise _Skip("no column transforms or masks set")
    spark = ctx.need_spark()
    found = envelope_schema_of(ctx)
    if found is None:
        raise _Skip("no envelope schema of the source to check the transforms against")
    where, envelope = found
    problems, notes = transform_problems(spark, ctx, envelope)
    if problems:
        return _fail(f"{where}: " + "; ".join(problems), "fix the settings named (docs/transforms.md)")
    if notes:
        return _warn(f"{where}: " + "; ".join(notes))
    return _ok(f"{where}: the transforms apply to the source's columns")


def transform_problems(spark: SparkSession, ctx: _Context, envelope: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """What is wrong (refused) and what is odd (warned) in the transforms, for rows of ``envelope``."""
    from hudi_cdc.envelope.shape import Shape
    from hudi_cdc.policy import merge_policy

    config = ctx.config
    policy = merge_policy(config)
    problems: list[str] = []
    try:
        shape = Shape.of(config, policy)  # reads the salt: a hash mask whose salt is missing fails here
    except HudiCdcError as exc:
        return [str(exc)], []
    row = _source_rows(spark, envelope, policy.source_meta_columns)
    types = {f.name: f.dataType.simpleString() for f in row.schema.fields}
    for column in shape.masks:
        named = [f for f in types if f == column or shape.renames.get(f) == column]
        if not named:
            problems.append(f"masks: no column {column!r} in the source")
        problems += [
            f"masks: {column!r} is {types[f]}, masks apply to text columns only" for f in named if types[f] != "string"
        ]
    notes = [f"column_renames: the source has no column {s!r}" for s in shape.renames if s not in types]
    notes += [
        f"{n}: the source has no column {c!r}"
        for n, cs in (("columns_keep", shape.keep), ("columns_drop", shape.drop))
        for c in cs
        if c not in types and c not in shape.renames.values()
    ]
    try:
        rows = shape.rename(row, "the source's columns")
        rows = shape.computed_rows(rows)
        if shape.row_filter:
            rows = rows.where(shape.passes(rows))
    except HudiCdcError as exc:
        problems.append(str(exc).split(": ", 1)[-1])
        return problems, notes
    partition = config.partition_path_field
    if partition and not shape.kept(partition):
        problems.append(f"partition_path_field {partition!r} is not kept (columns_keep / columns_drop)")
    elif partition and partition not in rows.columns:
        problems.append(f"partition_path_field {partition!r} is neither a source column nor a computed column")
    return problems, notes


def _source_rows(spark: SparkSession, envelope: Mapping[str, Any], meta: Any) -> DataFrame:  # noqa: ANN401
    """No rows, with the columns (logical types) and ``_source_*`` columns the envelope's events flatten to."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType, _parse_datatype_json_string

    from hudi_cdc.envelope.types import reader_schema, value_conversions

    reader = reader_schema(dict(envelope))
    jvm: Any = spark.sparkContext._jvm
    parsed = jvm.org.apache.avro.Schema.Parser().parse(json.dumps(reader))
    sql_type = jvm.org.apache.spark.sql.avro.SchemaConverters.toSqlType(parsed).dataType()
    record = _parse_datatype_json_string(sql_type.json())
    assert isinstance(record, StructType)
    after = record["after"].dataType
    assert isinstance(after, StructType)
    conversions = value_conversions(dict(envelope))
    empty = spark.createDataFrame([], after)
    columns = []
    for f in after.fields:
        convert = conversions[f.name].expr if f.name in conversions else None
        column = F.col(f"`{f.name}`")
        columns.append((convert(column) if convert is not None else column).alias(f.name))
    extra = [(c, ddl) for c, _, ddl, _ in meta] + [("_source_ts_ms", "bigint"), ("_source_snapshot", "string")]
    extra += [("_source_op", "string"), ("_source_order", "string"), ("_ingested_at", "timestamp")]
    return empty.select(*columns, *[F.lit(None).cast(ddl).alias(c) for c, ddl in extra])
