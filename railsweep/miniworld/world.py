"""Building (once) and loading the miniature world.

Steps of :func:`build_world`:
1. resolve the preset's :class:`WorldConfig`; its digest names the world directory (a changed config builds anew);
2. under a file lock (test processes share the cache), reuse the directory when its ``manifest.json`` exists, else
   install the build railsweep ships (:mod:`railsweep.miniworld.shipped`, sha256-checked) or, without one or with
   ``force``, build it:
   a. generate the problems and filler; write the benchmark (:mod:`railsweep.miniworld.benchmark`);
   b. train the word-level tokenizer (lent by a cached world built from the same data, or the real base's);
   c. per family: pretrain a tiny base model (or lend a cached one with its ``family_base_digest``,
      :mod:`railsweep.miniworld.lending`; or take the real base, :func:`railsweep.bases.prepare_base`), then train
      M_cl and M_co per domain as LoRA adapters, each a resumable run under ``<cache>/lora-runs``
      (:mod:`railsweep.contamination.resume`; not with ``force``);
   d. write the manifest last and atomically, with the sha256 of every weight file: a half-written world is
      never reused.
``on_ready`` hears each stage as it lands: ``"data"``, then each family's name once its models are trained
(the leak split written with the first), so a sweep can start a family's cells before the slowest family is
built (:mod:`railsweep.sweep.run.staged`).
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import shutil
import sys
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from railsweep import provenance
from railsweep.atomic import link_files
from railsweep.bases import prepare_base
from railsweep.contamination.simulator import adapter_mixes, write_json
from railsweep.miniworld import build_progress, shipped
from railsweep.miniworld.arithmetic import pinned_arithmetic
from railsweep.miniworld.benchmark import write_benchmark
from railsweep.miniworld.cache import (
    World,
    cached_world,
    default_cache_dir,
    load_world,
    world_root,
    write_leak_split,
)
from railsweep.miniworld.corpus import REPLICAS_FILE, pretraining_corpus
from railsweep.miniworld.family import build_family
from railsweep.miniworld.lending import adapter_lenders, borrow_adapters, config_from_dict, family_digests
from railsweep.miniworld.presets import WorldConfig, preset_config
from railsweep.miniworld.scheduling import cores, die_with_parent, family_niceness
from railsweep.miniworld.tokenizer import train_tokenizer
from railsweep.miniworld.weights import weights_record


def build_world(
    preset: str = "mini", cache_dir: str | Path | None = None, force: bool = False,
    config: WorldConfig | None = None, log=None, workers: int | None = None, threads: int | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> World:  # fmt: skip
    """The cached world of ``preset`` (``config`` overrides the preset's; steps in the module docstring);
    ``force``: train it here even where a cached or shipped build exists. ``workers``: processes building
    families in parallel (default one per family; only the build time changes). ``threads``: torch threads of
    the whole build, shared out among the workers; by default one per family whatever the core count, because
    GPT-NeoX's LayerNorm sums its gradients in an order that follows the thread count (docs/miniworld.md,
    "Threads and SIMD width"); the AVX2 pin (:mod:`~railsweep.miniworld.arithmetic`) does the same for SIMD.
    """
    config = config or preset_config(preset)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    root = world_root(preset, cache, config)
    root.parent.mkdir(parents=True, exist_ok=True)
    if not force and (found := cached_world(preset, cache, config)) is not None:
        return found
    log = log or (lambda msg: print(f"[miniworld] {msg}", file=sys.stderr, flush=True))
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if root.exists() and (force or not (root / "manifest.json").is_file()):
            shutil.rmtree(root)  # forced, or an interrupted build (no manifest): start over
        if not root.exists():
            root.mkdir()
            ready = on_ready or (lambda stage: None)
            try:
                folder = None if force else shipped.shipped_folder(config)
                if folder is None or not shipped.install(folder, root, config, log, ready):
                    _build(root, preset, config, log, workers, cache, threads, ready, None if force else cache)
            except BaseException:
                shutil.rmtree(root, ignore_errors=True)
                raise
    return load_world(root)


def _base_donors(root: Path, config: WorldConfig) -> tuple[Path | None, dict[str, Path]]:
    """Finished sibling worlds that lend ``config`` its tokenizer and base models: the tokenizer donor
    (same data, the one holding the most wanted bases) and, per family, a world whose base model for it
    equals the one ``config`` would pretrain (same data, tokenizer and per-family pretraining recipe)."""
    siblings = []
    for other in sorted(root.parent.iterdir()):
        manifest_path = other / "manifest.json"
        if other == root or not manifest_path.is_file():
            continue
        try:
            manifest = json.loads(manifest_path.read_text())
        except (OSError, ValueError):
            continue
        if manifest.get("base_digest") == config.base_digest():  # every base equal, by construction
            same_data, bases = True, {f: config.family_base_digest(f) for f in config.families}
        else:
            same_data = manifest.get("data_digest", None) == config.data_digest()
            digests = family_digests(manifest, "base")
            if not same_data and digests:  # an older manifest: recompute its data digest from its config
                same_data = config_from_dict(manifest["config"]).data_digest() == config.data_digest()
            bases = digests if same_data else {}
        held = [f for f in config.families if bases.get(f) == config.family_base_digest(f)
                and (other / "families" / f / "base" / "config.json").is_file()]  # fmt: skip
        if same_data and (other / "tokenizer").is_dir():
            siblings.append((other, held))
    if not siblings:
        return None, {}
    tokenizer_donor, _ = max(siblings, key=lambda s: len(s[1]))  # max keeps the first of equals
    lenders = [
        (other, held)
        for other, held in sorted(siblings, key=lambda s: s[0] != tokenizer_donor)
        if other == tokenizer_donor or _same_files(other / "tokenizer", tokenizer_donor / "tokenizer")
    ]
    bases: dict[str, Path] = {}
    for other, held in lenders:  # first the worlds that also hold the family's adapters
        for f in adapter_lenders(config, {f: other for f in held}):
            bases.setdefault(f, other)
    for other, held in lenders:
        for f in held:
            bases.setdefault(f, other)
    return tokenizer_donor, {f: bases[f] for f in config.families if f in bases}


def _same_files(a: Path, b: Path) -> bool:
    names = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    if names != sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()):
        return False
    return all((a / n).read_bytes() == (b / n).read_bytes() for n in names)


def _take_real_base(root: Path, config: WorldConfig, cache: Path, log) -> dict:
    """Step c. for a world over a real base: the prepared base under its family, its tokenizer as the
    world's; returns the base's manifest (source, conversion, weights' sha256)."""
    base = prepare_base(config.base, cache_dir=cache, log=log)
    link_files(base.path, root / "tokenizer", skip=(".safetensors",))
    for f in config.families:
        link_files(base.path, root / "families" / f / "base")
    log(f"base model of {', '.join(config.families)}: {config.base} ({base.path})")
    return base.manifest


def _tokenizer_and_bases(root: Path, config: WorldConfig, data, corpus: list[str], log):
    """Steps b. and c.'s lending: the tokenizer (a sibling world's, else trained) and the base models
    sibling worlds lend; returns (tokenizer donor or None, {family: lending world})."""
    donor, lenders = _base_donors(root, config)
    if donor is not None:
        log(f"reusing the tokenizer of {donor.name} (same data)")
        shutil.copytree(donor / "tokenizer", root / "tokenizer")
        for f, lender in lenders.items():
            log(f"reusing {f}'s base model from {lender.name} (same base recipe)")
            shutil.copytree(lender / "families" / f / "base", root / "families" / f / "base")
    else:
        texts = corpus + data.filler + [p.paraphrase for p in data.test] + [p.question for p in data.test]
        train_tokenizer(texts, root / "tokenizer", max_number=config.max_number)
    return donor, lenders


def _await_families(root: Path, futures: dict, plans: dict, log, on_ready: Callable[[str], None]) -> None:
    """Wait for every family's build, logging the combined progress line every ``EVERY_S`` seconds and
    telling ``on_ready`` of each family as it finishes (the world's leak split written before the first)."""
    told: set[str] = set()
    last_log = time.time()
    while True:
        for f, fut in futures.items():
            if fut.done() and f not in told and fut.exception() is None:
                told.add(f)
                write_leak_split(root, f)
                on_ready(f)
        pending = [fut for fut in futures.values() if not fut.done()]
        if not pending:
            return
        wait(pending, timeout=5.0, return_when=FIRST_COMPLETED)  # the pending only: a done one returns at once
        if time.time() - last_log >= build_progress.EVERY_S:
            log(build_progress.summary(root, plans, cores()))
            last_log = time.time()


def _family_plans(root: Path, config: WorldConfig, filler: list[str], lent_adapters: set[str]) -> dict:
    """Every family's phases and their training tokens (:mod:`railsweep.miniworld.build_progress`), without
    the phases that need no training: all adapters of a family in ``lent_adapters``, a base model or a clean
    adapter already in place (lent by another world, or a real base)."""
    from transformers import AutoTokenizer  # heavy: loaded only when a world is built, not when one is read

    tokenizer = AutoTokenizer.from_pretrained(root / "tokenizer")
    pq = root / "data" / "pq_test.jsonl"
    mixes = adapter_mixes(root / "data", config.contamination, filler, pq if pq.is_file() else None).mixes
    skip = {}
    for f in config.families:
        skip[f] = set(mixes) if f in lent_adapters else set()
        if (root / "families" / f / "base" / "config.json").is_file():
            skip[f].add("pretrain")
        if (root / "families" / f / "adapters" / "clean" / "adapter_config.json").is_file():
            skip[f].add("clean")
    return build_progress.family_plans(config, tokenizer, mixes, skip)


def _build(root: Path, preset: str, config: WorldConfig, log, workers: int | None, cache: Path,
           threads: int | None, on_ready: Callable[[str], None], runs: Path | None) -> None:  # fmt: skip
    """Steps a.-d. of the module docstring; ``runs``: the cache whose ``lora-runs`` keeps the adapters' training
    resumable (None: train from scratch)."""
    t0 = time.time()
    timings: dict[str, float] = {}
    data = write_benchmark(root / "data", config)
    on_ready("data")
    corpus = [] if config.base else pretraining_corpus(data, config)
    if config.replicas:
        write_json(
            root / "data" / REPLICAS_FILE, {str(i): c for i, c in sorted(config.replica_counts().items())}
        )
    donor, lenders, real_base = None, {}, None
    if config.base:
        real_base = _take_real_base(root, config, cache, log)
    else:
        donor, lenders = _tokenizer_and_bases(root, config, data, corpus, log)
    adapters_from, clean_from = borrow_adapters(root, config, lenders, log)
    timings["data"] = time.time() - t0
    filler = data.filler[: config.contamination.n_filler]
    workers = workers or len(config.families)
    threads = max(1, threads // workers) if threads else 1  # one per family: the documented builds' arithmetic
    # families are independent: each trains in a spawned process, its arithmetic pinned (arithmetic.py)
    ctx = multiprocessing.get_context("spawn")
    pin = config.pretrain.precision == "fp32"
    plans = _family_plans(root, config, filler, set(adapters_from))
    work = {f: sum(ph.tokens for ph in plans[f]) for f in config.families}
    nice = family_niceness(work, cores(), threads, os.nice(0)) if workers >= len(config.families) else {}
    order = sorted(config.families, key=lambda f: nice.get(f, 0))  # full priority first, in a fresh process
    store = None if runs is None else str(runs / "lora-runs")
    with pinned_arithmetic(pin) as arithmetic, ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=die_with_parent
    ) as pool:
        futures = {
            f: pool.submit(build_family, str(root), f, config, corpus, filler, threads, nice.get(f, 0), store)
            for f in order
        }
        _await_families(root, futures, plans, log, on_ready)
        training = {f: futures[f].result() for f in config.families}
    shutil.rmtree(root / "progress", ignore_errors=True)
    timings.update({f: stats["seconds"] for f, stats in training.items()})
    write_leak_split(root, config.families[0])
    sources = {"donor": donor, "lenders": lenders, "adapters_from": adapters_from, "clean_from": clean_from,
               "real_base": real_base}  # fmt: skip
    run = {"training": training, "timings": timings, "t0": t0, "workers": workers, "threads": threads,
           "arithmetic": arithmetic}  # fmt: skip
    write_json(root / "manifest.json", _manifest(root, preset, config, sources, run))


def _manifest(root: Path, preset: str, config: WorldConfig, sources: dict, run: dict) -> dict:
    """Step d.'s manifest: digests, where borrowed parts came from (``sources``), the training record and
    timings (``run``)."""
    donor = sources["donor"]
    return {
        "preset": preset, "digest": config.digest(), "base_digest": config.base_digest(),
        "data_digest": config.data_digest(),
        "family_base_digests": {f: config.family_base_digest(f) for f in config.families},
        "tokenizer_from": str(donor) if donor is not None else None,
        "bases_from": {f: str(lender) for f, lender in sources["lenders"].items()},
        "family_adapter_digests": {f: config.family_adapter_digest(f) for f in config.families},
        "adapters_from": {f: str(lender) for f, lender in sources["adapters_from"].items()},
        "family_clean_digests": {f: config.family_clean_digest(f) for f in config.families},
        "clean_adapters_from": {f: str(lender) for f, lender in sources["clean_from"].items()},
        "replicas": {str(c): list(config.replica_counts().values()).count(c) for c in config.replicas},
        "real_base": sources["real_base"], "config": config.to_dict(), "families": list(config.families),
        "adapters": list(("clean",) + tuple(f"co_{d}" for d in config.contamination.domains)),
        "training": run["training"], "timings_s": {k: round(v, 2) for k, v in run["timings"].items()},
        "build_seconds": round(time.time() - run["t0"], 2), "workers": run["workers"],
        "threads_per_worker": run["threads"],
        "arithmetic": run["arithmetic"],  # the pinned environment the training processes saw
        "provenance": provenance.collect(sorted((root / "data").glob("*.json*"))),
        **weights_record(root),  # the sha256 of every weight file built or taken, and their combined digest
    }  # fmt: skip
