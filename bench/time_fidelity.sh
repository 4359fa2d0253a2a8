#!/usr/bin/env bash
# Benchmark: predicted vs measured iteration time over the time corpus (tests/data/time_corpus), with the system
# as given and after the two-factor fit of `preflight calibrate --fit-time` (in sample and leave one out).
# Target of issue 14: |error| <= 5 % on every run.
#
# usage: bench/time_fidelity.sh [BUILD_DIR] [SYSTEM]   (default system: b200_bf16_ceperm, SimuMax's calibration)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${PREFLIGHT_BUILD_DIR:-$root/build}}
system=${2:-b200_bf16_ceperm}
bin=$build/cli/preflight
[[ -x $bin ]] || { echo "build first: $bin is needed" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin" calibrate --fit-time --system "$system" --runs "$root/tests/data/time_corpus/b200_llama3.json" \
  -o "$out/fitted_system.json"
