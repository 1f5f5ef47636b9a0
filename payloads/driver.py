"""A small batch's merge decision in the driver: :meth:`MergePolicy.plan`'s rules over Python rows, no Spark job.

A round under the Java writer's threshold writes without a Spark job (``sink.small_write``); its plan
need not start one either when the batch's events are already in the driver. :func:`decide` takes the
flat rows (what ``envelope.flatten`` makes of each event, as dicts) and decides each key as
:meth:`MergePolicy.plan` does: the winner is the newest source position, then the later arrival; a
non-delete winner at or below its key's tombstone, or any winner at or before an applied TRUNCATE, is
stale; the rest are upserts and deletes. Its counts are the plan's.

A TOAST placeholder takes the newest real value before it, as the Spark plan's fill does: the batch's, or
the stored row's when that sits later in the key's chain. The stored rows are asked for once, for the keys
whose winner holds a placeholder only (``stored_rows``: the caller reads them from the table); a stored row
newer than its key's winner makes that winner stale.

It takes only what it decides exactly as the Spark plan does, and declines the rest (the round then
goes to the Spark plan, before anything is written): a flavor without the driver's order rule
(``MergePolicy.order_of``), a bad event (an error or a position error: the Spark plan reports or
quarantines it), a placeholder that neither the batch nor the stored row fills (the Spark plan looks for a
moved key's value, quarantines or fails), a TRUNCATE event, a key whose values Python and Spark may group
differently (floating point). tests/payloads/test_driver_plan.py proves it equal to the Spark plan over
generated batches of every flavor it takes, with and without stored rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from payloads.base import (
    DELETE,
    ERROR_COLUMN,
    INGESTED_AT_COLUMN,
    INTERNAL_PREFIX,
    OP_COLUMN,
    ORDER_COLUMN,
    SOURCE_TS_COLUMN,
    STALE,
    TOMBSTONED_AT_COLUMN,
    UPSERT,
    MergePolicy,
    PlanCounts,
)

__all__ = ["DriverPlan", "StoredRows", "decide", "toastable_columns", "written_columns"]

_COUNTED_OPS = ("c", "u", "d", "r")
_GROUPABLE = (int, str, bytes, Decimal, date, datetime)  # bool is an int; float is not here (NaN, -0.0)
# The types whose values ``MergePolicy.placeholder_test`` tests (Spark's simpleString of each).
_TOASTABLE_TYPES = ("string", "binary", "array<string>", "array<binary>")

StoredRows = Callable[[list[tuple[Any, ...]], list[str]], Mapping[tuple[Any, ...], Mapping[str, Any]]]
"""``(keys, columns)`` -> per key tuple, the stored row's ``_source_order`` and those of ``columns`` the table
has; keys without a stored row left out."""


@dataclass(frozen=True)
class _Fill:
    """A key's newest real value of one column in the batch, with its event's position and source order."""

    position: tuple[Any, ...]
    order: str | None
    value: Any


@dataclass(frozen=True)
class DriverPlan:
    """What the sink writes for a batch decided in the driver; ``declined`` says why not, and nothing else is set."""

    rows: tuple[dict[str, Any], ...] = ()
    """Each key's upsert or delete, with the written columns (:func:`written_columns`)."""
    tombstones: tuple[dict[str, Any], ...] = ()
    """Per deleted key: its key columns, ``_source_order`` and ``_tombstoned_at``."""
    counts: PlanCounts = PlanCounts()
    declined: str | None = None


def written_columns(flat_columns: Sequence[str]) -> list[str]:
    """The columns a written row carries, in the Spark plan's order: the flat columns with ``_source_order``."""
    columns = [*flat_columns, *([] if ORDER_COLUMN in flat_columns else [ORDER_COLUMN])]
    return [c for c in columns if not c.startswith(INTERNAL_PREFIX)]


def toastable_columns(types: Mapping[str, str], key_fields: Sequence[str]) -> list[str]:
    """The columns that may hold a TOAST placeholder, by their Spark types: those the Spark plan tests."""
    return [c for c, t in types.items() if _toastable(c, key_fields) and t in _TOASTABLE_TYPES]


