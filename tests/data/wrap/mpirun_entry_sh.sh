#!/bin/bash
# mpirun starts a shell script on every rank, which runs `python $*`: the entry point is an argument of
# the script.  Written for preflight's tests; the model is made up.
cat > entry.sh <<'EOF'
#!/bin/bash
export RANK=$OMPI_COMM_WORLD_RANK WORLD_SIZE=$OMPI_COMM_WORLD_SIZE LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK
python $*
EOF
chmod +x entry.sh
mpirun -np 8 -N 4 -x MASTER_ADDR=localhost ./entry.sh pretrain_gpt.py --num-layers 8 --hidden-size 1024 \
    --num-attention-heads 8 --seq-length 512 --vocab-size 32000 --tensor-model-parallel-size 2
