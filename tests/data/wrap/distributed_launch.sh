#!/bin/bash
# Megatron-DeepSpeed / 2022 Megatron-LM style: python -m torch.distributed.launch with a string of
# distributed arguments.  Written for preflight's tests; the model is made up.
GPUS_PER_NODE=4
NNODES=2
DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank 0 --master_addr localhost --master_port 6000"
python -m torch.distributed.launch $DISTRIBUTED_ARGS pretrain_gpt.py --num-layers 24 --hidden-size 2048 \
    --num-attention-heads 16 --seq-length 1024 --vocab-size 50257 --pipeline-model-parallel-size 4
