#!/usr/bin/env bash
# Runs every libFuzzer target of a sanitizer build for a bounded time
# (QPGATE_FUZZ_SECONDS, default 60 each), starting from the seed corpus in
# native/fuzz/corpus/<target>. A crash fails the run and leaves its input in
# fuzz-artifacts/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/native/build-san"}
seconds=${QPGATE_FUZZ_SECONDS:-60}
artifacts="$root/fuzz-artifacts"
mkdir -p "$artifacts"

shopt -s nullglob
targets=("$build"/fuzz/fuzz_*)
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz.sh: no fuzz targets in $build/fuzz (configure with -DQPGATE_BUILD_FUZZ=ON and clang)" >&2
  exit 1
fi
for target in "${targets[@]}"; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  work=$(mktemp -d)
  seeds="$root/native/fuzz/corpus/$name"
  echo "fuzz: $name for ${seconds}s"
  "$target" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$artifacts/$name-" "$work" ${seeds:+$( [ -d "$seeds" ] && echo "$seeds")} 2>&1 | tail -n 12
  rm -rf "$work"
done
