"""Shaping the rows on the way in: masks, renames, computed columns, a row filter, kept columns.

Pure functions over DataFrames (docs/transforms.md). Where each applies in a round:

1. masks, on the envelope's ``before``/``after`` records, before anything else reads them: flat
   rows, the quarantine table's raw bytes, error messages and tombstones only ever see masked
   values (:meth:`Shape.mask_envelopes`);
2. renames, on each part's flat rows, before the parts' schemas are reconciled with each other
   and the table (:meth:`Shape.rename`), so a source-side rename mapped back to the old table
   column is no drop plus add;
3. after the merge policy's plan, on each key's winning row (placeholders filled): computed
   columns, the row filter (a failing winner becomes a delete at its position, with a tombstone),
   then the kept columns (:func:`shape_plan`).

Names: masks, computed columns, the filter and keep/drop name table columns (after renames).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hudi_cdc.config import parse_mask, resolve_password
from hudi_cdc.errors import ConfigError
from payloads.base import (
    DELETED_COLUMN,
    INGESTED_AT_COLUMN,
    INTERNAL_PREFIX,
    ORDER_COLUMN,
    RAW_COLUMN,
    TOMBSTONED_AT_COLUMN,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from hudi_cdc.config import IngestConfig
    from payloads.base import MergePolicy, WritePlan

__all__ = ["REDACTED", "Shape", "hmac_hex", "recorded", "shape_plan"]

REDACTED = "[redacted]"
"""What a ``redact`` mask leaves in a text column."""
_IMAGES = ("before", "after")
_LEAVES = INTERNAL_PREFIX + "leaves_filter"


def recorded(config: IngestConfig) -> dict[str, object] | None:
    """What a commit records of ``config``'s transforms and masks (the mask kinds, never the salt), so that a
    command given only the table's path (``verify``, ``verify --repair``) knows the table is shaped; None: not."""
    shape: dict[str, object] = {
        "columns_keep": list(config.columns_keep),
        "columns_drop": list(config.columns_drop),
        "column_renames": dict(config.column_renames),
        "computed_columns": dict(config.computed_columns),
        "row_filter": config.row_filter,
        "masks": dict(config.masks),
    }
    kept = {k: v for k, v in shape.items() if v}
    return kept or None


