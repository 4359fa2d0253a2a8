#!/bin/bash
# The GPUs of the node asked of PyTorch, as Pai-Megatron-Patch's scripts set GPUS_PER_NODE (written for
# preflight's tests; the model is made up).  Where PyTorch is missing or sees no GPU the count would be an
# error or 0.
set -e
GPUS_PER_NODE=`python -c "import torch; print(torch.cuda.device_count())"`
VERSION=$(python3 -c "print('3.x')")
echo "found ${GPUS_PER_NODE} GPUs, python ${VERSION}"
torchrun --nproc_per_node ${GPUS_PER_NODE} --nnodes 1 pretrain_gpt.py \
    --tensor-model-parallel-size 2 --num-layers 4 --hidden-size 512 --num-attention-heads 8 \
    --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 16 \
    --vocab-size 32000 --bf16
