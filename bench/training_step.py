"""Where a miniature-world family's pretraining step spends its time on one core, and how far the build is from
what this core could do at all: the bound on any faster build of the same weights.

    python bench/training_step.py [--preset mini] [--steps 10] [--arithmetic pinned auto]

Steps:
  1. per family of the preset and per arithmetic (``pinned``: the world build's, :mod:`railsweep.miniworld.arithmetic`;
     ``auto``: the CPU's own kernels), a fresh one-thread ``python`` process (the capability is read when torch
     loads) builds the family's model from the preset's size (vocabulary ``--vocab``, the ``mini`` tokenizer's 665),
     draws a random batch of the preset's pretraining shape (blocks × block tokens) and times ``--steps`` AdamW
     steps as the build runs them (block-causal attention, gradient clipping) after 3 warm-up steps, split into
     forward, backward and optimizer (clipping included); counts the step's floating-point operations
     (``torch.utils.flop_counter``, forward and backward), profiles three more steps for the share of the step's CPU
     time in matrix products (``aten::mm``, ``bmm``, ``addmm``, ``baddbmm``), and times a 1024³ fp32 matrix
     product in the same process (the core's matmul rate under that arithmetic: the ``peak``);
  2. print JSON, per family and arithmetic: seconds per step and tokens/s, the split, GFLOP per step, the rate
     achieved over the whole step and inside the matrix products, the peak, and ``bound_speedup``: step seconds
     over (FLOPs / peak), the most a step of the same FLOPs could gain on this core; per arithmetic, the
     pretraining core-seconds of the preset's step counts (``family_steps``) and the shortest two-core pretraining
     they allow (the larger of the longest family alone and half the total), at the measured speed and at the bound.

The adapters' phase of a build (a few minutes per family, ``railsweep miniworld build`` logs it) is not timed here.
Run it on a quiet machine: a loaded core gives slower steps and the same bound.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from railsweep.miniworld.arithmetic import PINNED  # noqa: E402
from railsweep.miniworld.presets import PRESETS, preset_config  # noqa: E402

ARITHMETIC = {"auto": {}, "pinned": PINNED}

_CHILD = """
import json, statistics, sys, time
import torch
from torch.profiler import profile
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoModelForCausalLM
from railsweep.miniworld.models import model_config
from railsweep.miniworld.presets import preset_config
from railsweep.training.attention import training_attention

preset, family, steps, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(1)
config = preset_config(preset)
B, L = config.pretrain.batch_size, config.pretrain.block_size
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(model_config(family, config.size, vocab, 1, 2, 0), dtype=torch.float32)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, betas=(0.9, 0.95))
batch = torch.randint(3, vocab, (B, L))
model.train()

def step():
    t0 = time.perf_counter(); loss = model(input_ids=batch, labels=batch).loss
    t1 = time.perf_counter(); loss.backward()
    t2 = time.perf_counter(); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0); opt.step()
    opt.zero_grad(set_to_none=True)
    return t1 - t0, t2 - t1, time.perf_counter() - t2

with training_attention(model, "auto", "cpu", L):
    for _ in range(3):
        step()
    split = [step() for _ in range(steps)]
    with FlopCounterMode(display=False) as counter:
        model(input_ids=batch, labels=batch).loss.backward()
    opt.zero_grad(set_to_none=True)
    with profile() as prof:
        for _ in range(3):
            step()
events = prof.key_averages()
total = sum(e.self_cpu_time_total for e in events)
matmul = sum(e.self_cpu_time_total for e in events if e.key in ("aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm"))
a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
for _ in range(2):
    a @ b
t0 = time.perf_counter()
for _ in range(5):
    a @ b
peak = 5 * 2 * 1024**3 / (time.perf_counter() - t0) / 1e9
print(json.dumps({
    "capability": torch.backends.cpu.get_cpu_capability(), "tokens_per_step": B * L,
    "parameters": sum(p.numel() for p in model.parameters()),
    "forward_s": statistics.median(s[0] for s in split), "backward_s": statistics.median(s[1] for s in split),
    "optimizer_s": statistics.median(s[2] for s in split), "step_s": statistics.median(sum(s) for s in split),
    "flops": counter.get_total_flops(), "matmul_share": matmul / total, "peak_gflops": peak,
}))
"""


def count(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def run_variant(preset: str, family: str, arithmetic: str, steps: int, vocab: int) -> dict:
    """Step 1: one family under one arithmetic, in a fresh one-thread process."""
    env = {k: v for k, v in os.environ.items() if k not in PINNED}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    env.update(ARITHMETIC[arithmetic], OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, preset, family, str(steps), str(vocab)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return derived(json.loads(done.stdout.strip().splitlines()[-1]))


def derived(r: dict) -> dict:
    """Step 2: rates and the bound of one variant's raw timings."""
    step, gflop = r["step_s"], r["flops"] / 1e9
    return {
        **{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()},
        "tokens_per_s": round(r["tokens_per_step"] / step),
        "gflop_per_step": round(gflop, 2),
        "step_gflops": round(gflop / step, 1),
        "matmul_gflops": round(gflop / (step * r["matmul_share"]), 1),
        "bound_speedup": round(step / (gflop / r["peak_gflops"]), 2),
    }


def pretraining_floor(config, per_family: dict[str, dict]) -> dict:
    """Step 2: the preset's pretraining core-seconds and its shortest two-core wall time, measured and at the bound."""
    seconds = {f: config.steps_for(f) * v["step_s"] for f, v in per_family.items()}
    at_bound = {f: s / per_family[f]["bound_speedup"] for f, s in seconds.items()}

    def floor(s: dict[str, float]) -> float:
        return round(max(max(s.values()), sum(s.values()) / 2))

    return {
        "steps": {f: config.steps_for(f) for f in per_family},
        "core_s": {f: round(s) for f, s in seconds.items()},
        "two_core_floor_s": floor(seconds),
        "two_core_floor_at_bound_s": floor(at_bound),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="mini", choices=PRESETS, help="a preset whose families are pretrained here")
    p.add_argument("--steps", type=count, default=10, help="timed steps per variant (after 3 warm-up steps)")
    p.add_argument("--vocab", type=count, default=665, help="vocabulary size (the mini tokenizer's: 665)")
    p.add_argument("--arithmetic", nargs="+", default=["pinned", "auto"], choices=ARITHMETIC)
    args = p.parse_args(argv)
    config = preset_config(args.preset)
    if config.base:
        p.error(f"--preset {args.preset}: its family is a real pretrained base; nothing is pretrained here")
    results = {
        a: {f: run_variant(args.preset, f, a, args.steps, args.vocab) for f in config.families}
        for a in args.arithmetic
    }
    print(json.dumps({
        "preset": args.preset, "families": results,
        "pretraining": {a: pretraining_floor(config, per) for a, per in results.items()},
        "machine": {"cpus": os.cpu_count(), "loadavg_at_end": os.getloadavg()},
    }, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
