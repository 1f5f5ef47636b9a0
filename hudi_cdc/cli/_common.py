"""The options the commands share: an ingest's settings, --hoodie-conf, the database password, lists."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hudi_cdc.errors import ConfigError
from hudi_cdc.settings import Declared, declared, flag_name

if TYPE_CHECKING:
    from hudi_cdc.config import IngestConfig

__all__ = [
    "config_options",
    "option_settings",
    "options_config",
    "options_config_with_origins",
    "parse_hoodie_conf",
    "password_options",
    "setting_option",
    "split_list",
]


def password_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--password-file and --password-env: how a command that talks to the source database gets its password."""
    command = click.option("--password-env", help="Environment variable holding the database password.")(command)
    return click.option("--password-file", type=click.Path(dir_okay=False), help="File holding the database password.")(
        command
    )


def split_list(value: str | None) -> tuple[str, ...]:
    """``a, b,c`` -> ``("a", "b", "c")``: the comma-separated options (--tables, --columns...)."""
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def parse_hoodie_conf(values: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--hoodie-conf expects key=value, got {item!r}")
        conf[key.strip()] = value.strip()
    return conf


_F = TypeVar("_F", bound=Callable[..., Any])


def setting_option(d: Declared, *, flag: str | None = None, hidden: bool = False) -> Callable[[_F], _F]:
    """The click option of a declared setting, derived from its declaration: the flag from its name,
    the type or choices from its type, repeatable for lists and tables, the help from its meaning.
    With ``flag`` (an old name's), an option that keeps an old flag working; its parameter is the old name."""
    name = d.name if flag is None else flag[2:].replace("-", "_")
    flag = flag or d.flag
    text = d.meta.meaning
    if d.default not in (None, (), {}) and flag == d.flag:
        text += f" [default: {'yes' if d.default is True else 'no' if d.default is False else d.default}]"
    if d.kind == "bool":
        return click.option(f"{flag}/--no-{flag[2:]}", name, default=None, hidden=hidden, help=text)
    kwargs: dict[str, Any] = {"metavar": d.metavar}
    if d.kind == "int":
        kwargs["type"] = int
    elif d.kind == "float":
        kwargs["type"] = float
    elif d.kind == "choice":
        choices = [*d.choices, *d.meta.value_aliases]
        # The metavar spells the choices as declared (click's own shows them lower-cased when case-insensitive).
        kwargs = {"type": click.Choice(choices, case_sensitive=False), "metavar": f"[{'|'.join(choices)}]"}
    elif d.kind == "list":
        kwargs["multiple"] = True
        text += " Repeatable, or comma separated."
    elif d.kind == "mapping":
        kwargs["multiple"] = True
        text += " Repeatable."
    return click.option(flag, name, hidden=hidden, help=text, **kwargs)


def _cli_settings(config_class: type | None) -> tuple[Declared, ...]:
    from hudi_cdc.config import IngestConfig

    return tuple(d for d in declared(config_class or IngestConfig) if "cli" in d.where)


def _schema_change_shorthands() -> list[Callable[[_F], _F]]:
    """``--on-<kind> ACTION``: documented shorthands of ``--schema-changes <kind>=ACTION``."""
    from hudi_cdc.config import SCHEMA_CHANGE_KINDS

    return [
        click.option(
            "--on-" + kind.replace("_", "-"),
            type=click.Choice(actions),
            help=f"Shorthand of --schema-changes {kind}=ACTION.",
        )
        for kind, actions in SCHEMA_CHANGE_KINDS.items()
    ]


def config_options(command: _F, *, config_class: type | None = None) -> _F:
    """Add the ingest settings' options to ``command``: one per setting the declaration lets the command
    line set, each old flag hidden beside its new one, the --on-<kind> shorthands, --props and --config.
    Shared by the commands that take an ingest's command line, so `validate` accepts the line `ingest` runs."""
    options: list[Callable[[_F], _F]] = []
    for d in _cli_settings(config_class):
        options.append(setting_option(d))
        options += [setting_option(d, flag=flag_name(old), hidden=True) for old in d.meta.aliases]
        if d.name == "schema_changes":
            options += _schema_change_shorthands()
    options += [
        click.option(
            "--props", "props_file", type=click.Path(dir_okay=False), help="Java properties file of Hudi settings."
        ),
        click.option(
            "--config",
            "config_file",
            type=click.Path(dir_okay=False),
            help="TOML file of settings: the keys of a pipeline table's section (docs/settings.md).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def options_config(
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    options: dict[str, Any],
    *,
    config_class: type | None = None,
) -> IngestConfig:
    """The ingest settings of a command with :func:`config_options`: the built-in defaults, then the
    file, then the environment, then the options; an error names the flag a value came from."""
    return options_config_with_origins(props_file, config_file, hoodie_conf, options, config_class=config_class)[0]


def options_config_with_origins(
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    options: dict[str, Any],
    *,
    config_class: type | None = None,
) -> tuple[IngestConfig, dict[str, str]]:
    """:func:`options_config`, and where each setting came from (``config show``)."""
    from hudi_cdc.config import load_config_with_origins

    flags: dict[str, str] = {}
    settings = option_settings(options, config_class=config_class, flags=flags)
    return load_config_with_origins(
        config_file=config_file,
        props_file=props_file,
        hoodie_conf=parse_hoodie_conf(hoodie_conf),
        argument_origin=lambda name: flags.get(name, flag_name(name)),
        argument_place="cli",
        config_class=config_class,
        **settings,
    )


def option_settings(
    options: dict[str, Any], *, config_class: type | None = None, flags: dict[str, str] | None = None
) -> dict[str, Any]:
    """The click values of :func:`config_options` as settings by name; ``flags`` gets the flag each came
    from (for an error's origin). An old flag prints a one-line warning naming its new one."""
    flags = {} if flags is None else flags
    settings = _cli_settings(config_class)
    old = {alias: d for d in settings for alias in d.meta.aliases}
    out: dict[str, Any] = {}
    shorthands: dict[str, str] = {}
    for key, value in options.items():
        if value is None or value == ():
            continue
        if key.startswith("on_") and key != "on_bad_event":
            shorthands[key.removeprefix("on_")] = value
            continue
        d = old.get(key)
        flag = flag_name(key)
        if d is not None:
            click.echo(f"hudi-cdc warning: {flag} is deprecated (goes in the next release): use {d.flag}", err=True)
        else:
            d = next((s for s in settings if s.name == key), None)
            if d is None:  # not a setting: refused with the closest names by load_config
                out[key] = value
                continue
        flags[d.name] = flag if d.name not in flags else f"{flags[d.name]} and {flag}"
        if d.kind == "list":
            value = tuple(v.strip() for item in value for v in item.split(",") if v.strip())
            value = (*out.get(d.name, ()), *value)
        elif d.kind == "mapping":
            value = {**out.get(d.name, {}), **_key_values(flag, d.metavar, value)}
        out[d.name] = value
    if shorthands:
        out["schema_changes"] = {**out.get("schema_changes", {}), **shorthands}
        flags["schema_changes"] = " and ".join(
            [*filter(None, [flags.get("schema_changes")]), *(flag_name(f"on_{k}") for k in shorthands)]
        )
    return out


def _key_values(flag: str, metavar: str, values: tuple[str, ...]) -> dict[str, str]:
    """A repeatable KEY=VALUE option as a mapping; the error names the flag."""
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"{flag} expects {metavar}, got {item!r}")
        out[key.strip()] = value.strip()
    return out
