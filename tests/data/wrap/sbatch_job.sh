#!/bin/bash
#SBATCH --job-name=gpt-small
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
# A SLURM job script submitted by submit_jobs.sh (written for preflight's tests; the model is made up).
srun torchrun --nnodes "$SLURM_NNODES" --nproc_per_node "$SLURM_GPUS_PER_NODE" pretrain_gpt.py \
    --tensor-model-parallel-size 2 --num-layers "${LAYERS:-4}" --hidden-size 512 --num-attention-heads 8 \
    --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 16 \
    --vocab-size 32000 --bf16
