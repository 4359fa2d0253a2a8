#!/bin/bash
#PJM -L rscgrp=share-debug
#PJM -L node=2
#PJM --mpi proc=16
#PJM -L elapse=01:00:00
#PJM -g gx00
# A Fujitsu PJM job in the style of Japanese university clusters' recipes (written for preflight's tests; the
# model is made up): the master from $PJM_O_NODEINF, the rank count from $PJM_MPI_PROC.
export MASTER_ADDR=$(head -n 1 "$PJM_O_NODEINF")
export MASTER_PORT=16500
mpirun -np "$PJM_MPI_PROC" -npernode 8 \
  -machinefile "$PJM_O_NODEINF" \
  python pretrain_gpt.py \
  --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 \
  --num-layers 8 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 \
  --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 16 \
  --vocab-size 32000 --bf16
