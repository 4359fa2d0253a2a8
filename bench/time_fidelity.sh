#!/usr/bin/env bash
# Benchmark: predicted vs measured iteration time over the time corpora (tests/data/time_corpus), each on the
# system it ran on (the corpus file's "system"), as given and after the fit of `preflight calibrate
# --fit-time` (in sample and leave one out); with --fit-overlap also fitting tp_overlap_exposed.
# Target of issue 14: |error| <= 5 % on every run.
#
# usage: bench/time_fidelity.sh [BUILD_DIR] [--fit-overlap]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${PREFLIGHT_BUILD_DIR:-$root/build}}
extra=("${@:2}")
bin=$build/cli/preflight
[[ -x $bin ]] || { echo "build first: $bin is needed" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for corpus in "$root"/tests/data/time_corpus/*.json; do
  system=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["system"])' "$corpus")
  echo "== $(basename "$corpus") on $system"
  "$bin" calibrate --fit-time --system "$system" --runs "$corpus" "${extra[@]}" -o "$out/fitted_system.json"
  echo
done
