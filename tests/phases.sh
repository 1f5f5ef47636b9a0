#!/usr/bin/env bash
# make test's two phases (Makefile, PYTEST_PHASES): every test but the `exclusive` ones on $TEST_WORKERS
# pytest-xdist workers (a file, or all the SHARED_SAMPLE_TABLES files, to one worker: tests/conftest.py), then
# the `exclusive` ones alone. A phase that selects nothing (pytest's exit 5) is fine when PYTEST_ARGS narrows
# the run, never in CI and never for both phases. JUNIT_DIR: a JUnit report per phase.
set -uo pipefail
py=$1; shift
junit() { [ -n "${JUNIT_DIR:-}" ] && echo "--junitxml=$JUNIT_DIR/$1.xml"; }
"$py" -m pytest -n "${TEST_WORKERS:-3}" --dist loadfile -m "not exclusive" "$@" $(junit parallel)
first=$?
"$py" -m pytest -m exclusive "$@" $(junit exclusive)
second=$?
for rc in $first $second; do
  if [ "$rc" -ne 0 ] && { [ "$rc" -ne 5 ] || [ "${CI:-}" = true ]; }; then exit "$rc"; fi
done
[ "$first" -eq 5 ] && [ "$second" -eq 5 ] && { echo "no test selected" >&2; exit 5; }
exit 0
