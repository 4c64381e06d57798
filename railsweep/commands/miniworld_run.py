"""What ``railsweep miniworld`` does once its options are checked (:func:`build_or_check`). Loads torch and
transformers (the command imports it when it runs)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from railsweep.errors import ConfigError
from railsweep.miniworld import shipped
from railsweep.miniworld import world as miniworld_world
from railsweep.miniworld.cache import cached_world
from railsweep.miniworld.calibration import CheckSettings, check_family
from railsweep.miniworld.presets import preset_config
from railsweep.miniworld.weights import weights_verdict


def build_or_check(args: argparse.Namespace) -> int:
    """Build (or reuse) ``--preset``'s world; ``build`` prints where it is, ``check`` each family's calibration
    (exit status 1 when a condition fails); ``pack`` writes the cached world as a shipped folder under ``--out``."""
    if args.action == "pack":
        return _pack(args)
    world = miniworld_world.build_world(args.preset, cache_dir=args.cache_dir, force=args.force, threads=args.threads)
    weights_digest = world.weights["weights_digest"]
    documented, line = weights_verdict(world.preset, world.manifest["digest"], weights_digest)
    print(f"railsweep: {'warning: ' if documented is False else ''}{line}", file=sys.stderr, flush=True)
    if args.action == "build":
        # build_seconds: of the build, where it was trained; shipped: installed from the build railsweep ships, or None
        print(json.dumps({"root": str(world.root), "families": world.families, "data_dir": str(world.data_dir),
                          "build_seconds": world.manifest.get("build_seconds"),
                          "shipped": world.manifest.get("shipped"), "weights_digest": weights_digest}))  # fmt: skip
        return 0
    families = args.family or world.families
    for f in families:
        world.family(f)  # unknown family -> ConfigError before any decoding
    ok = True
    for f in families:
        settings = CheckSettings(m=args.m, limit=args.limit, device=args.device, batch_size=args.batch_size,
                                 max_new_tokens=args.max_new_tokens, workers=args.workers)  # fmt: skip
        result = check_family(world, f, settings)
        print(json.dumps(result), flush=True)
        ok = ok and result["passed"]
    return 0 if ok else 1


def _pack(args: argparse.Namespace) -> int:
    """Write the cached world of ``--preset`` as a shipped folder under ``--out``; prints where and its weights."""
    world = cached_world(args.preset, args.cache_dir, preset_config(args.preset))
    if world is None:
        raise ConfigError(f"--preset {args.preset!r}: no cached world to pack; build it first "
                          f"(`railsweep miniworld build --preset {args.preset}`)")
    dest = shipped.pack(world.root, Path(args.out))
    files = len(shipped.read_sums(dest))
    print(json.dumps({"shipped": str(dest), "files": files, "weights_digest": world.weights["weights_digest"]}))
    return 0
