#!/bin/bash
#$ -l rt_AF=2
#$ -l h_rt=1:00:00
#$ -j y
#$ -cwd
# A Grid Engine job in the style of ABCI recipes (written for preflight's tests; the model is made up): the
# GPU count from the resource type and $NHOSTS, an Open MPI hostfile from $SGE_JOB_HOSTLIST, the port from
# $JOB_ID.
export MASTER_ADDR=$(head -n 1 "$SGE_JOB_HOSTLIST")
export MASTER_PORT=$((10000 + (JOB_ID % 50000)))
if [[ "$SGE_RESOURCE_TYPE" == "rt_F" ]]; then
  NUM_GPU_PER_NODE=4
elif [[ "$SGE_RESOURCE_TYPE" == "rt_AF" ]]; then
  NUM_GPU_PER_NODE=8
else
  echo "Unrecognized SGE_RESOURCE_TYPE: $SGE_RESOURCE_TYPE"
fi
NUM_GPUS=$((NHOSTS * NUM_GPU_PER_NODE))
HOSTFILE_NAME=$(mktemp)
while read -r line; do
  echo "${line} slots=${NUM_GPU_PER_NODE}"
done <"$SGE_JOB_HOSTLIST" >"$HOSTFILE_NAME"
mpirun -np $NUM_GPUS \
  --npernode $NUM_GPU_PER_NODE \
  -hostfile $HOSTFILE_NAME \
  -x MASTER_ADDR=$MASTER_ADDR \
  -x MASTER_PORT=$MASTER_PORT \
  -bind-to none -map-by slot \
  python pretrain_gpt.py \
  --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 \
  --num-layers 16 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 \
  --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 \
  --vocab-size 32000 --bf16 --use-mpi
rm -f "$HOSTFILE_NAME"
