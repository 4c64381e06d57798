"""Each baseline's wall time relative to plain m-sampling (Identity), same engine, model and prompts.

Steps:
  1. build a tiny world (``make_tiny_model`` llama with a peaked output head, plus random
     "co" and "cl" LoRA adapters) or load ``--model`` with ``--adapter co=DIR --adapter cl=DIR``;
  2. load ``--questions`` GSM8K test questions (8-shot CoT prompts) from ``--data``;
  3. run Shortcut's localisation once (timed separately: a one-off per model and domain);
  4. run every arm (Identity, TED, LNE-blocking sampling and greedy readouts, Shortcut ranked
     and random-control, RailCap for reference) through its registered strategy, interleaved
     over ``--repeats`` rounds with the order rotated; median wall time per arm;
  5. print JSON: per-arm median seconds and ``ratio_vs_identity``.

Run: ``python bench/baseline_cost.py`` (CPU, ~1-3 min with one thread).
Expected from the method (baselines.md §4): TED ≈ (m+1)/m, LNE sampling ≈ (m+1)/m (one extra
greedy pass with entropies), LNE greedy ≈ 2/m, Shortcut ≈ 2× (two forwards per token, and no
prompt-prefill dedupe across a prompt's samples).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.interventions import NeuronPatchSpec
from railsweep.strategies import build_strategy
from railsweep.strategies.base import DecodeSettings, EvalContext
from railsweep.strategies.shortcut.localisation import localise
from railsweep.tasks import GSM8KTask
from railsweep.testing import make_tiny_model

ARMS = {
    "identity": ("identity", {}),
    "ted": ("ted", {}),
    "lne_blocking": ("lne_blocking", {}),
    "lne_blocking_greedy": ("lne_blocking", {"readout": "greedy"}),
    "shortcut": ("shortcut", {}),
    "shortcut_random": ("shortcut", {"control": "random"}),
    "railcap": ("railcap", {}),
}


class TokenCounter:
    """The real engine, tallying generated tokens (and tokens run through a second, reference model)."""

    def __init__(self, engine):
        self.inner, self.tokens, self.reference_tokens = engine, 0, 0

    def generate(self, requests):
        comps = self.inner.generate(requests)
        for req, comp in zip(requests, comps):
            n = sum(len(s.token_ids) for s in comp.samples)
            self.tokens += n
            if isinstance(req.intervention, NeuronPatchSpec) and req.intervention.neurons:
                self.reference_tokens += n
        return comps

    def __getattr__(self, name):
        return getattr(self.inner, name)


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, default=None, help="model directory (default: a fresh tiny world)")
    p.add_argument(
        "--adapter", action="append", default=[], help="NAME=DIR; needs 'co' and 'cl' with --model"
    )
    p.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k"
    )
    p.add_argument("--device", default="cpu")
    p.add_argument("--questions", type=int, default=8)
    p.add_argument("--m", type=int, default=8, help="samples per question")
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--loc-questions", type=int, default=8, help="Shortcut localisation questions")
    p.add_argument("--loc-blocks", type=int, default=4, help="Shortcut localisation blocks per layer")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    return p


def _tiny_world(root: Path) -> tuple[Path, dict[str, Path]]:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    raw = make_tiny_model(root / "raw", family="llama", seed=0)
    model = AutoModelForCausalLM.from_pretrained(raw, dtype=torch.float32)
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(6.0)  # peaked, like a trained model
    model.save_pretrained(root / "base")
    AutoTokenizer.from_pretrained(raw).save_pretrained(root / "base")
    adapters = {}
    for name, seed in (("co", 1), ("cl", 2)):
        torch.manual_seed(seed)
        m = AutoModelForCausalLM.from_pretrained(root / "base", dtype=torch.float32)
        cfg = LoraConfig(r=4, lora_alpha=4, target_modules="all-linear", init_lora_weights=False)
        get_peft_model(m, cfg).save_pretrained(root / name)
        adapters[name] = root / name
    return root / "base", adapters


def main(argv: list[str] | None = None) -> dict:
    args = make_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        if args.model is None:
            model_dir, adapters = _tiny_world(Path(tmp))
        else:
            model_dir, adapters = args.model, dict(a.split("=", 1) for a in args.adapter)
        engine = TokenCounter(TransformersEngine(model_dir, adapters, device=args.device, dtype="float32"))
        task = GSM8KTask.from_dir(args.data, split="test", limit=args.questions)
        questions = list(task.questions())
        settings = DecodeSettings(m=args.m, temperature=0.7, max_new_tokens=args.max_new_tokens, seed=0)
        ctx = EvalContext(engine, task, adapter="co", settings=settings, clean_adapter="cl")
        loc_params = {"loc_questions": args.loc_questions, "loc_blocks": args.loc_blocks}
        arms = {k: (n, {**p, **loc_params} if n == "shortcut" else p) for k, (n, p) in ARMS.items()}

        t0 = time.perf_counter()
        loc = localise(ctx, questions, build_strategy("shortcut", arms["shortcut"][1]).config.loc_params())
        loc_s = time.perf_counter() - t0

        times: dict[str, list[float]] = {k: [] for k in arms}
        tokens: dict[str, tuple[int, int]] = {}
        for r in range(args.repeats):
            names = list(arms)
            for key in names[r % len(names) :] + names[: r % len(names)]:
                name, params = arms[key]
                t, n0, r0 = time.perf_counter(), engine.tokens, engine.reference_tokens
                build_strategy(name, params).run(ctx, questions)
                times[key].append(time.perf_counter() - t)
                tokens[key] = (engine.tokens - n0, engine.reference_tokens - r0)
        engine.close()

    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "bench": "baseline_cost",
        "questions": args.questions,
        "m": args.m,
        "max_new_tokens": args.max_new_tokens,
        "repeats": args.repeats,
        "threads": args.threads,
        "device": args.device,
        "median_s": {k: round(v, 4) for k, v in med.items()},
        "ratio_vs_identity": {k: round(v / med["identity"], 3) for k, v in med.items()},
        "generated_tokens": {k: v[0] for k, v in tokens.items()},
        "reference_model_tokens": {k: v[1] for k, v in tokens.items()},
        "token_ratio_vs_identity": {k: round(sum(v) / tokens["identity"][0], 3) for k, v in tokens.items()},
        "shortcut_localisation_s": round(loc_s, 3),
        "shortcut_localisation": {
            k: loc.manifest[k] for k in ("greedy_runs", "greedy_decodes", "rms_tokens")
        },
        "python": platform.python_version(),
        "torch": torch.__version__,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
