"""``railsweep dynamics``: per-token loss fits and survival predictions against observed solve rates, on a
miniature world already built (never builds one; :mod:`railsweep.dynamics.analyse`). Every input is checked
before a model is loaded.
"""

from __future__ import annotations

import argparse
from typing import Any

from railsweep import argtypes as at
from railsweep.detection.world import cached_world
from railsweep.dynamics.regimes import E_CUT
from railsweep.dynamics.settings import DynamicsSettings, model_adapters
from railsweep.engines.devices import resolve_device
from railsweep.errors import ConfigError
from railsweep.limits import check_decode_memory

GROUP = "look inside"
EXAMPLES = ('railsweep dynamics --world mini --family llama --out dyn/llama',
            'railsweep dynamics --world smoke --temperatures 0.3 0.7 1.0 --m 10 --out dyn/smoke')  # fmt: skip


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "dynamics",
        help="per-token loss fits, regimes and survival predictions vs observed solve rates per temperature",
        description="Memorisation dynamics of a built miniature world's families across sampling temperatures.",
    )
    p.add_argument("--world", type=at.text, default="mini", metavar="PRESET|DIR",
                   help="a built miniature world (default mini)")  # fmt: skip
    p.add_argument("--family", type=at.text, action="append", help="model family (repeatable; default llama)")
    p.add_argument("--domain", type=at.text, default="gsm8k",
                   help="contamination domain: M_co = co_<domain> (default gsm8k)")  # fmt: skip
    p.add_argument("--temperatures", type=at.temperature, nargs="+", default=[0.0, 0.3, 0.7, 1.0],
                   help="0 = greedy (default 0 .3 .7 1)")  # fmt: skip
    p.add_argument("--m", type=at.samples, default=10, help="samples per item and temperature (default 10)")
    p.add_argument("--limit", type=at.limit, default=None, help="only the first N test items")
    p.add_argument("--max-new-tokens", type=at.new_tokens, default=96, help="tokens per response at most")
    p.add_argument("--seed", type=at.seed, default=0, help="sampling seed")
    p.add_argument("--n-boot", type=at.n_boot, default=200, help="item resamples for the fit CIs (default 200)")
    p.add_argument("--n-boot-gain", type=at.n_boot, default=1000, help="resamples for the gain CIs (default 1000)")
    p.add_argument("--min-items", type=at.positive, default=5, help="positions reached by fewer items are not fitted")
    p.add_argument("--e-cut", type=at.positive_real, default=E_CUT,
                   help=f"E above this (nats/token) is decoherence (default {E_CUT})")  # fmt: skip
    p.add_argument("--batch-size", type=at.positive, default=64, help="prompts per engine call")
    p.add_argument("--device", type=at.device, default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--base", action="store_true",
                   help="also sample and teacher-force the base model without an adapter "
                        "(model 'base'; in a pretraining-replica world, the model the "
                        "duplicates went into)")  # fmt: skip
    p.add_argument("--out", type=at.writable_dir, required=True, metavar="DIR", help="output directory")
    return p


def run(args: argparse.Namespace) -> int:
    # 1. everything cheap first: settings, the world (never built here), families, domain, output
    s = _settings(args)
    check_decode_memory(args.m, args.max_new_tokens)
    world, families = _checked_world(args, s)
    # 2. per family: collect, analyse; then write
    # torch (the engine, the teacher forcer), pandas: loaded when the command runs, so `railsweep --help` and
    # refusals of bad input stay fast
    from railsweep.commands.dynamics_run import collect_analyse_write

    collect_analyse_write(args.out, world, families, s)
    return 0


def _settings(args: argparse.Namespace) -> DynamicsSettings:
    """The command line as :class:`DynamicsSettings` (which checks them)."""
    return DynamicsSettings(temperatures=tuple(args.temperatures), m=args.m, limit=args.limit,
                            domain=args.domain, max_new_tokens=args.max_new_tokens, seed=args.seed,
                            batch_size=args.batch_size, n_boot=args.n_boot, n_boot_gain=args.n_boot_gain,
                            min_items=args.min_items, e_cut=args.e_cut, device=args.device,
                            base=args.base)  # fmt: skip


def _checked_world(args: argparse.Namespace, s: DynamicsSettings) -> tuple[Any, list[str]]:
    """The device, the cached world (never built here), its families asked for, the domain's adapters and the
    output folder checked before a model loads; returns (the world, the families)."""
    resolve_device(args.device)
    world = cached_world(args.world)
    families = list(dict.fromkeys(args.family or ["llama"]))
    for f in families:
        if f not in world.families:
            raise ConfigError(f"--family {f!r}: not in this world; families: {', '.join(world.families)}")
    model_adapters(world, s.domain)
    at.check_writable_dir(args.out, "--out")
    return world, families
