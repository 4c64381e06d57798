"""RailCap's decode overhead: Identity vs RailCap cap/ban (n=4) on the same engine, model and prompts.

Steps:
  1. build a tiny llama (or load ``--model``) and one TransformersEngine;
  2. greedy-decode every prompt once: the RailCap trajectories;
  3. decode the same batch (``--prompts`` x ``--samples`` rows, >= 256) under Identity,
     RailCap cap and RailCap ban, interleaved over ``--repeats`` rounds (order rotated);
  4. print JSON: tokens per CPU second per arm (best and median of the repeats), the
     ratios to Identity and the processor's own cost per step.

Headline: ``ratio_cap_vs_identity`` / ``ratio_ban_vs_identity``, the median over rounds of
the RailCap arm's tokens per CPU second over Identity's in the same round (target >= 0.97).
Pairing within a round cancels slow drifts in the machine's load, and the median shrugs
off a round another job disturbed; best-of ratios (``*_best``) swung 0.88-1.04 between
runs on a loaded machine and are kept only for comparison. On 2 shared cores (load
average 3-8) single rounds still scatter (standard deviation about 0.1), so one run's
median moves by a few hundredths (cap: 0.92-1.02 over seven runs; 0.977 pooled over
their 105 rounds); ``ratio_cap_estimate_from_step_costs`` is the steadier figure (0.98-0.99,
the processor taking 0.16-0.30 ms of a 256-row step of 16-20 ms). On a quiet machine (load
average about 1) three runs gave cap 0.957, 0.973 and 0.971 (``--repeats 30``), ban 0.987,
1.021 and 0.978.

Run: ``python bench/railcap_overhead.py`` (CPU, about 1 min with one thread).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from railsweep.engines.base import Request, SamplingSpec
from railsweep.engines.hf_processors import RailCapProcessor
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.interventions.railcap import RailCapSpec, apply_railcap
from railsweep.testing import make_tiny_model

QUESTIONS = [
    "Janet sells 16 eggs every day. She eats 3 and bakes muffins with 4. How many dollars does she make?",
    "A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts in total?",
    "Each student buys 3 books per month. How many books do 12 students buy in a year?",
    "A store sold 45 apples in the morning and 30 in the afternoon. How many apples were sold?",
]


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, default=None, help="model directory (default: a fresh tiny llama)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--samples", type=int, default=8, help="samples per prompt (rows = prompts x samples)")
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    return p


def _requests(prompts, args, trajectories=None, mode=None) -> list[Request]:
    sp = [
        SamplingSpec(n=args.samples, temperature=0.7, max_new_tokens=args.max_new_tokens, seed=i)
        for i in range(len(prompts))
    ]
    return [
        Request(p, s, intervention=RailCapSpec(trajectories[i], n=4, mode=mode) if mode else None)
        for i, (p, s) in enumerate(zip(prompts, sp))
    ]


def _processor_cost(identity_comps, trajectories, args, vocab: int) -> dict[str, float]:
    """CPU ms per decode step of the RailCap processor alone, replayed on the Identity samples.

    Low-noise companion of the end-to-end ratios: (a) the processor as the engine
    runs it (match runs, host skip, row subset), (b) the stateless core
    (:func:`apply_railcap`, as the vLLM processors run it) forced onto every row
    (the cost when every row has a target, as with a heavily contaminated model).
    """
    samples = [s.token_ids for c in identity_comps for s in c.samples]
    B, S = len(samples), args.max_new_tokens
    generated = torch.zeros((B, S), dtype=torch.long)
    for r, ids in enumerate(samples):
        generated[r, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    specs = [RailCapSpec(trajectories[r // args.samples], n=4) for r in range(B)]
    proc = RailCapProcessor(specs)
    b = proc.batch
    logits = torch.randn(B, vocab, generator=torch.Generator().manual_seed(0))
    gen_len = torch.zeros(B, dtype=torch.long)
    c0 = time.process_time()
    for step in range(S):
        proc(logits, generated, step)
    t_proc = time.process_time() - c0
    c0 = time.process_time()
    for step in range(4, S):
        gen_len.fill_(step)
        apply_railcap(
            logits, b.traj, b.traj_len, generated[:, step - 4 : step], gen_len, b.n, b.successor, b.mode
        )
    t_core = time.process_time() - c0
    return {
        "processor_cap_cpu_ms_per_step": 1e3 * t_proc / S,
        "core_all_rows_cpu_ms_per_step": 1e3 * t_core / (S - 4),
    }


def main(argv: list[str] | None = None) -> dict:
    args = make_parser().parse_args(argv)
    load_start = [round(x, 2) for x in os.getloadavg()]
    torch.set_num_threads(args.threads)
    rows = args.prompts * args.samples
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or make_tiny_model(Path(tmp) / "tiny", seed=0, logit_scale=3.0)
        engine = TransformersEngine(model, device=args.device, max_batch_size=max(rows, 1))
        prompts = [f"Question {i}: {QUESTIONS[i % len(QUESTIONS)]}\nAnswer:" for i in range(args.prompts)]
        greedy = engine.generate(
            [Request(p, SamplingSpec(max_new_tokens=args.max_new_tokens)) for p in prompts]
        )
        trajectories = [tuple(c.samples[0].token_ids) for c in greedy]
        arms = {
            "identity": _requests(prompts, args),
            "railcap_cap_n4": _requests(prompts, args, trajectories, "cap"),
            "railcap_ban_n4": _requests(prompts, args, trajectories, "ban"),
        }
        engine.generate(arms["identity"][:1])  # warm-up
        tps: dict[str, list[float]] = {k: [] for k in arms}  # per CPU second of this process
        wall: dict[str, list[float]] = {k: [] for k in arms}  # per wall-clock second
        triggers: dict[str, int] = {}
        comps_by_arm: dict[str, list] = {}
        names = list(arms)
        for r in range(args.repeats):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                t0, c0 = time.perf_counter(), time.process_time()
                comps = engine.generate(arms[name])
                dt, dc = time.perf_counter() - t0, time.process_time() - c0
                comps_by_arm[name] = comps
                tokens = sum(len(s.token_ids) for c in comps for s in c.samples)
                tps[name].append(tokens / dc)
                wall[name].append(tokens / dt)
                triggers[name] = sum(s.triggers for c in comps for s in c.samples)
        vocab = engine.model.get_output_embeddings().weight.shape[0]
        micro = _processor_cost(comps_by_arm["identity"], trajectories, args, vocab)
        engine.close()
    best = {k: max(v) for k, v in tps.items()}
    med = {k: statistics.median(v) for k, v in tps.items()}
    paired = {
        k: statistics.median(a / b for a, b in zip(tps[k], tps["identity"])) for k in tps if k != "identity"
    }
    med_wall = {k: statistics.median(v) for k, v in wall.items()}
    result = {
        "rows_per_batch": rows,
        "max_new_tokens": args.max_new_tokens,
        "repeats": args.repeats,
        "threads": args.threads,
        "device": args.device,
        "torch": torch.__version__,
        "machine": platform.processor() or platform.machine(),
        "clock": "process CPU time (robust to other jobs on a shared machine); wall-clock figures alongside",
        "tokens_per_cpu_s_best": best,
        "tokens_per_cpu_s_median": med,
        "tokens_per_cpu_s_all": tps,
        "tokens_per_wall_s_median": med_wall,
        "triggers_last_repeat": triggers,
        "ratio_cap_vs_identity": paired["railcap_cap_n4"],
        "ratio_ban_vs_identity": paired["railcap_ban_n4"],
        "target_ratio": 0.97,
        "ratio_cap_vs_identity_of_medians": med["railcap_cap_n4"] / med["identity"],
        "ratio_ban_vs_identity_of_medians": med["railcap_ban_n4"] / med["identity"],
        "ratio_cap_vs_identity_best": best["railcap_cap_n4"] / best["identity"],
        "ratio_ban_vs_identity_best": best["railcap_ban_n4"] / best["identity"],
        "load_average_start_end": [load_start, [round(x, 2) for x in os.getloadavg()]],
        "identity_cpu_ms_per_step": 1e3 * rows / best["identity"],
        **micro,
        "ratio_cap_estimate_from_step_costs": 1
        / (1 + micro["processor_cap_cpu_ms_per_step"] * best["identity"] / (1e3 * rows)),
        "ratio_cap_estimate_if_every_row_triggers": 1
        / (1 + micro["core_all_rows_cpu_ms_per_step"] * best["identity"] / (1e3 * rows)),
        "ratio_cap_vs_identity_wall": med_wall["railcap_cap_n4"] / med_wall["identity"],
        "ratio_ban_vs_identity_wall": med_wall["railcap_ban_n4"] / med_wall["identity"],
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        tmp_out = args.out.with_suffix(args.out.suffix + ".tmp")
        tmp_out.write_text(text)
        tmp_out.replace(args.out)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
