"""What one cached world lends another: a world is built from scratch only where no finished sibling holds the
same part. Each part is matched by the digest of what it depends on (``WorldConfig.family_base_digest``,
``family_adapter_digest``, ``family_clean_digest``), so a lent part is the one the build would train on this
machine:

- a family's adapters (M_cl and every M_co) from a world with the same base and contamination recipe;
- a family's clean adapter (M_cl) alone from a world with the same base and clean recipe, when only the
  contaminated adapters' recipe changed: M_co is then trained anew from the lent M_cl.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from railsweep.contamination.config import ContaminationConfig
from railsweep.contamination.simulator import LENT_CLEAN
from railsweep.miniworld.models import ModelSize
from railsweep.miniworld.presets import BUILD_VERSION, WorldConfig
from railsweep.miniworld.pretrain import PretrainConfig


def config_from_dict(d: dict) -> WorldConfig:
    """The :class:`WorldConfig` a manifest stored (``WorldConfig.to_dict``); the configs' own checks turn its
    lists back into tuples and its recipes into :class:`LoraRecipe`."""
    d = {k: v for k, v in d.items() if k not in ("build_version", "base_source")}
    nested = {"size": ModelSize(**d["size"]), "pretrain": PretrainConfig(**d["pretrain"])}
    contamination = ContaminationConfig(**d["contamination"])
    return WorldConfig(**{**d, **nested, "families": tuple(d["families"]), "contamination": contamination})


def family_digests(manifest: dict, kind: str) -> dict[str, str]:
    """Each family's ``kind`` ("base", "adapter" or "clean") digest in a finished world's manifest, or
    recomputed from the stored config of a world built before they were recorded (same build version only)."""
    if f"family_{kind}_digests" in manifest:
        return dict(manifest[f"family_{kind}_digests"])
    stored = manifest.get("config")
    if not stored or stored.get("build_version") != BUILD_VERSION:
        return {}
    try:
        config = config_from_dict(stored)
    except (KeyError, TypeError, ValueError):
        return {}
    return {f: getattr(config, f"family_{kind}_digest")(f) for f in config.families}


def copy_lent_dir(src: Path, dst: Path, lender: Path, root: Path) -> None:
    """Copy a lent directory, re-pointing the lender world's absolute paths (adapter configs, model
    cards, the adapters' manifest and its data provenance) at the borrowing world ``root``."""
    shutil.copytree(src, dst)
    old, new = str(lender), str(root)
    for path in dst.rglob("*"):
        if path.suffix in (".json", ".md") and path.is_file():
            text = path.read_text(encoding="utf-8")
            if old in text:
                path.write_text(text.replace(old, new), encoding="utf-8")


def adapter_lenders(config: WorldConfig, base_lenders: dict[str, Path]) -> dict[str, Path]:
    """The families whose adapters the world lending their base model already trained with the same
    recipe (``family_adapter_digest``): those are copied, not trained again."""
    return {
        f: lender
        for f, lender in base_lenders.items()
        if _digests_of(lender, "adapter").get(f) == config.family_adapter_digest(f)
        and (lender / "families" / f / "adapters" / "manifest.json").is_file()
    }


def _digests_of(world: Path, kind: str) -> dict[str, str]:
    try:
        return family_digests(json.loads((world / "manifest.json").read_text()), kind)
    except (OSError, ValueError):
        return {}


def clean_lenders(root: Path, config: WorldConfig, skip: set[str]) -> dict[str, Path]:
    """Per family not in ``skip``: a finished sibling world of ``root`` whose clean adapter was trained
    on the same base with the same clean recipe (``family_clean_digest``)."""
    lenders: dict[str, Path] = {}
    for other in sorted(root.parent.iterdir()):
        if other == root or not (other / "manifest.json").is_file():
            continue
        digests = _digests_of(other, "clean")
        for f in config.families:
            held = (other / "families" / f / "adapters" / "clean" / "adapter_config.json").is_file()
            if f not in skip and held and digests.get(f) == config.family_clean_digest(f):
                lenders.setdefault(f, other)
    return lenders


def borrow_adapters(root: Path, config: WorldConfig, lenders: dict, log) -> tuple[dict, dict]:
    """Adapters another cached world already trained on the same base and recipe, copied in: (full, clean only).
    A lent clean adapter gets its training record beside it (``LENT_CLEAN``), which the contamination step
    reads instead of training M_cl."""
    adapters_from = adapter_lenders(config, lenders)
    for f, lender in adapters_from.items():
        log(f"reusing {f}'s adapters from {lender.name} (same base and contamination recipe)")
        copy_lent_dir(lender / "families" / f / "adapters", root / "families" / f / "adapters", lender, root)
    clean_from = clean_lenders(root, config, skip=set(adapters_from))
    for f, lender in clean_from.items():
        log(f"reusing {f}'s clean adapter from {lender.name} (same base and clean recipe)")
        src, dst = lender / "families" / f / "adapters", root / "families" / f / "adapters" / "clean"
        dst.parent.mkdir(parents=True, exist_ok=True)
        copy_lent_dir(src / "clean", dst, lender, root)
        training = json.loads((src / "manifest.json").read_text())["training"]["clean"]
        record = json.dumps({"from": str(lender), "training": training}, indent=2, sort_keys=True)
        (dst / LENT_CLEAN).write_text(record + "\n", encoding="utf-8")
    return adapters_from, clean_from
