"""Replace a generated part of docs/benchmarks.md, keeping the prose around it."""

from __future__ import annotations

from pathlib import Path

BEGIN, END = "<!-- bench:begin (written by `make bench`) -->", "<!-- bench:end -->"


def _markers(section: str, target: str | None = None) -> tuple[str, str]:
    if section == "main":
        return BEGIN, END
    target = target or f"bench-{section}"
    return f"<!-- bench:{section}:begin (written by `make {target}`) -->", f"<!-- bench:{section}:end -->"


def write_section(path: Path, text: str, section: str = "main", target: str | None = None) -> None:
    begin, end = _markers(section, target)
    old = path.read_text() if path.exists() else f"# Benchmarks\n\n{begin}\n{end}\n"
    if begin not in old or end not in old:
        old = old.rstrip() + f"\n\n{begin}\n{end}\n"
    head, rest = old.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n{text}{end}{tail}")
