#!/usr/bin/env bash
# Builds every fuzz target and runs each one for SECONDS (default 60), one after another.
# Exits non-zero when any target crashes, hangs past libFuzzer's -timeout or runs out of memory;
# the input that did it is left in fuzz/artifacts/<target>/. Usage: fuzz/run.sh [SECONDS [TARGET...]]
#
# Needs cargo-fuzz (installed here from crates.io when missing). Works on stable Rust: libFuzzer's
# coverage instrumentation needs no nightly, only the sanitizers do, so targets are built with
# `--sanitizer none`; `--debug-assertions` turns integer overflow into a panic, which is a finding.
# New inputs go to fuzz/work/corpus/<target> (ignored by git); the committed seeds in
# fuzz/corpus/<target> are read but never written. Naming targets after SECONDS runs only those.
set -uo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
shift $(($# > 0 ? 1 : 0))
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
flags=(--sanitizer none --debug-assertions)
# REA_FUZZ_CODEGEN_UNITS (CI: 16) trades some fuzzing speed for a faster build: on two cores
# rea's own crate builds in 5.6 min with 16 units against 9.6 min with cargo-fuzz's one.
if [ -n "${REA_FUZZ_CODEGEN_UNITS:-}" ]; then
  flags+=(--codegen-units "$REA_FUZZ_CODEGEN_UNITS")
fi
# REA_FUZZ_OPT_LEVEL (CI: 1) lowers the optimisation of the fuzz build (release, 3 by default)
# through Cargo's own profile override: far less to compile, for a brief run that needs coverage
# more than speed.
if [ -n "${REA_FUZZ_OPT_LEVEL:-}" ]; then
  export CARGO_PROFILE_RELEASE_OPT_LEVEL="$REA_FUZZ_OPT_LEVEL"
fi

if ! command -v cargo-fuzz >/dev/null; then
  cargo install --locked cargo-fuzz --version 0.13.2 || exit 2
fi
cargo fuzz build "${flags[@]}" || exit 2

# Longest input per target: native files need room for whole small binaries; the others get
# room for huge values.
max_len() {
  case "$1" in
    native_image | artifact_inspect) echo 131072 ;;
    *) echo 65536 ;;
  esac
}

targets=("$@")
[ "${#targets[@]}" -gt 0 ] || mapfile -t targets < <(cargo fuzz list)

failed=()
summary=()
for target in "${targets[@]}"; do
  mkdir -p "work/corpus/$target" "work/logs"
  log="work/logs/$target.log"
  echo "== $target: ${seconds}s" >&2
  cargo fuzz run "${flags[@]}" "$target" "work/corpus/$target" "corpus/$target" -- \
    -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -max_len="$(max_len "$target")" \
    -print_final_stats=1 >"$log" 2>&1
  status=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  if [ "$status" -ne 0 ]; then
    failed+=("$target")
    summary+=("$target: FAILED (exit $status) after ${runs:-?} runs; see fuzz/$log")
    grep -E -A30 'panicked at|ERROR: libFuzzer|SUMMARY' "$log" | head -60 >&2
  else
    summary+=("$target: ok, ${runs:-?} runs in ${seconds}s")
  fi
done

printf '%s\n' "${summary[@]}" >&2
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzzing found problems in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzzing: ${#summary[@]} targets, no crash" >&2
