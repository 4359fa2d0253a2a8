#!/bin/bash
# A job script that builds its command at run time and binds it to NUMA nodes through a prefix variable
# (`bash -c "$CMD_PREFIX $TRAINING_CMD"` under srun), as some cluster teams' sbatch scripts do.
# Written for preflight's tests; the model is made up.
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=4

set -e
# The node's NUMA layout, read as some job scripts do (numactl may be absent where the analysis runs).
numactl --hardware > /dev/null
export MASTER_PORT=6000
export WORLD_SIZE=$SLURM_NPROCS

NETWORK_SIZE_ARGS=(
	--num-layers 12
	--hidden-size 1024
	--num-attention-heads 16
	--seq-length 2048
	--max-position-embeddings 2048
	--vocab-size 32000
)

DISTRIBUTED_ARGS=(
	--tensor-model-parallel-size 2
	--pipeline-model-parallel-size 2
	--use-distributed-optimizer
)

if [ "${BIND:-numactl}" = taskset ]; then
	CMD_PREFIX="taskset -c 0-71"
else
	CMD_PREFIX="numactl --membind=0-3"
fi

TRAINING_CMD="python3 pretrain_gpt.py \
    ${NETWORK_SIZE_ARGS[@]} \
    ${DISTRIBUTED_ARGS[@]} \
    --micro-batch-size 1 --global-batch-size 64 --bf16"

srun --cpus-per-task 8 -lu bash -c "RANK=\$SLURM_PROCID LOCAL_RANK=\$SLURM_LOCALID $CMD_PREFIX $TRAINING_CMD"
