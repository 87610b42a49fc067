#!/usr/bin/env bash
# Runs pytest and decides what "no tests selected" (pytest's exit code 5) means:
#   required: the suite must run tests; selecting none is a failure with a clear message.
#   optional: a subset that may legitimately be empty (e.g. benchmarks); none selected is fine.
set -uo pipefail
mode=${1:?usage: pytest.sh required|optional PYTEST_ARGS...}
shift
.venv/bin/pytest "$@"
status=$?
if [ "$status" -eq 5 ]; then
  if [ "$mode" = optional ]; then
    echo "pytest: no tests selected by '$*'; nothing to run" >&2
    exit 0
  fi
  echo "pytest: no tests selected by '$*': the suite must run tests" >&2
  exit 1
fi
exit "$status"
