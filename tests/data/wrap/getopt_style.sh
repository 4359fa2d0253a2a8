#!/bin/bash
# The script parses its own options with a while/case loop before launching.  Written for preflight's
# tests; the model is made up.
TP=1
PP=1
LAYERS=8
while [[ $# -gt 0 ]]; do
    case "$1" in
        --tp) TP="$2"; shift 2 ;;
        --pp) PP="$2"; shift 2 ;;
        --layers=*) LAYERS="${1#*=}"; shift ;;
        -h|--help) echo "usage: $0 [--tp N] [--pp N] [--layers=N]"; exit 0 ;;
        *) echo "unknown option $1"; exit 1 ;;
    esac
done
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers "$LAYERS" --hidden-size 1024 --num-attention-heads 16 \
    --seq-length 1024 --vocab-size 32000 --tensor-model-parallel-size "$TP" --pipeline-model-parallel-size "$PP"
