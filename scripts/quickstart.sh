#!/usr/bin/env bash
# Sets up, builds, and runs the main job on a bundled example: `preflight analyze` on the arguments of
# Megatron-LM's GPT-3 175B launch script (examples/megatron/gpt3_175b_args.sh).  Builds only the
# `preflight` binary and the allocator hook; scripts/test.sh later adds the tests to the same build.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" preflight preflight_hook >/dev/null
build=${PREFLIGHT_BUILD_DIR:-$root/build}
source "$root/examples/megatron/gpt3_175b_args.sh"
exec "$build/cli/preflight" analyze "${DISTRIBUTED_ARGS[@]}" "${GPT_MODEL_ARGS[@]}" "${TRAINING_ARGS[@]}" \
  "${MODEL_PARALLEL_ARGS[@]}" "$@"
