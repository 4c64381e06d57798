"""Does the smoke world's pretraining give the same weights on 1 and 2 threads, what does the build's pinned
arithmetic (``ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2``, :mod:`railsweep.miniworld.arithmetic`) cost against the
CPU's own kernels, and what does ``ATEN_CPU_CAPABILITY=default`` (ATen's scalar kernels) cost?

Steps:
  1. in a temporary directory: the smoke preset's benchmark, pretraining corpus and tokenizer, as the
     world's build makes them (``railsweep.miniworld.world``);
  2. ``--repeats`` rounds, each running every variant (threads x arithmetic: ``auto`` the CPU's own kernels,
     ``pinned`` the world build's, ``strict`` the pin with ``MKL_CBWR=AVX2,STRICT``, ``default`` ATen's
     scalar ones) once, in a rotated order
     (a load that changes during the run weighs on every variant alike): a fresh ``python`` process (the
     capability is read when torch loads) pretrains the smoke family's base model from the same seed with
     the preset's recipe (``--steps`` fewer steps shorten its learning-rate schedule: other weights than the
     smoke world's), saves it and reports its seconds and the sha256 of its ``model.safetensors``;
  3. print JSON: every run; per variant the capability torch used, threads, median seconds and tokens/s and
     the distinct sha256 of its weights (one when a variant repeats itself bit for bit); which variants wrote
     byte-identical weights; the machine (its SIMD flags among them) and its load.

Run: ``nice -n 19 python bench/pretrain_determinism.py [--steps N] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from railsweep.miniworld.arithmetic import PINNED  # noqa: E402

# "strict": the pin with MKL's strict reproducibility mode, whose matrix products do not follow the thread count
ARITHMETIC = {"auto": {}, "pinned": PINNED, "strict": {**PINNED, "MKL_CBWR": "AVX2,STRICT"},
              "default": {"ATEN_CPU_CAPABILITY": "default"}}  # fmt: skip
VARIANTS = ((2, "auto"), (2, "pinned"), (1, "auto"), (1, "pinned"), (2, "strict"), (1, "strict"), (1, "default"))
SIMD_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile")  # what decides the CPU's kernels

_CHILD = """
import dataclasses, hashlib, json, sys, time
from pathlib import Path
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from railsweep.miniworld.models import model_config
from railsweep.miniworld.presets import preset_config
from railsweep.miniworld.pretrain import pretrain, save_model

work, threads, steps, out = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) or None, Path(sys.argv[4])
torch.set_num_threads(threads)
config = preset_config("smoke")
family = config.families[0]
tokenizer = AutoTokenizer.from_pretrained(work / "tokenizer")
ids = {k: getattr(tokenizer, f"{k}_token_id") for k in ("bos", "eos", "pad")}
pcfg = dataclasses.replace(config.pretrain_for(family), steps=steps or config.steps_for(family))
torch.manual_seed(config.seed)  # as railsweep.miniworld.family.build_family
model = AutoModelForCausalLM.from_config(model_config(family, config.size, len(tokenizer), **ids), dtype=torch.float32)
corpus = json.loads((work / "corpus.json").read_text())
t0 = time.perf_counter()
stats = pretrain(model, tokenizer, corpus, pcfg)
seconds = time.perf_counter() - t0
save_model(model, tokenizer, out)
print(json.dumps({
    "capability": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads(),
    "steps": stats["steps"], "seconds": round(seconds, 1), "tokens_per_s": round(stats["tokens"] / seconds),
    "final_loss": stats["final_loss"],
    "sha256": hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest(),
}))
"""


def count(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def prepare(work: Path) -> None:
    """Step 1: the smoke world's benchmark, corpus and tokenizer under ``work``."""
    from railsweep.miniworld.benchmark import write_benchmark
    from railsweep.miniworld.corpus import pretraining_corpus
    from railsweep.miniworld.presets import preset_config
    from railsweep.miniworld.tokenizer import train_tokenizer

    config = preset_config("smoke")
    data = write_benchmark(work / "data", config)
    corpus = pretraining_corpus(data, config)
    vocab = corpus + data.filler + [p.paraphrase for p in data.test] + [p.question for p in data.test]
    train_tokenizer(vocab, work / "tokenizer", max_number=config.max_number)
    (work / "corpus.json").write_text(json.dumps(corpus))


def run_variant(work: Path, threads: int, arithmetic: str, steps: int) -> dict:
    """Step 2: one variant in a fresh process (``steps`` 0: the preset's)."""
    env = {k: v for k, v in os.environ.items() if k not in PINNED}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    env.update(ARITHMETIC[arithmetic])
    out = work / f"base-t{threads}-{arithmetic}"
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(work), str(threads), str(steps), str(out)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return {"arithmetic": arithmetic, **ARITHMETIC[arithmetic], **json.loads(done.stdout.strip().splitlines()[-1])}


def summary(runs: list[dict]) -> dict:
    """Step 3: per variant, median speed and distinct weights; the variants with byte-identical weights."""
    variants: dict[str, list[dict]] = {}
    for r in runs:
        variants.setdefault(f"threads={r['threads']} {r['arithmetic']} ({r['capability']})", []).append(r)
    per_variant = {
        name: {"median_seconds": statistics.median(r["seconds"] for r in rs),
               "median_tokens_per_s": statistics.median(r["tokens_per_s"] for r in rs),
               "sha256": sorted({r["sha256"] for r in rs})}
        for name, rs in variants.items()
    }  # fmt: skip
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, v in per_variant.items():
        groups.setdefault(tuple(v["sha256"]), []).append(name)
    return {"variants": per_variant, "identical_weights": list(groups.values())}


def cpu_flags() -> list[str]:
    """Which of :data:`SIMD_FLAGS` the CPU has (Linux; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return [f for f in SIMD_FLAGS if f in flags]


def cpu_name() -> str:
    """The CPU's model name (Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=count, default=None, help="pretraining steps per run (default: the preset's)")
    p.add_argument("--repeats", type=count, default=3, help="runs of every variant")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pretrain-determinism-") as tmp:
        work = Path(tmp)
        prepare(work)
        runs = []
        for r in range(args.repeats):
            order = VARIANTS[r % len(VARIANTS) :] + VARIANTS[: r % len(VARIANTS)]
            runs += [run_variant(work, t, cap, args.steps or 0) for t, cap in order]
    print(json.dumps({
        "preset": "smoke", "runs": runs, **summary(runs),
        "machine": {"cpu": cpu_name(), "simd": cpu_flags(), "cpus": os.cpu_count(),
                    "loadavg_at_end": os.getloadavg()},
    }, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
