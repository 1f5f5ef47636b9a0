"""Schema evolution: reconcile the batch's writer-schema versions with each other and with the table.

Pure functions over DataFrames and Spark types. Each kind of schema change follows its own
action (``schema_changes``; docs/types.md#schema-changes), judged against the table:

- ``column_added`` (a source column the table lacks): ``evolve`` adds it, ``ignore`` leaves it out,
  ``fail`` stops.
- ``column_dropped`` (a table column the source no longer sends): ``keep`` (NULL in rows written
  from now on), ``fail``.
- ``type_widened`` (int -> bigint, float -> double, decimal precision up): ``evolve``, ``fail``.
- ``type_changed`` (incompatible, e.g. text -> int, a decimal scale change): ``fail``; ``quarantine``
  (the events of the incompatible schema are bad events, set aside in the quarantine table);
  ``evolve`` (the old ``schema_change_behavior = evolve``: the column becomes text).
- ``column_renamed``: a dropped and an added column of compatible types in one change are taken
  for a rename: ``keep_both`` (the table keeps the old column and gains the new), ``fail``. The
  explicit carry-over is ``column_renames``, applied before this stage.

A source narrowing that the table's wider column holds exactly is cast up, not a change. A
``fail`` names the column, the change and the setting to change; nothing is written. Every
change taken is logged and collected in a :class:`SchemaChangeLog`, which the round records in
its commit (``hudi_cdc.schema_changes``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Literal

from hudi_cdc.config import BEHAVIOR_POLICY
from hudi_cdc.errors import SchemaChangeError
from payloads.base import ERROR_COLUMN, INTERNAL_PREFIX, is_data_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType, StructType

__all__ = [
    "SchemaChangeBehavior",
    "SchemaChange",
    "SchemaChangeLog",
    "SCHEMA_CHANGES_KEY",
    "SOURCE_COLUMNS_KEY",
    "widen",
    "unify",
    "align_to_table",
]

log = logging.getLogger(__name__)

SchemaChangeBehavior = Literal["fail", "evolve", "ignore"]
SCHEMA_CHANGES_KEY = "hudi_cdc.schema_changes"
"""Commit metadata: the schema changes the commit took, a JSON list of :class:`SchemaChange`."""
SOURCE_COLUMNS_KEY = "hudi_cdc.source_columns"
"""Commit metadata: the source's columns as of the commit (so a kept drop or an ignored add counts once)."""

_NUMERIC_RANK = {"tinyint": 0, "smallint": 1, "int": 2, "bigint": 3, "float": 4, "double": 5}
_OTHER_ACTIONS = {
    "column_added": "evolve or ignore",
    "column_dropped": "keep",
    "type_widened": "evolve",
    "type_changed": "quarantine (with on_bad_event = quarantine) or evolve (the column becomes text)",
    "column_renamed": "keep_both",
}


@dataclass(frozen=True)
class SchemaChange:
    """One schema change a round took: its kind, the column, what changed, and the action applied."""

    kind: str
    column: str
    change: str
    action: str


@dataclass
class SchemaChangeLog:
    """A round's schema changes, and the source's columns as of the last commit and as of this round."""

    previous_columns: tuple[str, ...] | None = None
    changes: list[SchemaChange] = field(default_factory=list)
    source_columns: tuple[str, ...] = ()
    absent_columns: frozenset[str] = frozenset()
    """Columns the batch's frame holds only for older writer versions: the newest has dropped them."""

    @classmethod
    def from_metadata(cls, extra: Mapping[str, str] | None) -> SchemaChangeLog:
        raw = (extra or {}).get(SOURCE_COLUMNS_KEY)
        return cls(previous_columns=tuple(json.loads(raw)) if raw else None)

    def take(self, change: SchemaChange, where: str) -> None:
        self.changes.append(change)
        log.warning(
            "%s: schema change %s of column '%s' (%s): %s",
            where,
            change.kind,
            change.column,
            change.change,
            change.action,
        )

    def metadata(self) -> dict[str, str]:
        """The commit metadata that records this round's changes and the source's columns."""
        out = {}
        columns = self.source_columns or self.previous_columns  # a round without events carries them on
        if columns is not None:
            out[SOURCE_COLUMNS_KEY] = json.dumps(list(columns))
        if self.changes:
            out[SCHEMA_CHANGES_KEY] = json.dumps([asdict(c) for c in self.changes])
        return out

    def details(self) -> dict[str, dict[str, int]]:
        """For the round's result (and so the runner's metrics): the changes taken, counted by kind."""
        return {"schema_changes": self.counts()} if self.changes else {}

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for change in self.changes:
            out[change.kind] = out.get(change.kind, 0) + 1
        return out


