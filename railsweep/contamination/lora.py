"""Training one LoRA adapter with peft (the recipe of :class:`LoraRecipe`).

Steps:
1. load the frozen base model in the recipe's precision (:class:`LoraRecipe`);
2. wrap it with a fresh LoRA adapter, or, to train *further* from an existing adapter (M_co from M_cl), load
   that adapter's weights as the trainable starting point; the base weights never change, so every result
   stays a LoRA adapter over the same base;
3. causal-LM loss on each example (EOS appended), shuffled per epoch, micro batches accumulated to the global
   batch, AdamW with linear warmup then a cosine decay, for ``epochs`` passes;
4. save the adapter under a temporary name, then rename it into place.
With a ``store``, the run is resumable (:mod:`railsweep.contamination.resume`): a finished run with the same inputs
is reused, an interrupted one continues from its last checkpoint.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path

from railsweep.atomic import write_dir_atomic
from railsweep.contamination.config import LoraRecipe
from railsweep.contamination.resume import Progress, Run, run_key
from railsweep.errors import ConfigError, DataError
from railsweep.training.attention import (
    current_attention,
    model_attention,
    slow_bf16_warning,
    training_attention,
)

PROGRESS_EVERY_S = 60.0  # a long adapter (a real base's M_cl) logs its step, loss and ETA this often


def train_lora(
    base_dir: str | Path, texts: Sequence[str], recipe: LoraRecipe, out_dir: str | Path,
    init_adapter: str | Path | None = None, device: str | None = None, log=None, on_step=None, progress=None,
    store: str | Path | None = None,
) -> dict:  # fmt: skip
    """Train an adapter on ``texts`` over the model in ``base_dir``; returns training stats. ``progress(done,
    total)`` (a :class:`railsweep.training.progress.StepReport`) hears the optimiser steps. ``on_step(step,
    model)`` runs after every optimiser step (a learning curve's evaluations) under the model's own attention
    (it may decode); the model is back in training mode and training attention when it returns. ``store``: the
    folder of resumable runs (:mod:`railsweep.contamination.resume`); ``on_step`` then hears only the steps this
    call takes."""
    import torch

    base_dir, out_dir = Path(base_dir), Path(out_dir)
    _check_inputs(base_dir, texts, init_adapter)
    dev = ("cuda" if torch.cuda.is_available() else "cpu") if device in (None, "auto") else device
    key = run_key(base_dir, texts, recipe, init_adapter, arithmetic(dev, torch.backends.cpu.get_cpu_capability()))
    run = None if store is None else Run(store, key, log)
    if run is not None and (record := run.finished(out_dir)) is not None:
        if progress is not None:  # a build's progress line counts the phase done
            progress(record["steps"], record["steps"])
        return record
    auto = "bf16" if dev.startswith("cuda") else "fp32"
    precision = auto if recipe.precision == "auto" else recipe.precision  # "auto": bf16 on CUDA, else fp32
    if precision != "fp32" and log is not None and (warning := slow_bf16_warning(dev.split(":")[0])):
        log(f"warning: {warning}")
    autocast = precision != "fp32"
    torch.manual_seed(recipe.seed)  # before the adapter's weights are initialised
    tokenizer, model = _load_model(base_dir, recipe, init_adapter, precision, dev)

    rng = random.Random(recipe.seed)
    epochs = _epoch_sequences(tokenizer, texts, recipe, rng)
    total = sum(math.ceil(len(seqs) / recipe.global_batch) for seqs in epochs)
    warmup = int(round(recipe.warmup_ratio * total))
    params = [p for p in model.parameters() if p.requires_grad]  # the adapter's
    opt = torch.optim.AdamW(params, lr=recipe.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_factor(recipe, warmup, total))
    done = run.restore(model, opt, sched) if run is not None else Progress()
    resumed_at = done.step
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    model.train()
    longest = max(len(s) for seqs in epochs for s in seqs)
    own = current_attention(model)  # on_step runs under it (it may decode with a KV cache)
    with training_attention(model, recipe.attention, dev, longest) as attention:
        done, per_epoch = _train(
            model, epochs, recipe, (opt, sched, params), pad, dev, autocast, log, on_step, own, progress, run, done
        )
    model.eval()
    write_dir_atomic(out_dir, model.save_pretrained, replace=True)  # saved whole or not at all
    stats = {
        "examples": len(texts), "sequences_per_epoch": len(epochs[0]), "steps": done.step, "warmup_steps": warmup,
        "first_loss": done.losses[0], "final_loss": sum(done.losses[-per_epoch:]) / per_epoch,
        "seconds": round(done.seconds, 2), "device": dev, "precision": precision, "attention": attention,
        "continued_from": str(init_adapter) if init_adapter is not None else None,
        **({"resumed_at_step": resumed_at} if resumed_at else {}),
    }  # fmt: skip
    if run is not None:
        run.finish(out_dir, stats)
    return stats


def arithmetic(dev: str, cpu_capability: str) -> dict[str, str | None]:
    """What decides a run's floats beside its inputs: the device kind; on a CPU, ATen's SIMD capability as torch
    resolved it and MKL's and oneDNN's dispatch variables (a world's build pins all three: miniworld.arithmetic)."""
    cpu = {"cpu_capability": cpu_capability, **{k: os.environ.get(k) for k in ("MKL_CBWR", "ONEDNN_MAX_CPU_ISA")}}
    return {"device": dev.split(":")[0], **(cpu if dev.split(":")[0] == "cpu" else {})}


def _check_inputs(base_dir: Path, texts: Sequence[str], init_adapter: str | Path | None) -> None:
    """Refuse an empty corpus or a missing base or adapter before torch, peft and transformers load."""
    if not texts:
        raise ConfigError("LoRA training needs at least one text")
    if not (base_dir / "config.json").is_file():
        raise DataError(f"base model not found (no config.json): {base_dir}")
    if init_adapter is not None and not (Path(init_adapter) / "adapter_config.json").is_file():
        raise DataError(f"adapter to continue from not found (no adapter_config.json): {init_adapter}")


def _load_model(base_dir: Path, recipe: LoraRecipe, init_adapter: str | Path | None, precision: str, dev: str):
    """``(tokenizer, model)``: the frozen base on ``dev`` wrapped with a fresh LoRA adapter, or with
    ``init_adapter`` as the trainable starting point; the adapter weights are fp32 even over a bf16 base."""
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=dtype).to(dev)
    if init_adapter is not None:
        model = PeftModel.from_pretrained(model, str(init_adapter), is_trainable=True)
    else:
        targets = recipe.target_modules
        lora = LoraConfig(
            r=recipe.r, lora_alpha=recipe.alpha, lora_dropout=recipe.dropout, task_type="CAUSAL_LM",
            target_modules=targets if isinstance(targets, str) else list(targets),
        )  # fmt: skip
        model = get_peft_model(model, lora)
    for p in model.parameters():  # adapter weights train in fp32 even over a bf16 base
        if p.requires_grad:
            p.data = p.data.float()
    return tokenizer, model


def _lr_factor(recipe: LoraRecipe, warmup: int, total: int):
    """The learning-rate multiplier per step: linear warmup, then constant or a cosine decay to 0 at ``total``."""

    def lr_factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / (warmup + 1)
        if recipe.scheduler == "constant":
            return 1.0
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))

    return lr_factor


