#!/bin/bash
# ROCm/Megatron-LM examples style (AMD GPUs): settings as KEY=VALUE arguments exported by a loop, the node's GPUs
# asked of PyTorch, the RDMA devices asked of `rdma link -j` through an inline python3, the launch assembled in
# run_cmd and eval'ed behind `|& tee` under a temporary pipefail, then the log post-processed with grep and a
# python helper, and the training's status as the script's.  Written for preflight's tests; the settings are
# made up (a Llama-3-8B-shaped model, FP8).
export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-1}
HCA_LIST=$(rdma link -j 2>/dev/null | python3 -c "import json, sys
try:
    print(','.join(l['ifname'] for l in json.load(sys.stdin)[:8]))
except Exception:
    pass") || HCA_LIST=""
export NCCL_IB_HCA=${NCCL_IB_HCA:-$HCA_LIST}

for ARGUMENT in "$@"; do
    KEY=$(echo $ARGUMENT | cut -f1 -d=)
    KEY_LENGTH=${#KEY}
    VALUE="${ARGUMENT:$KEY_LENGTH+1}"
    export "$KEY"="$VALUE"
done

GPUS_PER_NODE=`python3 -c "import torch; print(torch.cuda.device_count())"`
NNODES="${NNODES:-1}"
WORLD_SIZE=$(($GPUS_PER_NODE*$NNODES))
TP="${TP:-8}"
MBS="${MBS:-1}"
BS="${BS:-8}"
SEQ_LENGTH="${SEQ_LENGTH:-2048}"
TE_FP8="${TE_FP8:-0}"
TOKENIZER_MODEL="${TOKENIZER_MODEL:-NousResearch/Meta-Llama-3-8B}"
LOG_DIR="${LOG_DIR:-experiment/tp${TP}_mbs${MBS}_bs${BS}}"
TRAIN_LOG="${LOG_DIR}/output.log"
mkdir -p $LOG_DIR

GPT_ARGS="
    --tensor-model-parallel-size ${TP} \
    --num-layers 32 \
    --hidden-size 4096 \
    --ffn-hidden-size 14336 \
    --num-attention-heads 32 \
    --group-query-attention \
    --num-query-groups 8 \
    --seq-length $SEQ_LENGTH \
    --max-position-embeddings 131072 \
    --position-embedding-type rope \
    --untie-embeddings-and-output-weights \
    --swiglu \
    --disable-bias-linear \
    --normalization RMSNorm \
    --micro-batch-size $MBS \
    --global-batch-size $BS \
    --train-iters 10 \
    --bf16 \
    --tokenizer-type HuggingFaceTokenizer \
    --tokenizer-model ${TOKENIZER_MODEL} \
    --mock-data \
    --use-distributed-optimizer \
    --overlap-grad-reduce \
    --overlap-param-gather \
    --log-throughput
"
if [ "$TE_FP8" -eq 1 ]; then
    GPT_ARGS="$GPT_ARGS --transformer-impl=transformer_engine --fp8-format=hybrid --fp8-amax-history-len=1024"
fi

run_cmd="
    torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES pretrain_gpt.py \
        $GPT_ARGS
"
run_cmd="$run_cmd |& tee $TRAIN_LOG"

set -o pipefail
eval $run_cmd
TRAIN_RC=$?
set +o pipefail

echo 'import sys
values = [float(v) for v in open(sys.argv[1]).read().split()]
print(sum(values) / len(values))' > mean_log_value.py
grep -Eo 'elapsed time per iteration [^|]*' $TRAIN_LOG | sed -E 's/.*\(ms\): ([0-9.]+).*/\1/' > tmp.txt
echo "elapsed time per iteration: $(python3 mean_log_value.py tmp.txt 2>/dev/null)"
rm -f tmp.txt
exit $TRAIN_RC
