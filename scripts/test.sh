#!/usr/bin/env bash
# Sets up, builds the test suites (reusing what scripts/quickstart.sh built: same configuration), and runs
# every test with ctest.  PREFLIGHT_SHARED_DATA (default ../shared/data) enables the tier that reads the
# reference data.  Arguments go to ctest (e.g. -R Balance).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh" --tests
build=${PREFLIGHT_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" tests/all
if [[ -z ${PREFLIGHT_SHARED_DATA:-} && -d $root/../shared/data ]]; then
  export PREFLIGHT_SHARED_DATA=$(cd "$root/../shared/data" && pwd)
fi
if [[ -n ${PREFLIGHT_SHARED_DATA:-} && ! -d $PREFLIGHT_SHARED_DATA ]]; then
  echo "test.sh: reference data not found at $PREFLIGHT_SHARED_DATA: the shared-data tier will be skipped" >&2
elif [[ -z ${PREFLIGHT_SHARED_DATA:-} ]]; then
  echo "test.sh: PREFLIGHT_SHARED_DATA not set and no ../shared/data here: tests use the build's default" \
       "(PREFLIGHT_DEFAULT_SHARED_DATA in CMakeCache.txt) and skip the shared-data tier if it is absent" >&2
fi
cd "$build"
ctest --output-on-failure -j "${PREFLIGHT_JOBS:-$(nproc)}" "$@"
