"""Seconds per test file from pytest JUnit XML reports (one per phase of make test), slowest first: the CI log's record of where time went."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter


def main(paths: list[str], top: int = 40) -> None:
    seconds: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    cases = [case for path in paths for case in ET.parse(path).iter("testcase")]
    for case in cases:
        group = case.get("classname", "?")
        seconds[group] += float(case.get("time") or 0)
        tests[group] += 1
    print(f"seconds per test file ({sum(tests.values())} tests, {sum(seconds.values()):.0f} s):")
    for group, total in seconds.most_common(top):
        print(f"{total:8.1f} s {tests[group]:4d}  {group}")


if __name__ == "__main__":
    main(sys.argv[1:])
