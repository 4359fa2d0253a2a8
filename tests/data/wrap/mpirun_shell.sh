#!/bin/bash
# An MPI launcher in the style of some vendors' example scripts: mpirun starts one shell per rank, which binds
# itself to its NUMA node and runs the training entry point; the ranks learn their place from Open MPI's
# variables.  Written for preflight's tests; the model is made up.
NP=${NP:-16}
MODEL_ARGS="--num-layers 8 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 \
    --max-position-embeddings 1024 --vocab-size 32000"
mpirun -np ${NP} -N 8 --allow-run-as-root --bind-to none --mca plm_rsh_no_tree_spawn 1 -x MASTER_ADDR=node0 \
    bash -c "numactl --cpunodebind=\${OMPI_COMM_WORLD_LOCAL_RANK} python -u pretrain_gpt.py ${MODEL_ARGS} \
        --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
        --micro-batch-size 1 --global-batch-size 64 --bf16 \
        --world-size \${OMPI_COMM_WORLD_SIZE} --rank \${OMPI_COMM_WORLD_RANK}"
