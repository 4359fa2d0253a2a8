#!/bin/bash
# Launches behind a prefix: a container/venv runner held in a variable, a profiler command in an array,
# `uv run`, `nsys profile`.  Written for preflight's tests; the model is made up.
VENV_PREFIX=${VENV_PREFIX:-}
PROFILE_CMD=()
if [ "${PROFILE:-0}" = 1 ]; then PROFILE_CMD=(nsys profile -o trace --force-overwrite true); fi
# Megatron-LM's examples/megatron_fsdp style: the prefix assigned literally on both branches ("uv run" or
# nothing), so its value is known only at run time.
if [ "${USE_UV:-1}" = 1 ]; then UV_PREFIX="uv run"; else UV_PREFIX=""; fi
ARGS="--num-layers 8 --hidden-size 1024 --num-attention-heads 8 --seq-length 512 --vocab-size 32000"
case "${STYLE:-var}" in
    var) $VENV_PREFIX "${PROFILE_CMD[@]}" torchrun --nproc_per_node 4 pretrain_gpt.py $ARGS --tensor-model-parallel-size 2 ;;
    branches) $UV_PREFIX "${PROFILE_CMD[@]}" python -m torch.distributed.run --nproc_per_node 4 pretrain_gpt.py $ARGS --pipeline-model-parallel-size 4 ;;
    uv) uv run torchrun --nproc_per_node 4 pretrain_gpt.py $ARGS --tensor-model-parallel-size 4 ;;
    nsys) nsys profile -o gpt --stats=true torchrun --nproc_per_node 2 pretrain_gpt.py $ARGS --pipeline-model-parallel-size 2 ;;
esac
