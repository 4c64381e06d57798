"""Teacher-forced logits, the cost of ``railsweep rails`` and ``railsweep figure1`` on a large model:
one full forward pass per continuation against the prompt run once and shared by a question's
continuations (:mod:`railsweep.engines.teacher_forcing`), side by side in one run.

    python bench/teacher_forced.py --model PATH [--task-dir DIR] [--questions 3] [--m 10] [--threads 1]

Steps:
  1. load ``--model`` (fp32, ``--threads`` torch threads) and ``--task-dir``'s 8-shot prompts;
  2. per question: ``--m`` continuations, the gold solutions of the next ``--m`` test questions as token ids
     (realistic lengths; the logits need not be likely);
  3. per question, both ways, alternating which goes first: (a) one forward pass over prompt + continuation
     per continuation, logits at every position, the continuation's rows kept (what rails did before);
     (b) the prompt once (:func:`prompt_cache`), then :func:`teacher_forced` in batches of ``--batch-size``;
  4. print JSON: seconds per continuation of each, their ratio, and the largest absolute difference
     between their logits and the share of positions whose top two tokens agree.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from railsweep.engines.teacher_forcing import prompt_cache, teacher_forced  # noqa: E402
from railsweep.tasks.kinds.gsm8k import GSM8KTask  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k"


def full_forward(model, prompt: list[int], conts: list[list[int]]) -> list[torch.Tensor]:
    out = []
    for c in conts:
        logits = model(input_ids=torch.tensor([prompt + c])).logits[0].float()
        out.append(logits[len(prompt) - 1 : len(prompt) - 1 + len(c)])
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a transformers model directory (or hub id)")
    p.add_argument("--task-dir", type=Path, default=DATA, help=f"GSM8K-format task (default {DATA})")
    p.add_argument("--questions", type=int, default=3)
    p.add_argument("--m", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=1, help="continuations per pass (default 1, as rails)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(args.threads)
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    task = GSM8KTask.from_dir(args.task_dir, limit=args.questions * (args.m + 1))
    qs = list(task.questions())
    times = {"full": 0.0, "shared": 0.0}
    diff, agree, positions, tokens = 0.0, 0, 0, 0
    for i in range(args.questions):
        prompt = list(tok(task.prompt(qs[i]), add_special_tokens=True)["input_ids"])
        conts = [
            tok(" " + q.solution, add_special_tokens=False)["input_ids"] for q in qs[i + 1 : i + 1 + args.m]
        ]
        got = {}
        for name in ("full", "shared") if i % 2 == 0 else ("shared", "full"):
            t0 = time.perf_counter()
            with torch.no_grad():
                if name == "full":
                    got[name] = full_forward(model, prompt, conts)
                else:
                    state = prompt_cache(model, prompt)
                    forced = dict(teacher_forced(model, conts, prompt=state, batch_size=args.batch_size))
                    got[name] = [forced[j] for j in range(len(conts))]
            times[name] += time.perf_counter() - t0
        for a, b in zip(got["full"], got["shared"]):
            diff = max(diff, float((a - b).abs().max()))
            agree += int((a.topk(2).indices == b.topk(2).indices).all(dim=1).sum())
            positions += a.shape[0]
        tokens += len(prompt)
    n = args.questions * args.m
    print(json.dumps({
        "model": args.model, "questions": args.questions, "m": args.m, "batch_size": args.batch_size,
        "threads": args.threads, "mean_prompt_tokens": round(tokens / args.questions, 1),
        "mean_continuation_tokens": round(positions / n, 1),
        "full_s_per_continuation": round(times["full"] / n, 3),
        "shared_s_per_continuation": round(times["shared"] / n, 3),
        "speedup": round(times["full"] / times["shared"], 2),
        "max_abs_logit_diff": diff, "top2_agreement": agree / positions,
        "load": [round(x, 2) for x in os.getloadavg()],
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
