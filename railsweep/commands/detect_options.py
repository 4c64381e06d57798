"""The option groups of ``railsweep detect``: items, threshold, ngram, model side, perturb and report."""

from __future__ import annotations

import argparse

from railsweep import argtypes as at
from railsweep.commands.task_args import add_task_arguments


def add_detect_options(parser: argparse.ArgumentParser) -> None:
    """Every option group of ``railsweep detect`` but the detectors, the output folder and ``--n-boot``."""
    _add_item_options(parser)
    _add_threshold_options(parser)
    _add_ngram_options(parser)
    _add_model_options(parser)
    _add_perturb_options(parser)
    _add_report_options(parser)


def _add_item_options(parser: argparse.ArgumentParser) -> None:
    """Where the items come from: a built ``--world``, or test and control files (or a task file)."""
    src = parser.add_argument_group("items")
    src.add_argument("--world", type=at.text, metavar="PRESET|DIR",
                     help="a built miniature world (instead of --test)")  # fmt: skip
    src.add_argument("--family", type=at.text, action="append",
                     help="--world: model family (repeatable; default all)")  # fmt: skip
    src.add_argument("--domain", type=at.text, action="append",
                     help="--world: contamination domain (repeatable; default all)")  # fmt: skip
    src.add_argument("--n-control", type=at.positive, default=None,
                     help="--world: fresh control problems (default: as many as test items)")  # fmt: skip
    src.add_argument("--test", type=at.existing_file, metavar="FILE", help="test items, GSM8K-format JSONL")
    add_task_arguments(src, default="--test", task_dir_type=at.existing_dir,
                       task_dir_help="with --task: what the task file's {task_dir} stands for (its test split are "
                                     "the items)")  # fmt: skip
    src.add_argument("--leak-split", type=at.existing_file, metavar="FILE",
                     help='JSON {"leaked": [...]} marking leaked test items')  # fmt: skip
    src.add_argument("--control", type=at.existing_file, metavar="FILE",
                     help="control items known to be absent: GSM8K-format JSONL, or with --task rows in the "
                          "task's fields")  # fmt: skip


def _add_threshold_options(parser: argparse.ArgumentParser) -> None:
    """A fixed threshold, or the control flag rate it is calibrated to."""
    th = parser.add_argument_group("threshold")
    th.add_argument("--threshold", type=at.finite, default=None,
                    help="fixed threshold (default: calibrated on the control)")  # fmt: skip
    th.add_argument("--control-rate", type=at.fraction, default=0.01,
                    help="highest control flag rate when calibrating (default 0.01)")  # fmt: skip


def _add_ngram_options(parser: argparse.ArgumentParser) -> None:
    """The ngram detector's corpus, its tokens and hashing, and the optional Ray Data scan."""
    ng = parser.add_argument_group("ngram")
    ng.add_argument("--corpus", type=at.existing_file, nargs="+", default=[], metavar="FILE",
                    help="corpus files: .jsonl, .parquet, .txt")  # fmt: skip
    ng.add_argument("--text-field", type=at.text, default=None,
                    help="record field holding the text (default 'text', else all strings)")  # fmt: skip
    ng.add_argument("--n", type=at.ngram_order, nargs="+", default=[13], help="n-gram orders (default 13)")
    ng.add_argument("--fields", default="question+solution", choices=("question", "question+solution"),
                    help="what of each test item is matched against the corpus")  # fmt: skip
    ng.add_argument("--tokenizer", type=at.tokenizer, default=None,
                    help="use this tokenizer's ids instead of normalised words")  # fmt: skip
    ng.add_argument("--bits", type=at.hash_bits, default=64,
                    help="hash width (64; smaller only to test collisions)")  # fmt: skip
    ng.add_argument("--ray", action="store_true",
                    help="scan the corpus as a Ray Data job (same scores); a private local Ray unless --ray-address")
    ng.add_argument("--ray-address", type=at.text, metavar="ADDR",
                    help="--ray: join this Ray cluster (token auth)")  # fmt: skip


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    """The model-side detectors (loss, mink, cdd): the model and adapters, and cdd's decoding."""
    md = parser.add_argument_group("model side")
    md.add_argument("--model", type=at.model, metavar="DIR", help="base model directory")
    md.add_argument("--adapter", type=at.adapter, metavar="DIR",
                    help="the evaluated LoRA adapter (default: the base itself)")  # fmt: skip
    md.add_argument("--reference-adapter", type=at.adapter, metavar="DIR",
                    help="loss: the reference adapter (default: the base)")  # fmt: skip
    md.add_argument("--k", type=at.percentage, default=20.0,
                    help="mink: percentage of lowest-probability tokens")  # fmt: skip
    md.add_argument("--responses", type=at.existing_file, metavar="FILE",
                    help="cdd: a ted/identity cell's responses Parquet")  # fmt: skip
    md.add_argument("--fewshot", type=at.existing_file, metavar="FILE",
                    help="cdd without --responses or --task: the GSM8K few-shot exemplar JSON")  # fmt: skip
    md.add_argument("--cdd-alpha", type=at.fraction, default=0.05, help="cdd: edit-distance share alpha")
    md.add_argument("--cdd-xi", type=at.fraction, default=0.01, help="cdd: default threshold xi")
    md.add_argument("--m", type=at.samples, default=50, help="cdd decoding: samples per item")
    md.add_argument("--temperature", type=at.temperature, default=0.8, help="cdd decoding: temperature")
    md.add_argument("--max-new-tokens", type=at.new_tokens, default=256, help="cdd decoding: token cap")
    md.add_argument("--batch-size", type=at.positive, default=16, help="texts per forward pass")
    md.add_argument("--device", type=at.device, default="cpu", help="cpu, cuda or cuda:N")


def _add_perturb_options(parser: argparse.ArgumentParser) -> None:
    """The perturb detector's two per-question tables."""
    pt = parser.add_argument_group("perturb")
    pt.add_argument("--original", type=at.existing_file, metavar="FILE",
                    help="per-question Parquet of a cell on the original wording")  # fmt: skip
    pt.add_argument("--paraphrased", type=at.existing_file, metavar="FILE",
                    help="per-question Parquet of the same model on the paraphrase")  # fmt: skip


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    """``railsweep detect report``: the cell, the flags and how the clean subset is scored."""
    rp = parser.add_argument_group("report")
    rp.add_argument("--questions", type=at.existing_file, metavar="FILE",
                    help="per-question Parquet of the cell to report")  # fmt: skip
    rp.add_argument("--flags", type=at.existing_path, metavar="DIR|FILE",
                    help="a detect run's detections.parquet (or its directory)")  # fmt: skip
    rp.add_argument("--setting", type=at.text, help="the detector setting, when the run has several")
    rp.add_argument("--weight", type=at.fraction, default=None,
                    help="also report flagged items down-weighted to w")  # fmt: skip
    rp.add_argument("--readout", default="solve_prob", choices=("solve_prob", "r01"),
                    help="per-item readout a clean subset is scored on: sampled solve rate or greedy 0/1")
    rp.add_argument("--clean", type=at.existing_file, metavar="FILE",
                    help="clean cell's per-question Parquet: adds SA-PPG side by side")  # fmt: skip
    rp.add_argument("--seed", type=at.seed, default=0, help="bootstrap seed")
