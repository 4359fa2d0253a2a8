#!/bin/bash
# The calibration loop on a real run, end to end, with the bundled CPU GPT (examples/torch_cpu_gpt):
#
#   1. preflight wrap --mode analyze   the launch script → predicted.json (`preflight analyze --json`)
#   2. preflight wrap --mode trace     the same launch script, run for real under torchrun + gloo with
#                                      libpreflight_hook.so preloaded → one allocation trace per rank
#   3. preflight trace summarize       what each rank allocated, by module marker (and `preflight logs
#                                      megatron` on the run's Megatron-format log lines)
#   4. preflight calibrate             predicted vs measured per rank: weights, gradients, optimizer states,
#                                      activations per micro batch and per layer, peak (signed % error)
#
#   scripts/calibration_loop.sh [--build DIR] [--out DIR] [--json] [--max-peak-error PCT]
#
# The configuration is the launch script's defaults (4 processes: tp 2 × pp 2, 4 layers, hidden 64, seq 64,
# micro batch 2, global batch 8); override any of them from the environment as for the launch script
# (NPROC=2 TP=1 PP=2 MICRO_BATCH=1 scripts/calibration_loop.sh).  EXTRA_ARGS is appended to both the
# prediction and the run (EXTRA_ARGS="--recompute-granularity selective").  STEPS (default 3) iterations
# are run.  --json prints calibrate's JSON instead of the table; --max-peak-error makes the exit status 1
# when a rank's peak is off by more than PCT percent.  Everything is kept under --out (default
# preflight_calibration/): the wrapped scripts, predicted.json, train.log, the traces, summary.txt,
# logs.txt, calibration.txt.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${PREFLIGHT_BUILD_DIR:-$ROOT/build}
OUT=preflight_calibration
JSON=()
MAX_PEAK=()
while [ $# -gt 0 ]; do
    case "$1" in
        --build) BUILD=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --json) JSON=(--json); shift ;;
        --max-peak-error) MAX_PEAK=(--max-peak-error "$2"); shift 2 ;;
        -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "calibration_loop.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

PREFLIGHT=${PREFLIGHT:-$BUILD/cli/preflight}
if [ ! -x "$PREFLIGHT" ]; then
    echo "calibration_loop.sh: $PREFLIGHT not found; build first (scripts/build.sh) or pass --build DIR" >&2
    exit 2
fi
if [ ! -f "$BUILD/lib/libpreflight_hook.so" ]; then
    echo "calibration_loop.sh: $BUILD/lib/libpreflight_hook.so not found; build the allocator hook first" >&2
    exit 2
fi
export PREFLIGHT
export GPT_CPU_DIR=$ROOT/examples/torch_cpu_gpt  # the wrapped copies of the launch script live under --out
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# A port nothing listens on (the kernel's pick for a bind to port 0) unless one is given: the loop may run
# next to other torchruns, and a taken port makes torchrun exit before any rank starts.
MASTER_PORT=${MASTER_PORT:-$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
export MASTER_PORT MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
# torchrun's agent polls its workers every 5 s by default (--monitor_interval): each run would take a
# multiple of 5 s.
export PET_MONITOR_INTERVAL=${PET_MONITOR_INTERVAL:-0.2}
STEPS=${STEPS:-3}
LAUNCH=$ROOT/examples/torch_cpu_gpt/pretrain_gpt_cpu.sh
# shellcheck disable=SC2206  # EXTRA_ARGS is a list of words on purpose
EXTRA=(${EXTRA_ARGS:-})

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/traces"
log() { echo "== $*" >&2; }

log "1/4 predict: preflight wrap $LAUNCH --mode analyze"
"$PREFLIGHT" wrap "$LAUNCH" --mode analyze 2>/dev/null --analyze-arg=--json -o "$OUT/analyze.sh"
bash "$OUT/analyze.sh" "${EXTRA[@]}" >"$OUT/predicted.json"

log "2/4 run and trace: preflight wrap $LAUNCH --mode trace ($STEPS iterations)"
# Allocations below 4 KiB are autograd's and Python's bookkeeping on CPU, not tensors; the prediction
# drops what such a trace cannot see (analyzer/include/preflight/analyzer/calibrate/calibrate.hpp).
"$PREFLIGHT" wrap "$LAUNCH" --mode trace --steps "$STEPS" --trace-dir "$OUT/traces" --trace-min-bytes 4096 \
    -o "$OUT/traced.sh" 2>/dev/null
bash "$OUT/traced.sh" "${EXTRA[@]}" >"$OUT/train.log"
grep -E '^ *iteration|memory \(MB\)' "$OUT/train.log" >&2 || true
RUN_DIR=$(ls -d "$OUT"/traces/run-* | tail -n 1)

log "3/4 summarize: preflight trace summarize $RUN_DIR; preflight logs megatron train.log"
"$PREFLIGHT" trace summarize "$RUN_DIR"/rank*.pftrace >"$OUT/summary.txt"
sed -n '1,/by layer/p' "$OUT/summary.txt" | head -n 24 >&2
"$PREFLIGHT" logs megatron "$OUT/train.log" >"$OUT/logs.txt"
cat "$OUT/logs.txt" >&2

log "4/4 compare: preflight calibrate --predicted predicted.json --measured $RUN_DIR"
"$PREFLIGHT" calibrate --predicted "$OUT/predicted.json" --measured "$RUN_DIR" "${JSON[@]}" "${MAX_PEAK[@]}" |
    tee "$OUT/calibration.txt"
exit "${PIPESTATUS[0]}"
