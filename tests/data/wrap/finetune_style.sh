#!/bin/bash
# A finetuning entry point (finetune.py) launched like pretraining.  Written for preflight's tests.
torchrun --nproc_per_node 8 finetune.py --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \
    --seq-length 4096 --vocab-size 32000 --tensor-model-parallel-size 8 --swiglu --normalization RMSNorm
