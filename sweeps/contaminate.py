"""Train the M_cl / M_co LoRA adapters of several model families in parallel, one Ray task each.

    python sweeps/contaminate.py --family llama=/models/Llama-2-7b-hf --family pythia=/models/pythia-12b \\
        --task-dir data/gsm8k --pq data/gsm8k_paraphrase/lmsys_rephrase/pq_test.jsonl \\
        --filler openorca --out runs/contamination
    python sweeps/contaminate.py --smoke --out /tmp/contam     # CI: the smoke miniworld's base model, tiny recipe

Each family trains in its own Ray task with one GPU where the cluster has GPUs
(one CPU otherwise); results land in OUT/<family>/ (adapters, leak split,
manifest). Exit codes: 0 all families trained, 1 a family failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from railsweep import argtypes as at  # noqa: E402
from railsweep.commands.contaminate import RENAMED  # noqa: E402
from railsweep.errors import ConfigError, RailsweepError, one_line  # noqa: E402


def make_parser() -> argparse.ArgumentParser:
    from railsweep.commands.contaminate import add_data_args

    p = at.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--family", action="append", default=[], metavar="NAME=BASE", help="a family and its base model"
    )
    p.add_argument("--out", type=at.writable_dir, required=True, help="output root; each family writes OUT/<name>/")
    p.add_argument("--smoke", action="store_true", help="small-and-fast mode on the smoke miniworld (CI)")
    p.add_argument("--cache-dir", type=at.writable_dir, default=None, help="miniworld cache for --smoke")
    p.add_argument(
        "--ray-address",
        type=at.text,
        default=None,
        help="Ray cluster to join (default: $RAY_ADDRESS, set inside a Ray job, else a fresh private instance)",
    )
    p.add_argument(
        "--num-cpus",
        type=at.positive,
        default=None,
        help="CPUs of a fresh private Ray instance (ignored when joining a cluster)",
    )
    add_data_args(p)
    # --task-dir is required for real runs only; --smoke supplies the miniworld's
    for action in p._actions:
        if action.dest == "task_dir":
            action.required = False
    return p


def _train_one(name: str, base: str, data_dir: str, out: str, config, pq: str | None, device: str) -> dict:
    import torch

    from railsweep.contamination import contaminate_family
    from railsweep.contamination.filler import load_filler

    torch.set_num_threads(1)
    filler = None
    if config.filler == "miniworld":
        filler = load_filler(Path(data_dir) / "filler.txt", config.n_filler, config.seed)
    manifest = contaminate_family(
        base, data_dir, Path(out) / name, config, filler=filler, pq_path=pq, device=device,
        store=Path(out) / name / "lora-runs",
    )  # fmt: skip
    return {
        "family": name,
        "adapters": manifest["adapters"],
        "seconds": {k: v["seconds"] for k, v in manifest["training"].items()},
    }


def resolve_jobs(args: argparse.Namespace) -> tuple[list[tuple[str, str]], str, object, str | None]:
    """(families, data_dir, ContaminationConfig, pq path) from the arguments."""
    import dataclasses

    from railsweep.commands.contaminate import config_from_args

    if args.smoke:
        from railsweep.contamination import LoraRecipe
        from railsweep.miniworld import build_world

        world = build_world("smoke", cache_dir=args.cache_dir)
        families = [(f, str(world.family(f).base_dir)) for f in world.families]
        config = dataclasses.replace(
            world.config.contamination,
            recipe=LoraRecipe(r=8, alpha=16, lr=2e-3, global_batch=8, micro_batch=8, epochs=1),
        )
        return families, str(world.data_dir), config, str(world.data_dir / "pq_test.jsonl")
    if not args.family:
        raise ConfigError("give at least one --family NAME=BASE (or --smoke)")
    if not args.task_dir:
        raise ConfigError("--task-dir is required (unless --smoke)")
    families = []
    for spec in args.family:
        name, sep, base = spec.partition("=")
        if not sep or not name or not base:
            raise ConfigError(f"--family must be NAME=BASE_MODEL_DIR, got {spec!r}")
        why = at.model_problem(base)
        if why:
            raise ConfigError(f"--family {name}: base model {why}")
        families.append((name, base))
    return families, args.task_dir, config_from_args(args), args.pq


def main(argv: list[str] | None = None) -> int:
    from railsweep.services.ray_init import ray_init_kwargs

    try:
        argv = at.renamed_options(list(sys.argv[1:] if argv is None else argv), RENAMED, "contaminate.py")
        args = make_parser().parse_args(argv)
        families, data_dir, config, pq = resolve_jobs(args)
        # Token authentication either way; a private instance binds 127.0.0.1 only (set before Ray loads).
        init = ray_init_kwargs(args.ray_address, num_cpus=args.num_cpus)
    except RailsweepError as e:
        message = one_line(e)
        print(f"railsweep: error: {message}", file=sys.stderr)
        return 2
    import ray
    import torch

    if init["address"] == "local":
        init["include_dashboard"] = False
    ray.init(**init)
    try:
        gpus = ray.cluster_resources().get("GPU", 0) > 0 or torch.cuda.is_available()
        task = ray.remote(num_gpus=1 if gpus else 0, num_cpus=1)(_train_one)
        device = "cuda" if gpus else "cpu"
        refs = {
            name: task.remote(name, base, data_dir, args.out, config, pq, device) for name, base in families
        }
        failed = 0
        for name, ref in refs.items():
            try:
                print(json.dumps(ray.get(ref)), flush=True)
            except Exception as e:  # one family failing must not hide the others
                failed += 1
                print(f"contaminate: family {name} failed: {e}", file=sys.stderr)
        return 1 if failed else 0
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
