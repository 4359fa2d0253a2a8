#!/bin/bash
#SBATCH --job-name=starcoder-1b
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8
# A job script bound to its cluster, in the style of many published ones (written for preflight's tests; the
# model is made up): strict mode, the user's shell setup, a conda environment, the code and data on the
# cluster's file system, the node rank from srun.  Away from that cluster each of these fails.
set -x -e
source /nonexistent/home/user/.bashrc
conda activate megatron
set -u
SCRIPT_REPO=/nonexistent/fsx/code/Megatron-LM
pushd $SCRIPT_REPO
mkdir -p /nonexistent/fsx/experiments/starcoder-1b/tensorboard
GPUS_PER_NODE=8
MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
NODE_RANK=$SLURM_PROCID
NNODES=$SLURM_NNODES

srun torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank $NODE_RANK \
    --master_addr $MASTER_ADDR --master_port 6000 \
    pretrain_gpt.py --tensor-model-parallel-size 2 --pipeline-model-parallel-size 1 \
    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --attention-head-type multiquery \
    --seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size 128 \
    --vocab-size 49152 --bf16 --use-flash-attn
echo "END TIME: $(date)"
