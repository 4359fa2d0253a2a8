#!/usr/bin/env bash
# Configures preflight into build/ (or $PREFLIGHT_BUILD_DIR) and builds the given targets (all without any).
#
#   scripts/build.sh                              everything: the binary, the hook, tests, benchmarks
#   scripts/build.sh preflight preflight_hook     only what `preflight` needs (scripts/quickstart.sh)
#   scripts/build.sh tests/all                    the test suites and what they run (scripts/test.sh)
#
# One configuration for every caller, so that a later call builds only what an earlier one did not:
# warnings are errors, build type $PREFLIGHT_BUILD_TYPE (default Release at -O2: no debug info, which
# makes the build about a third faster on 2 cores; RelWithDebInfo or Debug for a debugger).
# PREFLIGHT_CMAKE_ARGS adds cmake options (e.g. "-DPREFLIGHT_SANITIZE=ON").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PREFLIGHT_BUILD_DIR:-$root/build}
jobs=${PREFLIGHT_JOBS:-$(nproc)}
type=${PREFLIGHT_BUILD_TYPE:-Release}
# shellcheck disable=SC2206  # a list of words on purpose
extra=(${PREFLIGHT_CMAKE_ARGS:-})
# GCC 12's -O3 warns falsely about std::string copies (-Wrestrict, GCC bug 105651): Release is -O2 here.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DPREFLIGHT_WERROR=ON "${extra[@]}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
echo "build: ${*:-all targets} in $build ($type, $jobs jobs)" >&2
cmake --build "$build" -j "$jobs" "${targets[@]}"
