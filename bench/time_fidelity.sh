#!/usr/bin/env bash
# Benchmark: predicted vs measured iteration time over the time corpora (tests/data/time_corpus), each on the
# system it ran on (the corpus file's "system"), as given and after the fit of `preflight calibrate
# --fit-time` (in sample and leave one out); with --fit-overlap also fitting tp_overlap_exposed.
# Target of issue 14: |error| <= 5 % on every run.  The last line counts every run of every corpus as given.
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
  "$bin" calibrate --fit-time --json --system "$system" --runs "$corpus" "${extra[@]}" -o "$out/fitted_system.json" \
    >"$out/$(basename "$corpus")"
  # The corpus's line of the summary: largest |error| as given, fitted, held out.
  summary+=("$(sed -n 's/.*as given \([0-9.]*\) %, fitted \([0-9.]*\) %, held out (leave one out) \([0-9.]*\) %.*/\1 \2 \3/p' \
    "$out/table.txt" | awk -v c="$(basename "$corpus" .json)" -v s="$system" '{printf "%-28s %-18s %8s %8s %9s", c, s, $1, $2, $3}')")
  echo
done
echo "== summary: largest |error| (%) per corpus"
printf '%-28s %-18s %8s %8s %9s\n' corpus system "as given" fitted "held out"
printf '%s\n' "${summary[@]}"
# Every run of every corpus together, as given: a change of the model is judged on all of them at once.
/usr/bin/python3 - "$out" <<'PY'
import glob, json, math, sys
e = [r["error_before"] for f in sorted(glob.glob(sys.argv[1] + "/*.json")) if not f.endswith("fitted_system.json")
     for r in json.load(open(f))["runs"]]
n = len(e)
print("\n== all %d runs as given: within 5 %%: %d, within 10 %%: %d, RMS %.2f %%, mean |error| %.2f %%" % (
    n, sum(abs(x) <= 0.05 for x in e), sum(abs(x) <= 0.10 for x in e), 100 * math.sqrt(sum(x * x for x in e) / n),
    100 * sum(abs(x) for x in e) / n))
PY
