"""The engine's seeded, batch-invariant sampler."""

from __future__ import annotations

import random

import torch

from railsweep.engines._sampling import SeededSampler, mix32, row_keys


def lowbias32(x: int) -> int:
    """Reference: the same hash on Python integers (no overflow)."""
    m = 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x7FEB352D) & m
    x ^= x >> 15
    x = (x * 0x846CA68B) & m
    return x ^ (x >> 16)


def test_vectorised_hash_equals_the_python_reference_despite_int64_wraparound():
    rng = random.Random(0)
    xs = [0, 1, 0xFFFFFFFF, 0x80000000] + [rng.getrandbits(32) for _ in range(1000)]
    assert mix32(torch.tensor(xs, dtype=torch.long)).tolist() == [lowbias32(x) for x in xs]


def test_row_keys_differ_across_seeds_samples_and_steps():
    seeds = torch.tensor([s for s in (0, 1, 2**40, 2**62 + 5) for _ in range(50)], dtype=torch.long)
    idx = torch.arange(50).repeat(4)
    keys = {(k, step) for step in range(20) for k in row_keys(seeds, idx, step).tolist()}
    assert len({k for k, _ in keys}) == 200 * 20


def test_sampled_frequencies_follow_softmax_at_the_temperature_and_skip_banned_tokens():
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0, float("-inf")])
    B, T = 40000, 0.7
    sampler = SeededSampler(torch.full((B,), 123), torch.arange(B), torch.full((B,), T))
    picks = sampler(logits.expand(B, 5).clone(), step=0)
    freq = torch.bincount(picks, minlength=5).float() / B
    want = torch.softmax(logits / T, -1)
    assert freq[4] == 0
    assert torch.allclose(freq, want, atol=0.01), (freq, want)


def test_a_row_draws_the_same_token_whatever_shares_its_batch():
    logits = torch.randn(64, 50, generator=torch.Generator().manual_seed(0))
    seeds = torch.arange(64) * 7919
    idx = torch.arange(64) % 5
    temps = torch.where(torch.arange(64) % 4 == 0, 0.0, 0.9)
    full = SeededSampler(seeds, idx, temps)(logits.clone(), step=3)
    part = torch.arange(10, 30)
    sub = SeededSampler(seeds[part], idx[part], temps[part])(logits[part].clone(), step=3)
    assert torch.equal(full[part], sub)
    assert torch.equal(full[temps == 0], logits[temps == 0].argmax(-1))  # greedy rows in a mixed batch
    other_step = SeededSampler(seeds, idx, temps)(logits.clone(), step=4)
    assert not torch.equal(full, other_step)
