#!/usr/bin/env bash
# Set up .venv with the test extras, lint, and run the whole test suite.
set -euo pipefail
source "$(dirname "$0")/_venv.sh" "test"
.venv/bin/ruff check reactant_lab tests benchmarks
exec .venv/bin/python -m pytest "$@"
