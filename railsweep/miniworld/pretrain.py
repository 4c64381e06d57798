"""Pretraining a tiny base model from scratch on the world's train split.

Steps:
1. tokenize every training text and concatenate them (separated as in the few-shot prompt: "Q: ...\\nA:
   ...\\n\\n"), reshuffled each epoch;
2. cut the stream into blocks of ``block_size`` tokens, each opened by BOS, so the model sees problems at
   every position a few-shot prompt puts them;
3. AdamW with linear warmup and cosine decay for a fixed number of steps, in fp32 or in bf16 mixed precision
   (fp32 weights and optimizer, bf16 matmuls under ``torch.autocast``; ~1.35x faster on a CPU with
   AVX512-BF16).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from railsweep.errors import ConfigError
from railsweep.training.attention import ATTENTIONS, slow_bf16_warning, training_attention


@dataclass(frozen=True)
class PretrainConfig:
    steps: int = 700
    batch_size: int = 16  # blocks per step
    block_size: int = 384  # tokens per block
    lr: float = 3e-3
    warmup: int = 50
    weight_decay: float = 0.01
    seed: int = 0
    precision: str = "fp32"  # or "bf16": mixed precision (fp32 weights, bf16 autocast)
    attention: str = "auto"  # railsweep.training.attention: block-causal on a CPU, or "native" / "block_causal"

    def __post_init__(self) -> None:
        if self.precision not in ("fp32", "bf16"):
            raise ConfigError(f"pretraining precision must be 'fp32' or 'bf16', got {self.precision!r}")
        if self.attention not in ATTENTIONS:
            raise ConfigError(
                f"pretraining attention must be one of {', '.join(ATTENTIONS)}; got {self.attention!r}"
            )
        for name in ("steps", "batch_size", "block_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"pretraining {name} must be >= 1, got {getattr(self, name)}")


def pretrain(model, tokenizer, texts: Sequence[str], config: PretrainConfig, log=None, progress=None) -> dict:
    """Train ``model`` in place on ``texts``; returns {"steps", "tokens", "final_loss"}. ``progress(done,
    total)`` (a :class:`railsweep.training.progress.StepReport`) hears the optimiser steps."""
    import torch

    if not texts:
        raise ConfigError("pretraining needs at least one text")
    rng = random.Random(config.seed)
    torch.manual_seed(config.seed)
    encoded = [tokenizer(t + "\n\n", add_special_tokens=False).input_ids for t in texts]
    bos = tokenizer.bos_token_id
    need = config.batch_size * (config.block_size - 1)

    def stream():
        while True:
            order = list(range(len(encoded)))
            rng.shuffle(order)
            for i in order:
                yield from encoded[i]

    tokens = stream()
    opt = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay, betas=(0.9, 0.95)
    )

    def lr_at(step: int) -> float:
        if step < config.warmup:
            return config.lr * (step + 1) / config.warmup
        progress = (step - config.warmup) / max(1, config.steps - config.warmup)
        return config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))

    device = next(model.parameters()).device
    if config.precision == "bf16" and log is not None and (warning := slow_bf16_warning(device.type)):
        log(f"warning: {warning}")
    model.train()
    with training_attention(model, config.attention, device.type, config.block_size) as attention:
        loss_ema = _train(model, tokens, opt, lr_at, bos, need, device, config, log, progress)
    model.eval()
    tokens = config.steps * config.batch_size * config.block_size
    return {"steps": config.steps, "tokens": tokens, "final_loss": loss_ema, "attention": attention}


def _train(model, tokens, opt, lr_at, bos: int, need: int, device, config: PretrainConfig, log, progress) -> float:
    import torch

    loss_ema = None
    t0 = time.time()
    if progress is not None:
        progress(0, config.steps)
    for step in range(config.steps):
        flat = [next(tokens) for _ in range(need)]
        batch = torch.tensor(flat, dtype=torch.long).view(config.batch_size, config.block_size - 1)
        batch = torch.cat([torch.full((config.batch_size, 1), bos, dtype=torch.long), batch], dim=1)
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=config.precision == "bf16"):
            loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss_ema = loss.item() if loss_ema is None else 0.95 * loss_ema + 0.05 * loss.item()
        if progress is not None:
            progress(step + 1, config.steps)
        if log is not None and (step % 100 == 0 or step == config.steps - 1):
            elapsed = max(1e-9, time.time() - t0)
            rate = (step + 1) * config.batch_size * config.block_size / elapsed
            # no ETA here: the build's one ETA is its combined line (build_progress), which knows the other families
            log(f"pretrain step {step}/{config.steps} loss {loss_ema:.3f} ({rate:.0f} tokens/s)")
    return loss_ema


def save_model(model, tokenizer, out_dir: Path) -> None:
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
