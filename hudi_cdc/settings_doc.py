"""docs/settings.md, generated from the declarations: ``python -m hudi_cdc.settings_doc`` writes it,
``--check`` fails when it is stale. Nothing here names a setting: every row is asked of the code
(``IngestConfig``'s declared fields, the pipeline file's section dataclasses)."""

from __future__ import annotations

import sys
from pathlib import Path

from hudi_cdc.settings import PLACES, Declared, declared

__all__ = ["DOC_PATH", "REGENERATE", "render", "main"]

DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "settings.md"
REGENERATE = "python -m hudi_cdc.settings_doc"

_INTRO = """\
# Settings reference

Generated from the code by `{regenerate}`; do not edit by hand (a test fails when it is stale).

One precedence for `ingest`: the built-in defaults, then the `--config` file, then `HUDI_CDC__*`
environment variables, then arguments (flags, Python keywords, the Airflow operator's options), later
ones winning; `--props FILE` and then each `--hoodie-conf` go over the settings' `hoodie_conf`.

Each setting has one name, and every other name is derived from it:

- the TOML key (the `ingest --config` file, and a pipeline's `[defaults]` or table section: the same
  keys) and the Python keyword of `hudi_cdc.ingest(...)` and of the Airflow operator's `options`: the name;
- the command-line flag of `hudi-cdc ingest` and `validate`: `--` and the name with `_` as `-`
  (true/false settings also take `--no-...`);
- the environment variable: `HUDI_CDC__` and the name in capitals.

How a value is written, by type:

| type | TOML | environment, `--props` | command line | Python, Airflow |
|---|---|---|---|---|
| list of text | `["a", "b"]` | `a,b` | the flag repeated, or `a,b` | a list |
| table of text | `{{ a = "x" }}` or a `[name]` table | a JSON object or `a=x;b=y` | the flag repeated, each `KEY=VALUE` | a dict |
| true/false | `true` | `true`/`false` (`1`/`0`, `yes`/`no`, `on`/`off`) | `--x` / `--no-x` | a bool |
| choice | any case | any case | any case | any case |

A table marked *by key* merges key by key across the layers (a variable or a table's section changes
one key of the file's or `[defaults]`' table); any other setting's later value replaces the earlier one
whole. An unknown name is refused with the closest known names, naming the file, variable, flag or
keyword it came from. `--on-<kind> ACTION` (e.g. `--on-column-added ignore`) is the command line's
shorthand of `--schema-changes <kind>=ACTION`.

Where a setting may be set: {places}.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(d: Declared) -> str:
    if d.required:
        return "required"
    if d.default in (None, (), {}):
        return "—"
    if isinstance(d.default, bool):
        return "true" if d.default else "false"
    return f"`{d.default}`"


def _where(d: Declared) -> str:
    return ", ".join(p for p in PLACES if p in d.where)


def _secret(d: Declared) -> str:
    return {"reference": "reference", "redacted": "redacted"}.get(d.meta.secret, "")


def settings_table(cls: type) -> list[str]:
    """The per-table settings of ``cls``, one row each."""
    rows = [
        "| setting | type | default | meaning | set in | flag | variable | secret |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for d in declared(cls):
        kind = d.type_text + (", by key" if d.meta.merged_by_key else "")
        meaning = d.meta.meaning + (f" Old name: {', '.join(d.meta.aliases)}." if d.meta.aliases else "")
        flag = f"`{d.flag} {d.metavar}`" if "cli" in d.where and d.kind != "bool" else ""
        flag = f"`{d.flag}`" if "cli" in d.where and d.kind == "bool" else flag
        env = f"`{d.env}`" if "env" in d.where else ""
        rows.append(
            f"| `{d.name}` | {_cell(kind)} | {_cell(_default(d))} | {_cell(meaning)} | {_where(d)} | {flag} | {env} "
            f"| {_secret(d)} |"
        )
    return rows


def section_table(cls: type, *, skip: tuple[str, ...] = ()) -> list[str]:
    """A pipeline section's keys as its dataclass declares them (its meaning, when declared with ``setting``)."""
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for d in declared(cls):
        if d.name not in skip:
            meaning = d.meta.meaning + (f" Old name: {', '.join(d.meta.aliases)}." if d.meta.aliases else "")
            rows.append(f"| `{d.name}` | {_cell(d.type_text)} | {_cell(_default(d))} | {_cell(meaning)} |")
    return rows


def _section_keys(old_names: dict[str, str]) -> list[str]:
    """A section whose keys are per-table settings' names, with the short names it took before."""
    return ["| key | old name (until the next release) |", "|---|---|"] + [
        f"| `{name}` | `{old}` |" for old, name in old_names.items()
    ]


def render(config_class: type | None = None) -> str:
    """docs/settings.md's text for ``config_class`` (default ``IngestConfig``) and the pipeline file's sections."""
    from hudi_cdc.config import IngestConfig
    from hudi_cdc.service import routes, spec

    cls = config_class or IngestConfig
    places = "; ".join(f"`{name}`: {text}" for name, text in PLACES.items())
    out = [_INTRO.format(regenerate=REGENERATE, places=places), "## Per-table settings", ""]
    out += settings_table(cls)
    out += [
        "",
        "## The pipeline file",
        "",
        "A pipeline file (`hudi-cdc run --pipeline FILE`) has the sections below; a table's settings are",
        "the per-table settings above, whose keys are those of the `ingest --config` file. One precedence,",
        "later winning: the built-in default, then the file (`[catalog]`, `[lineage]` and `[defaults]`, then",
        'the `[tables."…"]` sections that match the table: patterns such as `"inventory.*"` in the order of',
        "the file, then its exact name), then `HUDI_CDC__*` variables, then command-line arguments. A section",
        "that matches no table of the source is refused unless it says `expected = true`;",
        "`hudi-cdc config show --pipeline FILE --table T` prints each setting's value and where it came from.",
        "",
        "### [source]",
        "",
        *section_table(spec.SourceSettings),
        "",
        "### [run]",
        "",
        *section_table(spec.RunSettings),
        "",
    ]
    lineage = {d.name.removeprefix("lineage_"): d.name for d in declared(cls) if d.name.startswith("lineage_")}
    out += [
        "### [catalog]",
        "",
        "The `catalog*` settings, for every table.",
        "",
        *_section_keys(spec.CATALOG_OLD_NAMES),
    ]
    out += ["", "### [lineage]", "", "The `lineage_*` settings, for every table.", "", *_section_keys(lineage)]
    out += ["", "### [[routes]]", "", *section_table(routes.Route, skip=("number",)), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Write docs/settings.md, or with ``--check`` say whether it is current (exit 1 when stale)."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in args:
        current = DOC_PATH.read_text() if DOC_PATH.exists() else ""
        if current != text:
            print(f"{DOC_PATH} is stale: run `{REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    DOC_PATH.write_text(text)
    print(f"wrote {DOC_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
