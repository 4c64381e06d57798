"""``railsweep data``: fetch a benchmark's files, each checked against its pinned sha256
(:mod:`railsweep.tasks.data.fetch`)."""

from __future__ import annotations

import argparse
from typing import Any

from railsweep import argtypes as at
from railsweep.tasks.data.fetch import GITHUB_RAW, fetch_gsm8k

GROUP = "build a laboratory"
EXAMPLES = (
    'railsweep data gsm8k                      # writes data/gsm8k and data/gsm8k_paraphrase',
    'railsweep data gsm8k --out ~/benchmarks',
    'railsweep data gsm8k --mirror file:///srv/github-raw   # an offline copy laid out like GitHub',
)
DATASETS = {"gsm8k": fetch_gsm8k}


def mirror(value: str) -> str:
    if not value.startswith(("https://", "http://", "file://")):
        raise argparse.ArgumentTypeError(f"{value!r} is not an http(s):// or file:// address")
    return value


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "data",
        help="fetch GSM8K, its CoT exemplars and the PQ paraphrases, checked byte for byte",
        description=(
            "Writes GSM8K (test and train), the 8-shot CoT exemplars and the PQ paraphrases under --out, each\n"
            "file checked against its pinned sha256 (nothing is written unless all of them match). Every other\n"
            "command reads that folder: --task-dir data/gsm8k, or found by itself when you run from the folder\n"
            "that holds data/. Sources and licences: docs/tasks.md, 'GSM8K and PQ'."
        ),
    )
    p.add_argument("dataset", choices=sorted(DATASETS), help="what to fetch")
    p.add_argument("--out", type=at.writable_dir, default="data", help="folder to write into")
    p.add_argument("--mirror", type=mirror, default=GITHUB_RAW, help="where the sources' raw files are served")
    return p


def run(args: argparse.Namespace) -> int:
    done = DATASETS[args.dataset](args.out, args.mirror)
    for name, how in done.items():
        print(f"[data] {how}: {args.out.rstrip('/')}/{name}")
    print(f"[data] {args.dataset}: {len(done)} files checked against their pinned sha256 in {args.out}")
    return 0
