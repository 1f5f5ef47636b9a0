"""Each setting declared once, and what is derived from the declaration.

A setting is a field of a frozen dataclass (``IngestConfig``) made with :func:`setting`: its
one-line meaning, where it may be set, whether it is secret and its old names sit in the
field's metadata; its name, type and default are the field's own. Everything a user meets is
derived from that, mechanically, by the functions here: the command-line flag (``--`` and the
name with ``_`` -> ``-``), the environment variable (``HUDI_CDC__`` and the name upper-cased),
the TOML key and Python keyword (the name), how a text value (a flag, a variable) is typed,
and the "did you mean" of an unknown name. The CLI, the Airflow operator, the Python API and
``docs/settings.md`` (``python -m hudi_cdc.settings_doc``) read the declaration through
:func:`declared`; none of them lists a setting by hand.

Pure: no Spark, nothing imported from a layer above.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import os
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from hudi_cdc.errors import ConfigError

__all__ = [
    "ENV_PREFIX",
    "INGEST",
    "PIPELINE_TABLE",
    "PLACES",
    "Declared",
    "Setting",
    "close_names",
    "coerce",
    "declared",
    "env_name",
    "flag_name",
    "lookup",
    "setting",
]

ENV_PREFIX = "HUDI_CDC__"

# Where a setting may be set. The pipeline file's: a table's section, [defaults], [source],
# [catalog], [lineage], [[routes]]; the ingest command's: its --config file, the environment,
# the command line, the Python API's keywords, the Airflow operator's options.
PLACES: dict[str, str] = {
    "table": "a pipeline table's section",
    "defaults": "the pipeline's [defaults]",
    "source": "the pipeline's [source]",
    "catalog": "the pipeline's [catalog]",
    "lineage": "the pipeline's [lineage]",
    "routes": "the pipeline's [[routes]]",
    "file": "ingest --config FILE",
    "env": "HUDI_CDC__* environment variables",
    "cli": "ingest and validate options",
    "python": "hudi_cdc.ingest() keywords",
    "airflow": "HudiCdcIngestOperator options",
}
INGEST = frozenset({"file", "env", "cli", "python", "airflow"})
"""Every way of setting an ``ingest`` run."""
PIPELINE_TABLE = frozenset({"table", "defaults"})
"""A pipeline's per-table settings: [defaults], then a table's own section."""

Kind = Literal["str", "int", "float", "bool", "choice", "list", "mapping"]


@dataclass(frozen=True)
class Setting:
    """What a field's metadata says about it (the rest is the field's name, type and default)."""

    meaning: str
    where: frozenset[str] = INGEST | PIPELINE_TABLE
    secret: Literal["", "reference", "redacted"] = ""
    """``reference``: the value names where a secret is (a file, a variable), never the secret;
    ``redacted``: the value may carry credentials and is shown through ``redact``."""
    redact: Callable[[Any], Any] | None = None
    aliases: tuple[str, ...] = ()
    """Old names, accepted for one release with a warning naming this one."""
    metavar: str | None = None
    value_aliases: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Other spellings of a choice (``cow`` for ``COPY_ON_WRITE``)."""
    merged_by_key: bool = False
    """A table whose later layers (env over file, a table's section over [defaults]) change it key by
    key; any other setting's later value replaces the earlier one whole."""


def setting(
    meaning: str,
    *,
    default: Any = dataclasses.MISSING,  # noqa: ANN401 - the field's default, any type
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,  # noqa: ANN401
    where: Iterable[str] = INGEST | PIPELINE_TABLE,
    secret: Literal["", "reference", "redacted"] = "",
    redact: Callable[[Any], Any] | None = None,
    aliases: tuple[str, ...] = (),
    metavar: str | None = None,
    value_aliases: Mapping[str, str] | None = None,
    merged_by_key: bool = False,
) -> Any:  # noqa: ANN401 - a dataclass field, typed as its value
    """A dataclass field declaring a setting: its one-line meaning and the rest of :class:`Setting`."""
    places = frozenset(where)
    unknown = places - set(PLACES)
    if unknown:
        raise ValueError(f"unknown place(s) {sorted(unknown)}; known: {', '.join(PLACES)}")
    meta = Setting(meaning, places, secret, redact, aliases, metavar, dict(value_aliases or {}), merged_by_key)
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata={"setting": meta})
    return dataclasses.field(default=default, metadata={"setting": meta})


@dataclass(frozen=True)
class Declared:
    """One declared setting with everything derived from it."""

    name: str
    kind: Kind
    optional: bool
    choices: tuple[str, ...]
    default: Any
    required: bool
    meta: Setting

    @property
    def flag(self) -> str:
        return flag_name(self.name)

    @property
    def env(self) -> str:
        return env_name(self.name)

    @property
    def where(self) -> frozenset[str]:
        return self.meta.where

    @property
    def type_text(self) -> str:
        """The type as the reference shows it."""
        text = {
            "str": "text",
            "int": "integer",
            "float": "number",
            "bool": "true/false",
            "list": "list of text",
            "mapping": "table of text",
        }.get(self.kind) or " | ".join(self.choices)
        return text + (" (optional)" if self.optional else "")

    @property
    def metavar(self) -> str:
        if self.meta.metavar:
            return self.meta.metavar
        return {"mapping": "KEY=VALUE", "list": "NAME", "int": "N", "float": "N"}.get(self.kind, "TEXT")


def flag_name(name: str) -> str:
    """The command-line flag of a setting: ``columns_drop`` -> ``--columns-drop``."""
    return "--" + name.replace("_", "-")


