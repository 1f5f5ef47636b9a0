"""Seconds per test file from pytest JUnit XML reports (one per phase of make test), slowest first: the CI log's
record of where time went. ``--hints FILE`` also writes them as ``{path: seconds}`` (tests/file_seconds.json:
make test's workers take the longest files first)."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path


def test_file(classname: str) -> str:
    """``tests.stack.test_cuts`` (or ``tests.x.test_y.TestClass``) as the file's path, ``tests/stack/test_cuts.py``."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        path = "/".join(parts[:end]) + ".py"
        if Path(path).is_file():
            return path
    return classname


def main(args: list[str], top: int = 40) -> None:
    hints = None
    if args[:1] == ["--hints"]:
        hints, args = Path(args[1]), args[2:]
    seconds: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    for case in (case for path in args for case in ET.parse(path).iter("testcase")):
        group = test_file(case.get("classname", "?"))
        seconds[group] += float(case.get("time") or 0)
        tests[group] += 1
    print(f"seconds per test file ({sum(tests.values())} tests, {sum(seconds.values()):.0f} s):")
    for group, total in seconds.most_common(top):
        print(f"{total:8.1f} s {tests[group]:4d}  {group}")
    if hints is not None:
        hints.write_text(json.dumps({g: round(s, 1) for g, s in sorted(seconds.items())}, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
