#!/usr/bin/env bash
# Set up .venv and run the demo: explore, compile, check and time the built-in examples.
set -euo pipefail
source "$(dirname "$0")/_venv.sh" ""
exec .venv/bin/reactant-lab demo "$@"
