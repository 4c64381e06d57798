"""The shared-prefix (cascade) decode path gives the padded path's logits, for every supported family."""

from __future__ import annotations

import pytest
import torch
from family_models import VOCAB
from family_models import family_model as _model

from railsweep.engines import _cascade
from railsweep.engines._cascade import CascadeStepper, common_prefix_len
from railsweep.engines._hf_decode import PaddedStepper
from railsweep.engines.base import Request, SamplingSpec
from railsweep.engines.hf_compat import lm_step
from railsweep.engines.model_support import cascade_supported
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.errors import ConfigError
from railsweep.testing import make_tiny_model

CPU = torch.device("cpu")


def _prompts(seed: int, prefix_len: int, suffix_lens: list[int]) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    prefix = torch.randint(1, VOCAB, (prefix_len,), generator=g).tolist()
    return [prefix + torch.randint(1, VOCAB, (n,), generator=g).tolist() for n in suffix_lens]


def _run_both(model, prompts, steps, finish_at: dict[int, int], max_new=8, dedupe=True):
    """Drive both steppers with the same forced tokens; yield (padded, cascade, live) logits per step."""
    padded = PaddedStepper(lambda i, m, p, c: lm_step(model, i, m, p, c), 0, CPU, dedupe)
    cascade = CascadeStepper(model, CPU, 0, max_new, dedupe=dedupe)
    B = len(prompts)
    finished = torch.zeros(B, dtype=torch.bool)
    g = torch.Generator().manual_seed(7)
    with torch.inference_mode():
        a, b = padded.prefill(prompts), cascade.prefill(prompts)
        yield a, b, ~finished
        for step in range(steps):
            for row, at in finish_at.items():
                if step == at:
                    finished[row] = True
            nxt = torch.randint(1, VOCAB, (B,), generator=g)
            a, b = padded.step(nxt, finished), cascade.step(nxt, finished)
            yield a, b, ~finished


@pytest.mark.parametrize("family", ["llama", "neox", "gemma3"])
def test_cascade_logits_match_the_padded_path_while_rows_finish(family):
    model = _model(family)
    # a 24-token shared prefix, own suffixes of different lengths, one prompt repeated (deduplicated prefill)
    prompts = _prompts(1, 24, [3, 7, 1, 5, 7])
    prompts.append(list(prompts[1]))
    checked = 0
    for a, b, live in _run_both(model, prompts, steps=6, finish_at={0: 1, 3: 1, 4: 3}):
        torch.testing.assert_close(b[live], a[live], atol=2e-4, rtol=1e-4)
        checked += int(live.sum())
    assert checked == 6 + 6 + 4 + 4 + 3 + 3 + 3  # rows really finished, and the rest kept being compared


@pytest.mark.parametrize("dedupe", [True, False])
def test_prompts_without_a_long_common_prefix_decode_on_their_own_columns(dedupe):
    model = _model("llama", seed=3)
    prompts = _prompts(2, 0, [9, 4, 12])  # no common prefix: the cascade keeps everything per row
    for a, b, live in _run_both(model, prompts, steps=4, finish_at={1: 2}, dedupe=dedupe):
        torch.testing.assert_close(b[live], a[live], atol=2e-4, rtol=1e-4)


def test_long_prefills_are_split_into_query_chunks_with_the_same_logits(monkeypatch):
    model = _model("neox", seed=5)
    prompts = _prompts(4, 40, [30, 2])
    reference = [b.clone() for _, b, _ in _run_both(model, prompts, steps=2, finish_at={})]
    monkeypatch.setattr(_cascade, "_MAX_SCORES", 64)  # a handful of queries per chunk
    chunked = [b for _, b, _ in _run_both(model, prompts, steps=2, finish_at={})]
    for x, y in zip(reference, chunked):
        torch.testing.assert_close(y, x, atol=1e-5, rtol=1e-5)


def test_common_prefix_leaves_every_prompt_one_token_of_its_own():
    assert common_prefix_len([[1, 2, 3], [1, 2, 3]]) == 2
    assert common_prefix_len([[1, 2, 3, 4], [1, 2, 5]]) == 2
    assert common_prefix_len([[9], [9, 1]]) == 0
    assert common_prefix_len([[1, 2], [3, 2]]) == 0


def test_short_sliding_windows_softcapping_and_other_families_stay_on_the_padded_path():
    windowed = _model("gemma3", sliding_window=16)
    assert cascade_supported(windowed, 16) and not cascade_supported(windowed, 17)
    assert cascade_supported(_model("llama"), 10_000)
    from transformers import GPT2Config, GPT2LMHeadModel

    assert not cascade_supported(
        GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=VOCAB)), 8
    )


