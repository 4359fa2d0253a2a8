#!/bin/bash
# The launch is a string run as a bare `${APP}` (split into words, no quote removal), as some vendors'
# example scripts do; `torchrun` or `python` by a switch.  Written for preflight's tests; the model is made up.
GPUS_PER_NODE=${GPUS_PER_NODE:-4}
GPT_MODEL_ARGS="--num-layers 8 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 --vocab-size 32000"
MODEL_PARALLEL_ARGS="--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2"
if [[ "${LAUNCH_BACKEND:-torchrun}" == "torchrun" ]]; then
    APP="torchrun --nproc_per_node ${GPUS_PER_NODE} --nnodes 1 \
        pretrain_gpt.py \
        ${GPT_MODEL_ARGS} \
        ${MODEL_PARALLEL_ARGS} \
        --micro-batch-size 1 --global-batch-size 16 --bf16 \
        "
else
    APP="python -u pretrain_gpt.py \
        ${GPT_MODEL_ARGS} \
        ${MODEL_PARALLEL_ARGS} \
        --micro-batch-size 1 --global-batch-size 16 --bf16 \
        "
fi
echo ${APP}
${APP}
