#!/usr/bin/env bash
# Benchmark: `preflight balance` against MindFormers' SAPP balancer on SAPP's own cases, side by side.
# SAPP's bubbles and wall times are the recorded runs of this machine (shared/data/reference_outputs/sapp,
# and the table in shared/notes/sapp.md §10 for the runs without a folder); ours are run here with the same
# inputs and flags (plus --sapp-memory: SAPP's memory model, c counted twice on the end stages).
# Printed per case: SAPP bubble / wall, ours bubble / wall / cpu, wall ratio (ours / SAPP; target <= 0.05),
# our gap to the LP bound, and whether our simulated peak respects the limit.
#
# usage: bench/balance_vs_sapp.sh [BUILD_DIR]
# env:   PREFLIGHT_SHARED_DATA (default: ../shared/data next to the main checkout)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${PREFLIGHT_BUILD_DIR:-$root/build}}
bin=$build/cli/preflight
[[ -x $bin ]] || { echo "build first: $bin is needed" >&2; exit 2; }
common=$(cd "$root" && cd "$(git rev-parse --git-common-dir)/.." && pwd)
shared=${PREFLIGHT_SHARED_DATA:-$common/../shared/data}
[[ -d $shared/sapp ]] || { echo "no SAPP data in $shared (set PREFLIGHT_SHARED_DATA)" >&2; exit 2; }
ref=$shared/reference_outputs/sapp
llama=$shared/sapp/cfgs/init_llama175b.yaml
demo=$shared/sapp/cfgs/init_demo_synth_timeline.yaml

# name | SAPP bubble | SAPP wall s | init | flags (SAPP's command line)
cases=(
  "llama175b s16 i3 mb16 lm1 t120 (README)|0.5318|124.26|$llama|-m llama175b -s 16 -i 3 -mb 16 -mem 56000 -lm 1 -t 120"
  "llama175b s16 i3 mb16 lm1 t600 (README)|0.5318|605|$llama|-m llama175b -s 16 -i 3 -mb 16 -mem 56000 -lm 1 -t 600"
  "demo s16 i3 mb16 mem62000 t150 naive|0.5722|159.07|$demo|-m demo -s 16 -i 3 -mb 16 -mem 62000 -t 150 -naive 1"
  "llama175b s16 i3 mb32 lm0 t120|0.8146|124|$llama|-m llama175b -s 16 -i 3 -mb 32 -mem 56000 -t 120"
  "llama175b s16 i3 mb32 lm0 O2 t120|0.6488|124|$llama|-m llama175b -s 16 -i 3 -mb 32 -mem 56000 -O 2 -t 120"
  "llama175b s16 i1 mb32 t60 (1F1B)|0.6524|62|$llama|-m llama175b -s 16 -i 1 -mb 32 -mem 56000 -t 60"
)
# Runs of SAPP made for this project (tests/data/balance/sapp_runs: command.txt, stdout.log, time.txt).
runs=$root/tests/data/balance/sapp_runs
for r in i2_mb32_mem56000 i2_mb32_mem56000_O2 i3_mb20_mem58000_O2 i3_mb48_mem60000_O2 i1_mb64_mem50000; do
  sb=$(grep -A1 'real    =' "$runs/$r/stdout.log" | tail -1 | awk '{print $1}')
  ss=$(cut -d' ' -f1 "$runs/$r/time.txt")
  peak=$(grep 'peak memory' "$runs/$r/stdout.log" | tail -1 | tr -d 'a-z:,' | tr ' ' '\n' | sort -g | tail -1)
  note=""
  lim=$(grep -o -- '-mem [0-9]*' "$runs/$r/command.txt" | cut -d' ' -f2)
  awk -v p="$peak" -v l="$lim" 'BEGIN { exit !(p > l) }' && note=" (SAPP over limit)"
  cases+=("llama175b $r$note|$sb|$ss|$llama|-m llama175b $(cat "$runs/$r/command.txt")")
done
# Recorded values: the first and third from reference_outputs/*/stdout.log and time.txt; the rest from
# shared/notes/sapp.md §10 (wall rounded to the second there).
grep -q '0.5318' "$ref/llama175b_latestpatched_s16_i3_mb16_mem56000_lm1_t120/stdout.log" || echo "warning: SAPP llama log changed" >&2

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (wall times grow with the load; cpu = user + sys)"
printf '%-40s %8s %8s %8s %8s %8s %8s %8s %6s\n' case sapp_bub sapp_s ours_bub ours_s ours_cpu ratio gap fits
for c in "${cases[@]}"; do
  IFS='|' read -r name sb ss init flags <<< "$c"
  # shellcheck disable=SC2086
  /usr/bin/time -f '%e %U %S' -o "$tmp/time" "$bin" balance --init "$init" --times 3,18,9 $flags --sapp-memory \
    --no-svg --json > "$tmp/out.json" || true
  python3 - "$name" "$sb" "$ss" "$tmp" <<'PY'
import json, sys
name, sb, ss, tmp = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
j = json.load(open(tmp + "/out.json"))
wall, user, sys_ = (float(x) for x in open(tmp + "/time").read().split()[-3:])
a = j["answer"]
lim = j["problem"]["memory_limit_mb"]
gap = j.get("gap")
print(f"{name:40s} {sb:8.4f} {ss:8.1f} {a['bubbles']['real']:8.4f} {wall:8.2f} {user + sys_:8.2f} "
      f"{wall / ss:8.4f} {(gap if gap is not None else float('nan')):8.4f} {str(a['max_peak_mb'] <= lim):>6s}")
PY
done
