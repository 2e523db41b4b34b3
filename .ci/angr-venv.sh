#!/usr/bin/env bash
# Creates the angr decompiler's venv (`.venv-angr`, or $REA_ANGR_VENV) from the hash-pinned
# src/providers/angr/requirements.txt, for the `angr` deep provider's tests and benchmarks.
# A venv built from the same requirements (its stamp holds their digest) is kept as it is.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${REA_ANGR_VENV:-$root/.venv-angr}"
requirements="$root/src/providers/angr/requirements.txt"
want=$(sha256sum "$requirements" | cut -d' ' -f1)
stamp="$venv/.rea-requirements.sha256"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
rm -rf "${venv:?}"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-input --require-hashes -r "$requirements"
echo "$want" >"$stamp"
