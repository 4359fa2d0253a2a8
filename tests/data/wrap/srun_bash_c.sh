#!/bin/bash
# srun starts one shell per node, and each shell runs torchrun: the launch is inside `bash -c "…"`.
# Written for preflight's tests; the model is made up.
#SBATCH --nodes=2
GPUS_PER_NODE=4
MODEL_ARGS="--num-layers 16 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --vocab-size 32000"
srun --ntasks-per-node=1 bash -c "torchrun --nnodes \$SLURM_NNODES --node_rank \$SLURM_NODEID \
    --nproc_per_node $GPUS_PER_NODE pretrain_gpt.py $MODEL_ARGS --tensor-model-parallel-size 4"
