#!/bin/bash
# One launcher per node started over ssh, in a loop over the hosts, as clusters without a scheduler's launcher
# do (written for preflight's tests; the model is made up).  Stale processes are killed on every node first,
# and the node's GPUs are counted on the first host.
set -euo pipefail
read -r -a HOSTS <<< "${HOSTS:-gpu-a gpu-b}"
NNODES=${#HOSTS[@]}
MASTER_ADDR=${HOSTS[0]}
GPUS_PER_NODE=$(ssh "${HOSTS[0]}" nvidia-smi --list-gpus | wc -l)

for host in "${HOSTS[@]}"; do
  ssh -o StrictHostKeyChecking=no "$host" "pkill -f pretrain_gpt.py || true"
done

MODEL_ARGS="--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 \
  --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --vocab-size 32000 --bf16"
PARALLEL_ARGS="--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --use-distributed-optimizer"

for i in "${!HOSTS[@]}"; do
  ssh -tt -p 22 "${HOSTS[$i]}" "cd $PWD && CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun \
    --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank $i \
    --master_addr $MASTER_ADDR --master_port 6000 \
    pretrain_gpt.py $MODEL_ARGS $PARALLEL_ARGS" &
done
wait
