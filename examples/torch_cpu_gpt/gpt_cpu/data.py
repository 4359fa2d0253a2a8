"""Synthetic, learnable token data (Megatron ``--mock-data`` stand-in).

Sample i is a walk through a fixed random permutation of the vocabulary: each next token follows the
permutation with probability 0.9 and is uniform otherwise, so a model that learns the permutation drives
the loss from ln(V) towards the entropy of the noise.  Samples depend only on (seed, i): every rank that
needs sample i (first stage: tokens, last stage: labels) draws the same one, and the data-parallel split
is Megatron's MegatronPretrainingSampler order (micro batch j of iteration t on data-parallel rank d holds
samples t·G + j·b·dp + d·b … + b − 1).
"""

import torch


class SyntheticData:
    def __init__(self, vocab_size, seq_length, seed):
        self.vocab, self.seq, self.seed = vocab_size, seq_length, seed
        g = torch.Generator().manual_seed(seed + 7919)
        self.perm = torch.randperm(vocab_size, generator=g).tolist()

    def sample(self, index):
        g = torch.Generator().manual_seed(self.seed * 1000003 + index)
        noise = torch.randint(0, self.vocab, (self.seq + 1,), generator=g).tolist()
        follow = (torch.rand(self.seq + 1, generator=g) < 0.9).tolist()
        tokens = [noise[0]]
        for i in range(1, self.seq + 1):
            tokens.append(self.perm[tokens[-1]] if follow[i] else noise[i])
        return torch.tensor(tokens, dtype=torch.long)

    def micro_batch(self, iteration, microbatch, global_batch, micro_batch_size, dp, dp_rank):
        """(input ids [b, s], labels [b, s]) as separate contiguous tensors."""
        first = iteration * global_batch + microbatch * micro_batch_size * dp + dp_rank * micro_batch_size
        rows = torch.stack([self.sample(first + j) for j in range(micro_batch_size)])
        return rows[:, :-1].clone(), rows[:, 1:].clone()
