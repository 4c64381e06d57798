"""Do the transformers and vLLM engines give the same cell? Per-question solve rates and RailCap's triggers.

Runs ``railsweep eval`` twice on the same model, adapter, questions, strategy and seed: once in this venv with
``--backend transformers``, once in the vLLM venv (``--vllm-python``, the one ``.ci/vllm.sh`` builds) with
``--backend vllm``. The engines draw different random streams, so samples differ; what must agree is each
question's solve rate within binomial noise and the strategy's trigger rate. Each cell's whole output goes
to ``transformers.log`` / ``vllm.log`` beside it (under ``--keep``, else a temporary folder the error names).
Printed as JSON:

- per question: c / m of each engine and the two-proportion z statistic (pooled); a question *agrees* when
  |z| <= 1.96 (the difference is inside the 95 % interval of a common rate);
- ``agree_share``: the share of questions that agree (about 0.95 is what two draws of the same model give);
- mean solve rate and mean triggers per sample of each engine, with the triggers' ratio and a Welch z of their
  difference over the sampled responses;
- ``greedy_identical``: the questions whose greedy response (RailCap's rail) has the same token ids on both
  engines. Both engines run in ``--dtype`` (default float32): vLLM's ``auto`` downcasts a float32 checkpoint to
  bfloat16 on a CPU, and a bf16 greedy answer is another rail, so its triggers differ for that reason alone.

Run (the vLLM venv must exist: ``bash .ci/vllm.sh`` builds it)::

    python bench/engines_agree.py --model DIR [--adapter co=DIR --use-adapter co] --task-dir DIR \\
        [--strategy railcap --m 10 --limit 20 --max-new-tokens 128]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from railsweep.engines.config import DTYPES  # noqa: E402
from railsweep.results.io import find_cells, read_cell, read_responses  # noqa: E402

DEFAULT_VLLM_PYTHON = Path.home() / ".cache" / "railsweep" / "venv-vllm" / "bin" / "python"
Z95 = 1.96


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--adapter", action="append", default=[], metavar="NAME=PATH")
    p.add_argument("--use-adapter", default=None)
    p.add_argument("--task-dir", required=True)
    p.add_argument("--strategy", default="railcap")
    p.add_argument("--param", action="append", default=[], metavar="K=V")
    p.add_argument("--m", type=int, default=10)
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--dtype",
        default="float32",
        choices=DTYPES,
        help="both engines' dtype (vLLM's auto is bf16 on a CPU)",
    )
    p.add_argument("--vllm-python", default=str(DEFAULT_VLLM_PYTHON))
    p.add_argument("--keep", default=None, help="keep both cells and their whole logs under this folder")
    return p


def eval_args(args, backend: str, out: Path) -> list[str]:
    cmd = ["-m", "railsweep", "eval", "--model", args.model, "--task-dir", args.task_dir]
    for a in args.adapter:
        cmd += ["--adapter", a]
    if args.use_adapter:
        cmd += ["--use-adapter", args.use_adapter]
    cmd += ["--strategy", args.strategy, "--m", str(args.m), "--limit", str(args.limit)]
    cmd += ["--temperature", str(args.temperature), "--max-new-tokens", str(args.max_new_tokens)]
    cmd += ["--seed", str(args.seed), "--dtype", args.dtype, "--backend", backend, "--device", "cpu"]
    cmd += ["--out", str(out)]
    for kv in args.param:
        cmd += ["--param", kv]
    return cmd


def run_eval(python: str, args, backend: str, out: Path) -> dict:
    """Run one cell; its whole output (the engine's own processes included) goes to ``OUT.log`` as it comes."""
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}".rstrip(os.pathsep),
    }
    log = out.with_name(out.name + ".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as f:
        proc = subprocess.run(
            [python, *eval_args(args, backend, out)], env=env, stdout=f, stderr=subprocess.STDOUT
        )
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise SystemExit(
            f"engines_agree.py: {backend} eval failed (exit {proc.returncode}), whole log {log}:\n{tail}"
        )
    (cell_path,) = find_cells(out)
    _, questions = read_cell(cell_path)
    responses = read_responses(cell_path)
    graded = responses[responses["sample_index"] >= 0]
    greedy = responses[responses["sample_index"] < 0].sort_values("question_index")
    return {
        "c": questions["c"].tolist(),
        "m": questions["m"].tolist(),
        "triggers": graded["triggers"].astype(float).tolist(),
        "greedy": {
            int(q): list(map(int, ids)) for q, ids in zip(greedy["question_index"], greedy["token_ids"])
        },
    }


def z_pooled(c1: int, m1: int, c2: int, m2: int) -> float:
    """Two-proportion z statistic with the pooled rate (0 when both rates are 0 or 1)."""
    if not m1 or not m2:
        return 0.0
    p = (c1 + c2) / (m1 + m2)
    se = math.sqrt(p * (1 - p) * (1 / m1 + 1 / m2))
    return 0.0 if se == 0 else (c1 / m1 - c2 / m2) / se


def z_welch(a: list[float], b: list[float]) -> float | None:
    """Welch z statistic of mean(b) - mean(a) (None with fewer than two values on a side)."""
    if len(a) < 2 or len(b) < 2:
        return None
    se = math.sqrt(statistics.variance(a) / len(a) + statistics.variance(b) / len(b))
    return 0.0 if se == 0 else (statistics.fmean(b) - statistics.fmean(a)) / se


def compare(hf: dict, vl: dict) -> dict:
    """The two cells side by side; each is ``{"c", "m"}`` per question, ``triggers`` per sampled response and
    ``greedy`` token ids per question (what :func:`run_eval` returns)."""
    rows = [
        {"hf": f"{c1}/{m1}", "vllm": f"{c2}/{m2}", "z": round(z_pooled(c1, m1, c2, m2), 2)}
        for c1, m1, c2, m2 in zip(hf["c"], hf["m"], vl["c"], vl["m"])
    ]
    agree = sum(abs(r["z"]) <= Z95 for r in rows)
    rate = lambda d: sum(d["c"]) / max(1, sum(d["m"]))  # noqa: E731
    per_sample = lambda d: statistics.fmean(d["triggers"]) if d["triggers"] else 0.0  # noqa: E731
    t_hf, t_vl = per_sample(hf), per_sample(vl)
    z = z_welch(hf["triggers"], vl["triggers"])
    return {
        "questions": len(rows),
        "agree": agree,
        "agree_share": round(agree / max(1, len(rows)), 3),
        "solve_rate": {"transformers": round(rate(hf), 4), "vllm": round(rate(vl), 4)},
        "triggers_per_sample": {
            "transformers": round(t_hf, 3),
            "vllm": round(t_vl, 3),
            "ratio": round(t_vl / t_hf, 3) if t_hf else None,
            "z": None if z is None else round(z, 2),
        },
        "greedy_identical": sum(ids == vl["greedy"].get(q) for q, ids in hf["greedy"].items()),
        "per_question": rows,
    }


def main(args: argparse.Namespace) -> dict:
    if not Path(args.vllm_python).is_file():
        raise SystemExit(
            f"engines_agree.py: error: --vllm-python: no such file {args.vllm_python} (bash .ci/vllm.sh)"
        )
    work = Path(args.keep or tempfile.mkdtemp(prefix="railsweep-agree-"))
    hf = run_eval(sys.executable, args, "transformers", work / "transformers")
    vl = run_eval(args.vllm_python, args, "vllm", work / "vllm")
    return {"strategy": args.strategy, "m": args.m, "temperature": args.temperature, "dtype": args.dtype,
            **compare(hf, vl)}  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(main(make_parser().parse_args()), indent=1))
