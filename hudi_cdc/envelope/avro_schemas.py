"""One Avro reader schema for several writer schemas, so a batch decodes in a single pass.

Avro schema resolution reads data written with any writer schema into a
reader schema that (a) has every writer field, by name, (b) gives fields
missing from some writer a default, and (c) widens only where Avro promotes
(int -> long -> float -> double). :func:`merged_reader_schema` builds that
schema from the writer versions of a batch, or returns None when Avro cannot
resolve them (a type change such as int -> string, a changed logical type):
the caller then decodes each version on its own and reconciles them as
DataFrames (:mod:`hudi_cdc.envelope.evolution`), which knows more rules.

Pure functions on the JSON form of schemas.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["ABSENT_MARK", "merged_reader_schema"]

ABSENT_MARK = "hudi_cdc.absent"
"""A reader field property: only older writer versions have the field, not the newest."""

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
_NAMED = {"record", "enum", "fixed"}
# Writer type -> reader types Avro promotes it to, narrowest first.
_PROMOTIONS = {"int": ("long", "float", "double"), "long": ("float", "double"), "float": ("double",)}
# Attributes that do not change how a value is read or what it means.
_COSMETIC = {"doc", "aliases", "default", "connect.version", "connect.doc"}


class _Unmergeable(Exception):
    pass


def merged_reader_schema(writers: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """A reader schema every schema in ``writers`` (oldest first) resolves to, or None.

    The newest writer's field order and names win; fields only older writers
    have come after them, optional with a null default.
    """
    if not writers:
        raise ValueError("no writer schemas")
    try:
        expanded = [_expand(w, "", {}, set()) for w in writers]
        merged = expanded[-1]
        for older in reversed(expanded[:-1]):
            merged = _merge(older, merged)
        return _emit(merged, set())
    except _Unmergeable:
        return None


def _full_name(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _expand(schema: Any, namespace: str, named: dict[str, Any], open_records: set[str]) -> Any:
    """Every name reference replaced by its definition; every name made full."""
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return schema
        full = schema if schema in named else _full_name(schema, namespace)
        if full not in named:
            raise _Unmergeable(f"unknown type name {schema!r}")
        if full in open_records:
            raise _Unmergeable(f"recursive type {full}")  # cannot be expanded; decode per version
        return named[full]
    if isinstance(schema, list):
        return [_expand(branch, namespace, named, open_records) for branch in schema]
    kind = schema.get("type")
    if kind in _NAMED:
        full = _full_name(schema["name"], schema.get("namespace", namespace))
        out = {k: v for k, v in schema.items() if k not in ("namespace", "fields")}
        out["name"] = full
        named[full] = out
        if kind == "record":
            inner = full.rpartition(".")[0]
            open_records.add(full)
            out["fields"] = [{**f, "type": _expand(f["type"], inner, named, open_records)} for f in schema["fields"]]
            open_records.discard(full)
        return out
    if kind == "array":
        return {**schema, "items": _expand(schema["items"], namespace, named, open_records)}
    if kind == "map":
        return {**schema, "values": _expand(schema["values"], namespace, named, open_records)}
    if isinstance(kind, (dict, list)):  # {"type": {...}} wraps a complex type
        return _expand(kind, namespace, named, open_records)
    return schema


def _kind(schema: Any) -> str:
    if isinstance(schema, str):
        return schema
    if isinstance(schema, list):
        return "union"
    return schema["type"]


def _meaning(schema: Any) -> Any:
    """What must be equal for two primitive types to read the same: type plus logical attributes."""
    if isinstance(schema, str):
        return (schema, ())
    return (schema["type"], tuple(sorted((k, repr(v)) for k, v in schema.items() if k not in _COSMETIC | {"type"})))


def _optional(schema: Any) -> Any:
    if isinstance(schema, list):
        return schema if schema and schema[0] == "null" else ["null", *[b for b in schema if b != "null"]]
    return ["null", schema]


def _merge(older: Any, newer: Any) -> Any:
    ko, kn = _kind(older), _kind(newer)
    if ko == "union" or kn == "union":
        return _merge_unions(older if ko == "union" else [older], newer if kn == "union" else [newer])
    if ko == "record" and kn == "record":
        return _merge_records(older, newer)
    if ko == kn and ko in ("array", "map"):
        part = "items" if ko == "array" else "values"
        return {**newer, part: _merge(older[part], newer[part])}
    if ko == kn and ko in ("enum", "fixed"):
        if ko == "fixed" and older.get("size") != newer.get("size"):
            raise _Unmergeable("fixed size changed")
        if ko == "enum":
            symbols = list(newer["symbols"]) + [s for s in older["symbols"] if s not in newer["symbols"]]
            return {**newer, "symbols": symbols}
        return newer
    mo, mn = _meaning(older), _meaning(newer)
    if mo == mn:
        return newer
    # A plain primitive widening (no logical type on either side) is an Avro promotion.
    if not mo[1] and not mn[1] and mn[0] in _PROMOTIONS.get(mo[0], ()):
        return newer
    raise _Unmergeable(f"{mo} -> {mn}")


def _merge_unions(older: list[Any], newer: list[Any]) -> list[Any]:
    # Branches pair up by kind (and by name for named types); each older branch must find its newer one.
    def tag(branch: Any) -> str:
        kind = _kind(branch)
        return f"{kind}:{branch['name']}" if kind in _NAMED else kind

    merged = list(newer)
    tags = [tag(b) for b in merged]
    for branch in older:
        t = tag(branch)
        if t in tags:
            i = tags.index(t)
            merged[i] = _merge(branch, merged[i])
        elif t == "null":  # the column was optional, then required: still nullable, same Spark type
            merged.append("null")
            tags.append(t)
        elif not _promotable_into(branch, merged):  # an int branch may read into the long one
            # A new branch would turn the column into a different Spark type (a struct of members).
            raise _Unmergeable(f"union branch {t} is gone")
    return merged


def _promotable_into(branch: Any, reader: list[Any]) -> bool:
    kind, logical = _meaning(branch)
    return not logical and any(
        _meaning(r)[0] in _PROMOTIONS.get(kind, ()) and not _meaning(r)[1] for r in reader if _kind(r) not in _NAMED
    )


def _merge_records(older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    if older["name"] != newer["name"]:
        raise _Unmergeable(f"record {older['name']} became {newer['name']}")
    old_fields = {f["name"]: f for f in older["fields"]}
    new_names = {f["name"] for f in newer["fields"]}
    fields = []
    for field in newer["fields"]:
        if field["name"] in old_fields:
            fields.append({**field, "type": _merge(old_fields[field["name"]]["type"], field["type"])})
        else:
            fields.append(_defaulted(field))
    # Marked: the newest writer has no such field (a column dropped at the source; envelope.evolution).
    fields += [{**_defaulted(f), ABSENT_MARK: True} for f in older["fields"] if f["name"] not in new_names]
    return {**newer, "fields": fields}


def _defaulted(field: dict[str, Any]) -> dict[str, Any]:
    """A field some writer lacks: the reader needs a default for it."""
    if "default" in field:
        return field
    return {**field, "type": _optional(field["type"]), "default": None}


def _emit(schema: Any, defined: set[str]) -> Any:
    """JSON a schema parser accepts: each named type defined once, then referred to by full name."""
    if isinstance(schema, str):
        return schema
    if isinstance(schema, list):
        return [_emit(b, defined) for b in schema]
    kind = schema["type"]
    if kind in _NAMED:
        if schema["name"] in defined:
            return schema["name"]
        defined.add(schema["name"])
        if kind == "record":
            return {**schema, "fields": [{**f, "type": _emit(f["type"], defined)} for f in schema["fields"]]}
        return schema
    if kind == "array":
        return {**schema, "items": _emit(schema["items"], defined)}
    if kind == "map":
        return {**schema, "values": _emit(schema["values"], defined)}
    return schema
