#!/bin/bash
# A job submitted with its body in a here-document (cluster recipes that keep one file): the launch is
# inside the heredoc; the job's size in #SBATCH lines.  Written for preflight's tests; model made up.
NODES=${NODES:-2}
sbatch --job-name=gpt --nodes=$NODES --ntasks-per-node=1 --gpus-per-node=4 <<EOF
#!/bin/bash
#SBATCH --time=01:00:00
MODEL_ARGS="--num-layers 12 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --vocab-size 32000"
srun torchrun --nnodes \$SLURM_NNODES --nproc_per_node 4 --rdzv-backend c10d --rdzv-endpoint \$(hostname):29500 \
    pretrain_gpt.py \$MODEL_ARGS --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
EOF
