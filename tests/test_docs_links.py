"""Every relative link in README.md and docs/*.md names a file that exists, and an anchor that file has
(headings slugged as GitHub slugs them, or an explicit <a id>/<a name>). No network: absolute URLs are skipped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)
_EXPLICIT = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup and punctuation dropped, lower case, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text())
    found: set[str] = set(_EXPLICIT.findall(text))
    seen: dict[str, int] = {}
    for heading in _HEADING.findall(text):
        base = slug(heading)
        n = seen.get(base, 0)
        found.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return found


def links(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans hold examples, not links
    return _LINK.findall(text) + _IMAGE.findall(text)


def broken(page: Path) -> list[str]:
    problems = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            problems.append(f"{target}: no file {_shown(file)}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            problems.append(f"{target}: no heading or anchor #{anchor} in {_shown(file)}")
    return problems


def _shown(file: Path) -> str:
    return str(file.relative_to(ROOT)) if file.is_relative_to(ROOT) else str(file)


def test_slug_is_githubs() -> None:
    assert slug("Repair (`verify --repair`)") == "repair-verify---repair"
    assert slug("The first load, handed over to Debezium: `hudi-cdc bootstrap`") == (
        "the-first-load-handed-over-to-debezium-hudi-cdc-bootstrap"
    )
    assert slug("Pause, resume, remove a subset") == "pause-resume-remove-a-subset"


def test_a_missing_file_and_anchor_are_found(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\n## Same\n\n## Same\n\n[b](b.md) [s](#same-1) [t](#nothing)\n")
    assert anchors(tmp_path / "a.md") == {"title", "same", "same-1"}
    assert [p.split(":")[0] for p in broken(tmp_path / "a.md")] == ["b.md", "#nothing"]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken(page) == []