def hmac_hex(salt: bytes, value: str) -> str:
    """A ``hash`` mask's value: HMAC-SHA256 of the UTF-8 text with the salt, in hex."""
    return hmac.new(salt, value.encode("utf-8"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Shape:
    """A table's transforms (build with :meth:`of`). The salt never shows in ``repr``, a plan or a message."""

    keep: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    renames: Mapping[str, str] = field(default_factory=dict)
    computed: Mapping[str, str] = field(default_factory=dict)
    row_filter: str | None = None
    masks: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    placeholder: str | None = None
    salt: bytes | None = field(default=None, repr=False)
    table: str = ""
    keys: tuple[str, ...] = ()
    """The record key: always kept, whatever ``keep`` lists."""

    @staticmethod
    def of(config: IngestConfig, policy: MergePolicy | None = None, *, keys: Sequence[str] = ()) -> Shape:
        """The transforms of ``config``; the salt is read now (a hash mask needs it)."""
        masks = {c: parse_mask(c, k) for c, k in config.masks.items()}
        salt = None
        if any(kind == "hash" for kind, _ in masks.values()):
            what = "the mask salt (mask_salt_env / mask_salt_file)"
            text = resolve_password(config.mask_salt_file, config.mask_salt_env, what=what)
            if not text:
                raise ConfigError(f"{config.target_table}: masks: {what} is empty or not set")
            salt = text.encode("utf-8")
        return Shape(
            keep=tuple(config.columns_keep),
            drop=tuple(config.columns_drop),
            renames=dict(config.column_renames),
            computed=dict(config.computed_columns),
            row_filter=config.row_filter,
            masks=masks,
            placeholder=policy.toast_placeholder if policy is not None else config.toast_placeholder,
            salt=salt,
            table=config.target_table,
            keys=tuple(keys or config.record_key_fields),
        )

    @property
    def active(self) -> bool:
        return bool(self.keep or self.drop or self.renames or self.computed or self.row_filter or self.masks)

    @property
    def reshapes_rows(self) -> bool:
        """Whether the winners change after the plan (computed columns, the filter, kept columns)."""
        return bool(self.keep or self.drop or self.computed or self.row_filter)

    # -- 1. masks ---------------------------------------------------------------
    def masked_fields(self, fields: Sequence[str]) -> dict[str, tuple[str, int]]:
        """The masks of a record's ``fields``: by a field's own name or the table column it is renamed to."""
        out = {}
        for name in fields:
            mask = self.masks.get(name) or self.masks.get(self.renames.get(name, ""))
            if mask is not None:
                out[name] = mask
        return out

    def mask_column(self, column: Column, kind: str, n: int) -> Column:
        """``column`` (text) masked; NULL and the TOAST placeholder stay as they are (the merge policy
        fills a placeholder from the stored, already masked, value)."""
        from pyspark.sql import functions as F

        if kind == "redact":
            masked = F.lit(REDACTED)
        elif kind == "keep_last":
            # Every character with at least n after it: idempotent, so a re-applied event is masked once.
            masked = F.regexp_replace(column, f"(?s).(?=.{{{n}}})", "*")
        else:
            masked = self._hash_udf()(column)
        keep = column.isNull()
        if self.placeholder is not None:
            keep = keep | (column == F.lit(self.placeholder))
        return F.when(keep, column).otherwise(masked)

    def _hash_udf(self) -> Any:  # noqa: ANN401 - a pandas UDF
        """HMAC-SHA256 as a pandas UDF: the salt lives in its closure (pickled to the workers), never in a
        literal, so no plan string or UI page holds it; a plan shows ``mask_hash(after.email)``."""
        import pandas as pd
        from pyspark.sql.functions import pandas_udf

        salt = self.salt
        if salt is None:
            raise ConfigError(f"{self.table}: masks: a hash mask needs mask_salt_env or mask_salt_file")

        def mask_hash(values: pd.Series) -> pd.Series:
            return values.map(lambda v: hmac_hex(salt, v) if isinstance(v, str) else None)

        mask_hash.__annotations__ = {"values": pd.Series, "return": pd.Series}
        return pandas_udf(mask_hash, "string")  # type: ignore[call-overload]

    def mask_envelopes(self, envelopes: DataFrame, where: str) -> DataFrame:
        """The envelopes with the masked columns of ``before`` and ``after`` masked.

        Events read back from the quarantine table (their raw column a struct) were masked when set aside:
        left as they are. A Kafka message's own bytes are dropped, so the raw kept for quarantine is the
        masked envelope, encoded again (``batch._with_raw``).
        """
        from pyspark.sql import functions as F
        from pyspark.sql.types import BinaryType, StringType, StructType

        if not self.masks:
            return envelopes
        if RAW_COLUMN in envelopes.columns:
            if not isinstance(envelopes.schema[RAW_COLUMN].dataType, BinaryType):
                return envelopes  # re-applied from quarantine: masked already
            envelopes = envelopes.drop(RAW_COLUMN)
        for image in _IMAGES:
            if image not in envelopes.columns:
                continue
            record = envelopes.schema[image].dataType
            if not isinstance(record, StructType):
                continue
            masked = F.col(image)
            for name, (kind, n) in self.masked_fields(record.fieldNames()).items():
                data_type = record[name].dataType
                if not isinstance(data_type, StringType):
                    raise ConfigError(
                        f"{self.table}: {where}: masks: column {name!r} is {data_type.simpleString()}; masks apply "
                        "to text columns only (map it to string with column_types, or drop it with columns_drop)"
                    )
                masked = masked.withField(name, self.mask_column(F.col(image)[name], kind, n))
            envelopes = envelopes.withColumn(image, masked)
        return envelopes

    def check_masked_columns(self, fields: Sequence[str], where: str) -> None:
        """A mask on a column no part of the batch has is a mistake, not a no-op."""
        covered = set(self.masked_fields(fields)) | {self.renames.get(f, f) for f in fields}
        missing = [c for c in self.masks if c not in covered]
        if missing:
            raise ConfigError(
                f"{self.table}: {where}: masks: no column {', '.join(map(repr, missing))} in the source "
                f"(columns: {', '.join(fields)}); fix the masks setting"
            )

    # -- 2. renames -------------------------------------------------------------
    def rename(self, flat: DataFrame, where: str) -> DataFrame:
        """A part's flat rows with the source columns renamed to the table's."""
        present = set(flat.columns)
        for source, target in self.renames.items():
            if source not in present:
                continue  # e.g. an older part, from before the source-side rename
            if target in present:
                raise ConfigError(
                    f"{self.table}: {where}: column_renames: {source!r} -> {target!r}, but the source has a column "
                    f"{target!r} too; rename onto a column the source does not have"
                )
            flat = flat.withColumnRenamed(source, target)
            present = (present - {source}) | {target}
        clash = [c for c in self.computed if c in present]
        if clash:
            raise ConfigError(
                f"{self.table}: {where}: computed_columns: {', '.join(clash)} is a source column too; "
                "give the computed column another name (or drop the source column's rename)"
            )
        return flat

    def kept(self, column: str) -> bool:
        """Whether the table keeps ``column`` (the key, meta and computed columns always)."""
        if column in self.computed or column in self.keys:
            return True
        if self.keep:
            return column in self.keep or column.startswith("_")
        return column not in self.drop

    def unkept_placeholders(self, flat: DataFrame, policy: MergePolicy) -> DataFrame:
        """A TOAST placeholder in a column the table does not keep reads NULL: there is no stored value to
        fill it from (the computed columns and the filter see NULL there)."""
        from pyspark.sql import functions as F

        for f in flat.schema.fields:
            test = None if self.kept(f.name) else policy.placeholder_test(f.name, f.dataType)
            if test is not None:
                flat = flat.withColumn(f.name, F.when(test, F.lit(None).cast(f.dataType)).otherwise(F.col(f.name)))
        return flat

    def unkept(self, columns: Sequence[str]) -> list[str]:
        return [c for c in columns if not self.kept(c)]

    # -- 3. after the plan ------------------------------------------------------
    def computed_rows(self, rows: DataFrame) -> DataFrame:
        """``rows`` with the computed columns, in their order (a later one may use an earlier one)."""
        for name, sql in self.computed.items():
            rows = rows.withColumn(name, _sql(sql, f"computed_columns.{name}", rows, self.table))
        return rows

    def passes(self, rows: DataFrame) -> Column:
        """Whether a row passes the filter (NULL does not)."""
        from pyspark.sql import functions as F

        assert self.row_filter is not None
        return F.coalesce(_sql(self.row_filter, "row_filter", rows, self.table).cast("boolean"), F.lit(False))

    def kept_rows(self, rows: DataFrame) -> DataFrame:
        return rows.select(*[_col(c) for c in rows.columns if self.kept(c)])

    def source_rows(self, rows: DataFrame) -> DataFrame:
        """Rows as the source has them (verify, a first load), shaped as the table keeps them: computed
        columns, the rows the filter holds for, the kept columns. Masks and renames are the caller's."""
        rows = self.computed_rows(rows)
        if self.row_filter:
            rows = rows.where(self.passes(rows))
        return self.kept_rows(rows)

    def database_rows(self, rows: DataFrame) -> tuple[DataFrame, list[str]]:
        """A source table's rows as read from the database, shaped as the table keeps them (verify), and
        what could not be: computed columns (and a filter) over ``_source_*`` columns, which a database
        row does not have, are left out and named."""
        from pyspark.sql import functions as F

        rows = self.rename(rows, "the source table")
        for column in self.masks:
            if column in rows.columns:
                kind, n = self.masks[column]
                rows = rows.withColumn(column, self.mask_column(F.col(_quoted(column)), kind, n))
        skipped: list[str] = []
        for name, sql in self.computed.items():
            if _reads_change_columns(sql, skipped):
                skipped.append(name)
            else:
                rows = rows.withColumn(name, _sql(sql, f"computed_columns.{name}", rows, self.table))
        if self.row_filter and _reads_change_columns(self.row_filter, skipped):
            skipped.append("row_filter")
        elif self.row_filter:
            rows = rows.where(self.passes(rows))
        return self.kept_rows(rows), skipped


def _reads_change_columns(sql: str, skipped: Sequence[str]) -> bool:
    """Whether an expression names a change's own columns (``_source_*``, ``_ingested_at``) or a skipped one."""
    import re

    names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql))
    return any(n.startswith("_source_") or n == INGESTED_AT_COLUMN or n in skipped for n in names)


