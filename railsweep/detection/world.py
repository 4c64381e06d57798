"""The miniature world as a detection benchmark: items with the truth, control sets and corpora.

- test items: the test split, ``leaked`` from the leak split (one split for every family and domain; the
  original wording leaked for ``gsm8k``, a paraphrase for ``pq``, always with the original solution);
- control items: fresh problems of the same generator and difficulty, in neither split, so absent from
  every model's training;
- corpus of domain d: ``train.jsonl`` and the fine-tuning texts of the ``clean`` and ``co_<d>`` adapters,
  regenerated with :func:`railsweep.contamination.simulator.training_mixes` as the build made them;
- :func:`paraphrase_split`: the test split in its PQ wording with the original solutions (perturb);
- :func:`world_jobs`: the corpus-side detectors once per domain, the model-side ones per family and
  domain on ``co_<d>`` against ``clean``, plus per-pair inputs a caller has (a sweep's readouts).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from railsweep.atomic import write_atomic
from railsweep.contamination.simulator import load_pq, training_mixes
from railsweep.detection.base import DetectInputs, Detector, Item
from railsweep.detection.items import read_items
from railsweep.errors import ConfigError
from railsweep.miniworld.cache import default_cache_dir, load_world
from railsweep.miniworld.generator import make_problems
from railsweep.miniworld.presets import PRESETS, preset_config
from railsweep.tasks.data.gsm8k_rows import read_jsonl

CONTROL_SEED_SALT = 7  # the generator seeds of test/train/filler use salts 1-3


@dataclass(frozen=True)
class WorldItems:
    test: list[Item]
    control: list[Item]


def world_items(world, n_control: int | None = None) -> WorldItems:
    """The test split with its truth, and ``n_control`` fresh problems (default: as many as the test split)."""
    test = read_items(world.data_dir / "test.jsonl", "test", world.leak_split_path)
    c = world.config
    taken = {r["question"] for r in read_jsonl(world.data_dir / "train.jsonl")} | {t.question for t in test}
    seed = c.seed * 1000 + CONTROL_SEED_SALT
    fresh = make_problems(n_control or len(test), seed=seed, exclude=taken, limit=c.max_value,
                          max_operand=c.max_operand, roads=c.roads)  # fmt: skip
    return WorldItems(test, [Item(i, "control", p.question, p.solution) for i, p in enumerate(fresh)])


def world_corpus(world, domain: str, out_dir: str | Path) -> list[Path]:
    """Write the adapter training texts of ``domain`` as JSONL under ``out_dir``; the corpus files."""
    data = world.data_dir
    train, test = read_jsonl(data / "train.jsonl"), read_jsonl(data / "test.jsonl")
    cfg = world.config.contamination
    filler = [t for t in (data / "filler.txt").read_text(encoding="utf-8").split("\n\n") if t.strip()]
    mixes = training_mixes(train, test, load_pq(data / "pq_test.jsonl", test), filler[: cfg.n_filler], world.leaked,
                           cfg)  # fmt: skip
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
        raise ConfigError(f"--world {name!r} is not built in {default_cache_dir() / 'miniworld'}; build it first with "
                          f"'railsweep miniworld build --preset {name}'")  # fmt: skip
    return load_world(found[0].parent)


PARAPHRASE_SPLIT = "test"  # the file name (without .jsonl) of the paraphrased split in its own directory


def paraphrase_split(world, out_dir: str | Path) -> Path:
    """Write ``<out_dir>/test.jsonl``: every test question in its paraphrased wording with the original
    solution (GSM8K format, same order and indices as the test split; an empty paraphrase keeps the original
    wording, as the PQ adapters were trained). Rewritten only when its content changes; returns the path."""
    test = read_jsonl(world.data_dir / "test.jsonl")
    pq = load_pq(world.data_dir / "pq_test.jsonl", test)
    body = "".join(json.dumps({"question": pq[i], "answer": r["answer"]}) + "\n" for i, r in enumerate(test))
    path = Path(out_dir) / f"{PARAPHRASE_SPLIT}.jsonl"
    if path.is_file() and path.read_text(encoding="utf-8") == body:
        return path
    return write_atomic(path, lambda tmp: tmp.write_text(body, encoding="utf-8"))


@dataclass(frozen=True)
class WorldJob:
    """One detection call: these detectors on these items and inputs (family None for the corpus side)."""

    family: str | None
    domain: str
    test: list[Item]
    control: list[Item]
    inputs: DetectInputs
    detectors: tuple[Detector, ...]


def world_jobs(
    world, detectors: Sequence[Detector], base_inputs: DetectInputs, families: Sequence[str], domains: Sequence[str],
    scratch: str | Path, *, n_control: int | None = None,
    pair_inputs: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
) -> list[WorldJob]:  # fmt: skip
    """The jobs of a detection run on ``world`` (see the module docstring); unknown family/domain -> ConfigError.

    ``pair_inputs[(family, domain)]``: more :class:`DetectInputs` fields for that pair's model-side job
    (``responses`` for cdd, ``original``/``paraphrased`` for perturb); ``scratch`` holds the corpus files.
    """
    for f in families:
        world.family(f)  # unknown family -> ConfigError
    for d in domains:
        if d not in world.config.contamination.domains:
            raise ConfigError(
                f"--domain {d!r}: this world's domains are {list(world.config.contamination.domains)}"
            )
    items = world_items(world, n_control)
    corpus_side = tuple(d for d in detectors if d.name == "ngram")
    model_side = tuple(d for d in detectors if d.name != "ngram")
    jobs = []
    for dom in domains:
        if corpus_side:
            corpus = tuple(world_corpus(world, dom, Path(scratch) / dom))
            inputs = dataclasses.replace(base_inputs, corpus=corpus)
            jobs.append(WorldJob(None, dom, items.test, items.control, inputs, corpus_side))
        for fam in families if model_side else ():
            models = world.family(fam)
            inputs = dataclasses.replace(base_inputs, model=models.base_dir, adapter=models.adapters[f"co_{dom}"],
                                         reference_adapter=models.adapters["clean"],
                                         fewshot=base_inputs.fewshot or world.data_dir / "cot_8shot.json",
                                         **dict((pair_inputs or {}).get((fam, dom), {})))  # fmt: skip
            jobs.append(WorldJob(fam, dom, items.test, items.control, inputs, model_side))
    return jobs
