"""The contamination simulator: M_cl and M_co adapters for one model family.

Steps (method.md §5):
1. read the benchmark (official GSM8K JSONL) and, for domain PQ, the paraphrases;
2. draw the seeded leak split (``n_leak`` test indices) and save it;
3. M_cl = base + LoRA on ``n_filler`` filler texts + ``n_train`` train questions, each as "Q: <question>\\nA:
   <CoT answer>" (the 8-shot CoT format);
4. for each domain, M_co = M_cl's adapter trained further (the base stays frozen) on the same filler + the
   leaked test questions: original wording for "gsm8k", the paraphrase for "pq", always with the original CoT
   solution and answer;
5. write a manifest (config, data checksums, package versions, git commit).

All adapters are LoRA adapters over the same base, so one multi-LoRA engine serves a whole family: ``clean``
(M_cl), ``co_gsm8k`` and ``co_pq`` (M_co). ``domain_workers > 1`` trains the M_co adapters in parallel
processes (each with the caller's torch thread count: the adapters come out the same).
"""

from __future__ import annotations

import json
import multiprocessing
import random
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from railsweep import provenance
from railsweep.atomic import write_text_atomic
from railsweep.contamination.config import ContaminationConfig
from railsweep.contamination.filler import load_filler
from railsweep.contamination.leak import LeakSplit, make_leak_split, save_leak_split
from railsweep.contamination.lora import train_lora
from railsweep.errors import ConfigError, DataError
from railsweep.tasks import load_paraphrases, to_cot
from railsweep.tasks.data.gsm8k_rows import read_jsonl
from railsweep.training.progress import StepReport

LENT_CLEAN = "lent.json"  # in a lent clean adapter's folder: where it came from and how it was trained

PQ_DEFAULT = Path("gsm8k_paraphrase") / "lmsys_rephrase" / "pq_test.jsonl"


class StderrLog:
    """A picklable progress logger (it can travel to a worker process): ``prefix msg`` on stderr."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def __call__(self, msg: str) -> None:
        print(f"{self.prefix}{msg}", file=sys.stderr, flush=True)


def _train_with_threads(threads: int, *args, **kwargs) -> dict:
    import torch

    torch.set_num_threads(threads)
    return train_lora(*args, **kwargs)


def cot_example(question: str, solution: str) -> str:
    """One training text in the 8-shot CoT format the models are prompted with."""
    return f"Q: {question}\nA: {to_cot(solution)}"


def training_mixes(
    train_rows: Sequence[dict], test_rows: Sequence[dict], paraphrases: dict[int, str] | None,
    filler: Sequence[str], leaked: Sequence[int], config: ContaminationConfig,
) -> dict[str, list[str]]:  # fmt: skip
    """The training texts of every adapter: {"clean": [...], "co_gsm8k": [...], "co_pq": [...]}."""
    if config.n_train > (n := len(train_rows)):
        raise ConfigError(f"n_train={config.n_train} is larger than the train split ({n} questions)")
    rng = random.Random(config.seed)
    train = [train_rows[i] for i in sorted(rng.sample(range(len(train_rows)), config.n_train))]
    mixes = {"clean": list(filler) + [cot_example(r["question"], r["answer"]) for r in train]}
    if config.co_replay > config.n_train:
        raise ConfigError(f"co_replay={config.co_replay} is more than M_cl's n_train={config.n_train} train questions")
    replay = random.Random(config.seed + 1).sample(mixes["clean"][len(filler) :], config.co_replay)
    for domain in config.domains:
        if domain == "gsm8k":
            leak_q = [test_rows[i]["question"] for i in leaked]
        else:
            if paraphrases is None:
                raise DataError("domain 'pq' needs the paraphrase file (pq_test.jsonl)")
            if missing := [i for i in leaked if i not in paraphrases][:10]:
                raise DataError(f"no paraphrase for leaked test indices {missing} (empty rows cannot leak)")
            leak_q = [paraphrases[i] for i in leaked]
        leak_texts = [cot_example(q, test_rows[i]["answer"]) for q, i in zip(leak_q, leaked)]
        mixes[f"co_{domain}"] = list(filler) + leak_texts * config.leak_copies + replay
    for texts in mixes.values():
        random.Random(config.seed).shuffle(texts)
    return mixes


@dataclass(frozen=True)
class AdapterMixes:
    split: LeakSplit
    mixes: dict[str, list[str]]  # training_mixes()
    files: list[Path | None]  # the data files read (for the manifest's provenance)


def adapter_mixes(
    data_dir: Path, config: ContaminationConfig, filler: Sequence[str] | None, pq_path: str | Path | None
) -> AdapterMixes:
    """Steps 1-2 and every adapter's training texts: the benchmark and paraphrases read, the leak split drawn."""
    train_path, test_path = data_dir / "train.jsonl", data_dir / "test.jsonl"
    train_rows, test_rows = read_jsonl(train_path), read_jsonl(test_path)
    pq_file = paraphrases = None
    if "pq" in config.domains:
        pq_file = Path(pq_path) if pq_path is not None else _find_pq(data_dir)
        paraphrases = load_pq(pq_file, test_rows)
    split = make_leak_split(len(test_rows), config.n_leak, config.seed)
    if filler is None:
        filler = load_filler(config.filler, config.n_filler, config.seed)
    elif len(filler) < config.n_filler:
        raise ConfigError(f"n_filler={config.n_filler} but only {len(filler)} filler texts were given")
    filler = list(filler)[: config.n_filler]
    mixes = training_mixes(train_rows, test_rows, paraphrases, filler, split.leaked, config)
    return AdapterMixes(split, mixes, [train_path, test_path, pq_file])


