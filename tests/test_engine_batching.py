"""The transformers engine's batch: a default that fills the machine, near-equal chunks, samples independent of both."""

from __future__ import annotations

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
