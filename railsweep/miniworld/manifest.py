"""A built world's ``manifest.json``: its digests, where borrowed parts came from, the training record and timings."""

from __future__ import annotations

import time
from pathlib import Path

from railsweep import provenance
from railsweep.miniworld.presets import WorldConfig
from railsweep.miniworld.weights import weights_record


def world_manifest(root: Path, preset: str, config: WorldConfig, sources: dict, run: dict) -> dict:
    """The manifest of the world built at ``root``. ``sources``: donor, lenders, adapters_from, clean_from and
    real_base (what was borrowed); ``run``: training, timings, t0, workers, threads and arithmetic (the build)."""
    donor, lenders, real_base = sources["donor"], sources["lenders"], sources["real_base"]
    adapters_from, clean_from, timings = sources["adapters_from"], sources["clean_from"], run["timings"]
    return {
        "preset": preset,
        "digest": config.digest(),
        "base_digest": config.base_digest(),
        "data_digest": config.data_digest(),
        "family_base_digests": {f: config.family_base_digest(f) for f in config.families},
        "tokenizer_from": str(donor) if donor is not None else None,
        "bases_from": {f: str(lender) for f, lender in lenders.items()},
        "family_adapter_digests": {f: config.family_adapter_digest(f) for f in config.families},
        "adapters_from": {f: str(lender) for f, lender in adapters_from.items()},
        "family_clean_digests": {f: config.family_clean_digest(f) for f in config.families},
        "clean_adapters_from": {f: str(lender) for f, lender in clean_from.items()},
        "replicas": {
            str(c): sum(1 for v in config.replica_counts().values() if v == c) for c in config.replicas
        },
        "real_base": real_base,
        "config": config.to_dict(),
        "families": list(config.families),
        "adapters": list(("clean",) + tuple(f"co_{d}" for d in config.contamination.domains)),
        "training": run["training"],
        "timings_s": {k: round(v, 2) for k, v in timings.items()},
        "build_seconds": round(time.time() - run["t0"], 2),
        "workers": run["workers"],
        "threads_per_worker": run["threads"],
        "arithmetic": run["arithmetic"],  # the pinned environment the training processes saw
        "provenance": provenance.collect(sorted((root / "data").glob("*.json*"))),
        **weights_record(root),  # the sha256 of every weight file built or taken, and their combined digest
    }
