"""Building one model family of the world: pretrain a base model (or take a real one), then contaminate it.

Families are independent given the benchmark and the tokenizer, so :func:`build_family` runs in its own
worker process; its M_co adapters (one per domain) train in processes of their own, so the last family to
finish does not leave cores idle (:mod:`railsweep.miniworld.scheduling` orders them on too few cores).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from railsweep.contamination import contaminate_family
from railsweep.contamination.simulator import StderrLog
from railsweep.miniworld.arithmetic import PINNED
from railsweep.miniworld.models import model_config
from railsweep.miniworld.pretrain import pretrain, save_model
from railsweep.miniworld.scheduling import yield_priority
from railsweep.training.progress import StepReport


def build_family(
    root: str, family: str, config, corpus: list[str], filler: list[str], threads: int = 0, nice: int = 0,
    store: str | None = None,
) -> dict:  # fmt: skip
    """Write ``root/families/<family>/{base, adapters/...}``; returns statistics (JSON-ready). ``nice``: the
    priority this process (and the adapters' processes it starts) yields to (:mod:`railsweep.miniworld.scheduling`).
    ``store``: the adapters train as resumable runs there (:mod:`railsweep.contamination.resume`)."""
    import torch

    if threads > 0:
        torch.set_num_threads(threads)

    log = StderrLog(f"[miniworld] {family}: ")
    before = os.nice(0)
    if (niceness := yield_priority(nice)) > before:
        log(f"training at nice {niceness} (more families than cores: the one with the most training goes first)")

    root_p = Path(root)
    progress = root_p / "progress" / family  # railsweep.miniworld.build_progress reads every phase's steps
    t1 = time.time()
    stats = _base_model(root_p, family, config, corpus, log, progress)
    stats["seconds"] = round(time.time() - t1, 2)
    t2 = time.time()
    adapters = _adapters(root_p, family, config, filler, log, progress, store)
    log(f"built in {time.time() - t1:.0f}s")
    return {
        "pretrain": stats, "contamination_seconds": round(time.time() - t2, 2), "adapters": adapters,
        "seconds": round(time.time() - t1, 2), "threads": torch.get_num_threads(), "nice": niceness,
        # what this process computed with (railsweep.miniworld.arithmetic pins these on x86); ATen's capability
        # as torch resolved it, the other pinned variables as the process saw them
        "arithmetic": {"cpu_capability": torch.backends.cpu.get_cpu_capability(),
                       **{k: os.environ.get(k) for k in PINNED if k != "ATEN_CPU_CAPABILITY"}},
    }  # fmt: skip


def _base_model(root: Path, family: str, config, corpus: list[str], log, progress: Path) -> dict:
    """The family's base model in ``families/<family>/base``: a real base already in place, one a sibling world
    lent, or pretrained here from scratch on ``corpus``; returns its statistics."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    fam = root / "families" / family
    tokenizer = AutoTokenizer.from_pretrained(root / "tokenizer")
    ids = {k: getattr(tokenizer, f"{k}_token_id") for k in ("bos", "eos", "pad")}
    pcfg = config.pretrain_for(family)
    if config.base:  # a real pretrained base, in place before the family's build
        return {"source": config.base}
    if (fam / "base" / "config.json").is_file():  # lent by a world with the same base_digest
        log("base model reused, not pretrained")
        return {"steps": pcfg.steps, "reused": True}
    torch.manual_seed(config.seed)
    model = AutoModelForCausalLM.from_config(
        model_config(family, config.size, len(tokenizer), **ids), dtype=torch.float32
    )
    stats = pretrain(model, tokenizer, corpus, pcfg, log=log, progress=StepReport(progress / "pretrain"))
    save_model(model, tokenizer, fam / "base")
    return stats


def _adapters(root: Path, family: str, config, filler: list[str], log, progress: Path, store: str | None) -> dict:
    """The family's adapters in ``families/<family>/adapters`` (M_cl and one M_co per domain, the domains in
    parallel processes), unless a sibling world lent them; returns each adapter's training statistics."""
    fam = root / "families" / family
    contamination = config.contamination_for(family)
    if (fam / "adapters" / "manifest.json").is_file():  # lent by a world with the same adapter digest
        log("adapters reused, not trained")
        manifest = json.loads((fam / "adapters" / "manifest.json").read_text())
        return {name: {**s, "reused": True} for name, s in manifest["training"].items()}
    manifest = contaminate_family(
        fam / "base", root / "data", fam / "adapters", contamination, filler=filler,
        pq_path=root / "data" / "pq_test.jsonl", device="cpu", log=log,
        domain_workers=len(contamination.domains), progress_dir=progress, store=store,
    )  # fmt: skip
    return manifest["training"]
