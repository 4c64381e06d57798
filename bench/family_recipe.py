"""A cheaper training recipe for one family of a world, against the calibration: what fewer FLOPs keep.

Steps:
1. the world preset's configuration with ``--family`` alone and its pretraining steps (``--steps``), pretraining
   learning rate (``--lr``) and M_co epochs (``--co-epochs``) replaced (``family_steps``, ``family_lr`` and
   ``family_co_epochs``, as a preset would set them); left out, each is the preset's own for that family;
2. build it into ``--cache-dir``, one torch thread (a base or M_cl of the same recipe already there is reused, so
   trying other M_co epochs on one base costs the two M_co adapters only);
3. the calibration conditions of ``railsweep miniworld check`` for that family
   (:func:`railsweep.miniworld.calibration.check_family`, m = ``--m`` at T = 0.7);
4. print JSON: the recipe against the preset's, the pretraining tokens of each, the build's seconds (pretraining,
   adapters), the check's figures, its conditions and whether all passed.

Run (about 20 minutes for a neox base on a 2-core machine, 5 for other M_co epochs on it):
``python bench/family_recipe.py --family neox --steps 1100 --lr 4.5e-3 --co-epochs 34 --cache-dir /tmp/recipes``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from railsweep import argtypes  # noqa: E402
from railsweep.errors import ConfigError  # noqa: E402
from railsweep.miniworld.presets import PRESETS, WorldConfig, preset_config  # noqa: E402


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="mini", choices=PRESETS, help="a world preset whose families are pretrained here")
    p.add_argument("--family", required=True, help="one of the preset's families")
    p.add_argument("--steps", type=argtypes.integer(1), help="pretraining steps (default: the preset's)")
    p.add_argument("--lr", type=argtypes.real(0.0, 1.0, open_lo=True), help="pretraining peak learning rate")
    p.add_argument("--co-epochs", type=argtypes.integer(1), help="M_co's epochs (default: the preset's)")
    p.add_argument("--cache-dir", type=argtypes.writable_dir, required=True, help="where the recipe's world is built")
    p.add_argument("--m", type=argtypes.integer(1), default=20, help="samples per question of the check")
    p.add_argument("--limit", type=argtypes.integer(1), help="check only the first N test questions")
    return p


def recipe_config(preset: str, family: str, steps: int | None, lr: float | None, co_epochs: int | None) -> WorldConfig:
    """Step 1: the preset's configuration with ``family`` alone and its recipe replaced."""
    base = preset_config(preset)
    if base.base:
        raise ConfigError(f"--preset {preset}: its family is a real pretrained base; nothing is pretrained here")
    if family not in base.families:
        raise ConfigError(f"--family {family!r} is not a family of {preset} ({', '.join(base.families)})")
    epochs = co_epochs if co_epochs is not None else base.contamination_for(family).recipe.epochs
    return dataclasses.replace(
        base,
        families=(family,),
        family_steps=((family, steps if steps is not None else base.steps_for(family)),),
        family_lr=((family, lr if lr is not None else base.pretrain_for(family).lr),),
        family_co_epochs=((family, epochs),),
    )


def recipe(config: WorldConfig, family: str) -> dict:
    tokens = config.pretrain.batch_size * config.pretrain.block_size
    return {
        "steps": config.steps_for(family),
        "lr": config.pretrain_for(family).lr,
        "co_epochs": config.contamination_for(family).recipe.epochs,
        "pretraining_tokens": config.steps_for(family) * tokens,
    }


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        config = recipe_config(args.preset, args.family, args.steps, args.lr, args.co_epochs)
    except ConfigError as e:
        parser.error(str(e))
    import torch  # the heavy imports after the command line is checked

    from railsweep.miniworld.calibration import CheckSettings, check_family
    from railsweep.miniworld.world import build_world

    torch.set_num_threads(1)
    t0 = time.time()
    world = build_world(args.preset, cache_dir=args.cache_dir, config=config)
    build_s = time.time() - t0
    checked = check_family(world, args.family, CheckSettings(m=args.m, limit=args.limit))
    training = world.manifest["training"][args.family]
    print(json.dumps({
        "preset": args.preset, "family": args.family,
        "recipe": recipe(config, args.family), "preset_recipe": recipe(preset_config(args.preset), args.family),
        "world": str(world.root),
        "seconds": {
            "build": round(build_s, 1), "check": round(time.time() - t0 - build_s, 1),
            "pretraining": training.get("pretrain", {}).get("seconds"), "adapters": training.get("contamination_seconds"),
        },
        "check": {k: v for k, v in checked.items() if k not in ("conditions", "passed")},
        "conditions": checked["conditions"], "passed": checked["passed"],
    }, indent=1, default=str))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