def _policy(behavior: str | None, policy: Mapping[str, str] | None) -> dict[str, str]:
    return {**BEHAVIOR_POLICY[behavior or "fail"], **(policy or {})}


def _refuse(kind: str, column: str, change: str, where: str) -> SchemaChangeError:
    flag = "--on-" + kind.replace("_", "-")
    return SchemaChangeError(
        f"{where}: column '{column}' {change}; nothing was written. schema_changes.{kind} = fail: set it to "
        f"{_OTHER_ACTIONS[kind]} ({flag}) to take the change"
        + ("; or map the column with column_types" if kind == "type_changed" else "")
    )


def widen(a: DataType, b: DataType) -> DataType | None:
    """The type both ``a`` and ``b`` widen to without loss of meaning, or None."""
    from pyspark.sql.types import DecimalType

    if a == b:
        return a
    sa, sb = a.simpleString(), b.simpleString()
    if sa in _NUMERIC_RANK and sb in _NUMERIC_RANK:
        return a if _NUMERIC_RANK[sa] >= _NUMERIC_RANK[sb] else b
    if isinstance(a, DecimalType) and isinstance(b, DecimalType):
        scale = max(a.scale, b.scale)
        integral = max(a.precision - a.scale, b.precision - b.scale)
        if scale != min(a.scale, b.scale):
            return None  # a scale change rescales stored values: not a widening Hudi applies
        return DecimalType(integral + scale, scale) if integral + scale <= 38 else None
    return None


def _combine(column: str, a: DataType, b: DataType, action: str, where: str) -> DataType:
    from pyspark.sql.types import StringType

    common = widen(a, b)
    if common is not None:
        return common
    if action == "evolve":
        return StringType()
    raise _refuse(
        "type_changed",
        column,
        f"changed type from {a.simpleString()} to {b.simpleString()}, which cannot be applied without losing values",
        where,
    )


def _quarantine_incompatible(
    parts: Sequence[tuple[DataFrame, str]], table: StructType | None, changes: SchemaChangeLog | None
) -> list[tuple[DataFrame, str]]:
    """type_changed = quarantine: a part whose column is incompatible with the table's type (else the newest
    part's) has its events marked bad, the column NULL of the reference type; the raw event keeps the value."""
    from pyspark.sql import functions as F

    reference = {f.name: f.dataType for f in parts[-1][0].schema.fields}
    if table is not None:
        reference.update({f.name: f.dataType for f in table.fields if is_data_column(f.name)})
    out = []
    for frame, where in parts:
        for f in frame.schema.fields:
            target = reference.get(f.name)
            if f.name.startswith(INTERNAL_PREFIX) or target is None or widen(target, f.dataType) is not None:
                continue
            message = (
                f"column '{f.name}' changed type from {target.simpleString()} to {f.dataType.simpleString()} "
                "(schema_changes.type_changed = quarantine): re-apply with hudi-cdc quarantine after a column_types "
                "mapping or type_changed = evolve"
            )
            if changes is not None:
                changes.take(
                    SchemaChange(
                        "type_changed", f.name, f"{target.simpleString()} -> {f.dataType.simpleString()}", "quarantine"
                    ),
                    where,
                )
            frame = frame.withColumn(f.name, F.lit(None).cast(target)).withColumn(
                ERROR_COLUMN, F.coalesce(F.col(ERROR_COLUMN), F.lit(message))
            )
        out.append((frame, where))
    return out


