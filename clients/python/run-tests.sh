#!/usr/bin/env bash
# The Python client's tests: makes clients/python/.venv (once) with the pinned test packages
# from PyPI, installs the client editable, and runs pytest against a server the tests start from
# this repository (node scripts/start.mjs). Exit code is pytest's; "no tests ran" is a failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export VSS_REPO_ROOT="$(cd "$here/../.." && pwd)"
cd "$here"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test]"
set +e
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests" >&2
  exit 1
fi
exit "$status"
