#!/bin/bash
# Paths left as `<…>` placeholders in flag values, inside an options string that `srun … sh -c` runs (the
# style of Megatron's older GPT-3 175B example): bash would read `<PATH` as a redirection.
# Written for preflight's tests; the model is made up.
#SBATCH --nodes=2 --ntasks-per-node=4
DATASET_1="<PATH TO THE FIRST DATASET>"
options=" \
	--tensor-model-parallel-size 2 \
	--pipeline-model-parallel-size 2 \
	--num-layers 8 --hidden-size 1024 --num-attention-heads 16 \
	--seq-length 1024 --max-position-embeddings 1024 \
	--micro-batch-size 1 --global-batch-size 16 \
	--data-path 1.0 ${DATASET_1} \
	--vocab-file <PATH TO gpt-vocab.json> \
	--merge-file <PATH TO gpt-merges.txt> \
	--save <PATH TO CHECKPOINTS DIRECTORY> \
	--fp16"
run_cmd="python -u pretrain_gpt.py ${options}"
srun -l sh -c "${run_cmd}"
