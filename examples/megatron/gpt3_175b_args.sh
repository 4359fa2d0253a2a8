# The parallel layout and model of GPT-3 175B as Megatron-LM's examples train it (96 layers, hidden
# 12288, 96 heads, 2048 tokens; tp 8 × pp 16 on 128 nodes of 8 GPUs; fp16).  Sourced by
# scripts/quickstart.sh; written for preflight, in the array style of Megatron's own launch scripts.
GPUS_PER_NODE=8
NUM_NODES=128

DISTRIBUTED_ARGS=(
    --nproc_per_node "$GPUS_PER_NODE"
    --nnodes "$NUM_NODES"
    --master_addr localhost
    --master_port 6000
)
GPT_MODEL_ARGS=(
    --num-layers 96
    --hidden-size 12288
    --num-attention-heads 96
    --seq-length 2048
    --max-position-embeddings 2048
    --attention-backend auto
)
TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 1536
    --train-iters 500000
    --weight-decay 0.1
    --clip-grad 1.0
    --fp16
    --lr 6.0e-5
    --lr-decay-style cosine
    --vocab-file gpt2-vocab.json
    --merge-file gpt2-merges.txt
)
MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 8
    --pipeline-model-parallel-size 16
    --use-distributed-optimizer
    --sequence-parallel
)
