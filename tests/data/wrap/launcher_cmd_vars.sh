#!/bin/bash
# A job script that keeps the launcher and the training command in two variables and joins them in the
# shell srun starts on every node (the style of BigScience's and many HPC sites' sbatch scripts).
# Written for preflight's tests; the model is made up.
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8

set -x -e

MASTER_ADDR=$(hostname)
MASTER_PORT=6000
GPUS_PER_NODE=8
NNODES=$SLURM_NNODES

MODEL_OPTS=" \
    --num-layers 24 \
    --hidden-size 2048 \
    --num-attention-heads 16 \
    --seq-length 2048 \
    --max-position-embeddings 2048 \
    --micro-batch-size 2 \
    --global-batch-size 256 \
    --pad-vocab-size-to 51200 \
    --bf16 \
    "

if [ "${LAUNCH:-}" = torchrun ]; then
    export LAUNCHER="torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES"
elif [ "${LAUNCH:-}" = container ]; then
    export LAUNCHER="singularity exec --nv ${IMAGE:-pytorch.sif} \
        python -u -m torch.distributed.run --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES"
else
    export LAUNCHER="python -u -m torch.distributed.run \
        --nproc_per_node $GPUS_PER_NODE \
        --nnodes $NNODES \
        --rdzv_endpoint $MASTER_ADDR:$MASTER_PORT \
        --rdzv_backend c10d \
        --max_restarts 0 \
        --tee 3 \
        "
fi

export CMD=" \
    `pwd`/pretrain_gpt.py \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 4 \
    $MODEL_OPTS \
    --distributed-backend nccl \
    "

echo $CMD

srun --wait=60 --kill-on-bad-exit=1 --jobid $SLURM_JOB_ID bash -c "$LAUNCHER --node_rank \$SLURM_PROCID $CMD" 2>&1 | tee main_log.txt
