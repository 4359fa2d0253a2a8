#!/usr/bin/env bash
# Sets up, builds (warnings as errors), and runs every test with ctest.
# PREFLIGHT_SHARED_DATA (default ../shared/data) enables the tier that reads the reference data.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
build=${PREFLIGHT_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" -DPREFLIGHT_WERROR=ON
export PREFLIGHT_SHARED_DATA=${PREFLIGHT_SHARED_DATA:-$root/../shared/data}
if [[ ! -d $PREFLIGHT_SHARED_DATA ]]; then
  echo "test.sh: reference data not found at $PREFLIGHT_SHARED_DATA: the shared-data tier will be skipped" >&2
fi
cd "$build"
ctest --output-on-failure -j "${PREFLIGHT_JOBS:-$(nproc)}" "$@"