def _quoted(name: str) -> str:
    return f"`{name}`"


def _col(name: str) -> Column:
    """A column by a name that may hold dots."""
    from pyspark.sql import functions as F

    return F.col(f"`{name}`")


def _sql(sql: str, setting: str, rows: DataFrame, table: str) -> Column:
    """The expression ``sql``, analysed against ``rows`` now: a mistake names the setting, not a stack."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    try:
        column = F.expr(sql)
        rows.select(column.alias("_probe")).schema  # noqa: B018 - analysis only, no job
    except (PySparkException, Exception) as exc:  # noqa: BLE001 - Spark's parse and analysis errors
        message = str(getattr(exc, "desc", None) or exc).split("\n")[0]
        raise ConfigError(f"{table}: {setting} = {sql!r} does not apply to the rows: {message}") from None
    return column


def shape_plan(shape: Shape, plan: WritePlan, *, key_fields: Sequence[str]) -> tuple[WritePlan, DataFrame | None]:
    """The plan with its winners shaped, and the tombstones of the rows the filter turned into deletes.

    A winner the filter does not hold for becomes a delete at its own position: the table loses the
    row (if it had it), and its tombstone keeps an older late event from bringing it back; a later
    change the filter holds for is newer than the tombstone and writes the row again.
    """
    from pyspark.sql import functions as F

    if plan.upserts is None or not shape.reshapes_rows:
        return plan, None
    rows = shape.computed_rows(plan.upserts)
    tombstones, counts = None, plan.counts
    if shape.row_filter:
        deleted = F.coalesce(F.col(DELETED_COLUMN), F.lit(False))
        rows = rows.withColumn(_LEAVES, ~deleted & ~shape.passes(rows))
        left = rows.where(F.col(_LEAVES))
        n = left.count()  # the upserts come from the plan's materialised winners: no source read again
        if n:
            tombstones = left.select(*key_fields, ORDER_COLUMN, F.col(INGESTED_AT_COLUMN).alias(TOMBSTONED_AT_COLUMN))
            counts = dataclasses.replace(counts, upserts=counts.upserts - n, deletes=counts.deletes + n)
        rows = rows.withColumn(DELETED_COLUMN, deleted | F.col(_LEAVES)).drop(_LEAVES)
    return dataclasses.replace(plan, upserts=shape.kept_rows(rows), counts=counts), tombstones
