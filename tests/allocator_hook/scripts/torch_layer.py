"""A Megatron-shaped GPT block stack trained for a few iterations on CPU, for test_hook_torch.cpp.

Run under LD_PRELOAD=libpreflight_hook.so with the glue's folder on PYTHONPATH (sitecustomize.py loads it).
Module paths follow Megatron-core: decoder.layers.<i>.{input_layernorm, self_attention.{linear_qkv,
core_attention, linear_proj}, pre_mlp_layernorm, mlp.{linear_fc1, linear_fc2}}; the model sits inside a
wrapper holding it as `.module`, like Megatron's Float16Module, whose prefix the glue drops.

Layout [seq, batch, hidden], fp32, no dropout, unfused attention as Megatron's DotProductAttention:
    qkv = linear_qkv(x)                              [s, b, 3h]   per head [q k v] interleaved
    scores = baddbmm(buffer, q, k^T, beta=0, alpha=1/sqrt(d))     [b*n, s, s]
    probs = softmax(scores)                          [b, n, s, s]
    context = bmm(probs, v) -> permute -> copy        [s, b, h]
Ends with os._exit(0) so that interpreter shutdown frees nothing: the trace ends with the training state
(parameters, optimizer state) still live.
"""
import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn


class CoreAttention(nn.Module):
    def __init__(self, heads, head_dim):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim

    def forward(self, qkv):
        s, b, _ = qkv.shape
        n, d = self.heads, self.head_dim
        qkv = qkv.view(s, b, n, 3 * d)
        q, k, v = qkv.split(d, dim=-1)                 # views of the linear_qkv output
        q = q.reshape(s, b * n, d)                      # still views: [s, b*n, d]
        k = k.reshape(s, b * n, d)
        v = v.reshape(s, b * n, d)
        buffer = torch.empty(b * n, s, s, dtype=qkv.dtype)
        scores = torch.baddbmm(buffer, q.transpose(0, 1), k.transpose(0, 1).transpose(1, 2),
                               beta=0.0, alpha=1.0 / math.sqrt(d))
        probs = torch.softmax(scores.view(b, n, s, s), dim=-1)
        context = torch.bmm(probs.view(b * n, s, s), v.transpose(0, 1))    # [b*n, s, d]
        return context.view(b, n, s, d).permute(2, 0, 1, 3).contiguous().view(s, b, n * d)


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.linear_qkv = nn.Linear(hidden, 3 * hidden)
        self.core_attention = CoreAttention(heads, hidden // heads)
        self.linear_proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        return self.linear_proj(self.core_attention(self.linear_qkv(x)))


class MLP(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.linear_fc1 = nn.Linear(hidden, ffn)
        self.linear_fc2 = nn.Linear(ffn, hidden)

    def forward(self, x):
        return self.linear_fc2(F.gelu(self.linear_fc1(x)))


class TransformerLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(hidden)
        self.self_attention = SelfAttention(hidden, heads)
        self.pre_mlp_layernorm = nn.LayerNorm(hidden)
        self.mlp = MLP(hidden, ffn)

    def forward(self, x):
        x = x + self.self_attention(self.input_layernorm(x))
        return x + self.mlp(self.pre_mlp_layernorm(x))


class TransformerBlock(nn.Module):
    def __init__(self, layers, hidden, heads, ffn):
        super().__init__()
        self.layers = nn.ModuleList(TransformerLayer(hidden, heads, ffn) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class ToyGPT(nn.Module):
    def __init__(self, layers, hidden, heads, ffn):
        super().__init__()
        self.decoder = TransformerBlock(layers, hidden, heads, ffn)

    def forward(self, x):
        return self.decoder(x)


class Float16Module(nn.Module):
    """Stands for Megatron's wrapper (here without the cast): holds the model as `.module`."""

    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x):
        return self.module(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    model = Float16Module(ToyGPT(a.layers, a.hidden, a.heads, a.ffn))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(a.iterations):
        x = torch.randn(a.seq, a.batch, a.hidden, requires_grad=True)
        out = model(x)
        out.sum().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        del x, out
    params = sum(t.numel() for t in model.parameters())
    print("parameters %d tensors %d torch %s" % (params, len(list(model.parameters())), torch.__version__))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
