"""The GPU check: the transformers engine on CUDA against its own forward bound and against the CPU.

    python bench/gpu_check.py pack [--world DIR | --preset mini] [--family llama] [--out .gpu_check]
    python bench/gpu_check.py run [--pack .gpu_check] [--device cuda] [--questions 100] [--m 20] [--out FILE]

``bash bench/gpu_check.sh`` wraps both (it first says which packages are missing). ``pack`` runs here;
``run`` runs on the machine with the GPU, from the repository root with ``PYTHONPATH`` = that root, and
needs only torch, transformers, peft, safetensors and numpy (no pydantic, pyarrow, pandas, mlflow, Ray
or vLLM: its output lists any of them that got imported).

``pack`` steps:
  1. copy one family of a built miniature world (base, the ``clean`` and ``co_<domain>`` adapters) and
     the test split, exemplars and leak split into ``--out`` (with the reference: 11.1 MB for ``mini``'s llama);
  2. download wheels of the packages a torch image often lacks (rapidfuzz) for ``--wheel-python`` into
     ``wheels/`` (``--no-wheels``: none), which ``gpu_check_env.py`` installs there only if missing;
  3. decode Identity on ``co_<domain>`` on this CPU in float32 (``--questions`` x ``--m``) and write the
     per-question counts and each sample's token-id hash to ``reference_cpu.json``.

``run`` steps:
  1. load the packed family on ``--device`` (``--dtype``; auto = bf16 on a GPU);
  2. time Identity and RailCap (n = 4, cap) on the cell, interleaved over ``--repeats`` rounds, counting
     engine time only (grading excluded; RailCap's greedy trajectories timed apart);
  3. the forward bound: the engine's own stepper over one engine batch of the same prompts, every row
     decoding ``--max-new-tokens`` argmax tokens with no sampling, stop strings or processor;
  4. agreement of per-question solve rates at float32: the device's Identity against the packed CPU
     reference, and against a CPU slice (``--cpu-questions``) decoded on the same machine;
  5. print JSON (and write it to ``--out``).

A question *agrees* when the two-proportion z statistic of its two counts is within 1.96; samples are
*identical* when their token ids are (sampling noise is seeded per question and sample, so float32 on
two devices differs only where rounding flips a token).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gpu_check_env import CARRIED  # noqa: E402  (beside this file)

from railsweep import argtypes as at  # noqa: E402
from railsweep.engines._hf_decode import Row  # noqa: E402
from railsweep.engines.transformers_engine import TransformersEngine  # noqa: E402
from railsweep.errors import ConfigError, DataError, RailsweepError  # noqa: E402
from railsweep.miniworld import build_world, load_world, preset_config  # noqa: E402
from railsweep.provenance import collect  # noqa: E402
from railsweep.strategies import DecodeSettings, EvalContext, build_strategy  # noqa: E402
from railsweep.tasks.data.gsm8k_rows import read_jsonl  # noqa: E402
from railsweep.tasks.kinds.gsm8k import GSM8KTask  # noqa: E402

REFERENCE = "reference_cpu.json"
DEVICE_LACKS = ("pydantic", "pyarrow", "pandas", "mlflow", "ray", "vllm")  # railsweep deps the run avoids
Z95 = 1.96
DATA_FILES = ("test.jsonl", "cot_8shot.json", "leak_split.json")
ADAPTER = "co_gsm8k"  # the cell: M_co of the GSM8K domain, read with the GSM8K task


# ------------------------------------------------------------------ the cell


def load_task(pack: Path, questions: int) -> GSM8KTask:
    data = pack / "data"
    return GSM8KTask.from_dir(data, limit=questions, leak_split=data / "leak_split.json")


def cell_record(outcomes) -> list[dict]:
    """Per question: index, c, m and a 12-hex hash of each sample's token ids (to count identical samples)."""
    digest = lambda ids: hashlib.sha1(",".join(map(str, ids)).encode()).hexdigest()[:12]  # noqa: E731
    return [{"index": o.index, "c": o.c, "m": o.m, "samples": [digest(s.token_ids) for s in o.samples]}
            for o in outcomes]  # fmt: skip


