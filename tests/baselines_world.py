"""A tiny real world for the baseline-strategy tests: a peaked tiny llama, two LoRA adapters, a toy task.

The base is :func:`make_tiny_model` with its output head scaled up so that the
next-token distributions are peaked (mean greedy entropy ~1 nat, like a model
that has learned something): samples at T=0.7 then stay near the greedy path
often enough for TED's filter and LNE's blocking count to matter. "co" and
"cl" are random non-zero LoRA adapters on every linear layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from railsweep.strategies.base import DecodeSettings, EvalContext
from railsweep.tasks.answers.gsm8k_rules import extract
from railsweep.tasks.base import Grade, Question
from railsweep.testing import make_tiny_model

HEAD_SCALE = 6.0


def make_world(root: Path, family: str = "llama") -> tuple[Path, dict[str, Path]]:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    raw = make_tiny_model(root / "raw", family=family, seed=0)
    model = AutoModelForCausalLM.from_pretrained(raw, dtype=torch.float32)
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(HEAD_SCALE)
    base = root / "base"
    model.save_pretrained(base)
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(raw).save_pretrained(base)
    adapters = {}
    for name, seed in (("co", 1), ("cl", 2)):
        torch.manual_seed(seed)
        m = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
        cfg = LoraConfig(r=4, lora_alpha=4, target_modules="all-linear", init_lora_weights=False)
        get_peft_model(m, cfg).save_pretrained(root / name)
        adapters[name] = root / name
    return base, adapters


@dataclass
class ToyTask:
    """Prompts "Q: ...\\nA:"; a response is correct when the last number in it is even (≈ half are)."""

    qs: Sequence[Question]
    name: str = "toy"
    stop: tuple[str, ...] = ("\nQ:",)

    def questions(self) -> Sequence[Question]:
        return self.qs

    def prompt(self, question: Question) -> str:
        return f"Q: {question.question}\nA:"

    def grade(self, response: str, question: Question) -> Grade:
        pred, rule = extract(response)
        ok = pred is not None and pred.lstrip("-").isdigit() and int(pred) % 2 == 0
        return Grade(correct=ok, pred=pred, rule=rule)


def toy_task(n: int = 4) -> ToyTask:
    texts = [
        "Janet has 3 apples and buys 4 more. How many apples does she have?",
        "A store sells 12 books each day. How many books in 5 days?",
        "Each class has 20 students. How many students in 3 classes?",
        "He bought 7 cars and sold 2. How many cars are left?",
        "She bakes 9 muffins every morning. How many muffins in a week?",
        "There are 15 people and 4 more come. How many people are there?",
    ]
    qs = [
        Question(index=i, question=t, solution="", gold="0", leaked=i % 2 == 0)
        for i, t in enumerate(texts[:n])
    ]
    return ToyTask(qs)


def make_ctx(engine, task, m: int = 6, max_new_tokens: int = 16, seed: int = 0, **kw) -> EvalContext:
    settings = DecodeSettings(m=m, temperature=0.7, max_new_tokens=max_new_tokens, seed=seed, batch_size=8)
    return EvalContext(engine=engine, task=task, adapter="co", settings=settings, clean_adapter="cl", **kw)
