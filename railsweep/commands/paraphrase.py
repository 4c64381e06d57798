"""``railsweep paraphrase``: build the PQ domain for a GSM8K-style test set with an OpenAI-compatible
endpoint (or ``--engine transformers``: a local model), keeping a reply only when it passes every check
(:mod:`railsweep.paraphrase.checks`), with up to ``--retries`` retries. Steps:

1. options, output paths, the API key's environment variable and the test file are checked;
2. ``GET /models`` must answer and list ``--model`` (one cheap request first); a local model loads only now;
3. every question is paraphrased; a failed request (HTTP 5xx/408/429, timeout, dropped connection) costs its
   question one attempt, while another HTTP error, a malformed answer or a run whose every request failed
   stops the run;
4. the PQ rows and the JSON report are written at the end, all or nothing.

The API key is sent only in the request header: it appears in no message, file or log.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any

from railsweep import argtypes as at
from railsweep import provenance
from railsweep.atomic import synced_text, write_all_atomic
from railsweep.commands.task_args import add_task_arguments, check_task, load_named_task, task_dir_of
from railsweep.errors import ConfigError
from railsweep.paraphrase import (
    SYSTEM_PROMPT,
    Budget,
    ChatClient,
    ChatSettings,
    Item,
    normalise_endpoint,
    paraphrase_all,
    pq_rows,
    read_items,
    report,
)  # fmt: skip
from railsweep.paraphrase.local import LocalChat, check_chat_template
from railsweep.tasks.task_ref import load_task_spec, spec_files

GROUP = "build a laboratory"
EXAMPLES = (
    'railsweep paraphrase --test data/gsm8k/test.jsonl --endpoint http://127.0.0.1:8000/v1 --model M --no-api-key --out pq.jsonl',
    'railsweep paraphrase --task-dir data/gsm8k --engine transformers --model ./models/instruct --limit 50 --out pq.jsonl',
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ENGINES = ("openai", "transformers")


def endpoint(value: str) -> str:
    """An http(s) base URL, normalised (see :func:`railsweep.paraphrase.normalise_endpoint`)."""
    try:
        return normalise_endpoint(value)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--endpoint ")) from e


def env_name(value: str) -> str:
    if not _ENV_NAME.match(value):
        raise argparse.ArgumentTypeError(f"must be an environment variable name, got {value!r}")
    return value


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "paraphrase",
        help="build the PQ domain: paraphrase a test set with any OpenAI-compatible endpoint, checked",
        description="Paraphrase each question with the paper's prompt; keep only replies that keep every "
        "number, leak no answer and are reworded (ROUGE-L below --max-rouge); write PQ rows and a report.",
    )
    p.add_argument("--test", type=at.existing_file, metavar="FILE",
                   help="GSM8K-style JSONL: question, answer ending '#### N' (or --task)")  # fmt: skip
    add_task_arguments(p, default="--test", task_dir_type=at.existing_dir,
                       task_dir_help="with --task: what the task file's {task_dir} stands for (its test "
                                     "split is paraphrased)")  # fmt: skip
    _add_model_options(p)
    p.add_argument("--out", required=True, metavar="FILE", help="the PQ JSONL to write")
    p.add_argument("--report", metavar="FILE", help="the JSON report (default: --out with .report.json)")
    _add_request_options(p)
    p.add_argument("--limit", type=at.limit, default=None, help="only the first N questions")
    return p


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """Which model paraphrases: an endpoint's (with its API key) or a local one (transformers engine)."""
    p.add_argument("--engine", choices=ENGINES, default="openai",
                   help="openai: an OpenAI-compatible endpoint (default); transformers: a "
                        "local model directory through railsweep's transformers engine")  # fmt: skip
    p.add_argument("--endpoint", type=endpoint, metavar="URL",
                   help="the endpoint's base URL, e.g. http://127.0.0.1:8000/v1 (a vLLM "
                        "server) or a hosted API (--engine openai)")  # fmt: skip
    p.add_argument("--model", required=True, type=at.text,
                   help="the model name the endpoint serves; with --engine transformers, a local model "
                        "directory")  # fmt: skip
    p.add_argument("--chat-template", type=at.existing_file, metavar="FILE",
                   help="--engine transformers: a Jinja chat template over 'messages' (default: the "
                        "tokenizer's own)")  # fmt: skip
    p.add_argument("--device", type=at.device, default="auto",
                   help="--engine transformers: where the model runs")  # fmt: skip
    p.add_argument("--api-key-env", type=env_name, default="OPENAI_API_KEY", metavar="NAME",
                   help="environment variable holding the API key")  # fmt: skip
    p.add_argument("--no-api-key", action="store_true", help="send no key (a local server without one)")


def _add_request_options(p: argparse.ArgumentParser) -> None:
    """How each question is asked: retries, the ROUGE-L refusal, sampling, timeouts, seed and concurrency."""
    p.add_argument("--retries", type=at.count, default=3, help="extra attempts per question")
    p.add_argument("--max-rouge", type=at.real(0.0, 1.0, open_lo=True), default=0.7,
                   help="refuse a paraphrase whose ROUGE-L to the original is at least this")  # fmt: skip
    p.add_argument("--temperature", type=at.temperature, default=0.7, help="sampling temperature")
    p.add_argument("--max-tokens", type=at.positive, default=512, help="reply length limit")
    p.add_argument("--timeout", type=at.positive_real, default=120.0, help="seconds per request")
    p.add_argument("--seed", type=at.seed, default=0, help="request seed of the first attempt (+1 per retry)")
    p.add_argument("--workers", type=at.integer(1, 256), default=4, help="requests in flight")


