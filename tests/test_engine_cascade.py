"""The shared-prefix (cascade) decode path gives the padded path's logits, for every supported family."""

from __future__ import annotations

import pytest
import torch
from family_models import VOCAB
from family_models import family_model as _model

from railsweep.engines import _cascade
from railsweep.engines._cascade import CascadeStepper, cascade_supported, common_prefix_len
from railsweep.engines._hf_compat import lm_step
from railsweep.engines._hf_decode import PaddedStepper
from railsweep.engines.base import Request, SamplingSpec
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
