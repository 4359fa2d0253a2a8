#!/bin/bash
# NeMo 2's command line in the style of its quick starts (written for preflight's tests): a model imported from
# Hugging Face, then pre-training from one of NeMo's recipes with NeMo-Run's overrides, then generation.
set -euo pipefail
NODES=${NODES:-2}
TP=${TP:-4}
RECIPE=${RECIPE:-llama3_70b}
export NVTE_FUSED_ATTN=1

nemo llm import model=llama3_70b source="hf://meta-llama/Meta-Llama-3-70B" -y
nemo llm pretrain --factory "${RECIPE}(num_nodes=${NODES})" \
    trainer.strategy.tensor_model_parallel_size=$TP \
    trainer.strategy.context_parallel_size=1 \
    data.global_batch_size=256 \
    log.log_dir=/results/$RECIPE -y
nemo llm generate --help
