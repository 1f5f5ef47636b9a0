"""make test's workers take the test files longest first (tests/conftest.py), as xdist's own scheduler hands them out."""

from __future__ import annotations

from types import SimpleNamespace

from tests.conftest import pytest_xdist_make_scheduler


class _Config:
    """What xdist's scheduler reads of pytest's config: two workers, and the reorder switch."""

    def __init__(self) -> None:
        self.option = SimpleNamespace(loadscopereorder=True, tx=["2*popen"])

    def getvalue(self, name: str) -> object:
        return getattr(self.option, name)


class _Worker:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[list[int]] = []
        self.shutting_down = False

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


def test_a_long_file_of_one_test_is_handed_out_first_not_after_the_files_of_many_tests() -> None:
    # The order tests/conftest.py's _longest_first gives the workers: a long one-test file first.
    collection = [
        "tests/stack/test_long.py::test_only",
        "tests/test_many.py::test_a",
        "tests/test_many.py::test_b",
        "tests/test_many.py::test_c",
        "tests/test_mid.py::test_a",
        "tests/test_mid.py::test_b",
    ]
    scheduler = pytest_xdist_make_scheduler(_Config(), None)
    workers = [_Worker("gw0"), _Worker("gw1")]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    first_units = [collection[w.sent[0][0]].split("::")[0] for w in workers]
    # xdist's default would sort by the number of tests (test_many first, the long file last).
    assert first_units == ["tests/stack/test_long.py", "tests/test_many.py"]
