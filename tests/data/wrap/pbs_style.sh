#!/bin/bash
#PBS -N gpt-pbs
#PBS -l select=2:ncpus=64:ngpus=4
#PBS -l walltime=01:00:00
#PBS -l filesystems=home:eagle
#PBS -q debug
# A PBS Pro job in the style of leadership-class systems' examples (written for preflight's tests; the model
# is made up): the node count from $PBS_NODEFILE, one MPI rank per GPU through mpiexec.
cd "${PBS_O_WORKDIR}"
NNODES=$(wc -l < "${PBS_NODEFILE}")
NRANKS_PER_NODE=4
NTOTRANKS=$((NNODES * NRANKS_PER_NODE))
MASTER_ADDR=$(head -n 1 "${PBS_NODEFILE}")
export MASTER_ADDR MASTER_PORT=29500
mpiexec -n "${NTOTRANKS}" --ppn "${NRANKS_PER_NODE}" --depth=16 --cpu-bind depth \
    python pretrain_gpt.py \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
    --num-layers 12 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 \
    --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 32 \
    --vocab-size 32000 --bf16
