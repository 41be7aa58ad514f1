#!/usr/bin/env bash
# Builds the native core and its C++ tests with clang under ASan+UBSan, runs
# them with ctest, then runs every libFuzzer target for a bounded time.
# Node is not involved: LeakSanitizer inside node would report V8's own
# allocations, so the native tests are plain executables.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/native/build-san"

export CC=${CC:-clang} CXX=${CXX:-clang++}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

cmake -S "$root/native" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DQPGATE_SANITIZE=ON -DQPGATE_BUILD_TESTS=ON -DQPGATE_BUILD_FUZZ=ON >/dev/null
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure --timeout 300
bash "$root/scripts/fuzz.sh" "$build"
