"""Process groups in Megatron's default rank order ``tp-cp-ep-dp-pp`` (cp = ep = 1 here):

    rank = tp_rank + tp * (dp_rank + dp * pp_rank)

as ``megatron/core/parallel_state.py`` (RankGenerator) lays them out: tensor-parallel ranks are consecutive,
data-parallel ranks have stride tp, pipeline ranks stride tp * dp.  The embedding group holds the first and
last rank of each pipeline (tied word embeddings with pp > 1).
"""

import torch.distributed as dist


class ParallelState:
    def __init__(self, tp, pp, world_size, rank):
        if world_size % (tp * pp) != 0:
            raise SystemExit("world size %d is not divisible by tp * pp = %d" % (world_size, tp * pp))
        self.tp, self.pp, self.world_size, self.rank = tp, pp, world_size, rank
        self.dp = world_size // (tp * pp)
        self.tp_rank = rank % tp
        self.dp_rank = (rank // tp) % self.dp
        self.pp_rank = rank // (tp * self.dp)
        self.tp_group = self.dp_group = self.pp_group = self.mp_group = self.embedding_group = None
        self.pp_ranks = []
        self.embedding_ranks = []

    def global_rank(self, tp_rank, dp_rank, pp_rank):
        return tp_rank + self.tp * (dp_rank + self.dp * pp_rank)

    def build_groups(self):
        """Creates every group on every rank in the same order (gloo's new_group is collective)."""
        tp, dp, pp = self.tp, self.dp, self.pp
        for p in range(pp):
            for d in range(dp):
                ranks = [self.global_rank(t, d, p) for t in range(tp)]
                g = dist.new_group(ranks)
                if self.rank in ranks:
                    self.tp_group = g
        for p in range(pp):
            for t in range(tp):
                ranks = [self.global_rank(t, d, p) for d in range(dp)]
                g = dist.new_group(ranks)
                if self.rank in ranks:
                    self.dp_group = g
        for d in range(dp):
            for t in range(tp):
                ranks = [self.global_rank(t, d, p) for p in range(pp)]
                g = dist.new_group(ranks)
                if self.rank in ranks:
                    self.pp_group, self.pp_ranks = g, ranks
                emb = [ranks[0], ranks[-1]] if pp > 1 else [ranks[0]]
                g = dist.new_group(emb)
                if self.rank in emb:
                    self.embedding_group, self.embedding_ranks = g, emb
        for d in range(dp):
            ranks = [self.global_rank(t, d, p) for p in range(pp) for t in range(tp)]
            g = dist.new_group(sorted(ranks))
            if self.rank in ranks:
                self.mp_group = g

    @property
    def is_first_stage(self):
        return self.pp_rank == 0

    @property
    def is_last_stage(self):
        return self.pp_rank == self.pp - 1

    @property
    def next_rank(self):
        return self.pp_ranks[self.pp_rank + 1]

    @property
    def prev_rank(self):
        return self.pp_ranks[self.pp_rank - 1]
