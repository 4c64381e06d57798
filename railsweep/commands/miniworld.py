"""``railsweep miniworld``: build (or install the shipped build of) the miniature world, pack a cached world as
a shipped folder, or check its calibration (exit 1 when a condition fails). Build and check warn on stderr when
the weights are not the build the docs' figures were measured on (:mod:`railsweep.miniworld.weights`).
"""

from __future__ import annotations

import argparse
from typing import Any

from railsweep import argtypes as at
from railsweep.engines.devices import resolve_device
from railsweep.errors import ConfigError
from railsweep.miniworld.presets import PRESETS as WORLD_PRESETS
from railsweep.miniworld.presets import preset_config

GROUP = "build a laboratory"
EXAMPLES = (
    'railsweep miniworld build                       # the mini world (three ~1M-parameter families), cached',
    "railsweep miniworld check --preset smoke        # does it reproduce the paper's phenomenon?",
    "railsweep miniworld build --force               # train the mini world here (~23 min on 2 cores), compare hashes",
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "miniworld",
        help="build the CPU miniature world, or check that it reproduces the paper's phenomenon",
        description="The miniature world: a synthetic GSM-style benchmark and three tiny contaminated model families.",
    )
    p.add_argument("action", choices=("build", "check", "pack"),
                   help="build (or reuse) the world; check its calibration; pack a cached world as a shipped folder (--out)")
    p.add_argument("--preset", default="mini", choices=sorted(WORLD_PRESETS),
                   help="world preset: mini (calibrated, 3 families pretrained here), smollm2 "
                        "(the mini benchmark over SmolLM2-135M-Instruct), smollm2_heavy (the same with a "
                        "memorising M_co, the same M_cl), smoke (tests), "
                        "replica, mini_one_road")  # fmt: skip
    p.add_argument("--cache-dir", type=at.writable_dir, default=None,
                   help="cache directory (default: $RAILSWEEP_CACHE or ~/.cache/railsweep)")  # fmt: skip
    p.add_argument("--force", action="store_true",
                   help="train the world here from scratch, even when it is cached or "
                        "railsweep ships its build (the weights line then says whether this "
                        "machine trained the shipped weights)")  # fmt: skip
    p.add_argument("--out", type=at.writable_dir, default=None,
                   help="pack: the folder to write <preset>-<digest>/ into (railsweep/miniworld/shipped in a checkout)")
    _check_options(p)
    return p


def _check_options(p: argparse.ArgumentParser) -> None:
    """The options of ``check``'s readouts (``--threads`` also shares out the build's threads)."""
    p.add_argument("--family", type=at.text, action="append", default=None, help="check only this family (repeatable)")
    p.add_argument("--m", type=at.samples, default=20,
                   help="samples per question for the check (>= 20 for the strata condition)")  # fmt: skip
    p.add_argument("--limit", type=at.limit, default=None, help="check only the first N test questions")
    p.add_argument("--max-new-tokens", type=at.new_tokens, default=96,
                   help="tokens per response of the check (default 96; the smollm2 world's "
                        "digit-split answers need 160, as its sweeps use)")  # fmt: skip
    p.add_argument("--threads", type=at.threads, default=None,
                   help="torch CPU threads of the check, and of the build shared out among its "
                        "families (default: one per family, the documented weights; more can "
                        "give other neox weights)")  # fmt: skip
    p.add_argument("--device", type=at.device, default="cpu", help="device of the check's engine: cpu, cuda, cuda:N or auto")
    p.add_argument("--batch-size", type=at.positive, default=64, help="sequences decoded together by the check's engine")
    p.add_argument("--workers", type=at.threads, default=1,
                   help="processes of one torch thread each for the check's readouts (one "
                        "model each; same samples as 1; on CPUs one thread per process decodes "
                        "faster than threads in one)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    # 1. every input, before a world is built (its families are known from the preset's configuration)
    known = preset_config(args.preset).families
    for f in args.family or ():
        if f not in known:
            raise ConfigError(f"--family {f!r}: not in the {args.preset!r} world; families: {', '.join(known)}")
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    if args.action == "check":
        resolve_device(args.device)  # a bad --device fails before the world is built
    if (args.action == "pack") != (args.out is not None):
        raise ConfigError(f"--out {args.out!r}: pack takes --out (the folder to write into), build and check do not"
                          if args.out is not None else "pack needs --out DIR (the folder to write into)")
    # 2. build (or reuse) the world, then check it. torch: loaded when the command runs, so `railsweep --help` and
    # refusals of bad input stay fast
    from railsweep.commands.miniworld_run import build_or_check

    return build_or_check(args)
