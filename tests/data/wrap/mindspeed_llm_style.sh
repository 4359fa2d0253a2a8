#!/bin/bash
# A launch in MindSpeed-LLM's style (Ascend/MindSpeed-LLM examples/mcore: Megatron-LM patched for Ascend NPUs):
# NPU counts, placeholder paths, its own flags for the dense first layers, the shared expert, the no-op layers
# that pad the stack for the pipeline, Ulysses context parallelism and the optimizer swapped to the host; the
# fine-tuning entry point posttrain_gpt.py.  Written for preflight's tests; sizes are made up.
export CUDA_DEVICE_MAX_CONNECTIONS=1
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True

NPUS_PER_NODE=8
MASTER_ADDR=localhost
MASTER_PORT=6000
NNODES=4
NODE_RANK=0

CKPT_LOAD_DIR="your model ckpt path"
TOKENIZER_PATH="your tokenizer path"

TP=2
PP=4
EP=4
CP=2
CP_TYPE='ulysses_cp_algo'

DISTRIBUTED_ARGS="
    --nproc_per_node $NPUS_PER_NODE \
    --nnodes $NNODES \
    --node_rank $NODE_RANK \
    --master_addr $MASTER_ADDR \
    --master_port $MASTER_PORT
"

MOE_ARGS="
    --num-experts 32 \
    --moe-router-topk 4 \
    --moe-ffn-hidden-size 704 \
    --n-shared-experts 2 \
    --first-k-dense-replace 2 \
    --moe-layer-freq 1 \
    --moe-grouped-gemm \
    --moe-permutation-async-comm \
    --moe-token-dispatcher-type alltoall_seq \
    --moe-aux-loss-coeff 0.001 \
    --seq-aux \
    --norm-topk-prob
"

GPT_ARGS="
    --use-mcore-models \
    --spec mindspeed_llm.tasks.models.spec.deepseek_spec layer_spec \
    --num-layers 24 \
    --noop-layers 22,23 \
    --hidden-size 2048 \
    --ffn-hidden-size 5632 \
    --num-attention-heads 16 \
    --group-query-attention \
    --num-query-groups 4 \
    --seq-length 8192 \
    --max-position-embeddings 8192 \
    --tokenizer-type PretrainedFromHF \
    --tokenizer-name-or-path ${TOKENIZER_PATH} \
    --padded-vocab-size 65536 \
    --make-vocab-size-divisible-by 1 \
    --untie-embeddings-and-output-weights \
    --disable-bias-linear \
    --position-embedding-type rope \
    --normalization RMSNorm \
    --swiglu \
    --use-fused-rmsnorm \
    --use-fused-swiglu \
    --use-flash-attn \
    --micro-batch-size 1 \
    --global-batch-size 64 \
    --tensor-model-parallel-size ${TP} \
    --sequence-parallel \
    --pipeline-model-parallel-size ${PP} \
    --expert-model-parallel-size ${EP} \
    --context-parallel-size ${CP} \
    --context-parallel-algo ${CP_TYPE} \
    --use-distributed-optimizer \
    --swap-optimizer \
    --bf16
"

torchrun $DISTRIBUTED_ARGS posttrain_gpt.py \
    $GPT_ARGS \
    $MOE_ARGS \
    --stage sft \
    --load ${CKPT_LOAD_DIR} \
    --distributed-backend nccl \
    | tee logs/tune_mindspeed_style.log
