"""``railsweep contaminate``: train M_cl and M_co LoRA adapters for one base model (method.md §5); writes
``OUT/clean``, ``OUT/co_<domain>``, ``OUT/leak_split.json`` and ``OUT/manifest.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from railsweep import argtypes as at
from railsweep.contamination import ContaminationConfig, LoraRecipe, contaminate_family
from railsweep.contamination.config import PRECISIONS
from railsweep.training.attention import ATTENTIONS

GROUP = "build a laboratory"
# old option names, accepted with a warning until the next release (railsweep.argtypes.renamed_options)
RENAMED = {"--base": "--model", "--data-dir": "--task-dir", "--r": "--lora-r", "--alpha": "--lora-alpha"}
EXAMPLES = (
    'railsweep contaminate --model meta-llama/Llama-2-7b-hf --task-dir data/gsm8k --out runs/contamination/llama2',
    'railsweep contaminate --model ./models/base --task-dir data/gsm8k --filler corpus.txt --domain gsm8k --epochs 3 --out runs/c',
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "contaminate",
        help="train the clean (M_cl) and contaminated (M_co) LoRA adapters of a base model",
        description="The contamination simulator of method.md §5 (peft LoRA).",
    )
    p.add_argument("--model", type=at.model, required=True, help="base model directory (transformers format) or hub id")
    p.add_argument("--out", type=at.writable_dir, required=True, help="output directory for the adapters and the manifest")
    add_data_args(p)
    return p


def add_data_args(p: argparse.ArgumentParser) -> None:
    """Data and recipe options shared with ``sweeps/contaminate.py``."""
    p.add_argument("--task-dir", type=at.existing_dir, required=True, help="GSM8K-format directory with train.jsonl and test.jsonl")
    p.add_argument("--pq", type=at.existing_file, default=None,
                   help="paraphrase file pq_test.jsonl (default: looked up next to the data)")  # fmt: skip
    p.add_argument("--filler", type=at.text, default="openorca",
                   help="'openorca' (Hugging Face hub) or a local .txt/.jsonl file")  # fmt: skip
    p.add_argument("--domain", action="append", choices=("gsm8k", "pq"), default=None,
                   help="repeatable; default both")  # fmt: skip
    p.add_argument("--n-filler", type=at.count, default=1840, help="filler texts in each training mix (method.md §5)")
    p.add_argument("--n-train", type=at.count, default=660, help="GSM8K train problems in the clean mix")
    p.add_argument("--n-leak", type=at.count, default=660, help="test items leaked into the contaminated mix")
    p.add_argument("--seed", type=at.seed, default=0, help="seed of the leak split, the mixes and training")
    p.add_argument("--lora-r", type=at.positive, default=64, help="LoRA rank")
    p.add_argument("--lora-alpha", type=at.positive, default=128, help="LoRA alpha (the adapter's scale is alpha / r)")
    p.add_argument("--lr", type=at.positive_real, default=2e-4, help="learning rate")
    p.add_argument("--epochs", type=at.positive, default=5, help="passes over each mix")
    p.add_argument("--global-batch", type=at.positive, default=32, help="examples per optimiser step")
    p.add_argument("--micro-batch", type=at.positive, default=8, help="examples per forward pass (gradient accumulation makes up the rest)")
    p.add_argument("--max-length", type=at.positive, default=512, help="tokens per training example")
    p.add_argument("--precision", default="auto", choices=PRECISIONS, help="training precision: auto = bf16 on a GPU that has it, else fp32")
    p.add_argument("--attention", default="auto", choices=ATTENTIONS,
                   help="training attention: auto = block-causal on a CPU, the model's own on a GPU")
    p.add_argument("--device", type=at.device, default="auto", help="cpu, cuda, cuda:N or auto (a GPU when there is one)")


def config_from_args(args: argparse.Namespace):
    recipe = LoraRecipe(r=args.lora_r, alpha=args.lora_alpha, lr=args.lr, epochs=args.epochs,
                        global_batch=args.global_batch, micro_batch=args.micro_batch,
                        max_length=args.max_length, precision=args.precision, attention=args.attention,
                        seed=args.seed)  # fmt: skip
    return ContaminationConfig(n_filler=args.n_filler, n_train=args.n_train, n_leak=args.n_leak,
                               domains=tuple(args.domain or ("gsm8k", "pq")), filler=args.filler,
                               seed=args.seed, recipe=recipe)  # fmt: skip


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    manifest = contaminate_family(args.model, args.task_dir, args.out, config, pq_path=args.pq, device=args.device,
                                  log=print, store=Path(args.out) / "lora-runs")  # fmt: skip
    print(json.dumps({"adapters": manifest["adapters"], "leak_split": manifest["leak_split"]}))
    return 0