def unify(
    parts: Sequence[tuple[DataFrame, str]],
    *,
    behavior: str | None = None,
    policy: Mapping[str, str] | None = None,
    table: StructType | None = None,
    changes: SchemaChangeLog | None = None,
) -> DataFrame:
    """One DataFrame from parts decoded with different writer schemas (oldest first).

    ``policy`` (kind -> action) over ``behavior``'s; with ``type_changed = quarantine`` the parts'
    incompatible columns are judged against ``table`` (else the newest part) first.
    """
    from pyspark.sql import functions as F

    actions = _policy(behavior, policy)
    if actions["type_changed"] == "quarantine":
        parts = _quarantine_incompatible(parts, table, changes)
    if changes is not None:
        newest = parts[-1][0].columns
        absent = changes.absent_columns
        changes.source_columns = tuple(f for f in newest if not f.startswith(INTERNAL_PREFIX) and f not in absent)
    if len(parts) == 1:
        return parts[0][0]
    types: dict[str, DataType] = {}
    seen_in: dict[str, str] = {}
    for frame, where in parts:
        for f in frame.schema.fields:
            if f.name in types:
                vs = f"{seen_in[f.name]} vs {where}"
                types[f.name] = _combine(f.name, types[f.name], f.dataType, actions["type_changed"], vs)
            else:
                types[f.name] = f.dataType
                seen_in[f.name] = where
    newest = [f.name for f in parts[-1][0].schema.fields]
    order = newest + [name for name in types if name not in newest]
    aligned = []
    for frame, _ in parts:
        present = set(frame.columns)
        aligned.append(
            frame.select(
                *[
                    (F.col(name) if name in present else F.lit(None)).cast(types[name]).alias(name)
                    if name not in present or frame.schema[name].dataType != types[name]
                    else F.col(name)
                    for name in order
                ]
            )
        )
    result = aligned[0]
    for frame in aligned[1:]:
        result = result.unionByName(frame)
    return result


def _added_and_dropped(
    incoming: Mapping[str, DataType],
    table_types: Mapping[str, DataType],
    changes: SchemaChangeLog | None,
    ignore_source: Collection[str],
    ignore_table: Collection[str],
) -> tuple[list[str], list[str], list[str]]:
    """(new source columns, columns the source dropped, columns ignored before): those a previous commit
    already saw the source without (a kept drop) or with (an ignored add) are no new change."""
    previous = changes.previous_columns if changes is not None else None
    absent = changes.absent_columns if changes is not None else frozenset()
    source = [n for n in incoming if not n.startswith(INTERNAL_PREFIX) and n not in ignore_source and n not in absent]
    new = [n for n in source if n not in table_types]
    seen_before = [n for n in new if previous is not None and n in previous]
    added = [n for n in new if n not in seen_before]
    dropped = [n for n in table_types if (n not in incoming or n in absent) and n not in ignore_table]
    if previous is not None:
        dropped = [n for n in dropped if n in previous]
    return added, dropped, seen_before


def _renames(
    added: list[str], dropped: list[str], incoming: Mapping[str, DataType], table_types: Mapping[str, DataType]
) -> list[tuple[str, str]]:
    """(old, new) pairs of a dropped and an added column of compatible types: what a rename looks like."""
    pairs, free = [], list(added)
    for old in dropped:
        new = next((a for a in free if widen(table_types[old], incoming[a]) is not None), None)
        if new is not None:
            free.remove(new)
            pairs.append((old, new))
    return pairs


