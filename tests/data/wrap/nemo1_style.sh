#!/bin/bash
# NeMo 1's Hydra training script (megatron_gpt_pretraining.py) launched with Hydra overrides, as NeMo 1.x's
# documentation and the NeMo-Framework-Launcher's generated scripts do (written for preflight's tests; the
# configuration is the script's own conf/megatron_gpt_config.yaml unless CONFIG_DIR / CONFIG say otherwise).
set -euo pipefail
NEMO=${NEMO:-/opt/NeMo}
NODES=${NODES:-2}
CONFIG_ARGS=()
if [ -n "${CONFIG_DIR:-}" ]; then
  CONFIG_ARGS=(--config-path="${CONFIG_DIR}" --config-name="${CONFIG:-megatron_gpt_config}")
fi
python ${NEMO}/examples/nlp/language_modeling/megatron_gpt_pretraining.py "${CONFIG_ARGS[@]}" \
  trainer.devices=8 trainer.num_nodes=${NODES} \
  model.tensor_model_parallel_size=2 model.pipeline_model_parallel_size=8 \
  model.virtual_pipeline_model_parallel_size=null \
  model.global_batch_size=256 \
  exp_manager.exp_dir=/results
