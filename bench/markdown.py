"""Replace the generated part of docs/benchmarks.md, keeping the prose around it."""

from __future__ import annotations

from pathlib import Path

BEGIN, END = "<!-- bench:begin (written by `make bench`) -->", "<!-- bench:end -->"


def write_section(path: Path, text: str) -> None:
    old = path.read_text() if path.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in old or END not in old:
        old = old.rstrip() + f"\n\n{BEGIN}\n{END}\n"
    head, rest = old.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{text}{END}{tail}")