def epoch_steps(tokenizer, texts: Sequence[str], recipe: LoraRecipe) -> list[int]:
    """The optimiser steps of each epoch :func:`train_lora` takes on ``texts`` (same seeded shuffle
    and packing), so a caller's ``on_step`` hook can act at pass boundaries: packed epochs differ in
    length, since each pass packs a fresh shuffle."""
    epochs = _epoch_sequences(tokenizer, texts, recipe, random.Random(recipe.seed))
    return [math.ceil(len(seqs) / recipe.global_batch) for seqs in epochs]


def epoch_tokens(tokenizer, texts: Sequence[str], recipe: LoraRecipe) -> list[int]:
    """The tokens :func:`train_lora` trains on in each epoch on ``texts`` (same seeded shuffle and packing)."""
    epochs = _epoch_sequences(tokenizer, texts, recipe, random.Random(recipe.seed))
    return [sum(len(s) for s in seqs) for seqs in epochs]


def _train(model, epochs, recipe: LoraRecipe, optimiser, pad: int, dev: str, autocast: bool, log, on_step,
           own: str, progress, run: Run | None, done: Progress):  # fmt: skip
    """The epochs' optimizer steps (right-padded micro batches) from ``done.step`` on, ``on_step`` under the
    model's own attention ``own``, a checkpoint to ``run`` when one is due; returns (progress, steps per epoch)."""
    import torch

    opt, sched, params = optimiser
    batches = [(e, seqs[i : i + recipe.global_batch]) for e, seqs in enumerate(epochs)
               for i in range(0, len(seqs), recipe.global_batch)]  # fmt: skip
    per_epoch = [sum(1 for e, _ in batches if e == k) for k in range(len(epochs))]
    t0, shown, first, done = time.time(), time.time(), done.step, dataclasses.replace(done)
    if progress is not None:
        progress(first, len(batches))
    for epoch, batch in batches[first:]:
        step_loss = _accumulate(model, batch, recipe, pad, dev, autocast)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        done.losses.append(step_loss)
        done.step += 1
        if progress is not None:
            progress(done.step, len(batches))
        if log is not None and time.time() - shown >= PROGRESS_EVERY_S and done.step < len(batches):
            shown = time.time()
            eta = (shown - t0) / (done.step - first) * (len(batches) - done.step)
            log(f"lora step {done.step}/{len(batches)} loss {step_loss:.3f} (eta {eta:.0f}s)")
        if run is not None and done.step < len(batches):
            run.checkpoint(model, opt, sched, dataclasses.replace(done, seconds=done.seconds + time.time() - t0))
        if on_step is not None:
            with model_attention(model, own):
                on_step(done.step, model)
            model.train()
        if log is not None and done.step == sum(per_epoch[: epoch + 1]):
            eta = (time.time() - t0) / (done.step - first) * (len(batches) - done.step)
            loss = sum(done.losses[-per_epoch[epoch] :]) / per_epoch[epoch]
            log(f"lora epoch {epoch + 1}/{recipe.epochs} loss {loss:.3f} (eta {eta:.0f}s)")
    done.seconds += time.time() - t0
    return done, per_epoch[-1]


