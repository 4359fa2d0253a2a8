#!/bin/bash
# A job template to fill in before use (cluster recipes published with `your_own_…` placeholders in their
# #SBATCH lines): the training command in a variable, submitted with sbatch <<EOF, one python process a GPU
# started by srun.  Written for preflight's tests; model made up.
MEGATRON_PATH=${MEGATRON_PATH:-"your_own_megatron_path"}
TP=${TP:-2}
TRAINING_CMD="
cd ${MEGATRON_PATH};
python ${MEGATRON_PATH}/pretrain_gpt.py --num-layers 12 --hidden-size 1024 --num-attention-heads 16 \
    --seq-length 1024 --vocab-size 32000 --tensor-model-parallel-size ${TP} --pipeline-model-parallel-size 2"
set +e
sbatch <<EOF
#!/bin/bash
#SBATCH --job-name=your_own_job_name
#SBATCH --nodes=your_own_num_nodes
#SBATCH --ntasks-per-node=your_own_tasks_per_node
#SBATCH --gres=gpu:your_own_gpu_per_node
#SBATCH --exclusive

srun --mpi=pmix -l bash -c "${TRAINING_CMD}"
EOF
set -e
