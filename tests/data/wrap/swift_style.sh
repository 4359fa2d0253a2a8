#!/bin/bash
# ms-swift's Megatron-SWIFT launcher in the style of its examples/megatron scripts (written for preflight's
# tests): the world from NPROC_PER_NODE / NNODES on the command's environment, Megatron's options with
# underscores and true / false values, ms-swift's own options (dataset, output_dir) among them.
PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True' \
NPROC_PER_NODE=${NPROC_PER_NODE:-4} \
CUDA_VISIBLE_DEVICES=0,1,2,3 \
megatron sft \
    --model Qwen/Qwen2.5-7B-Instruct \
    --dataset 'AI-ModelScope/alpaca-gpt4-data-en#500' \
    --tensor_model_parallel_size 2 \
    --sequence_parallel true \
    --micro_batch_size 2 \
    --global_batch_size 16 \
    --recompute_granularity full \
    --recompute_method uniform \
    --recompute_num_layers 1 \
    --finetune true \
    --lr 1e-5 \
    --output_dir megatron_output/Qwen2.5-7B-Instruct \
    --max_length 4096 \
    --no_save_optim true \
    --attention_backend flash ${EXTRA:-}