def env_name(name: str) -> str:
    """The environment variable of a setting: ``table_type`` -> ``HUDI_CDC__TABLE_TYPE``."""
    return ENV_PREFIX + name.upper()


def declared(cls: type) -> tuple[Declared, ...]:
    """The settings ``cls`` (a dataclass) declares, in declaration order; fields without
    :func:`setting` metadata are described by their name, type and default only."""
    return _declared(cls)


@functools.cache
def _declared(cls: Any) -> tuple[Declared, ...]:  # noqa: ANN401 - a dataclass (Any: mypy finds classes unhashable)
    hints = get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get("setting") or Setting("")
        kind, optional, choices = _kind(hints[f.name])
        if f.default is not dataclasses.MISSING:
            default, required = f.default, False
        elif f.default_factory is not dataclasses.MISSING:
            default, required = f.default_factory(), False
        else:
            default, required = None, True
        out.append(Declared(f.name, kind, optional, choices, default, required, meta))
    return tuple(out)


def _kind(tp: Any) -> tuple[Kind, bool, tuple[str, ...]]:  # noqa: ANN401 - a type hint
    optional = False
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        optional = len(args) < len(get_args(tp))
        tp = args[0] if len(args) == 1 else str
    origin = get_origin(tp)
    if origin is Literal:
        return "choice", optional, tuple(str(a) for a in get_args(tp))
    if tp is bool:
        return "bool", optional, ()
    if tp is int:
        return "int", optional, ()
    if tp is float:
        return "float", optional, ()
    if origin in (tuple, list):
        return "list", optional, ()
    if origin in (Mapping, dict) or tp in (dict, Mapping):
        return "mapping", optional, ()
    return "str", optional, ()


def close_names(name: str, known: Iterable[str]) -> str:
    """``; did you mean a, b?`` for the known names closest to ``name``, or a pointer to the reference."""
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    # Only the nearest: a name one letter off has one answer, not three.
    score = {c: difflib.SequenceMatcher(None, name, c).ratio() for c in close}
    close = [c for c in close if score[c] >= max(score.values()) - 0.05]
    if close:
        return f"; did you mean {' or '.join(close)}?"
    return "; every setting is listed in docs/settings.md"


def lookup(cls: type, name: str, origin: str, *, warn: Callable[[str], None] | None = None) -> Declared:
    """The setting ``name`` names (its canonical name or an old one, which ``warn`` is told about);
    an unknown name is refused with the closest names."""
    settings = {d.name: d for d in declared(cls)}
    if name in settings:
        return settings[name]
    for d in settings.values():
        if name in d.meta.aliases:
            if warn is not None:
                warn(f"{origin}: {name} is an old name of {d.name}, accepted until the next release: use {d.name}")
            return d
    raise ConfigError(f"{origin}: unknown setting {name!r}{close_names(name, settings)}")


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def coerce(d: Declared, value: Any, origin: str) -> Any:  # noqa: ANN401 - a TOML, env, CLI or Python value
    """``value`` as the setting's type: text (an environment variable, a flag, a property) is parsed
    by the declared type; lists may be comma separated; tables may be JSON or ``k=v;k=v``."""
    if value is None:
        return None
    if d.kind == "list":
        if isinstance(value, str):
            return tuple(v.strip() for v in value.split(",") if v.strip())
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{origin}: {d.name} must be a list of names, got {value!r}")
        return tuple(str(v).strip() for v in value)
    if d.kind == "mapping":
        return _mapping(d.name, value, origin)
    if d.kind == "bool":
        if isinstance(value, str):
            text = value.strip().lower()
            if text not in _TRUE + _FALSE:
                raise ConfigError(f"{origin}: {d.name}={value!r} is not true or false")
            return text in _TRUE
        if not isinstance(value, bool):
            raise ConfigError(f"{origin}: {d.name}={value!r} is not true or false")
        return value
    if d.kind in ("int", "float"):
        if isinstance(value, str):
            try:
                return int(value) if d.kind == "int" else float(value)
            except ValueError:
                raise ConfigError(f"{origin}: {d.name}={value!r} is not a number") from None
        if isinstance(value, bool) or not isinstance(value, int if d.kind == "int" else (int, float)):
            raise ConfigError(
                f"{origin}: {d.name}={value!r} is not {'a whole number' if d.kind == 'int' else 'a number'}"
            )
        return value if d.kind == "int" else float(value)
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise ConfigError(f"{origin}: {d.name}={value!r} is not text")
    if d.kind == "choice":
        text = value.strip()
        text = d.meta.value_aliases.get(text.lower(), text)
        if all(c == c.lower() for c in d.choices):
            return text.lower()
        if all(c == c.upper() for c in d.choices):
            return text.upper()
        return text
    return value


def _mapping(name: str, value: Any, origin: str) -> dict[str, str]:  # noqa: ANN401 - TOML/env value
    """A table of strings: TOML's own, or text (env) as a JSON object or ``k=v;k=v``."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = json.loads(text) if text.startswith("{") else dict(p.split("=", 1) for p in text.split(";") if p)
        except ValueError:
            raise ConfigError(f'{origin}: {name}={value!r}: expected a JSON object or "k=v;k=v"') from None
    if not isinstance(value, Mapping) or not all(isinstance(v, (str, int, float)) for v in value.values()):
        raise ConfigError(f"{origin}: {name} must be a table of strings, got {value!r}")
    # A TOML number or boolean is taken as its text (Hudi's and the sync's settings are text).
    return {str(k).strip(): _text(v) for k, v in value.items()}


def _text(value: str | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value.strip() if isinstance(value, str) else str(value)
