"""The miniature world as a detection benchmark: items with the truth, control sets and corpora.

- test items: the world's test split, ``leaked`` from its leak split. The split is the same
  for every family and domain; which surface form leaked depends on the domain: the
  original wording for ``gsm8k``, a paraphrase for ``pq``, always with the original solution;
- control items: freshly generated problems of the same generator and difficulty, none in
  the test or train split, so known to be absent from every model's training;
- corpus of domain d: the pretraining source (``train.jsonl``) and the fine-tuning texts of
  the ``clean`` and ``co_<d>`` adapters, regenerated with
  :func:`railsweep.contamination.simulator.training_mixes` exactly as the build made them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from railsweep.detection.base import Item
from railsweep.detection.items import read_items
from railsweep.detection.output import write_atomic

CONTROL_SEED_SALT = 7  # the generator seeds of test/train/filler use salts 1-3


@dataclass(frozen=True)
class WorldItems:
    test: list[Item]
    control: list[Item]


def world_items(world, n_control: int | None = None) -> WorldItems:
    """The test split with its truth, and ``n_control`` fresh problems (default: as many as the test split)."""
    from railsweep.miniworld.generator import make_problems
    from railsweep.tasks.gsm8k import read_jsonl

    test = read_items(world.data_dir / "test.jsonl", "test", world.leak_split_path)
    c = world.config
    taken = {r["question"] for r in read_jsonl(world.data_dir / "train.jsonl")} | {t.question for t in test}
    fresh = make_problems(
        n_control or len(test),
        seed=c.seed * 1000 + CONTROL_SEED_SALT,
        exclude=taken,
        limit=c.max_value,
        max_operand=c.max_operand,
        roads=c.roads,
    )
    return WorldItems(test, [Item(i, "control", p.question, p.solution) for i, p in enumerate(fresh)])


def world_corpus(world, domain: str, out_dir: str | Path) -> list[Path]:
    """Write the adapter training texts of ``domain`` as JSONL under ``out_dir``; the corpus files."""
    from railsweep.contamination.simulator import load_pq, training_mixes
    from railsweep.tasks.gsm8k import read_jsonl

    data = world.data_dir
    train, test = read_jsonl(data / "train.jsonl"), read_jsonl(data / "test.jsonl")
    cfg = world.config.contamination
    filler = [t for t in (data / "filler.txt").read_text(encoding="utf-8").split("\n\n") if t.strip()]
    mixes = training_mixes(
        train, test, load_pq(data / "pq_test.jsonl", test), filler[: cfg.n_filler], world.leaked, cfg
    )
    out = Path(out_dir)
    paths = [data / "train.jsonl"]
    for name in ("clean", f"co_{domain}"):
        body = "".join(json.dumps({"text": t}) + "\n" for t in mixes[name])
        paths.append(
            write_atomic(out / f"{name}.jsonl", lambda tmp, b=body: tmp.write_text(b, encoding="utf-8"))
        )
    return paths


def cached_world(name: str):
    """The miniature world ``name`` (a world directory, or a preset already built): never builds one."""
    from railsweep.errors import ConfigError
    from railsweep.miniworld.presets import PRESETS, preset_config
    from railsweep.miniworld.world import default_cache_dir, load_world

    p = Path(name)
    if (p / "manifest.json").is_file():
        return load_world(p)
    if name not in PRESETS:
        raise ConfigError(
            f"--world {name!r}: neither a world directory nor a preset ({', '.join(sorted(PRESETS))})"
        )
    digest = preset_config(name).digest()
    found = sorted((default_cache_dir() / "miniworld").glob(f"*-{digest}/manifest.json"))
    if not found:
        raise ConfigError(
            f"--world {name!r} is not built in {default_cache_dir() / 'miniworld'}; build it first with "
            f"'railsweep miniworld build --preset {name}'"
        )
    return load_world(found[0].parent)
