"""The pipeline file's ``[[routes]]``: which source tables go to which target table (docs/routing.md).

```toml
[[routes]]                       # evaluated in order, the first match wins; unmatched tables map 1:1
tables = ["shop_*.orders"]       # patterns over schema.table names and topics, as [source] tables
target = "orders"                # the target's pipeline name: {server} {schema} {table} {topic}
shard_columns = ["schema"]       # a merge route: these shard identity columns join the record key
unique_keys = false              # true: the key stays the source's; a key lives in one shard at a time
```

A route with ``shard_columns`` or ``unique_keys = true`` *merges*: each target it renders is one
Hudi table fed by every source table rendering it (its shards), even while only one does (a shard
joining later must not change the table's key). Any other route *renames*: each target it renders
must come from exactly one source table. Pure: no Spark, no network.
"""

from __future__ import annotations

import fnmatch
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hudi_cdc.errors import ConfigError
from hudi_cdc.settings import close_names

__all__ = ["SHARD_COLUMNS", "Route", "parse_routes", "shard_column_names"]

SHARD_COLUMNS: dict[str, str] = {
    "server": "_source_server",
    "database": "_source_database",
    "schema": "_source_schema",
    "table": "_source_table",
}
"""A shard identity, and the column of each row that holds it (server, schema and table from the topic or
folder name ``server.schema.table``; database from the envelope's ``source.db``)."""

_FIELDS = ("topic", "server", "schema", "table")
_KNOWN = {"tables", "target", "shard_columns", "unique_keys"}
_TARGET_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.$-]*")


@dataclass(frozen=True)
class Route:
    number: int  # 1-based, for messages: the route's place in the file
    tables: tuple[str, ...]
    target: str
    shard_columns: tuple[str, ...] = ()  # identities (server, database, schema, table)
    unique_keys: bool = False

    @property
    def merging(self) -> bool:
        return bool(self.shard_columns) or self.unique_keys

    @property
    def where(self) -> str:
        return f"[[routes]] #{self.number} (target {self.target!r})"

    def matches(self, name: str, topic: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(topic, p) for p in self.tables)

    def render(self, parts: Mapping[str, str]) -> str:
        """The target name for a source table's ``parts`` (topic, server, schema, table)."""
        target = self.target.format(**parts)
        if not _TARGET_NAME.fullmatch(target) or ".." in target or target.endswith("."):
            raise ConfigError(
                f"{self.where}: renders {target!r} for {parts['topic']}, not a valid table name "
                "(letters, digits, _ $ - and dots between names)"
            )
        return target

    def key_columns(self) -> tuple[str, ...]:
        """The shard columns that join the record key (none with unique_keys)."""
        return () if self.unique_keys else shard_column_names(self.shard_columns)


def shard_column_names(identities: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(SHARD_COLUMNS[i] for i in identities)


def parse_routes(raw: Any, origin: str) -> tuple[Route, ...]:  # noqa: ANN401 - TOML value
    """``[[routes]]`` of a pipeline file; each problem names the route and the setting."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise ConfigError(f'{origin}: routes must be [[routes]] tables (tables = [...], target = "...")')
    return tuple(_route(i + 1, r, origin) for i, r in enumerate(raw))


def _route(number: int, raw: dict[str, Any], origin: str) -> Route:
    where = f"{origin} [[routes]] #{number}"
    for key in raw:
        if key not in _KNOWN:
            raise ConfigError(f"{where}: unknown setting {key!r}{close_names(key, sorted(_KNOWN))}")
    tables = raw.get("tables")
    if isinstance(tables, str):
        tables = [tables]
    if not tables or not isinstance(tables, list) or not all(isinstance(t, str) and t for t in tables):
        raise ConfigError(f'{where}: tables is required: patterns such as ["shop_*.orders"]')
    target = raw.get("target")
    if not isinstance(target, str) or not target:
        raise ConfigError(f'{where}: target is required: the target table\'s name, such as "orders" or "crm_{{table}}"')
    _check_template(target, f"{where}: target {target!r}")
    unique = raw.get("unique_keys", False)
    if not isinstance(unique, bool):
        raise ConfigError(f"{where}: unique_keys must be true or false, got {unique!r}")
    columns = raw.get("shard_columns")
    if columns is None:
        # Keys declared unique: every identity is still written, to tell the shards apart.
        identities: tuple[str, ...] = tuple(SHARD_COLUMNS) if unique else ()
    elif isinstance(columns, list) and columns and all(c in SHARD_COLUMNS for c in columns):
        identities = tuple(dict.fromkeys(columns))
    else:
        raise ConfigError(
            f"{where}: shard_columns must be a non-empty list of {', '.join(SHARD_COLUMNS)}, got {columns!r}"
        )
    return Route(number, tuple(tables), target, identities, unique)


def _check_template(template: str, where: str) -> None:
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    unknown = [f for f in fields if f not in _FIELDS]
    if unknown:
        raise ConfigError(f"{where} names unknown field(s) {', '.join(unknown)}; known: {', '.join(_FIELDS)}")
