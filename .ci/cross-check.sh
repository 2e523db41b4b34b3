#!/usr/bin/env bash
# rea compiles for Windows and macOS (issue 29): checked here, not run, since this machine runs
# neither. Windows is a full check: mingw-w64 (installed for the PE corpus) compiles the bundled
# SQLite for it. macOS has no SDK here, so its C compiler is a stub that writes empty objects:
# the bundled SQLite is not compiled, and everything rea's own code does on macOS is type-checked.
# Both use the target directory the tests used, so the host's build scripts are not built again.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
for target in x86_64-pc-windows-gnu x86_64-apple-darwin; do
  if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target" >/dev/null
  fi
done
cargo check --locked --quiet --target x86_64-pc-windows-gnu --lib --bins
stub="$(mktemp -d)"
trap 'rm -rf "$stub"' EXIT
cat >"$stub/cc" <<'STUB'
#!/bin/sh
# An empty Mach-O object wherever -o says; anything else (version and flag probes) to clang.
out="" prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  prev="$a"
done
[ -n "$out" ] && exec clang-14 -target x86_64-apple-macos10.12 -c -x c /dev/null -o "$out"
exec clang-14 "$@"
STUB
chmod +x "$stub/cc"
CC_x86_64_apple_darwin="$stub/cc" AR_x86_64_apple_darwin=llvm-ar-14 \
  cargo check --locked --quiet --target x86_64-apple-darwin --lib --bins
