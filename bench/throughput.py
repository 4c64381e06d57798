"""Engine throughput on this hardware: the table `railsweep sweep --dry-run --throughput FILE` prices sweeps with.

    python bench/throughput.py --preset mini [--families llama,neox,gemma] [--questions 40] [--m 20]
        [--threads 1] [--device cpu] [--backend transformers] [--patched [--patched-questions 8]] [--out FILE]
    python bench/throughput.py --model PATH --adapter co=PATH [--task-dir DIR] --device cuda --backend vllm ...

Steps:
  1. the engines to measure: every family of a miniature world (``--preset``, built or reused under
     ``--cache-dir``; keyed ``miniworld:<preset>/<family>`` as sweep specs name them), or one ``--model`` with
     its ``--adapter`` (keyed by ``--model`` as written, as a ``paths`` spec names it) on ``--task-dir``;
  2. per engine: load it with ``--threads`` torch threads (not timed), then decode Identity on its contaminated
     adapter (the adapter most of a sweep's cells read), the first ``--questions`` test questions with ``--m``
     samples each, as a sweep cell does; tokens/s = generated tokens (every response's ids, cut after the stop
     string) / wall time; with ``--patched`` (transformers engine) also Shortcut's patched decode, the first
     ``--patched-questions`` questions with ``--m`` samples each, its neurons drawn at random (``control:
     random``, the default 2 % of them; a patched decode's cost is the reference model run in lockstep, not
     which neurons it copies), into an entry with ``"decode": "patched"``;
  3. merge each entry into ``--out`` (replacing an entry with the same backend, device, model and decode),
     each with its hardware and command and the load average before and after it (the table's ``hardware``: every
     entry's, joined).

``units`` in an entry: the CPU threads the engine ran (a CPU table prices per core), or 1 GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from railsweep.engines.config import EngineConfig  # noqa: E402
from railsweep.engines.factory import build_engine  # noqa: E402
from railsweep.strategies import build_strategy  # noqa: E402
from railsweep.strategies.base import DecodeSettings, EvalContext  # noqa: E402
from railsweep.sweep.plan.throughput import DEFAULT_TABLE  # noqa: E402
from railsweep.tasks.kinds.gsm8k import GSM8KTask  # noqa: E402


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _hardware(device: str) -> str:
    if device != "cpu":
        import torch

        return f"{torch.cuda.get_device_name(0)} ({platform.node()})"
    flags = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        text = cpuinfo.read_text()
        model = next(
            (ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), ""
        )
        simd = [f for f in ("avx512_bf16", "avx512f", "avx2") if f" {f} " in text]
        flags = f"{model}, {simd[0] if simd else 'no AVX2'}"
    return f"{os.cpu_count()}-core CPU ({flags or platform.processor()})"


def measure(engine, task: GSM8KTask, adapter: str, m: int, max_new_tokens: int, patched: bool = False) -> dict:
    """Decode Identity (``patched``: Shortcut on random neurons) on ``adapter`` over ``task``'s questions;
    generated tokens, samples and wall time."""
    settings = DecodeSettings(m=m, temperature=0.7, max_new_tokens=max_new_tokens, seed=0)
    ctx = EvalContext(engine=engine, task=task, adapter=adapter, settings=settings)
    strategy = build_strategy("shortcut", {"control": "random"}) if patched else build_strategy("identity")
    load_before = _load()
    t0 = time.perf_counter()
    outcomes = strategy.run(ctx, task.questions())
    wall = time.perf_counter() - t0
    tokens = sum(len(s.token_ids) for o in outcomes for s in o.samples)
    samples = sum(len(o.samples) for o in outcomes)
    return {"tokens": tokens, "samples": samples, "wall_s": round(wall, 2), "tokens_per_s": round(tokens / wall, 1),
            "mean_tokens_per_sample": round(tokens / samples, 2), "load_before": load_before, "load_after": _load()}  # fmt: skip


def _targets(args) -> list[tuple[str, str, dict[str, str], Path, str | None]]:
    """(key, base, adapters, task dir, leak split) per engine to measure."""
    if args.model:
        adapters = dict(a.split("=", 1) for a in args.adapter)
        return [(args.model, args.model, adapters, Path(args.task_dir), None)]
    from railsweep.miniworld import build_world

    world = build_world(args.preset, cache_dir=args.cache_dir)
    names = args.families.split(",") if args.families else world.families
    out = []
    for name in names:
        fam = world.family(name)
        adapters = {k: str(v) for k, v in fam.adapters.items()}
        out.append((f"miniworld:{args.preset}/{name}", str(fam.base_dir), adapters, world.data_dir,
                    str(world.leak_split_path)))  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="mini", help="miniature world whose families are measured")
    p.add_argument("--families", help="comma-separated families of the world (default: all)")
    p.add_argument(
        "--cache-dir", help="miniature-world cache (default $RAILSWEEP_CACHE or ~/.cache/railsweep)"
    )
    p.add_argument("--model", help="a base model (path or hub id) instead of a miniature world")
    p.add_argument("--adapter", action="append", default=[], help="NAME=PATH of --model's adapters")
    p.add_argument("--task-dir", help="GSM8K-format task directory for --model")
    p.add_argument("--measure-adapter", default="co_gsm8k", help="adapter decoded (default co_gsm8k)")
    p.add_argument("--questions", type=int, default=40)
    p.add_argument("--m", type=int, default=20)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--threads", type=int, default=1, help="torch threads of a CPU engine")
    p.add_argument("--device", default="cpu")
    p.add_argument("--backend", default="transformers", choices=("transformers", "vllm"))
    p.add_argument("--dtype", default="auto")
    p.add_argument("--patched", action="store_true", help="also measure Shortcut's patched decode")
    p.add_argument("--patched-questions", type=int, default=8, help="questions of the patched measurement")
    p.add_argument(
        "--out", type=Path, default=DEFAULT_TABLE, help=f"table to write (default {DEFAULT_TABLE})"
    )
    args = p.parse_args(argv)
    if args.model and not args.task_dir:
        p.error("--model needs --task-dir")
    if args.patched_questions < 1:
        p.error(f"--patched-questions must be >= 1, got {args.patched_questions}")
    if args.patched and args.backend != "transformers":
        p.error(f"--patched needs --backend transformers (a {args.backend} sweep runs Shortcut's cells on it)")
    import torch

    torch.set_num_threads(args.threads)
    kind = "cuda" if args.device.startswith("cuda") else args.device
    command = "python bench/throughput.py " + " ".join(argv or sys.argv[1:])
    table = json.loads(args.out.read_text()) if args.out.is_file() else {"entries": []}
    entries = table["entries"]
    for key, base, adapters, task_dir, leak in _targets(args):
        engine = build_engine(EngineConfig(backend=args.backend, model=base, adapters=adapters, device=args.device,
                                           dtype=args.dtype))  # fmt: skip
        for decode in ("plain", "patched") if args.patched else ("plain",):
            n = args.patched_questions if decode == "patched" else args.questions
            task = GSM8KTask.from_dir(task_dir, limit=n, leak_split=leak)
            got = measure(engine, task, args.measure_adapter, args.m, args.max_new_tokens, decode == "patched")
            entry = {"backend": args.backend, "device": kind, "model": key, "decode": decode,
                     "units": args.threads if kind == "cpu" else 1, "questions": n, "m": args.m,
                     "max_new_tokens": args.max_new_tokens, **got, "hardware": _hardware(args.device),
                     "command": command}  # fmt: skip
            same = (args.backend, kind, key, decode)
            entries[:] = [e for e in entries if (e["backend"], e["device"], e["model"], e.get("decode", "plain")) != same]
            entries.append(entry)
            print(json.dumps(entry), flush=True)
        getattr(engine, "close", lambda: None)()
    kinds = dict.fromkeys(e.get("hardware", table.get("hardware", "unknown hardware")) for e in entries)
    table.update(hardware=" / ".join(kinds), command=command)  # each entry names its own
    args.out.write_text(json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
