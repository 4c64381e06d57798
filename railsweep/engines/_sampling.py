"""Batch-invariant seeded sampling: counter-based Gumbel-max noise.

A sample's randomness at one step is a pure function of (request seed, sample
index, step, token id), hashed with a 32-bit integer mixer in vectorised torch.
So the same request and seed give the same samples whatever else shares the
batch, whatever the batch size, on CPU or GPU (up to the logits' own float
noise). ``argmax(l / T + G)`` with i.i.d. Gumbel noise G is an exact sample of
``softmax(l / T)``.
"""

from __future__ import annotations

import torch

_M32 = 0xFFFFFFFF


def mix32(x: torch.Tensor) -> torch.Tensor:
    """The "lowbias32" integer hash (C. Wellons) on int64 tensors holding values in [0, 2^32).

    Products may wrap around int64; only their low 32 bits are kept, which are exact.
    """
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _M32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & _M32
    return x ^ (x >> 16)


def row_keys(seeds: torch.Tensor, sample_idx: torch.Tensor, step: int) -> torch.Tensor:
    """One 32-bit key per row for this step: a hash chain over (seed low, seed high, sample, step)."""
    k = mix32(seeds & _M32)
    k = mix32(k ^ ((seeds >> 32) & _M32))
    k = mix32((k + sample_idx * 0x9E3779B1) & _M32)
    return mix32((k + (step + 1) * 0x85EBCA77) & _M32)


class GumbelSampler:
    """Pick the next token of every row: greedy rows take the argmax, others Gumbel-max at their T.

    ``seeds[B]`` (63-bit) and ``sample_idx[B]`` identify each row's random stream;
    ``temperature[B]`` (0 = greedy).
    """

    def __init__(self, seeds: torch.Tensor, sample_idx: torch.Tensor, temperature: torch.Tensor, vocab: int):
        dev = seeds.device
        self.seeds, self.sample_idx = seeds, sample_idx
        self.greedy = temperature == 0
        self.any_sampled = bool((~self.greedy).any())
        self.inv_t = torch.where(self.greedy, 1.0, 1.0 / temperature.clamp(min=1e-6))[:, None].float()
        self.token_keys = mix32((torch.arange(vocab, device=dev, dtype=torch.long) * 0x27D4EB2F) & _M32)

    def noise(self, step: int, vocab: int) -> torch.Tensor:
        """Gumbel noise ``[B, vocab]`` for this step."""
        h = mix32(row_keys(self.seeds, self.sample_idx, step)[:, None] ^ self.token_keys[None, :vocab])
        u = ((h >> 8).float() + 0.5) * (1.0 / (1 << 24))  # in (0, 1), exact in float32
        return -torch.log(-torch.log(u))

    def __call__(self, logits: torch.Tensor, step: int) -> torch.Tensor:
        if not self.any_sampled:
            return logits.argmax(dim=-1)
        scores = logits * self.inv_t + self.noise(step, logits.shape[-1])
        return torch.where(self.greedy, logits.argmax(dim=-1), scores.argmax(dim=-1))
