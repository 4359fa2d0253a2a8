"""A Megatron-shaped GPT in plain PyTorch for CPU runs under torchrun + gloo.

Modules are named as Megatron-core names them (``embedding.word_embeddings``,
``decoder.layers.<global index>.self_attention.linear_qkv``, ``output_layer``), so that allocation traces
taken with preflight's hook attribute bytes to the same paths the analyzer predicts for
(``preflight analyze --transformer-impl torch_cpu``).
"""
