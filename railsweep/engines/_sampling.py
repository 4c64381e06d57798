"""Batch-invariant seeded sampling: one counter-based uniform per row and step.

A sample's randomness at one step is a pure function of (request seed, sample index, step), hashed with a
32-bit integer mixer, and the token is drawn by inverse CDF from ``softmax(l / T)``: the same request and seed
give the same samples whatever the batch, on CPU or GPU (up to the logits' own float noise). Inverse CDF costs
a few passes over the logits, where Gumbel-max would hash every (row, token).
"""

from __future__ import annotations

import torch

_M32 = 0xFFFFFFFF


def mix32(x: torch.Tensor) -> torch.Tensor:
    """The "lowbias32" integer hash (C. Wellons) on int64 tensors in [0, 2^32); products may wrap around
    int64, but only their exact low 32 bits are kept."""
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


def uniforms(keys: torch.Tensor) -> torch.Tensor:
    """Map 32-bit keys to float32 uniforms in (0, 1) (24 bits, exact)."""
    return ((keys >> 8).float() + 0.5) * (1.0 / (1 << 24))


class SeededSampler:
    """Pick the next token of every row: greedy rows (``temperature[B]`` 0) take the argmax, others sample at
    their T; ``seeds[B]`` (63-bit) and ``sample_idx[B]`` identify each row's random stream."""

    def __init__(self, seeds: torch.Tensor, sample_idx: torch.Tensor, temperature: torch.Tensor):
        self.seeds, self.sample_idx = seeds, sample_idx
        self.greedy = temperature == 0
        self.any_sampled = bool((~self.greedy).any())
        self.any_greedy = bool(self.greedy.any())
        self.inv_t = torch.where(self.greedy, 1.0, 1.0 / temperature.clamp(min=1e-6))[:, None].float()

    def __call__(self, logits: torch.Tensor, step: int) -> torch.Tensor:
        """Steps: 1. unnormalised probabilities ``exp(l/T - max)``; 2. their running sum;
        3. the first token whose running sum exceeds ``u * total`` (never a zero-probability one)."""
        if not self.any_sampled:
            return logits.argmax(dim=-1)
        scaled = logits * self.inv_t
        z = torch.exp(scaled - scaled.amax(dim=-1, keepdim=True))
        cdf = z.cumsum(dim=-1)
        total = cdf[:, -1:]
        u = uniforms(row_keys(self.seeds, self.sample_idx, step))[:, None]
        x = torch.minimum(u * total, torch.nextafter(total, torch.zeros_like(total)))
        picked = torch.searchsorted(cdf, x, right=True)[:, 0].clamp(max=logits.shape[-1] - 1)
        if self.any_greedy:
            picked = torch.where(self.greedy, logits.argmax(dim=-1), picked)
        return picked
