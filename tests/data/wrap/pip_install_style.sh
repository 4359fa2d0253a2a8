#!/bin/bash
# Requirements installed before the launch, as Megatron-LM's ModelOpt scripts do (written for preflight's
# tests; the model is made up): a sourced file sets the launcher and installs under set -e, the script
# installs one more.  The package index named is unreachable and the packages do not exist: an install that
# runs fails, and under the sourced file's set -e ends the script.
SCRIPT_DIR="$(dirname "$(readlink -f "$0")")"
source "${CONF_DIR:-${SCRIPT_DIR}}/pip_install_style_conf.sh"
python3 -m pip install --quiet ${PIP_OPTS} preflight-test-package-that-does-not-exist
echo "requirements installed" >&2
${LAUNCH_SCRIPT} ${SCRIPT_DIR}/finetune.py \
    --tensor-model-parallel-size 2 --num-layers 4 --hidden-size 512 --num-attention-heads 8 \
    --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 16 \
    --vocab-size 32000 --bf16