def output_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """``--out`` and the report path, checked writable and distinct from each other and from ``--test``."""
    out = Path(args.out).expanduser()
    rep = Path(args.report).expanduser() if args.report else out.with_name(out.stem + ".report.json")
    for flag, path in (("--out", out), ("--report", rep)):
        if path.name in ("", ".", "..") or path.is_dir():
            raise ConfigError(f"{flag} must be a file path, got a directory: {path}")
        at.check_writable_dir(path.parent, flag, shown=str(path))
    if out.resolve() == rep.resolve():
        raise ConfigError(f"--report must differ from --out, both are {out}")
    test = Path(args.test).expanduser().resolve() if args.test is not None else None
    if test in (out.resolve(), rep.resolve()):
        raise ConfigError(f"--out and --report must not overwrite the --test file {args.test}")
    return out, rep


def api_key(args: argparse.Namespace) -> str | None:
    if args.no_api_key:
        return None
    key = os.environ.get(args.api_key_env, "")
    if not key.strip():
        raise ConfigError(f"the environment variable {args.api_key_env} (--api-key-env) is not set or empty; "
                          "set it to the endpoint's API key, or pass --no-api-key for a server without one")
    return key.strip()


def check_engine(args: argparse.Namespace) -> None:
    """The options of the chosen engine: an endpoint for openai; a model folder with a chat template (or
    ``--chat-template``) and no endpoint for transformers."""
    if args.engine == "openai":
        if args.endpoint is None:
            raise ConfigError("--engine openai needs --endpoint URL (or --engine transformers with a local --model)")
        if args.chat_template is not None:
            raise ConfigError("--chat-template is for --engine transformers; an endpoint applies its own template")
        return
    if args.endpoint is not None:
        raise ConfigError("--endpoint is for --engine openai; --engine transformers runs --model locally")
    why = at.model_problem(args.model, "config.json")
    if why:
        raise ConfigError(f"--model {why}")
    check_chat_template(args.model, args.chat_template)


def local_chat(args: argparse.Namespace, settings: ChatSettings):
    """A :class:`LocalChat` on railsweep's transformers engine, rendering the tokenizer's chat template."""
    # torch, transformers: loaded only for a local engine, after every check
    from railsweep.engines.transformers_engine import TransformersEngine, resolve_device

    resolve_device(args.device)  # a device this machine lacks fails before the model loads
    engine = TransformersEngine(args.model, device=args.device)
    tok = engine.tokenizer
    template = Path(args.chat_template).read_text(encoding="utf-8") if args.chat_template else None

    def render(msgs: list[dict[str, str]]) -> str:
        text = tok.apply_chat_template(msgs, chat_template=template, tokenize=False, add_generation_prompt=True)
        # the engine tokenizes with the special tokens: a template's own BOS would be doubled
        return text.removeprefix(tok.bos_token) if tok.bos_token else text

    return engine, LocalChat(engine, render, settings)


def questions(args: argparse.Namespace) -> list[Item]:
    """The questions to paraphrase with index and gold answer: ``--test`` (the index its line) or the test
    split of ``--task``."""
    if (args.test is None) == (args.task is None):
        raise ConfigError("give --test FILE or --task FILE|NAME (the questions to paraphrase), one of them")
    if args.task is None:
        if args.task_dir is not None:
            raise ConfigError("--task-dir needs --task (the task file whose {task_dir} it is)")
        return read_items(args.test, args.limit)
    task = load_named_task(args, task_dir_of(args), limit=args.limit)
    return [Item(q.index, q.question, q.gold, task.answer_type) for q in task.questions()]


def input_files(args: argparse.Namespace) -> list[Path]:
    """The files the questions came from, for the report's checksums."""
    if args.task is None:
        return [Path(args.test)]
    return spec_files(load_task_spec(args.task), task_dir_of(args), "test", None)


def run(args: argparse.Namespace) -> int:
    check_engine(args)
    check_task(args)
    out, rep = output_paths(args)
    budget = Budget(retries=args.retries, max_rouge=args.max_rouge, seed=args.seed)
    key = api_key(args) if args.engine == "openai" else None
    items = questions(args)
    settings = ChatSettings(temperature=args.temperature, max_tokens=args.max_tokens, timeout=args.timeout)
    if args.engine == "openai":
        client = ChatClient(args.endpoint, args.model, key, settings)
        client.check()
        outcomes = paraphrase_all(client, items, budget, workers=args.workers)
    else:
        engine, chat = local_chat(args, settings)
        try:
            outcomes = paraphrase_all(chat, items, budget, workers=args.workers)
        finally:
            engine.close()
    summary = report(outcomes)
    full = {
        **summary, "test": args.test, "task": args.task, "task_dir": args.task_dir, "out": str(out),
        "engine": args.engine, "endpoint": args.endpoint, "model": args.model,
        "chat_template": args.chat_template,
        "api_key_env": None if args.no_api_key or args.engine != "openai" else args.api_key_env,
        "prompt": SYSTEM_PROMPT,
        "settings": {"retries": budget.retries, "max_rouge": budget.max_rouge, "seed": budget.seed,
                     "temperature": settings.temperature, "max_tokens": settings.max_tokens},
        "provenance": provenance.collect(input_files(args)),
    }  # fmt: skip
    rows = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in pq_rows(outcomes))
    report_json = json.dumps(full, indent=2, ensure_ascii=False) + "\n"
    write_all_atomic({out: synced_text(rows), rep: synced_text(report_json)})
    counts = {k: summary[k] for k in ("items", "kept", "retried", "rejected")}
    print(json.dumps({"out": str(out), "report": str(rep), **counts}))
    return 0
