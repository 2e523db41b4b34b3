#!/usr/bin/env bash
# Runs every test of rea: fetches the pinned fixtures, runs the Rust tests (unit, integration,
# doc), then the official-MCP-SDK client suites against the built binary: Python, then TypeScript.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash .ci/fixtures.sh
# The public C code (Lua 5.4.6 and 5.4.7, bundled in the lua-src crates) that the matching and
# discovery tests build at two releases: Cargo's registry keeps their sources.
cargo fetch --locked --manifest-path scripts/lua-src/Cargo.toml
cargo build --locked
# The angr provider's tests decompile with the venv .ci/angr-venv.sh creates.
export REA_ANGR_PYTHON="${REA_ANGR_PYTHON:-$root/.venv-angr/bin/python}"
# Unit, integration and doc tests. Benchmarks are not tests: they are only type-checked here
# (run them with `cargo bench`).
cargo test --locked
cargo check --locked --benches
venv="${REA_VENV:-$root/.venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# The Python suite drives the binary cargo just built, wherever the target directory is.
export REA_BIN="${REA_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/rea}"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/python/requirements.txt
"$venv/bin/python" -m pytest tests/python -q
# The official TypeScript SDK (pinned exactly by tests/ts/package-lock.json) under the machine's
# Node, with node's own test runner, one file at a time (the machine is shared).
(
  cd tests/ts
  npm ci --no-audit --no-fund --loglevel=error
  node --test --test-concurrency=1 ./*.test.mjs
)
