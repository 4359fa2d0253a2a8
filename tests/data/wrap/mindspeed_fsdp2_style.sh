#!/bin/bash
# A launch of MindSpeed-LLM's FSDP2 trainer in the style of its examples/fsdp2 scripts (written for
# preflight's tests): a YAML, then dotted overrides that win over it.
NPUS_PER_NODE=${NPUS_PER_NODE:-8}
NNODES=2
DISTRIBUTED_ARGS="
    --nproc_per_node $NPUS_PER_NODE \
    --nnodes $NNODES \
    --node_rank 0 \
    --master_addr localhost \
    --master_port 6499
"
CONF_DIR="$(dirname "$(readlink -f "$0")")"
torchrun $DISTRIBUTED_ARGS train_fsdp2.py ${CONF_DIR}/mindspeed_fsdp2_style.yaml \
    --data.dataset '{"file_name": "your data path"}' \
    --parallel.fsdp_size ${FSDP_SIZE:-16} \
    --training.per_device_train_batch_size 1 \
    --training.output_dir ./output \
    --optimization.use_flash_attn True
