"""A small batch's merge decision in the driver: :meth:`MergePolicy.plan`'s rules over Python rows, no Spark job.

A round under the Java writer's threshold writes without a Spark job (``sink.small_write``); its plan
need not start one either when the batch's events are already in the driver. :func:`decide` takes the
flat rows (what ``envelope.flatten`` makes of each event, as dicts) and decides each key as
:meth:`MergePolicy.plan` does: the winner is the newest source position, then the later arrival; a
non-delete winner at or below its key's tombstone, or any winner at or before an applied TRUNCATE, is
stale; the rest are upserts and deletes. Its counts are the plan's.

It takes only what it decides exactly as the Spark plan does, and declines the rest (the round then
goes to the Spark plan, before anything is written): a flavor without the driver's order rule
(``MergePolicy.order_of``), a bad event (an error or a position error: the Spark plan reports or
quarantines it), a TOAST placeholder anywhere (its fill reads stored rows), a TRUNCATE event, a key
whose values Python and Spark may group differently (floating point). tests/payloads/test_driver_plan.py
proves it equal to the Spark plan over generated batches of every flavor it takes.
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

__all__ = ["DriverPlan", "decide", "written_columns"]

_COUNTED_OPS = ("c", "u", "d", "r")
_GROUPABLE = (int, str, bytes, Decimal, date, datetime)  # bool is an int; float is not here (NaN, -0.0)


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


def decide(
    policy: MergePolicy,
    rows: Sequence[Mapping[str, Any]],
    arrivals: Sequence[tuple[Any, ...]],
    *,
    columns: Sequence[str],
    key_fields: Sequence[str],
    tombstones: Mapping[tuple[Any, ...], str] | None,
    truncated_at: str | None,
) -> DriverPlan:
    """Each key's change, as ``policy.plan`` decides it over the same rows; or why not (``declined``).

    ``rows`` are flat rows without ``_source_order`` (it is computed here, by the policy's driver rule);
    ``arrivals`` their arrival positions, ordered as the Spark plan orders its arrival column; ``columns``
    the flat frame's columns; ``tombstones`` the newest delete position per key tuple (None: no store).
    """
    order_of, position_error_of = policy.order_of, policy.position_error_of
    if order_of is None or position_error_of is None:
        return DriverPlan(declined=f"the {policy.name} flavor has no driver rule")
    keys = list(key_fields)
    picked = _pick(
        rows, arrivals, columns, keys, order_of=order_of, position_error_of=position_error_of,
        placeholder=policy.toast_placeholder,
    )  # fmt: skip
    if isinstance(picked, str):
        return DriverPlan(declined=picked)
    winners, ops = picked
    written = written_columns(columns)
    out: list[dict[str, Any]] = []
    dead: list[dict[str, Any]] = []
    actions = {UPSERT: 0, DELETE: 0, STALE: 0}
    new_tombstones = 0
    stamps: list[int] = []
    for key, (_, row) in winners.items():
        action = _action(row, tombstones.get(key) if tombstones else None, truncated_at)
        actions[action] += 1
        if action == STALE:
            continue
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
        new_tombstones=new_tombstones,
    )
    return DriverPlan(rows=tuple(out), tombstones=tuple(dead), counts=counts)


_Winners = dict[tuple[Any, ...], tuple[tuple[Any, ...], dict[str, Any]]]


def _pick(
    rows: Sequence[Mapping[str, Any]],
    arrivals: Sequence[tuple[Any, ...]],
    columns: Sequence[str],
    keys: list[str],
    *,
    order_of: Callable[[Mapping[str, Any]], str | None],
    position_error_of: Callable[[Mapping[str, Any]], str | None],
    placeholder: str | None,
) -> tuple[_Winners, dict[str, int]] | str:
    """Each key's winning row (with its ``_source_order``) and the events counted per op; or why the driver
    does not take the rows."""
    placeholders = (placeholder, placeholder.encode("utf-8")) if placeholder is not None else ()
    winners: _Winners = {}
    ops = dict.fromkeys(_COUNTED_OPS, 0)
    for row, arrival in zip(rows, arrivals, strict=True):
        if row.get(ERROR_COLUMN) is not None:
            return "a bad event"
        if position_error_of(row) is not None:
            return "an event without a usable source position"
        op = row.get(OP_COLUMN)
        if op not in _COUNTED_OPS:
            return f"an event of op {op!r}"
        if placeholders and any(_holds(row[c], placeholders) for c in columns if _toastable(c, keys)):
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
    return winners, ops


def _action(row: Mapping[str, Any], tombstone: str | None, floor: str | None) -> str:
    """``payloads.base._decide`` for a winner without a placeholder (no stored row is read for it)."""
    order, is_delete = row[ORDER_COLUMN], row.get(OP_COLUMN) == "d"
    if order is not None and (
        (not is_delete and tombstone is not None and order <= tombstone) or (floor is not None and order <= floor)
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
