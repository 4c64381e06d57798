"""Block-causal training attention computes the model's own attention: same loss, same gradients."""

from __future__ import annotations

import pytest
import torch
from family_models import VOCAB, family_model

from railsweep.errors import ConfigError
from railsweep.miniworld.pretrain import PretrainConfig
from railsweep.training import attention as train_attention
from railsweep.training.attention import resolve, training_attention


def _loss_and_grads(model, ids, labels):
    model.zero_grad(set_to_none=True)
    logits = model(input_ids=ids).logits
    loss = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, VOCAB), labels[:, 1:].reshape(-1), ignore_index=-100
    )
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("family", ["llama", "neox", "gemma3"])
def test_block_causal_training_gives_the_native_loss_and_gradients(family, monkeypatch):
    monkeypatch.setattr(train_attention, "BLOCK", 16)  # several blocks plus a short last one at 53 tokens
    model = family_model(family, seed=1).train()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, VOCAB, (3, 53), generator=g)
    labels = ids.clone()
    labels[2, 40:] = -100  # a right-padded row: padded positions carry no loss
    native_loss, native_grads = _loss_and_grads(model, ids, labels)
    with training_attention(model, "block_causal", "cpu", 53) as chosen:
        assert chosen == "block_causal"
        assert model.config._attn_implementation == train_attention.IMPLEMENTATION
        block_loss, block_grads = _loss_and_grads(model, ids, labels)
    assert model.config._attn_implementation == "sdpa"  # restored: what gets saved and served
    torch.testing.assert_close(block_loss, native_loss, atol=1e-5, rtol=1e-5)
    assert native_grads.keys() == block_grads.keys()
    for name, grad in native_grads.items():
        torch.testing.assert_close(block_grads[name], grad, atol=1e-5, rtol=1e-4, msg=name)


def test_block_causal_attention_does_not_look_ahead(monkeypatch):
    monkeypatch.setattr(train_attention, "BLOCK", 8)
    model = family_model("llama", seed=2).eval()
    ids = torch.randint(1, VOCAB, (1, 30), generator=torch.Generator().manual_seed(3))
    changed = ids.clone()
    changed[0, 20:] = (changed[0, 20:] % (VOCAB - 1)) + 1  # other tokens after position 19
    with torch.no_grad(), training_attention(model, "block_causal", "cpu", 30):
        a, b = model(input_ids=ids).logits, model(input_ids=changed).logits
    torch.testing.assert_close(a[0, :20], b[0, :20])
    assert not torch.allclose(a[0, 20:], b[0, 20:])


def test_auto_is_block_causal_on_a_cpu_only_where_supported():
    model = family_model("llama")
    assert resolve("auto", model, "cpu", 64) == "block_causal"
    assert resolve("auto", model, "cuda:0", 64) == "native"
    windowed = family_model("gemma3", sliding_window=16)
    assert resolve("auto", windowed, "cpu", 64) == "native"
    with pytest.raises(ConfigError, match="block_causal"):
        resolve("block_causal", windowed, "cpu", 64)
    with pytest.raises(ConfigError, match="'flash'"):
        resolve("flash", model, "cpu", 64)
    with pytest.raises(ConfigError, match="attention"):
        PretrainConfig(attention="flash")


def test_bf16_on_a_cpu_without_native_bf16_is_warned_about(monkeypatch):
    import torch

    from railsweep.training import attention as ta

    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    assert "fp32" in ta.slow_bf16_warning("cpu")
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    monkeypatch.setattr(ta, "_cpu_flags", lambda: {"avx512f", "avx512_bf16"})
    assert ta.slow_bf16_warning("cpu") is None
    monkeypatch.setattr(ta, "_cpu_flags", lambda: {"avx512f"})
    assert ta.slow_bf16_warning("cpu") is not None
    assert ta.slow_bf16_warning("cuda") is None
