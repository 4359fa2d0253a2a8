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
summary=()
for corpus in "$root"/tests/data/time_corpus/*.json; do
  system=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["system"])' "$corpus")
  echo "== $(basename "$corpus") on $system"
  "$bin" calibrate --fit-time --system "$system" --runs "$corpus" "${extra[@]}" -o "$out/fitted_system.json" |
    tee "$out/table.txt"
  # The corpus's line of the summary: largest |error| as given, fitted, held out.
  summary+=("$(sed -n 's/.*as given \([0-9.]*\) %, fitted \([0-9.]*\) %, held out (leave one out) \([0-9.]*\) %.*/\1 \2 \3/p' \
    "$out/table.txt" | awk -v c="$(basename "$corpus" .json)" -v s="$system" '{printf "%-28s %-18s %8s %8s %9s", c, s, $1, $2, $3}')")
  echo
done
echo "== summary: largest |error| (%) per corpus"
printf '%-28s %-18s %8s %8s %9s\n' corpus system "as given" fitted "held out"
printf '%s\n' "${summary[@]}"
