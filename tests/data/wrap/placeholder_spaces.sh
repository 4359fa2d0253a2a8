#!/bin/bash
# Paths left as placeholders, unquoted and with spaces (bash -n accepts the file, running it does not).
# Written for preflight's tests; the model is made up.
CHECKPOINT_PATH=/path/to/my checkpoints
DATA_PATH=<Specify path and file prefix>_text_document
torchrun --nproc_per_node 2 pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 \
    --seq-length 256 --vocab-size 32000 --save $CHECKPOINT_PATH --data-path $DATA_PATH
