#!/usr/bin/env bash
# Set up .venv with the test extras (which builds the JupyterLab extension and the widget's front
# end), lint Python and TypeScript, run the front end's unit tests, then the whole test suite.
set -euo pipefail
source "$(dirname "$0")/_venv.sh" "test"
.venv/bin/ruff check reactant_lab tests benchmarks
(
  cd labextension
  ../.venv/bin/jlpm install --immutable >/dev/null
  ../.venv/bin/jlpm lint
  ../.venv/bin/jlpm test
)
exec .venv/bin/python -m pytest "$@"