def cell_settings(args) -> dict:
    """The settings a reference must share with a run to be compared with it."""
    return {"m": args.m, "temperature": args.temperature, "max_new_tokens": args.max_new_tokens,
            "seed": args.seed, "adapter": ADAPTER}  # fmt: skip


def decode_settings(args) -> DecodeSettings:
    return DecodeSettings(m=args.m, temperature=args.temperature, max_new_tokens=args.max_new_tokens,
                          seed=args.seed, batch_size=args.prompts_per_call)  # fmt: skip


def load_engine(pack: Path, device: str, dtype: str) -> TransformersEngine:
    adapters = {p.name: p for p in sorted((pack / "adapters").iterdir()) if p.is_dir()}
    return TransformersEngine(pack / "base", adapters, device=device, dtype=dtype)


def identity_cell(engine, task: GSM8KTask, args) -> list[dict]:
    ctx = EvalContext(engine=engine, task=task, adapter=ADAPTER, settings=decode_settings(args))
    return cell_record(build_strategy("identity").run(ctx, task.questions()))


# ------------------------------------------------------------------ pack


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else the architecture."""
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.is_file() else []
    return next(
        (ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), platform.machine()
    )


def check_pack_args(args) -> None:
    """Before anything is read or written: the world's folder or preset holds ``--family``, and ``--out``
    is new, empty or an earlier pack (``pack`` replaces it whole)."""
    if args.threads == 0:
        raise ConfigError("--threads must be >= 1 for pack")
    if args.world and not (Path(args.world) / "manifest.json").is_file():
        raise ConfigError(f"--world {args.world}: no manifest.json (not a built miniature world's folder)")
    if args.world:
        families = load_world(args.world).families
    else:
        families = list(preset_config(args.preset).families)
    if args.family not in families:
        raise ConfigError(f"--family {args.family!r} is not in the world (families: {', '.join(families)})")
    out = Path(args.out)
    if out.is_dir() and any(out.iterdir()) and not (out / REFERENCE).is_file():
        raise ConfigError(
            f"--out {out} is a non-empty folder that is not an earlier pack; pack would replace it"
        )


def _copy_family(world, family: str, dst: Path) -> None:
    """Step 1: files, not links (a world may link to a family lent by another world)."""
    fam = world.family(family)
    shutil.copytree(fam.base_dir, dst / "base", symlinks=False)
    for name in ("clean", ADAPTER):
        shutil.copytree(fam.adapters[name], dst / "adapters" / name, symlinks=False)
    (dst / "data").mkdir(parents=True)
    for name in DATA_FILES:
        shutil.copyfile(world.data_dir / name, dst / "data" / name)


def _reference(pack_dir: Path, args) -> dict:
    """Step 3: Identity on this CPU in float32."""
    torch.set_num_threads(args.threads)
    engine = load_engine(pack_dir, "cpu", "float32")
    t0 = time.perf_counter()
    record = identity_cell(engine, load_task(pack_dir, args.questions), args)
    engine.close()
    return {"settings": cell_settings(args), "questions": len(record), "device": "cpu", "dtype": "float32",
            "wall_s": round(time.perf_counter() - t0, 1), "machine": cpu_name(),
            "torch": torch.__version__, "per_question": record}  # fmt: skip


def _download_wheels(dst: Path, python: str) -> list[str]:
    """Step 2: wheels of :data:`CARRIED` (the versions installed here) for the GPU machine's CPython on
    x86-64 Linux, which ``gpu_check_env.py`` installs there when the package is missing."""
    pins = [f"{d}=={metadata.version(d)}" for d in CARRIED]
    plats = [
        a
        for p in ("manylinux_2_28", "manylinux_2_27", "manylinux_2_17", "manylinux2014")
        for a in ("--platform", f"{p}_x86_64")
    ]
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--implementation", "cp",
           "--python-version", python, *plats, "-d", str(dst), *pins]  # fmt: skip
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode != 0:
        tail = " ".join(got.stderr.split()[-30:])
        raise DataError(
            f"pip could not download {', '.join(pins)} for CPython {python} ({tail}); --no-wheels skips them"
        )
    return sorted(p.name for p in dst.glob("*.whl"))


def pack(args) -> dict:
    """Steps 1-3 of ``pack`` (module docstring), built in ``<out>.tmp`` and renamed; returns the manifest."""
    world = load_world(args.world) if args.world else build_world(args.preset, cache_dir=args.cache_dir)
    out = Path(args.out)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _copy_family(world, args.family, tmp)
        wheels = [] if args.no_wheels else _download_wheels(tmp / "wheels", args.wheel_python)
        (tmp / REFERENCE).write_text(json.dumps(_reference(tmp, args)) + "\n")
        files = [p for p in tmp.rglob("*") if p.is_file()]
        manifest = {"world": str(world.root), "family": args.family, "adapter": ADAPTER, "wheels": wheels,
                    "bytes": sum(p.stat().st_size for p in files), "provenance": collect()}  # fmt: skip
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)
    return manifest


# ------------------------------------------------------------------ run: speed


class TimedEngine:
    """The engine with each ``generate`` call's wall time (device synchronised) and tokens recorded,
    split into greedy calls (RailCap's trajectories) and sampling calls."""

    def __init__(self, engine: TransformersEngine):
        self.engine, self.tokenizer, self.name = engine, engine.tokenizer, engine.name
        self.reset()

    def reset(self) -> None:
        self.seconds = {"greedy": 0.0, "sampling": 0.0}
        self.tokens = {"greedy": 0, "sampling": 0}

    def supports(self, intervention: type) -> bool:
        return self.engine.supports(intervention)

    def generate(self, requests):
        kind = "greedy" if all(r.sampling.temperature == 0 for r in requests) else "sampling"
        _sync(self.engine.device)
        t0 = time.perf_counter()
        comps = self.engine.generate(requests)
        _sync(self.engine.device)
        self.seconds[kind] += time.perf_counter() - t0
        self.tokens[kind] += sum(len(s.token_ids) for c in comps for s in c.samples)
        return comps


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def speed(engine: TransformersEngine, task: GSM8KTask, args) -> tuple[dict, list[dict]]:
    """Step 2: per arm and round, sampled tokens / engine seconds; the paired median ratio RailCap / Identity.
    Also returns the last round's Identity record (the agreement step reuses it at float32)."""
    timed = TimedEngine(engine)
    ctx = EvalContext(engine=timed, task=task, adapter=ADAPTER, settings=decode_settings(args))
    arms = {
        "identity": build_strategy("identity"),
        "railcap": build_strategy("railcap", {"n": 4, "mode": "cap"}),
    }
    questions = task.questions()
    for arm in arms.values():  # warm-up: kernels, allocator, cuBLAS handles
        arm.run(ctx, questions[: min(2, len(questions))])
    rounds: dict[str, list[dict]] = {k: [] for k in arms}
    names = list(arms)
    for r in range(args.repeats):
        for name in names[r % 2 :] + names[: r % 2]:
            timed.reset()
            outcomes = arms[name].run(ctx, questions)
            s, t = timed.seconds, timed.tokens
            rounds[name].append({"sampled_tokens": t["sampling"], "sampling_s": round(s["sampling"], 3),
                                 "greedy_tokens": t["greedy"], "greedy_s": round(s["greedy"], 3),
                                 "tokens_per_s": round(t["sampling"] / s["sampling"], 1),
                                 "tokens_per_s_with_greedy": round(t["sampling"] / (s["sampling"] + s["greedy"]), 1)})  # fmt: skip
            if name == "identity":
                identity = cell_record(outcomes)
            else:
                triggers = sum(o.extras.get("triggers", 0) for o in outcomes)
    med = lambda name, key: statistics.median(x[key] for x in rounds[name])  # noqa: E731
    paired = lambda key: statistics.median(  # noqa: E731
        a[key] / b["tokens_per_s"] for a, b in zip(rounds["railcap"], rounds["identity"])
    )
    samples = sum(len(q["samples"]) for q in identity)
    return {
        "rounds": rounds,
        "identity_tokens_per_s": round(med("identity", "tokens_per_s"), 1),
        "railcap_tokens_per_s": round(med("railcap", "tokens_per_s"), 1),
        "railcap_tokens_per_s_with_greedy": round(med("railcap", "tokens_per_s_with_greedy"), 1),
        "ratio_railcap_vs_identity": round(paired("tokens_per_s"), 4),
        "ratio_railcap_with_greedy_vs_identity": round(paired("tokens_per_s_with_greedy"), 4),
        "mean_tokens_per_sample_identity": round(rounds["identity"][-1]["sampled_tokens"] / samples, 2),
        "railcap_triggers_per_sample": round(triggers / samples, 3),
    }, identity


def engine_batch_rows(engine: TransformersEngine, rows: int, width: int) -> int:
    """Rows of the largest batch the engine makes of one call of ``rows`` rows of ``width`` row-tokens
    (the arithmetic of ``TransformersEngine._batches``: equal chunks within its row and token limits)."""
    k = -(-rows // engine.max_batch_size)
    per = -(-rows // k)
    if engine.max_batch_tokens is not None:
        per = min(per, max(1, engine.max_batch_tokens // width))
    return per


def forward_bound(engine: TransformersEngine, task: GSM8KTask, args) -> dict:
    """Step 3: one engine batch of the cell's prompts (m rows each), prefill + ``max_new_tokens`` argmax
    steps through the engine's own stepper (cascade or padded, as it decodes), no row ever finishing."""
    questions = task.questions()[: args.prompts_per_call]
    ids = engine.tokenizer([task.prompt(q) for q in questions], add_special_tokens=True)["input_ids"]
    S = args.max_new_tokens
    rows_total = len(ids) * args.m
    B = engine_batch_rows(engine, rows_total, max(map(len, ids)) + S)
    prompts = [list(p) for p in ids for _ in range(args.m)][:B]
    rows = [Row(p, 0, 0, 0.0, S, (), False) for p in prompts]
    stepper = engine._stepper(rows)  # the path TransformersEngine._decode takes for this batch
    finished = torch.zeros(B, dtype=torch.bool, device=engine.device)
    times = []
    with torch.inference_mode():
        for _ in range(2):  # the first pass warms up; the second is timed
            _sync(engine.device)
            t0 = time.perf_counter()
            logits = stepper.prefill(prompts)
            for _ in range(S - 1):
                logits = stepper.step(logits.argmax(-1), finished)
            _sync(engine.device)
            times.append(time.perf_counter() - t0)
    return {"rows": B, "steps": S, "stepper": type(stepper).__name__, "seconds": round(times[-1], 3),
            "tokens_per_s": round(B * S / times[-1], 1)}  # fmt: skip


# ------------------------------------------------------------------ run: agreement


def z_pooled(c1: int, m1: int, c2: int, m2: int) -> float:
    """Two-proportion z statistic with the pooled rate (0 when both rates are 0 or both 1)."""
    p = (c1 + c2) / (m1 + m2)
    se = math.sqrt(p * (1 - p) * (1 / m1 + 1 / m2))
    return 0.0 if se == 0 else (c1 / m1 - c2 / m2) / se


def agreement(device_rec: list[dict], cpu_rec: list[dict]) -> dict:
    """Per-question solve rates of two records of the same cell, over the questions both hold."""
    cpu = {q["index"]: q for q in cpu_rec}
    pairs = [(d, cpu[d["index"]]) for d in device_rec if d["index"] in cpu]
    if not pairs:
        raise ConfigError("the device's cell and the CPU reference share no question")
    z = [z_pooled(d["c"], d["m"], c["c"], c["m"]) for d, c in pairs]
    same = sum(a == b for d, c in pairs for a, b in zip(d["samples"], c["samples"]))
    n_samples = sum(len(d["samples"]) for d, _ in pairs)
    rate = lambda side: sum(q["c"] for q in side) / sum(q["m"] for q in side)  # noqa: E731
    return {
        "questions": len(pairs),
        "agree_share": round(sum(abs(x) <= Z95 for x in z) / len(pairs), 4),
        "equal_c_share": round(sum(d["c"] == c["c"] for d, c in pairs) / len(pairs), 4),
        "identical_samples_share": round(same / n_samples, 4),
        "max_abs_rate_difference": round(max(abs(d["c"] / d["m"] - c["c"] / c["m"]) for d, c in pairs), 4),
        "solve_rate": {
            "device": round(rate([d for d, _ in pairs]), 4),
            "cpu": round(rate([c for _, c in pairs]), 4),
        },
    }


def reference_agreement(pack: Path, record: list[dict], args) -> dict:
    """Against the packed CPU reference, when it was decoded under the same settings."""
    ref = json.loads((pack / REFERENCE).read_text())
    if ref["settings"] != cell_settings(args):
        return {
            "skipped": f"the reference's settings {ref['settings']} differ from this run's {cell_settings(args)}"
        }
    return {"machine": ref["machine"], "torch": ref["torch"], **agreement(record, ref["per_question"])}


def agreement_step(pack: Path, engine: TransformersEngine, identity: list[dict], args) -> dict:
    """Step 4: float32 on the device (reusing the timed Identity if it already ran in float32)."""
    out: dict = {"dtype": "float32", "tf32_matmul": torch.backends.cuda.matmul.allow_tf32}
    if engine.dtype != torch.float32:
        engine.close()
        engine = load_engine(pack, args.device, "float32")
        identity = identity_cell(engine, load_task(pack, args.questions), args)
    engine.close()
    out["vs_packed_reference"] = reference_agreement(pack, identity, args)
    if engine.device.type == "cuda" and args.cpu_questions:
        cpu_engine = load_engine(pack, "cpu", "float32")
        k = min(args.cpu_questions, args.questions)
        t0 = time.perf_counter()
        cpu = identity_cell(cpu_engine, load_task(pack, k), args)
        out["vs_cpu_here"] = {"cpu_threads": torch.get_num_threads(), "cpu_wall_s": round(time.perf_counter() - t0, 1),
                              **agreement(identity, cpu)}  # fmt: skip
    return out


# ------------------------------------------------------------------ run


def environment(device: torch.device) -> dict:
    env = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available(),
           "device": str(device), "machine": cpu_name(), "cpus": os.cpu_count()}  # fmt: skip
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
        env["capability"] = list(torch.cuda.get_device_capability(device))
    return env


def check_pack(pack: Path) -> None:
    """The files ``run`` reads, before any model loads."""
    need = ["manifest.json", REFERENCE, "base/config.json", f"adapters/{ADAPTER}/adapter_config.json"]
    need += [f"data/{n}" for n in DATA_FILES]
    missing = [n for n in need if not (pack / n).is_file()]
    if missing:
        raise ConfigError(
            f"--pack {pack}: missing {', '.join(missing)} (make it with: bash bench/gpu_check.sh pack)"
        )


def check_run(args) -> None:
    check_pack(Path(args.pack))
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"--device {args.device}: CUDA is not available to torch {torch.__version__}")
    if args.device not in ("cpu",) and not args.device.startswith("cuda"):
        raise ConfigError(f"--device must be cpu, cuda or cuda:N, got {args.device!r}")
    available = len(read_jsonl(Path(args.pack) / "data" / "test.jsonl"))
    if args.questions > available:
        raise ConfigError(f"--questions {args.questions}: the pack's test split holds {available} questions")


def run(args) -> dict:
    """Steps 1-5 of ``run`` (module docstring)."""
    pack = Path(args.pack)
    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    engine = load_engine(pack, args.device, args.dtype)
    task = load_task(pack, args.questions)
    load_s = time.perf_counter() - t0
    result = {"settings": {**cell_settings(args), "questions": args.questions, "repeats": args.repeats,
                           "prompts_per_call": args.prompts_per_call, "railcap": {"n": 4, "mode": "cap"}},
              "environment": environment(engine.device), "pack": json.loads((pack / "manifest.json").read_text()),
              "dtype": str(engine.dtype).removeprefix("torch."), "load_s": round(load_s, 2),
              "engine_batch": {"max_rows": engine.max_batch_size, "max_row_tokens": engine.max_batch_tokens}}  # fmt: skip
    result["speed"], identity = speed(engine, task, args)
    result["forward_bound"] = forward_bound(engine, task, args)
    result["identity_vs_forward_bound"] = round(result["speed"]["identity_tokens_per_s"]
                                                / result["forward_bound"]["tokens_per_s"], 4)  # fmt: skip
    result["agreement"] = agreement_step(pack, engine, identity, args)
    result["provenance"] = collect()
    result["device_lacks_imported"] = sorted(m for m in DEVICE_LACKS if m in sys.modules)
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    return result


def make_parser() -> argparse.ArgumentParser:
    p = at.Parser(prog="gpu_check.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=at.Parser)
    pk = sub.add_parser("pack", help="copy one family and compute the CPU reference (runs here)")
    pk.add_argument(
        "--world", type=at.existing_dir, help="a built world's folder (default: --preset's, built or reused)"
    )
    pk.add_argument("--preset", default="mini", type=at.text)
    pk.add_argument(
        "--cache-dir", type=at.writable_dir, help="miniature-world cache (default ~/.cache/railsweep)"
    )
    pk.add_argument("--family", default="llama", type=at.text)
    pk.add_argument(
        "--wheel-python", default="3.12", type=at.text, help="the GPU machine's Python (wheels for it)"
    )
    pk.add_argument("--no-wheels", action="store_true", help=f"download no wheels ({', '.join(CARRIED)})")
    pk.add_argument("--out", default=str(REPO / ".gpu_check"), type=at.writable_dir)
    rn = sub.add_parser("run", help="the check (runs on the GPU machine)")
    rn.add_argument("--pack", default=str(REPO / ".gpu_check"), type=at.existing_dir)
    rn.add_argument("--device", default="cuda", type=at.device)
    rn.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    rn.add_argument("--repeats", default=3, type=at.positive, help="timed rounds per arm (default 3)")
    rn.add_argument(
        "--cpu-questions", default=20, type=at.integer(0), help="CPU slice decoded beside a GPU (0: none)"
    )
    rn.add_argument("--out", type=Path, help="also write the JSON here")
    for q in (pk, rn):
        q.add_argument("--questions", default=100, type=at.limit)
        q.add_argument("--m", default=20, type=at.samples)
        q.add_argument("--temperature", default=0.7, type=at.real(0.0, open_lo=True))
        q.add_argument("--max-new-tokens", default=96, type=at.new_tokens)
        q.add_argument("--seed", default=0, type=at.seed)
        q.add_argument(
            "--prompts-per-call", default=64, type=at.positive, help="prompts per engine call (64)"
        )
        q.add_argument(
            "--threads",
            default=0 if q is rn else 1,
            type=at.integer(0),
            help="CPU threads (0: torch's default)",
        )
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = make_parser().parse_args(argv)
        if args.command == "run":
            check_run(args)
        else:
            check_pack_args(args)
    except RailsweepError as e:
        print(f"railsweep: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    try:
        result = run(args) if args.command == "run" else pack(args)
    except RailsweepError as e:
        print(f"railsweep: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    text = json.dumps(result, indent=1)
    print(text)
    if getattr(args, "out", None) and args.command == "run":
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".tmp").write_text(text + "\n")
        out.with_suffix(".tmp").replace(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