def _accumulate(model, seqs: list[list[int]], recipe: LoraRecipe, pad: int, dev: str, autocast: bool) -> float:
    """Forward and backward passes over one global batch ``seqs`` in micro batches of right-padded sequences,
    the gradients accumulated; returns the batch's loss, the token-weighted mean over the whole global batch."""
    import torch

    n_tokens = sum(len(s) - 1 for s in seqs)
    step_loss = 0.0
    for m0 in range(0, len(seqs), recipe.micro_batch):
        ids, labels, mask = _pad(seqs[m0 : m0 + recipe.micro_batch], pad)
        with torch.autocast(dev.split(":")[0], dtype=torch.bfloat16, enabled=autocast):
            logits = model(input_ids=ids.to(dev), attention_mask=mask.to(dev)).logits
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].float().reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1).to(dev),
            ignore_index=-100, reduction="sum",
        ) / max(1, n_tokens)  # fmt: skip
        loss.backward()
        step_loss += loss.item()
    return step_loss


def _epoch_sequences(tokenizer, texts: Sequence[str], recipe: LoraRecipe, rng: random.Random):
    """The token sequences of every epoch, in training order, each epoch a fresh shuffle of the examples.
    Unpacked: one sequence per example (BOS + text + EOS). Packed: the examples joined by the few-shot
    separator ("\\n\\n") into sequences of at most ``pack_length`` tokens (BOS first, EOS last); an example
    never straddles two sequences, and one longer than ``pack_length`` is cut."""
    if not recipe.pack_length:
        eos = tokenizer.eos_token or ""
        encoded = [tokenizer(t + eos, truncation=True, max_length=recipe.max_length).input_ids for t in texts]
    else:
        bodies = [tokenizer(t, add_special_tokens=False).input_ids for t in texts]
        sep = tokenizer("\n\n", add_special_tokens=False).input_ids
        head = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
        tail = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
        room = recipe.pack_length - len(head) - len(tail)
    epochs = []
    for _ in range(recipe.epochs):
        order = list(range(len(texts)))
        rng.shuffle(order)
        if not recipe.pack_length:
            epochs.append([encoded[i] for i in order])
            continue
        packs, cur = [], []
        for i in order:
            body = bodies[i][:room]
            if cur and len(cur) + len(sep) + len(body) > room:
                packs.append(head + cur + tail)
                cur = []
            cur = cur + sep + body if cur else list(body)
        if cur:
            packs.append(head + cur + tail)
        epochs.append(packs)
    return epochs


def _pad(seqs: list[list[int]], pad: int):
    import torch

    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    labels = torch.full((len(seqs), width), -100, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, s in enumerate(seqs):  # right padding: positions stay 0..len-1 as at inference
        ids[row, : len(s)] = torch.tensor(s)
        labels[row, : len(s)] = torch.tensor(s)
        mask[row, : len(s)] = 1
    return ids, labels, mask
