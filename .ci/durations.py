"""Seconds per test file from a pytest JUnit XML report, slowest first: the CI log's record of where time went."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter


def main(path: str, top: int = 40) -> None:
    seconds: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    for case in ET.parse(path).iter("testcase"):
        group = case.get("classname", "?")
        seconds[group] += float(case.get("time") or 0)
        tests[group] += 1
    print(f"seconds per test file ({sum(tests.values())} tests, {sum(seconds.values()):.0f} s):")
    for group, total in seconds.most_common(top):
        print(f"{total:8.1f} s {tests[group]:4d}  {group}")


if __name__ == "__main__":
    main(sys.argv[1])
