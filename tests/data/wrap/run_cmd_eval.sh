#!/bin/bash
# Megatron-DeepSpeed examples style: the command is assembled into run_cmd, echoed, then eval'ed.
# Written for preflight's tests; the model is made up.
GPUS=4
options=" --num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 --vocab-size 50257 \
    --tensor-model-parallel-size 2"
run_cmd="deepspeed --num_gpus ${GPUS} pretrain_gpt.py ${options}"
echo ${run_cmd}
eval ${run_cmd}