def decide(
    policy: MergePolicy,
    rows: Sequence[Mapping[str, Any]],
    arrivals: Sequence[tuple[Any, ...]],
    *,
    columns: Sequence[str],
    key_fields: Sequence[str],
    tombstones: Mapping[tuple[Any, ...], str] | None,
    truncated_at: str | None,
    toastable: Sequence[str] = (),
    stored_rows: StoredRows | None = None,
) -> DriverPlan:
    """Each key's change, as ``policy.plan`` decides it over the same rows; or why not (``declined``).

    ``rows`` are flat rows without ``_source_order`` (it is computed here, by the policy's driver rule);
    ``arrivals`` their arrival positions, ordered as the Spark plan orders its arrival column; ``columns``
    the flat frame's columns; ``tombstones`` the newest delete position per key tuple (None: no store);
    ``toastable`` the columns that may hold the placeholder (:func:`toastable_columns`); ``stored_rows`` reads
    the table's rows of the keys whose winner holds one (None: a placeholder declines the batch).
    """
    order_of, position_error_of = policy.order_of, policy.position_error_of
    if order_of is None or position_error_of is None:
        return DriverPlan(declined=f"the {policy.name} flavor has no driver rule")
    keys = list(key_fields)
    placeholders = _placeholders(policy.toast_placeholder)
    fillable = list(toastable) if placeholders and stored_rows is not None else []
    picked = _pick(
        rows, arrivals, columns, keys, order_of=order_of, position_error_of=position_error_of,
        placeholders=placeholders, fillable=fillable,
    )  # fmt: skip
    if isinstance(picked, str):
        return DriverPlan(declined=picked)
    winners, fills, ops = picked
    had = {key for key, (_, row) in winners.items() if _has_placeholder(row, fillable, placeholders)}
    stored = _stored(stored_rows, sorted(had, key=repr), fillable, truncated_at) if had and stored_rows else {}
    if stored is None:
        return DriverPlan(declined="stored rows whose keys the driver does not match to the batch's")
    written = written_columns(columns)
    out: list[dict[str, Any]] = []
    dead: list[dict[str, Any]] = []
    actions = {UPSERT: 0, DELETE: 0, STALE: 0}
    new_tombstones = filled = 0
    stamps: list[int] = []
    for key, (_, picked_row) in winners.items():
        held = stored.get(key)
        row = _filled(picked_row, fillable, fills.get(key, {}), held, placeholders)
        action = _action(row, tombstones.get(key) if tombstones else None, truncated_at, held)
        if action == UPSERT and _has_placeholder(row, fillable, placeholders):
            return DriverPlan(declined="a TOAST placeholder with no value in the batch or the stored row")
        actions[action] += 1
        if action == STALE:
            continue
        filled += action == UPSERT and key in had
        out.append({c: row.get(c) for c in written})
        if row.get(SOURCE_TS_COLUMN) is not None:
            stamps.append(row[SOURCE_TS_COLUMN])
        if action == DELETE:
            new_tombstones += not tombstones or key not in tombstones
            dead.append(
                {
                    **dict(zip(keys, key, strict=True)),
                    ORDER_COLUMN: row[ORDER_COLUMN],
                    TOMBSTONED_AT_COLUMN: row.get(INGESTED_AT_COLUMN),
                }
            )
    events = len(rows)  # every row counted: any row the driver does not take declines the round above
    counts = PlanCounts(
        events=events,
        upserts=actions[UPSERT],
        deletes=actions[DELETE],
        stale=actions[STALE],
        superseded=events - len(winners),
        source_ts_ms_min=min(stamps, default=None),
        source_ts_ms_max=max(stamps, default=None),
        ops={op: n for op, n in ops.items() if n},
        toast_filled=filled,
        new_tombstones=new_tombstones,
    )
    return DriverPlan(rows=tuple(out), tombstones=tuple(dead), counts=counts)


_Winners = dict[tuple[Any, ...], tuple[tuple[Any, ...], dict[str, Any]]]
_Fills = dict[tuple[Any, ...], dict[str, _Fill]]


def _placeholders(placeholder: str | None) -> tuple[Any, ...]:
    return (placeholder, placeholder.encode("utf-8")) if placeholder is not None else ()


def _pick(
    rows: Sequence[Mapping[str, Any]],
    arrivals: Sequence[tuple[Any, ...]],
    columns: Sequence[str],
    keys: list[str],
    *,
    order_of: Callable[[Mapping[str, Any]], str | None],
    position_error_of: Callable[[Mapping[str, Any]], str | None],
    placeholders: tuple[Any, ...],
    fillable: Sequence[str],
) -> tuple[_Winners, _Fills, dict[str, int]] | str:
    """Each key's winning row (with its ``_source_order``), per key and ``fillable`` column the newest real
    value (not a delete's, not a placeholder), and the events counted per op; or why the driver does not
    take the rows (a placeholder in a column it does not fill)."""
    winners: _Winners = {}
    fills: _Fills = {}
    ops = dict.fromkeys(_COUNTED_OPS, 0)
    for row, arrival in zip(rows, arrivals, strict=True):
        if row.get(ERROR_COLUMN) is not None:
            return "a bad event"
        if position_error_of(row) is not None:
            return "an event without a usable source position"
        op = row.get(OP_COLUMN)
        if op not in _COUNTED_OPS:
            return f"an event of op {op!r}"
        if placeholders and any(
            _holds(row[c], placeholders) for c in columns if _toastable(c, keys) and c not in fillable
        ):
            return "a TOAST placeholder"
        key = tuple(row[k] for k in keys)
        if any(v is None or not isinstance(v, _GROUPABLE) for v in key):
            return "a key of a type the driver does not group"
        order = order_of(row)
        # Spark's struct order: NULL first; positions are unique (order, then arrival).
        position = (order is not None, order or "", arrival)
        ops[op] += 1
        held = winners.get(key)
        if held is None or position > held[0]:
            winners[key] = (position, {**row, ORDER_COLUMN: order})
        if op != "d":
            _keep_newest_real(fills.setdefault(key, {}), row, fillable, placeholders, position, order)
    return winners, fills, ops


