#!/usr/bin/env bash
# Configures and builds preflight into build/ (or $PREFLIGHT_BUILD_DIR).  Extra arguments go to cmake.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PREFLIGHT_BUILD_DIR:-$root/build}
jobs=${PREFLIGHT_JOBS:-$(nproc)}
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${PREFLIGHT_BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
elif (($# > 0)); then
  cmake "$build" "$@" >/dev/null
fi
cmake --build "$build" -j "$jobs"