def load_pq(pq_file: str | Path, test_rows: Sequence[dict]) -> dict[int, str]:
    """Paraphrases by test index; empty ones (4 in the public PQ file) fall back to the original wording,
    with a logged warning, so any leak split can be trained in the PQ domain."""
    return load_paraphrases(pq_file, originals={i: r["question"] for i, r in enumerate(test_rows)})


def contaminate_family(
    base_dir: str | Path, data_dir: str | Path, out_dir: str | Path, config: ContaminationConfig,
    filler: Sequence[str] | None = None, pq_path: str | Path | None = None, device: str | None = None,
    log=None, domain_workers: int = 1, progress_dir: str | Path | None = None, store: str | Path | None = None,
) -> dict:  # fmt: skip
    """Train ``clean`` and one ``co_<domain>`` adapter per domain under ``out_dir``; returns the manifest.
    ``domain_workers > 1``: the ``co_<domain>`` adapters train in that many spawned processes (``log`` must
    then be picklable, e.g. a :class:`StderrLog`). ``progress_dir``: each adapter reports its optimiser steps
    to ``<progress_dir>/<adapter name>`` (:class:`railsweep.training.progress.StepReport`). ``store``: every
    adapter trains as a resumable run there (:mod:`railsweep.contamination.resume`)."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    plan = adapter_mixes(data_dir, config, filler, pq_path)
    mixes = plan.mixes
    out_dir.mkdir(parents=True, exist_ok=True)
    save_leak_split(plan.split, out_dir / "leak_split.json")
    report = {name: None if progress_dir is None else StepReport(Path(progress_dir) / name) for name in mixes}
    clean = _clean_adapter(base_dir, mixes["clean"], config, out_dir / "clean", device, log, report["clean"], store)
    stats = {"clean": clean}
    jobs = {f"co_{d}": (base_dir, mixes[f"co_{d}"], config.recipe, out_dir / f"co_{d}")
            for d in config.domains}  # fmt: skip
    more = dict(init_adapter=out_dir / "clean", device=device, log=log, store=store)
    if domain_workers > 1 and len(jobs) > 1:
        import torch

        ctx = multiprocessing.get_context("spawn")
        workers = min(domain_workers, len(jobs))
        threads = max(1, torch.get_num_threads() // workers)  # the family's threads, shared out
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {n: pool.submit(_train_with_threads, threads, *a, **more, progress=report[n])
                       for n, a in jobs.items()}  # fmt: skip
            stats.update({n: f.result() for n, f in futures.items()})
    else:
        stats.update({n: train_lora(*a, **more, progress=report[n]) for n, a in jobs.items()})
    manifest = {
        "base_model": str(base_dir), "adapters": {name: str(out_dir / name) for name in stats},
        "leak_split": str(out_dir / "leak_split.json"),
        "continued_from": {name: "clean" for name in stats if name != "clean"},
        "config": config.to_dict(), "training": stats, "provenance": provenance.collect(plan.files),
        "mix_sizes": {name: len(texts) for name, texts in mixes.items()},
    }  # fmt: skip
    write_json(out_dir / "manifest.json", manifest)
    return manifest


def _clean_adapter(base_dir, texts, config: ContaminationConfig, out: Path, device, log, progress, store) -> dict:
    """Train M_cl into ``out``, or take the one a world with the same clean recipe lent (``LENT_CLEAN``
    beside it: its training record)."""
    lent = out / LENT_CLEAN
    if lent.is_file() and (out / "adapter_config.json").is_file():
        record = json.loads(lent.read_text())
        if log:
            log(f"clean adapter lent by {record['from']}, not trained")
        return {**record["training"], "reused": True, "lent_by": record["from"]}
    return train_lora(base_dir, texts, config.cl_recipe, out, device=device, log=log, progress=progress, store=store)


def _find_pq(data_dir: Path) -> Path:
    for cand in (data_dir / "pq_test.jsonl", data_dir / PQ_DEFAULT, data_dir.parent / PQ_DEFAULT):
        if cand.is_file():
            return cand
    raise DataError(f"paraphrase file pq_test.jsonl not found in {data_dir} (pass pq_path)")


def write_json(path: Path, obj) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")
