"""The GPT of one pipeline stage, with Megatron-core module names and PyTorch eager ops only.

Per transformer layer (pre-norm, Megatron-core ``TransformerLayer``):

    input_layernorm → self_attention.{linear_qkv, core_attention, linear_proj} → self_attn_bda
    → pre_mlp_layernorm → mlp.{linear_fc1, activation_func, linear_fc2} → mlp_bda

Activations are [s, b, h].  What autograd keeps for backward is what preflight's ``torch_cpu`` layer graph
lists (analyzer/src/model/layer_graph*.cpp); in short, per layer: the layer input and LayerNorm mean/rstd (in the
activation dtype on CPU), the qkv input, contiguous copies of q, k, v in [b·heads, s, d] (k, v repeated over
the query heads of their group), the softmax output, for attention dropout its noise (same dtype as the
input: PyTorch's CPU dropout multiplies by a float noise tensor) and output, the context copy in
[s, b, heads·d], the hidden-dropout noise, the pre-MLP norm input, fc1 input, the activation input (and
the SiLU output for SwiGLU), fc2 input and the second dropout noise.
"""

import math

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from .tensor_parallel import (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding,
                              init_replicated, vocab_parallel_cross_entropy)


class DotProductAttention(torch.nn.Module):
    """Math attention with a causal mask on the mixed qkv projection [s, b, g·(r + 2)·d] (Megatron's
    grouped layout: per query group, r query heads then one key and one value head)."""

    def __init__(self, heads, groups, head_dim, dropout):
        super().__init__()
        self.heads, self.groups, self.head_dim, self.dropout = heads, groups, head_dim, dropout

    def forward(self, mixed, mask):
        s, b, _ = mixed.shape
        g, d = self.groups, self.head_dim
        r = self.heads // g
        x = mixed.view(s, b, g, r + 2, d)

        def batched(t):  # [s, b, g, r, d] → contiguous [b·heads, s, d] (always a copy)
            return t.permute(1, 2, 3, 0, 4).reshape(b * self.heads, s, d).contiguous()

        q = batched(x[:, :, :, :r])
        k = batched(x[:, :, :, r:r + 1].expand(s, b, g, r, d))
        v = batched(x[:, :, :, r + 1:].expand(s, b, g, r, d))
        scores = torch.bmm(q, k.transpose(1, 2))
        scores.mul_(1.0 / math.sqrt(d))
        scores.masked_fill_(mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        if self.dropout > 0 and self.training:
            probs = F.dropout(probs, self.dropout, True)
        context = torch.bmm(probs, v)
        return context.view(b, self.heads, s, d).permute(2, 0, 1, 3).reshape(s, b, self.heads * d).contiguous()


class SelfAttention(torch.nn.Module):
    def __init__(self, cfg, ps, layer, seed):
        super().__init__()
        pre = "decoder.layers.%d.self_attention." % layer
        d = cfg.kv_channels
        self.heads_local = cfg.num_attention_heads // ps.tp
        self.groups_local = cfg.num_query_groups // ps.tp
        qkv_out = (cfg.num_attention_heads + 2 * cfg.num_query_groups) * d
        self.linear_qkv = ColumnParallelLinear(cfg.hidden_size, qkv_out, ps, cfg.add_bias_linear or cfg.add_qkv_bias,
                                               cfg.init_method_std, seed, pre + "linear_qkv")
        self.core_attention = DotProductAttention(self.heads_local, self.groups_local, d, cfg.attention_dropout)
        self.linear_proj = RowParallelLinear(cfg.num_attention_heads * d, cfg.hidden_size, ps, cfg.add_bias_linear,
                                             cfg.output_std, seed, pre + "linear_proj")
        self.recompute_core_attention = cfg.recompute_granularity == "selective"

    def forward(self, x, mask):
        mixed = self.linear_qkv(x)
        if self.recompute_core_attention and torch.is_grad_enabled():
            context = checkpoint(self.core_attention, mixed, mask)
        else:
            context = self.core_attention(mixed, mask)
        return self.linear_proj(context)


class GeLU(torch.nn.Module):
    def forward(self, x):
        return F.gelu(x)


class SwiGLU(torch.nn.Module):
    def forward(self, x):
        gate, up = torch.chunk(x, 2, dim=-1)
        return F.silu(gate) * up


class MLP(torch.nn.Module):
    def __init__(self, cfg, ps, layer, seed):
        super().__init__()
        pre = "decoder.layers.%d.mlp." % layer
        f = cfg.ffn_hidden_size
        gated = cfg.swiglu
        self.linear_fc1 = ColumnParallelLinear(cfg.hidden_size, 2 * f if gated else f, ps, cfg.add_bias_linear,
                                               cfg.init_method_std, seed, pre + "linear_fc1", stride=2 if gated else 1)
        self.activation_func = SwiGLU() if gated else GeLU()
        self.linear_fc2 = RowParallelLinear(f, cfg.hidden_size, ps, cfg.add_bias_linear, cfg.output_std, seed,
                                            pre + "linear_fc2")

    def forward(self, x):
        return self.linear_fc2(self.activation_func(self.linear_fc1(x)))


class BiasDropoutAdd(torch.nn.Module):
    """residual + dropout(x); the bias was added by the row-parallel linear."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x, residual):
        if self.p > 0 and self.training:
            x = F.dropout(x, self.p, True)
        return residual + x


def _layer_norm(cfg, ps):
    norm = torch.nn.LayerNorm(cfg.hidden_size, eps=cfg.layernorm_epsilon)
    for p in norm.parameters():
        p.tensor_parallel_duplicate = ps.tp_rank > 0  # replicated over tp: counted once in the grad norm
    return norm


class TransformerLayer(torch.nn.Module):
    def __init__(self, cfg, ps, layer, seed):
        super().__init__()
        self.input_layernorm = _layer_norm(cfg, ps)
        self.self_attention = SelfAttention(cfg, ps, layer, seed)
        self.self_attn_bda = BiasDropoutAdd(cfg.hidden_dropout)
        self.pre_mlp_layernorm = _layer_norm(cfg, ps)
        self.mlp = MLP(cfg, ps, layer, seed)
        self.mlp_bda = BiasDropoutAdd(cfg.hidden_dropout)

    def forward(self, x, mask):
        residual = x
        x = self.self_attn_bda(self.self_attention(self.input_layernorm(x), mask), residual)
        residual = x
        return self.mlp_bda(self.mlp(self.pre_mlp_layernorm(x)), residual)


class TransformerBlock(torch.nn.Module):
    """Layers first_layer … first_layer + num_layers − 1, keyed by their global index, so that module paths
    read ``decoder.layers.<global index>``.  Full recompute as Megatron's ``_checkpointed_forward``: uniform
    checkpoints groups of recompute_num_layers layers, block the first recompute_num_layers layers."""

    def __init__(self, cfg, ps, first_layer, num_layers, post_process, seed):
        super().__init__()
        self.layers = torch.nn.ModuleDict(
            {str(i): TransformerLayer(cfg, ps, i, seed) for i in range(first_layer, first_layer + num_layers)})
        if post_process:
            self.final_layernorm = _layer_norm(cfg, ps)
        self.cfg = cfg

    def _run(self, layers, x, mask):
        for layer in layers:
            x = layer(x, mask)
        return x

    def forward(self, x, mask):
        layers = list(self.layers.values())
        cfg = self.cfg
        if cfg.recompute_granularity == "full" and torch.is_grad_enabled():
            k = cfg.recompute_num_layers
            if cfg.recompute_method == "uniform":
                for start in range(0, len(layers), k):
                    group = layers[start:start + k]
                    x = checkpoint(lambda t, m, g=group: self._run(g, t, m), x, mask)
            else:
                for i, layer in enumerate(layers):
                    x = checkpoint(layer, x, mask) if i < k else layer(x, mask)
        else:
            x = self._run(layers, x, mask)
        if hasattr(self, "final_layernorm"):
            x = self.final_layernorm(x)
        return x


class LanguageModelEmbedding(torch.nn.Module):
    def __init__(self, cfg, ps, seed):
        super().__init__()
        self.word_embeddings = VocabParallelEmbedding(cfg.padded_vocab_size, cfg.hidden_size, ps, cfg.init_method_std,
                                                      seed, "embedding.word_embeddings")
        if cfg.position_embedding_type == "learned_absolute":
            self.position_embeddings = torch.nn.Embedding(cfg.max_position_embeddings, cfg.hidden_size)
            init_replicated(self.position_embeddings.weight, cfg.init_method_std, seed, "embedding.position_embeddings")
            self.position_embeddings.weight.tensor_parallel_duplicate = ps.tp_rank > 0
        else:
            self.position_embeddings = None
        self.embedding_dropout = torch.nn.Dropout(cfg.hidden_dropout)

    def forward(self, input_ids, position_ids):
        x = self.word_embeddings(input_ids)  # [b, s, h]
        if self.position_embeddings is not None:
            x = x + self.position_embeddings(position_ids)
        x = x.transpose(0, 1).contiguous()  # [s, b, h]
        return self.embedding_dropout(x)


class CrossEntropyLoss(torch.nn.Module):
    """Mean over tokens of the vocab-parallel cross entropy of fp32 logits [s, b, V/tp] and labels [b, s]."""

    def __init__(self, ps, vocab_local):
        super().__init__()
        self.group = ps.tp_group
        self.vocab_start = ps.tp_rank * vocab_local

    def forward(self, logits, labels):
        losses = vocab_parallel_cross_entropy(logits.float(), labels.transpose(0, 1).contiguous(),
                                              self.vocab_start, self.group)
        return losses.mean()


class GPTModel(torch.nn.Module):
    """One pipeline stage.  The first stage embeds token ids, the last holds the final norm, the output
    layer (tied to the word embeddings: the embedding itself with pp = 1, a copy kept in sync through the
    embedding group otherwise) and the loss."""

    def __init__(self, cfg, ps, first_layer, num_layers, seed):
        super().__init__()
        self.pre_process, self.post_process = ps.is_first_stage, ps.is_last_stage
        if self.pre_process:
            self.embedding = LanguageModelEmbedding(cfg, ps, seed)
        self.decoder = TransformerBlock(cfg, ps, first_layer, num_layers, self.post_process, seed)
        self.share_embeddings = not cfg.untie_embeddings_and_output_weights
        if self.post_process:
            tied_here = self.share_embeddings and self.pre_process
            self.output_layer = ColumnParallelLinear(cfg.hidden_size, cfg.padded_vocab_size, ps, False,
                                                     cfg.init_method_std, seed, "output_layer", skip_weight=tied_here)
            if self.share_embeddings and not self.pre_process:
                # Megatron: the last stage's copy starts at zero and is summed with the first stage's weight
                # over the embedding group (see initialize_embedding_copy); it is a duplicate for grad norms.
                self.output_layer.weight.data.zero_()
                self.output_layer.weight.shared_embedding = True
            self.loss = CrossEntropyLoss(ps, cfg.padded_vocab_size // ps.tp)

    def shared_embedding_weight(self):
        if self.pre_process:
            return self.embedding.word_embeddings.weight
        return self.output_layer.weight

    def forward(self, input_ids, position_ids, hidden, mask, labels):
        x = self.embedding(input_ids, position_ids) if self.pre_process else hidden
        x = self.decoder(x, mask)
        if not self.post_process:
            return x
        weight = self.embedding.word_embeddings.weight if self.output_layer.weight is None else None
        logits = self.output_layer(x, weight)
        return self.loss(logits, labels)
