#!/bin/bash
#SBATCH --job-name=llama-pretrain
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
# A multi-node SLURM job that takes its node count and rendezvous host from scontrol and srun, as many cluster
# launch scripts do (written for preflight's tests; the model is made up).  Where Slurm is not installed,
# under `set -euo pipefail`, the first scontrol would end it.
set -euo pipefail

mapfile -t HOSTS < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
NNODES=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | wc -l)
HEAD_NODE=${HOSTS[0]}
HEAD_NODE_IP=$(srun --nodes=1 --ntasks=1 -w "$HEAD_NODE" hostname -I | awk '{print $1}')
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
JOB_NODES=$(scontrol show job "$SLURM_JOB_ID" | grep -o 'NumNodes=[0-9]*' | cut -d= -f2)
echo "nodes: ${HOSTS[*]} (${NNODES}, job ${JOB_NODES}), head ${HEAD_NODE} at ${HEAD_NODE_IP}, master ${MASTER_ADDR}"
[ "$NNODES" = "$JOB_NODES" ] || { echo "node counts disagree" >&2; exit 1; }

srun --ntasks-per-node=1 torchrun --nnodes "$NNODES" --nproc_per_node 8 \
    --rdzv_id "$SLURM_JOB_ID" --rdzv_backend c10d --rdzv_endpoint "$HEAD_NODE_IP:29500" \
    pretrain_gpt.py \
    --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --sequence-parallel \
    --num-layers 16 --hidden-size 2048 --num-attention-heads 16 --seq-length 4096 \
    --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64 \
    --vocab-size 32000 --bf16 --use-distributed-optimizer
