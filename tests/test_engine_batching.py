"""The transformers engine's batch: a default that fills the machine, near-equal chunks, samples independent of both."""

from __future__ import annotations

import dataclasses

import torch

from railsweep.engines import transformers_engine as te
from railsweep.engines.base import Request, SamplingSpec
from railsweep.engines.config import EngineConfig
from railsweep.engines.factory import build_engine
from railsweep.engines.transformers_engine import TransformersEngine, default_batch_limits, kv_bytes_per_token


def _requests(n_prompts: int, n: int) -> list[Request]:
    return [
        Request(f"Q: Sam has {i} eggs. A:", SamplingSpec(n=n, temperature=0.8, seed=i, max_new_tokens=6))
        for i in range(n_prompts)
    ]


def test_default_cpu_batch_is_320_rows_without_a_token_cap(tiny_model_dir):
    engine = TransformersEngine(tiny_model_dir, device="cpu")
    assert (engine.max_batch_size, engine.max_batch_tokens) == (te.CPU_BATCH_ROWS, None) == (320, None)
    assert build_engine(EngineConfig(model=str(tiny_model_dir), device="cpu")).max_batch_size == 320


def test_gpu_default_batch_is_capped_by_half_the_free_memory_in_kv_cache():
    rows, tokens = default_batch_limits(torch.device("cuda"), kv_bytes_per_token=4096, free_bytes=8 * 2**30)
    assert rows == 1024 and tokens == 2**30 // 1024  # half of 8 GiB / 4 KiB per token


def test_kv_bytes_per_token_counts_keys_and_values_of_every_layer(tiny_model_dir):
    engine = TransformersEngine(tiny_model_dir, device="cpu", dtype="float32")
    c = engine.model.config
    heads = getattr(c, "num_key_value_heads", None) or c.num_attention_heads
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    assert kv_bytes_per_token(c, torch.float32) == 2 * c.num_hidden_layers * heads * head_dim * 4
    assert kv_bytes_per_token(c, torch.bfloat16) == kv_bytes_per_token(c, torch.float32) // 2


def test_rows_of_one_call_are_split_into_near_equal_batches_with_the_same_samples(
    tiny_model_dir, monkeypatch
):
    requests = _requests(7, 1)
    whole = TransformersEngine(tiny_model_dir, device="cpu", dtype="float32").generate(requests)
    small = TransformersEngine(tiny_model_dir, device="cpu", dtype="float32", max_batch_size=3)
    sizes = []
    decode = small._decode
    monkeypatch.setattr(
        small, "_decode", lambda a, k, batch: (sizes.append(len(batch)), decode(a, k, batch))[1]
    )
    chunked = small.generate(requests)
    assert sizes == [3, 2, 2]  # not 3 + 3 + 1
    assert [[s.token_ids for s in c.samples] for c in chunked] == [
        [s.token_ids for s in c.samples] for c in whole
    ]


def test_patched_decoding_budgets_two_kv_caches_from_the_memory_it_finds():
    cpu = torch.device("cpu")
    quarter = int(te.CPU_PATCHED_KV_FRACTION * 8 * 2**30)
    assert te.patched_token_budget(cpu, 4096, None, available=8 * 2**30) == quarter // (2 * 4096)
    assert te.patched_token_budget(cpu, 4096, 10_000) == 5_000  # half a given cap: two caches
    assert te.patched_token_budget(torch.device("cuda"), 4096, None) is None


def test_patched_decoding_is_split_within_its_token_budget_with_the_same_samples(tiny_model_dir, monkeypatch):
    from railsweep.interventions import NeuronPatchSpec

    spec = NeuronPatchSpec(neurons=((0, (0, 1)),), reference_adapter=None)
    requests = [dataclasses.replace(r, intervention=spec) for r in _requests(7, 1)]
    whole = TransformersEngine(tiny_model_dir, device="cpu", dtype="float32")
    whole.patched_batch_tokens = None
    capped = TransformersEngine(tiny_model_dir, device="cpu", dtype="float32")
    widest = max(len(capped.tokenizer(r.prompt)["input_ids"]) for r in requests) + 6
    capped.patched_batch_tokens = 3 * widest
    sizes = []
    decode = capped._decode
    monkeypatch.setattr(capped, "_decode", lambda a, k, batch: (sizes.append(len(batch)), decode(a, k, batch))[1])
    got = capped.generate(requests)
    assert max(sizes) <= 3 and sum(sizes) == 7
    assert [[s.token_ids for s in c.samples] for c in got] == [
        [s.token_ids for s in c.samples] for c in whole.generate(requests)
    ]


def test_a_patched_batch_on_the_shared_prefix_cache_counts_the_common_prefix_once(tiny_model_dir, monkeypatch):
    from railsweep.engines import _cascade
    from railsweep.interventions import NeuronPatchSpec

    spec = NeuronPatchSpec(neurons=((0, (0, 1)),), reference_adapter=None)
    context = " ".join(["Sam has eggs and Tom has apples ."] * 3)  # a long shared context, as few-shot prompts have
    requests = [Request(f"{context} Q: {i} eggs ? A:", SamplingSpec(n=4, temperature=0.8, seed=i, max_new_tokens=6),
                        intervention=spec) for i in range(3)]  # fmt: skip
    engine = TransformersEngine(tiny_model_dir, device="cpu", dtype="float32")
    ids = engine.tokenizer([r.prompt for r in requests])["input_ids"]
    shared = _cascade.common_prefix_len(ids)
    rest = max(len(p) for p in ids) - shared + 6
    assert shared >= _cascade.CascadeStepper.MIN_PREFIX > rest
    engine.patched_batch_tokens = budget = shared + 5 * rest  # five rows' own tokens beside one shared prefix
    sizes, held = [], []
    decode, prefill = engine._decode, _cascade.CascadeStepper.prefill

    def recorded_prefill(stepper, prompts):
        logits = prefill(stepper, prompts)
        held.append(stepper.cache.prefix_len + stepper.cache.slots * stepper.cache.capacity)
        return logits

    monkeypatch.setattr(_cascade.CascadeStepper, "prefill", recorded_prefill)
    monkeypatch.setattr(engine, "_decode", lambda a, k, batch: (sizes.append(len(batch)), decode(a, k, batch))[1])
    engine.generate(requests)
    assert sizes == [5, 5, 2]
    assert held and max(held) <= budget  # each model's cache: the prefix once, then every slot's capacity
    padded = TransformersEngine(tiny_model_dir, device="cpu", dtype="float32", attention="padded")
    padded.patched_batch_tokens = budget
    monkeypatch.setattr(padded, "_decode", lambda a, k, batch: (sizes.append(len(batch)), [])[1])
    sizes.clear()
    padded.generate(requests)  # batches only: the stubbed decode returns no samples
    assert sizes and max(sizes) < 3  # whole prompts per row there: the same budget holds fewer rows
