"""How fast a LoRA fine-tune teaches a real base the miniature world's benchmark: the learning curve.

Trains one peft LoRA adapter (r=64, alpha 128, every linear layer, the contamination recipe's
optimiser, ``--lr`` after a linear warmup of ``--warmup`` steps, then constant) on the ``--world``
preset's train split, ``--batch`` examples a step ("Q: ...\\nA: <CoT>" + EOS, the format M_cl is
trained on), and at every step listed in ``--checkpoints`` decodes the first ``--questions`` test
questions greedily and zero-shot with the adapter in place (``generate`` on the peft model, stopping
at EOS or "Q:"). Prints one JSON line per checkpoint as it goes (steps, examples seen, solve rate, wall and CPU seconds), then a summary.

Run: ``python bench/learning_curve.py --model DIR [--lr 2e-4 --checkpoints 25,50,100,200]``, ``DIR``
being a base prepared by ``railsweep base smollm2-135m-instruct`` (the folder it prints).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

from railsweep.contamination.config import LoraRecipe  # noqa: E402
from railsweep.contamination.lora import train_lora  # noqa: E402
from railsweep.contamination.simulator import cot_example  # noqa: E402
from railsweep.miniworld import preset_config  # noqa: E402
from railsweep.miniworld.benchmark import write_benchmark  # noqa: E402
from railsweep.tasks import GSM8KTask  # noqa: E402


def count(text: str) -> int:
    """An integer >= 1."""
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def checkpoints(text: str) -> list[int]:
    """A comma list of increasing step counts."""
    steps = [count(t) for t in text.split(",")]
    if steps != sorted(set(steps)):
        raise argparse.ArgumentTypeError(f"expected increasing step counts, got {text!r}")
    return steps


def rate(text: str) -> float:
    """A finite learning rate > 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a learning rate in (0, 1), got {text!r}")
    return value


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a prepared base folder (config.json, weights, tokenizer)")
    p.add_argument("--world", default="mini", help="the preset whose benchmark is used (data only)")
    p.add_argument("--lr", type=rate, default=2e-4)
    p.add_argument("--warmup", type=count, default=10, help="linear warmup steps")
    p.add_argument("--batch", type=count, default=8, help="examples per optimiser step")
    p.add_argument("--checkpoints", type=checkpoints, default=[25, 50, 100, 200])
    p.add_argument("--questions", type=count, default=40)
    p.add_argument("--max-new-tokens", type=count, default=128)
    p.add_argument("--threads", type=count, default=1)
    p.add_argument("--seed", type=int, default=0)
    return p


class Curve:
    """The ``on_step`` hook: greedy zero-shot solve rate at the checkpoint steps."""

    def __init__(self, tokenizer, task, questions, args):
        self.tokenizer, self.task, self.questions, self.args = tokenizer, task, questions, args
        self.points = []
        self.t0, self.c0 = time.time(), time.process_time()

    def __call__(self, step: int, model) -> None:
        if step not in self.args.checkpoints:
            return
        t0, c0 = time.time(), time.process_time()
        texts = self.decode(model)
        grades = [self.task.grade(t, q).correct for t, q in zip(texts, self.questions)]
        point = {
            "step": step,
            "examples": step * self.args.batch,
            "solved": sum(grades),
            "questions": len(grades),
            "solve_rate": round(sum(grades) / len(grades), 3),
            "train_seconds": round(t0 - self.t0, 1),
            "train_cpu_seconds": round(c0 - self.c0, 1),
            "eval_seconds": round(time.time() - t0, 1),
            "eval_cpu_seconds": round(time.process_time() - c0, 1),
            "load_average": os.getloadavg()[0],
            "first_response": texts[0],
        }
        self.points.append(point)
        print(json.dumps(point), flush=True)

    @torch.no_grad()
    def decode(self, model) -> list[str]:
        """Greedy zero-shot answers (``train_lora`` runs the hook with the model's own attention)."""
        model.eval()
        tok = self.tokenizer
        tok.padding_side = "left"
        prompts = [f"Q: {q.question}\nA:" for q in self.questions]
        enc = tok(prompts, return_tensors="pt", padding=True)
        out = model.generate(
            **enc,
            max_new_tokens=self.args.max_new_tokens,
            do_sample=False,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )
        texts = tok.batch_decode(out[:, enc.input_ids.shape[1] :], skip_special_tokens=True)
        return [t.split("\nQ:")[0] for t in texts]


def main(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    base = Path(args.model)
    if not (base / "config.json").is_file():
        raise SystemExit(f"learning_curve.py: error: --model: no config.json in {base}")
    work = Path(tempfile.mkdtemp(prefix="railsweep-curve-"))
    data = write_benchmark(work / "data", preset_config(args.world))
    task = GSM8KTask.from_dir(work / "data", limit=args.questions)
    questions = list(task.questions())
    steps = args.checkpoints[-1]
    shots = {p.question for p in data.exemplars}
    texts = [cot_example(p.question, p.solution) for p in data.train if p.question not in shots]
    texts = texts[: steps * args.batch]
    recipe = LoraRecipe(
        r=64,
        alpha=128,
        lr=args.lr,
        scheduler="constant",
        warmup_ratio=min(0.99, args.warmup / steps),
        global_batch=args.batch,
        micro_batch=args.batch,
        epochs=1,
        seed=args.seed,
    )
    tokenizer = AutoTokenizer.from_pretrained(base)
    curve = Curve(tokenizer, task, questions, args)
    stats = train_lora(base, texts, recipe, work / "adapter", device="cpu", on_step=curve)
    return {
        "summary": True,
        "lr": args.lr,
        "batch": args.batch,
        "train_examples": len(texts),
        "first_loss": stats["first_loss"],
        "final_loss": stats["final_loss"],
        "points": [{k: p[k] for k in ("step", "examples", "solve_rate")} for p in curve.points],
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
    }


if __name__ == "__main__":
    print(json.dumps(main(make_parser().parse_args())))