def test_engine_gives_the_same_samples_on_both_paths(tmp_path):
    path = make_tiny_model(tmp_path / "m", family="llama", seed=2, logit_scale=3.0)
    prefix = "Q: Tom has 3 apples and buys 4 more. A: 3 + 4 = 7. The answer is 7.\n\n"
    requests = [
        Request(
            prefix + f"Q: Sam has {n} eggs. A:", SamplingSpec(n=k, temperature=t, seed=11, max_new_tokens=12)
        )
        for n, k, t in ((2, 4, 0.7), (5, 1, 0.0), (9, 4, 0.7))
    ]
    outs = {}
    for attention in ("padded", "cascade"):
        engine = TransformersEngine(path, device="cpu", dtype="float32", attention=attention)
        outs[attention] = [[s.token_ids for s in c.samples] for c in engine.generate(requests)]
    assert outs["cascade"] == outs["padded"]


def test_bad_attention_values_are_config_errors(tmp_path):
    path = make_tiny_model(tmp_path / "g", family="gemma")  # Gemma 1: not routed to the cascade path
    with pytest.raises(ConfigError, match="'gemma'"):
        TransformersEngine(path, device="cpu", attention="cascade")
    with pytest.raises(ConfigError, match="'fast'"):
        TransformersEngine(path, device="cpu", attention="fast")


def _select_into_fresh_zeroed_buffers(self, index):
    """RowCache.select as it was first written (fresh zero-filled buffers each call): the reference."""
    for store in (self.keys, self.values):
        for i, buf in enumerate(store):
            if buf is not None:
                new = buf.new_zeros((len(index), *buf.shape[1:]))
                new[:, :, : self.start] = buf[: self.rows][index, :, : self.start]
                store[i] = new
    self.valid = self.valid[index]
    self.rows = self.slots = len(index)


def test_row_dropping_in_place_gives_the_same_samples_as_fresh_buffers(tmp_path, monkeypatch):
    path = make_tiny_model(tmp_path / "m", family="llama", seed=4, logit_scale=3.0)
    prefix = "Q: Tom has 3 apples and buys 4 more. A: 3 + 4 = 7. The answer is 7.\n\n"
    # rows end at many different lengths, so finished rows leave the cache several times per batch
    requests = [
        Request(
            prefix + f"Q: Sam has {n} eggs. A:",
            SamplingSpec(n=5, temperature=0.9, seed=n, max_new_tokens=4 + 3 * n),
        )
        for n in range(8)
    ]
    engine = TransformersEngine(path, device="cpu", dtype="float32", attention="cascade")
    selects = []
    real_select = _cascade.RowCache.select
    monkeypatch.setattr(
        _cascade.RowCache,
        "select",
        lambda self, index: (selects.append(len(index)), real_select(self, index)),
    )
    in_place = [[s.token_ids for s in c.samples] for c in engine.generate(requests)]
    assert len(selects) >= 4  # the prefill expansion and several drops
    monkeypatch.setattr(_cascade.RowCache, "select", _select_into_fresh_zeroed_buffers)
    fresh = [[s.token_ids for s in c.samples] for c in engine.generate(requests)]
    assert in_place == fresh


def test_row_cache_select_compacts_and_expands_rows_without_new_buffers():
    g = torch.Generator().manual_seed(0)
    cache = _cascade.RowCache(n_layers=2, rows=3, capacity=10, device=CPU, slots=6)
    for layer in range(2):
        cache.update(torch.randn(3, 2, 4, 8, generator=g), torch.randn(3, 2, 4, 8, generator=g), layer)
    cache.start = 4
    before = [(k[:3, :, :4].clone(), v[:3, :, :4].clone()) for k, v in zip(cache.keys, cache.values)]
    expand = torch.tensor([0, 0, 1, 2, 2, 2])
    cache.select(expand)  # the first call makes the one spare buffer
    buffers = {t.data_ptr() for t in (*cache.keys, *cache.values, cache.spare)}
    keep = torch.tensor([1, 3, 4])
    cache.select(keep)
    assert {t.data_ptr() for t in (*cache.keys, *cache.values, cache.spare)} == buffers
    assert cache.rows == 3
    for (k, v), (k0, v0) in zip(zip(cache.keys, cache.values), before):
        torch.testing.assert_close(k[:3, :, :4], k0[expand[keep]], rtol=0, atol=0)
        torch.testing.assert_close(v[:3, :, :4], v0[expand[keep]], rtol=0, atol=0)
    with pytest.raises(ValueError, match="slots"):
        cache.select(torch.zeros(7, dtype=torch.long))