def _keep_newest_real(
    fills: dict[str, _Fill],
    row: Mapping[str, Any],
    fillable: Sequence[str],
    placeholders: tuple[Any, ...],
    position: tuple[Any, ...],
    order: str | None,
) -> None:
    """Each ``fillable`` column's value of ``row`` kept in ``fills`` where it is real and the newest so far."""
    for column in fillable:
        value = row[column]
        if _holds(value, placeholders):
            continue
        known = fills.get(column)
        if known is None or position > known.position:
            fills[column] = _Fill(position, order, value)


def _stored(
    stored_rows: StoredRows, keys: list[tuple[Any, ...]], fillable: list[str], floor: str | None
) -> dict[tuple[Any, ...], Mapping[str, Any]] | None:
    """The stored rows of ``keys`` that count: with a source position, after an applied TRUNCATE's. None when
    a row comes back under a key not asked for: a value Spark hands back in another form than the batch's
    (a timestamp's zone), which would leave a placeholder to an older value."""
    found = stored_rows(keys, fillable)
    if not set(found) <= set(keys):
        return None
    return {
        key: row
        for key, row in found.items()
        if (order := row.get(ORDER_COLUMN)) is not None and (floor is None or order > floor)
    }


def _filled(
    row: dict[str, Any],
    fillable: Sequence[str],
    fills: Mapping[str, _Fill],
    held: Mapping[str, Any] | None,
    placeholders: tuple[Any, ...],
) -> dict[str, Any]:
    """``payloads.base._fill_placeholders``: each placeholder takes the stored value where the stored row sits
    later in the key's chain than the batch's newest real value (on equal positions the batch's is newer),
    else the batch's; with neither it stays (a delete's may)."""
    stored_order = held[ORDER_COLUMN] if held is not None else None
    out = row
    for column in fillable:
        if not _holds(row[column], placeholders):
            continue
        fill = fills.get(column)
        stored_is_newer = stored_order is not None and (
            fill is None or (fill.order is not None and stored_order > fill.order)
        )
        if held is not None and column in held and stored_is_newer:
            out = {**out, column: held[column]}
        elif fill is not None:
            out = {**out, column: fill.value}
    return out


def _has_placeholder(row: Mapping[str, Any], fillable: Sequence[str], placeholders: tuple[Any, ...]) -> bool:
    """``_Events.has_placeholder``: a placeholder in a winner that is not a delete."""
    return row.get(OP_COLUMN) != "d" and any(_holds(row[c], placeholders) for c in fillable)


def _action(
    row: Mapping[str, Any], tombstone: str | None, floor: str | None, held: Mapping[str, Any] | None = None
) -> str:
    """``payloads.base._decide``: stale below the stored row read for a placeholder (``held``), at or below the
    key's tombstone, at or before a TRUNCATE; else a delete or an upsert."""
    order, is_delete = row[ORDER_COLUMN], row.get(OP_COLUMN) == "d"
    stored_order = held[ORDER_COLUMN] if held is not None else None
    if order is not None and (
        (not is_delete and stored_order is not None and order < stored_order)
        or (not is_delete and tombstone is not None and order <= tombstone)
        or (floor is not None and order <= floor)
    ):
        return STALE
    return DELETE if is_delete else UPSERT


def _toastable(column: str, keys: Sequence[str]) -> bool:
    return column not in keys and not column.startswith(("_source_", "_hoodie_", INTERNAL_PREFIX))


def _holds(value: Any, placeholders: tuple[Any, ...]) -> bool:  # noqa: ANN401 - any column's value
    """Whether ``value`` is (or is a one-element list of) the placeholder: what a TOAST test may find."""
    if isinstance(value, list | tuple):
        return len(value) == 1 and _holds(value[0], placeholders)
    if isinstance(value, bytearray):
        value = bytes(value)
    return isinstance(value, str | bytes) and value in placeholders