def _judge_columns(
    incoming: Mapping[str, DataType],
    table_types: Mapping[str, DataType],
    actions: Mapping[str, str],
    changes: SchemaChangeLog | None,
    where: str,
    ignore: tuple[Collection[str], Collection[str]],
) -> tuple[set[str], list[str]]:
    """Added, dropped and renamed columns per their actions: (source columns to leave out, table columns
    to fill with NULL)."""
    added, dropped, seen_before = _added_and_dropped(incoming, table_types, changes, *ignore)
    if actions["column_added"] != "ignore":  # ignored before, taken now
        added, seen_before = added + seen_before, []
    pairs = _renames(added, dropped, incoming, table_types) if added and dropped else []
    taken: list[SchemaChange] = []
    for old, new in pairs:
        if actions["column_renamed"] == "fail":
            raise _refuse(
                "column_renamed",
                old,
                f"was dropped and '{new}' added in one schema change (a rename, as the connector reports it); "
                f'column_renames = {{ {new} = "{old}" }} carries the data across',
                where,
            )
        taken += [SchemaChange("column_renamed", new, f"{old} -> {new}", "keep_both")]
    renamed_old, renamed_new = {o for o, _ in pairs}, {n for _, n in pairs}
    leave_out = set(seen_before)  # ignored by an earlier commit: still ignored
    if changes is not None:  # dropped by the newest writer and never in the table: nothing to add
        leave_out |= {n for n in changes.absent_columns if n in incoming and n not in table_types}
    for name in (a for a in added if a not in renamed_new):
        action = actions["column_added"]
        if action == "fail":
            raise _refuse("column_added", name, f"was added at the source ({incoming[name].simpleString()})", where)
        if action == "ignore":
            leave_out.add(name)
        taken.append(SchemaChange("column_added", name, incoming[name].simpleString(), action))
    for name in (d for d in dropped if d not in renamed_old):
        if actions["column_dropped"] == "fail":
            raise _refuse("column_dropped", name, "was dropped at the source", where)
        taken.append(SchemaChange("column_dropped", name, table_types[name].simpleString(), "keep"))
    for change in taken:
        if changes is not None:
            changes.take(change, where)
    if changes is not None:
        absent = changes.absent_columns
        changes.source_columns = tuple(n for n in incoming if not n.startswith(INTERNAL_PREFIX) and n not in absent)
    nulls = [n for n in table_types if n not in incoming]
    return leave_out, nulls


def align_to_table(
    frame: DataFrame,
    table: StructType | None,
    *,
    behavior: str | None = None,
    where: str,
    policy: Mapping[str, str] | None = None,
    changes: SchemaChangeLog | None = None,
    ignore_source: Collection[str] = (),
    ignore_table: Collection[str] = (),
) -> DataFrame:
    """Fit the batch to the table: each added, dropped, renamed, widened or changed column per its action.

    ``ignore_source``: frame columns the table never keeps (never "added"); ``ignore_table``: table
    columns the round derives later (computed columns: never "dropped").
    """
    from pyspark.sql import functions as F

    if table is None:
        return frame
    actions = _policy(behavior, policy)
    table_types = {f.name: f.dataType for f in table.fields if is_data_column(f.name)}
    incoming = {f.name: f.dataType for f in frame.schema.fields}
    leave_out, nulls = _judge_columns(incoming, table_types, actions, changes, where, (ignore_source, ignore_table))
    columns = []
    for name, dtype in incoming.items():
        if name in leave_out:
            continue
        if name not in table_types:
            columns.append(F.col(name))
            continue
        target = table_types[name]
        common = _type_change(name, target, dtype, actions, changes, where)
        columns.append(F.col(name) if common == dtype else F.col(name).cast(common).alias(name))
    for name in nulls:
        columns.append(F.lit(None).cast(table_types[name]).alias(name))
    return frame.select(*columns)


def _type_change(
    name: str,
    target: DataType,
    dtype: DataType,
    actions: Mapping[str, str],
    changes: SchemaChangeLog | None,
    where: str,
) -> DataType:
    """The type column ``name`` is written with: the table's, or the change's per its action."""
    from pyspark.sql.types import StringType

    common = widen(target, dtype)
    if common == target:
        return target  # same, or narrower values the table's column holds exactly
    change = f"{target.simpleString()} -> {dtype.simpleString()}"
    if common is not None:
        if actions["type_widened"] == "fail":
            raise _refuse("type_widened", name, f"was widened from {change}", where)
        if changes is not None:
            changes.take(SchemaChange("type_widened", name, change, "evolve"), where)
        return common
    if isinstance(target, StringType) and actions["type_changed"] == "evolve":
        return target  # already text since an earlier change: no new change
    # evolve: string; Hudi promotes a stored non-string column to string itself.
    common = _combine(name, target, dtype, actions["type_changed"], where)
    if changes is not None:
        changes.take(SchemaChange("type_changed", name, change, "evolve"), where)
    return common
