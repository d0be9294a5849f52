#!/usr/bin/env bash
# Run a command with any Node.js of the machine hidden from it (CI uses it to show that the README's
# commands need none): every PATH folder that has node (or nodejs, npm, npx, corepack) is replaced
# by a temporary folder of links to all its other entries. PYTHON (read by _venv.sh) is set to the
# resolved Python first, so that a .venv made inside does not point into that temporary folder.
# Usage: scripts/without_node.sh COMMAND [ARGS...]
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
if [ -z "${PYTHON:-}" ]; then
  PYTHON="$(command -v python3.11 || command -v python3)"
fi
PYTHON="$(readlink -f "$(command -v "$PYTHON")")"
export PYTHON
hidden="$(mktemp -d)"
trap 'rm -rf "$hidden"' EXIT
node_names=" node nodejs npm npx corepack "
new_path=()
IFS=: read -ra path_dirs <<<"$PATH"
for i in "${!path_dirs[@]}"; do
  dir="${path_dirs[$i]}"
  [ -d "$dir" ] || continue
  has_node=false
  for name in $node_names; do
    if [ -e "$dir/$name" ] || [ -L "$dir/$name" ]; then has_node=true; fi
  done
  if ! $has_node; then
    new_path+=("$dir")
    continue
  fi
  mirror="$hidden/$i"
  mkdir "$mirror"
  for entry in "$dir"/* "$dir"/.[!.]*; do
    if [ ! -e "$entry" ] && [ ! -L "$entry" ]; then continue; fi
    base="${entry##*/}"
    case "$node_names" in *" $base "*) continue ;; esac
    ln -s "$entry" "$mirror/$base"
  done
  new_path+=("$mirror")
done
PATH="$(IFS=:; echo "${new_path[*]}")"
export PATH
for name in $node_names; do
  if command -v "$name" >/dev/null 2>&1; then
    echo "without_node: could not hide $name: $(command -v "$name")" >&2
    exit 1
  fi
done
echo "without_node: no node on PATH"
"$@"
