#!/bin/bash
# The GPUs of the node counted with nvidia-smi, as many launch scripts do (written for preflight's tests; the
# model is made up).  On a login node without nvidia-smi the count would be 0.
set -euo pipefail
GPUS_PER_NODE=$(nvidia-smi --list-gpus | wc -l)
NAMES=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "found ${GPUS_PER_NODE} GPUs (${NAMES})"
torchrun --nproc_per_node "${GPUS_PER_NODE}" --nnodes 1 pretrain_gpt.py \
    --tensor-model-parallel-size 2 --num-layers 4 --hidden-size 512 --num-attention-heads 8 \
    --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 16 \
    --vocab-size 32000 --bf16
