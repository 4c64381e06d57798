"""A catalogue of bad inputs to every command, every ``sweeps/*.py`` script and every sweep-spec field.

Each case must give exit code 2 and exactly one stderr line ``railsweep: error: ...`` that names the
offending value, before any model is loaded, any world built, any service started or any file written.
Commands run in-process (``railsweep.cli.main``, ``railsweep.sweep.job.main``, ``sweeps/contaminate.py``'s
``main``); weight loading (transformers / peft ``from_pretrained``, the engines), world building, Ray
(``ray.init``, the local head, job submission) and MLflow are replaced by tripwires, so a check that comes
too late fails the case instead of starting them. Models and adapters are folders holding only their
config file: every check here must fire before anything is loaded from them.

The catalogue is data: :data:`CATALOGUE` is a list of :class:`Case` (command, option, command line,
words the error must contain), built from one table of bad values per argument type
(:data:`BAD_VALUES`) applied to each command's options (:data:`OPTION_KINDS`), plus the cases a type
cannot express (:func:`register`). Another test file can add cases with :func:`register`;
:func:`test_every_option_and_spec_field_has_a_bad_value_case` walks the argparse parsers and the spec
schema and fails when an option or field has none.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from railsweep.cli import main, make_parser
from railsweep.sweep.spec.sweep_spec import PRESET_DIR

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = [("Tom has 2 apples and buys 3 more. How many apples?", "5"), ("What is 4 + 4?", "8")] * 2
SHOTS = [{"question": "What is 1 + 1?", "answer": "1 + 1 = 2. The answer is 2."}]
LATIN1 = "Caf\xe9 costs 3 dollars.".encode("latin-1")  # not UTF-8


class Tripwire(Exception):
    """Raised where the expensive part starts: a bad input got that far."""


def _write_task(root: Path, *, lines: list[bytes] | None = None, shots: bytes | None = None) -> Path:
    root.mkdir(parents=True)
    rows = [json.dumps({"question": q, "answer": f"So {g}.\n#### {g}"}).encode() for q, g in QUESTIONS]
    (root / "test.jsonl").write_bytes(b"\n".join(lines or rows) + b"\n")
    (root / "cot_8shot.json").write_bytes(shots or json.dumps(SHOTS).encode())
    return root


def _write_cells(root: Path) -> dict[str, Path]:
    """A clean and a mitigated cell, and one with a question fewer, written without a model."""
    from railsweep.config import CellConfig
    from railsweep.engines.base import Sample
    from railsweep.results import write_cell
    from railsweep.strategies.base import QuestionOutcome
    from railsweep.tasks.base import Grade, Question

    qs = [Question(i, "q", "#### 1", "1") for i in range(4)]

    def outcomes(cs):
        smp, g = Sample([1], "x", "stop"), Grade(False, None, "none")
        return [QuestionOutcome(i, [smp] * 4, [g] * 4, c, 4, 0) for i, c in enumerate(cs)]

    def cell(role, adapter):
        return CellConfig(model="m", strategy="identity", task_dir=str(root), adapter=adapter, m=4, role=role)

    return {
        "clean": write_cell(root, cell("clean", "clean"), outcomes([0, 1, 4, 2]), qs).questions,
        "co": write_cell(root, cell("mitigated", "co"), outcomes([4, 4, 4, 0]), qs).questions,
        "fewer": write_cell(root, cell("mitigated", "co3"), outcomes([4, 4, 4]), qs[:3]).questions,
    }


SMOKE = yaml.safe_load((PRESET_DIR / "smoke.yaml").read_text())


def _spec(**changes) -> dict:
    """The smoke preset with top-level keys replaced (a dict value for a section is merged into it)."""
    spec = copy.deepcopy(SMOKE)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(spec.get(key), dict) and key != "primary":
            spec[key] = {**spec[key], **value}
        else:
            spec[key] = value
    return spec


# name → the YAML text of a bad spec (a dict is dumped), and the words the error line must contain
BAD_SPECS: dict[str, tuple[dict | str | bytes, str]] = {
    "readout_m_string": (_spec(readout={"m": "4"}), "readout.m: input should be a valid integer, got '4'"),
    "scoring_B_word": (_spec(scoring={"B": "x"}), "scoring.B: input should be a valid integer, got 'x'"),
    "primary_a_name": (_spec(primary="llama"), "primary: must be a mapping {family: F, domain: D}, got 'llama'"),
    "primary_without_domain": (_spec(primary={"family": "llama"}), "keys 'family' and 'domain', got keys ['family']"),
    "temperature_nan": ("readout: {temperature: .nan}\nstrategies: [identity]\n", "readout.temperature: input should be a finite number, got nan"),
    "temperature_inf": ("readout: {temperature: .inf}\nstrategies: [identity]\n", "readout.temperature: input should be a finite number, got inf"),
    "temperature_negative": (_spec(readout={"temperature": -0.5}), "readout.temperature: input should be greater than or equal to 0, got -0.5"),
    "m_fractional": (_spec(readout={"m": 2.5}), "readout.m: input should be a valid integer, got 2.5"),
    "m_boolean": (_spec(readout={"m": True}), "readout.m: input should be a valid integer, got True"),
    "m_zero": (_spec(readout={"m": 0}), "readout.m: input should be greater than or equal to 1, got 0"),
    "max_new_tokens_zero": (_spec(readout={"max_new_tokens": 0}), "readout.max_new_tokens: input should be greater than or equal to 1, got 0"),
    "seed_negative": (_spec(readout={"seed": -1}), "readout.seed: input should be greater than or equal to 0, got -1"),
    "batch_size_zero": (_spec(readout={"batch_size": 0}), "readout.batch_size: input should be greater than or equal to 1, got 0"),
    "limit_zero": (_spec(readout={"limit": 0}), "readout.limit: input should be greater than or equal to 1, got 0"),
    "readout_not_a_mapping": (_spec(readout=5), "readout must be a mapping with keys out of"),
    "readout_unknown_key": (_spec(readout={"samples": 4}), "unknown key 'samples' in readout"),
    "n_boot_zero": (_spec(scoring={"n_boot": 0}), "scoring.n_boot: input should be greater than or equal to 1, got 0"),
    "engine_device_gpu": (_spec(engine={"device": "gpu"}), "engine.device: must be auto, cpu, mps, cuda or cuda:N, got 'gpu'"),
    "engine_backend": (_spec(engine={"backend": "tgi"}), "engine.backend: input should be 'transformers' or 'vllm', got 'tgi'"),
    "engine_dtype": (_spec(engine={"dtype": "float8"}), "got 'float8'"),
    "trial_cpus_negative": (_spec(resources={"trial_cpus": -1}), "resources.trial_cpus: input should be greater than 0, got -1"),
    "slots_zero": (_spec(resources={"slots_per_engine": 0}), "resources.slots_per_engine: input should be greater than or equal to 1, got 0"),
    "max_restarts_below_unlimited": (_spec(resources={"max_restarts": -2}), "resources.max_restarts: input should be greater than or equal to -1, got -2"),
    "tracking_uri_empty": (_spec(tracking={"uri": ""}), "tracking.uri: string should have at least 1 character, got ''"),
    "domains_empty": (_spec(domains=[]), "domains: is an empty list: the grid would be empty"),
    "families_empty": (_spec(families=[]), "families: is an empty list: the grid would be empty"),
    "domain_unknown": (_spec(domains=["gsm8k", "mmlu"]), "unknown domain 'mmlu'"),
    "family_unknown": (_spec(families=["llama", "mamba"]), "unknown family 'mamba'"),
    "primary_outside_grid": (_spec(families=["llama"], primary={"family": "gemma", "domain": "pq"}), "primary family 'gemma' is not one of the sweep's families ['llama']"),
    "strategies_empty": (_spec(strategies=[]), "the sweep has no strategies, detectors or temperatures: the grid is empty"),
    "strategy_unknown": (_spec(strategies=["identity", "nonesuch"]), "unknown strategy 'nonesuch'"),
    "railcap_n_zero": (_spec(strategies=[{"name": "railcap", "grid": {"n": [0, 4]}}]), "got n=0"),
    "source_unknown": (_spec(source="hub"), "source: input should be 'miniworld' or 'paths', got 'hub'"),
    "top_level_unknown_key": (_spec(readouts={"m": 4}), "unknown key 'readouts' in the sweep spec"),
    "not_a_mapping": ("- identity\n- railcap\n", "a sweep spec must be a mapping of keys, got list"),
    "not_yaml": ("readout: {m: 4\nstrategies: [identity]\n", "not_yaml.yaml:2:11: not valid YAML (expected ',' or '}', but got ':')"),
    "not_utf8": (b"# " + LATIN1 + b"\nstrategies: [identity]\n", ":1:6: not UTF-8 text (byte 0xe9)"),
    "miniworld_preset_unknown": (_spec(miniworld_preset="huge"), "'huge'"),
    "cache_dir_a_number": (_spec(cache_dir=5), "cache_dir"),
    "leak_split_a_number": (_spec(leak_split=5), "leak_split"),
    "data_dir_a_list": (_spec(data_dir=["a"]), "data_dir"),
    "detectors_unknown": (_spec(detectors=["nosuch"]), "'nosuch'"),
    "detection_control_rate_above_one": (_spec(detectors=["ngram"], detection={"control_rate": 2}), "got 2"),
    "detection_n_control_zero": (_spec(detectors=["ngram"], detection={"n_control": 0}), "detection.n_control: input should be greater than or equal to 1, got 0"),
    "detection_batch_size_zero": (_spec(detectors=["ngram"], detection={"batch_size": 0}), "detection.batch_size: input should be greater than or equal to 1, got 0"),
    "scoring_seed_negative": (_spec(scoring={"seed": -1}), "scoring.seed: input should be greater than or equal to 0, got -1"),
    "engine_max_batch_size_zero": (_spec(engine={"max_batch_size": 0}), "engine.max_batch_size: input should be greater than or equal to 1, got 0"),
    "engine_replicas_zero": (_spec(resources={"engine_replicas": 0}), "resources.engine_replicas: input should be greater than or equal to 1, got 0"),
    "engine_cpus_zero": (_spec(resources={"engine_cpus": 0}), "resources.engine_cpus: input should be greater than 0, got 0"),
    "max_task_retries_below_unlimited": (_spec(resources={"max_task_retries": -2}), "resources.max_task_retries: input should be greater than or equal to -1, got -2"),
    "max_failures_below_unlimited": (_spec(resources={"max_failures": -2}), "resources.max_failures: input should be greater than or equal to -1, got -2"),
    "clean_wait_zero": (_spec(resources={"clean_wait_s": 0}), "resources.clean_wait_s: input should be greater than 0, got 0"),
    "engine_threads_zero": (_spec(resources={"engine_threads": 0}), "resources.engine_threads: input should be greater than or equal to 1, got 0"),
    "omp_wait_policy_unknown": (_spec(resources={"omp_wait_policy": "BUSY"}), "got 'BUSY'"),
    "tracking_experiment_empty": (_spec(tracking={"experiment": ""}), "tracking.experiment: string should have at least 1 character, got ''"),
    "answer_rule_unknown": (_spec(readout={"answer_rule": "last"}), "readout: answer_rule must be one of final, first, lm_eval, got answer_rule='last'"),
    "task_unknown": (_spec(readout={"task": "gsm8"}), "readout: task 'gsm8': neither a task file nor a shipped task (shipped: gsm8k, math, pq); did you mean 'gsm8k'?"),
    "task_lm_eval_malformed": (_spec(readout={"task": "lm_eval:gsm 8k"}), "readout: task 'lm_eval:gsm 8k': expected lm_eval:NAME with a harness task name"),
    "task_group_not_a_group": (_spec(task_group="mgsm"), "task_group 'mgsm' is not a harness group or tag (lm_eval:NAME)"),
    "answer_type_unknown": (_spec(readout={"answer_type": "latex"}), "readout.answer_type: input should be 'numeric' or 'math', got 'latex'"),
    "answer_type_math_with_lm_eval": (_spec(readout={"answer_type": "math", "answer_rule": "lm_eval"}), "readout: answer_rule='lm_eval' does not apply to answer_type='math'; its rules are final, first"),
    "answer_type_math_on_a_miniworld": (_spec(readout={"answer_type": "math"}), "readout.answer_type 'math' needs source 'paths' with a MATH-format data_dir"),
    "answer_type_math_with_detectors": (_spec(readout={"answer_type": "math"}, detectors=["ngram"]), "readout.answer_type 'math' cannot be used with 'detectors'"),
    "temperatures_negative": (_spec(temperatures=[-1]), "bad temperature -1"),
    "temperatures_inf": ("temperatures: [.inf]\nstrategies: [identity]\n", "bad temperature inf"),
    **{
        f"dynamics_{k}": (_spec(temperatures=[0.7], dynamics={k: v}), needle)
        for k, v, needle in (
            ("n_boot", 0, "dynamics.n_boot: input should be greater than or equal to 1, got 0"),
            ("n_boot_gain", 0, "dynamics.n_boot_gain: input should be greater than or equal to 1, got 0"),
            ("min_items", 0, "dynamics.min_items: input should be greater than or equal to 1, got 0"),
            ("e_cut", 0, "dynamics.e_cut: input should be greater than 0, got 0"),
            ("forcing_batch", 0, "dynamics.forcing_batch: input should be greater than or equal to 1, got 0"),
            ("device", "gpu", "dynamics.device: must be auto, cpu, mps, cuda or cuda:N, got 'gpu'"),
            ("seed", -1, "dynamics.seed: input should be greater than or equal to 0, got -1"),
            ("base", "yes", "dynamics.base: input should be a valid boolean, got 'yes'"),
        )
    },
}  # fmt: skip


@pytest.fixture(scope="module")
def inp(tmp_path_factory) -> dict[str, Path]:
    """Every input file the catalogue points at; valid unless its name says otherwise."""
    root = tmp_path_factory.mktemp("inputs")
    paths = {"root": root}
    for d, conf in (("model", "config.json"), ("adapters/clean", "adapter_config.json"),
                    ("adapters/co", "adapter_config.json"), ("tokenizer", "tokenizer.json")):  # fmt: skip
        (root / d).mkdir(parents=True)
        (root / d / conf).write_text("{}")
    (root / "empty_dir").mkdir()
    paths.update(model=root / "model", empty_dir=root / "empty_dir", tokenizer=root / "tokenizer")
    (root / "corpus.txt").write_text("Tom has 2 apples and buys 3 more.\n")
    (root / "latin1_corpus.txt").write_bytes(b"ok\n" + LATIN1 + b"\n")
    paths.update(corpus=root / "corpus.txt", latin1_corpus=root / "latin1_corpus.txt")
    paths["task"] = _write_task(root / "task")
    (root / "leak.json").write_text(json.dumps({"leaked": [0, 2]}))
    paths["leak"] = root / "leak.json"
    good = (root / "task" / "test.jsonl").read_bytes().splitlines()
    paths["latin1_task"] = _write_task(
        root / "latin1_task", lines=[good[0], b'{"question": "' + LATIN1 + b'"}']
    )
    paths["latin1_shots"] = _write_task(root / "latin1_shots", shots=b'[{"question": "' + LATIN1 + b'"}]')
    paths["broken_task"] = _write_task(root / "broken_task", lines=[good[0], good[1][:-3]])
    (root / "latin1_leak.json").write_bytes(b'{"leaked": [0], "note": "' + LATIN1 + b'"}')
    paths["latin1_leak"] = root / "latin1_leak.json"
    (root / "far_leak.json").write_text(json.dumps({"leaked": [0, 99]}))
    paths["far_leak"] = root / "far_leak.json"
    (root / "a_file").write_text("not a directory\n")
    paths["a_file"] = root / "a_file"
    (root / "bad_select.yaml").write_text(BAD_SELECT_TASK)
    paths["bad_select_task"] = root / "bad_select.yaml"
    paths.update(_write_cells(root / "cells"))
    (root / "cells" / "garbage.parquet").write_bytes(LATIN1 * 10)
    paths["garbage"] = root / "cells" / "garbage.parquet"
    (root / "report.csv").mkdir()
    paths["csv_is_a_dir"] = root / "report"
    specs = root / "specs"
    specs.mkdir()
    for name, (text, _) in BAD_SPECS.items():
        data = (
            text
            if isinstance(text, bytes)
            else (text if isinstance(text, str) else yaml.safe_dump(text)).encode()
        )
        (specs / f"{name}.yaml").write_bytes(data)
    (specs / "valid.yaml").write_text(yaml.safe_dump(SMOKE))
    (specs / "valid_paths.yaml").write_text(yaml.safe_dump(_paths_spec(paths)))
    for name, (spec_of, _) in PATH_SPECS.items():
        (specs / f"path_{name}.yaml").write_text(yaml.safe_dump(spec_of(paths)))
    paths["specs"] = specs
    return paths


# The spec field each BAD_SPECS case is about ("" = the spec as a whole).
SPEC_FIELD = {
    "readout_m_string": "readout.m", "scoring_B_word": "scoring.B", "primary_a_name": "primary",
    "primary_without_domain": "primary", "temperature_nan": "readout.temperature", "temperature_inf": "readout.temperature",
    "temperature_negative": "readout.temperature", "m_fractional": "readout.m", "m_boolean": "readout.m", "m_zero": "readout.m",
    "max_new_tokens_zero": "readout.max_new_tokens", "seed_negative": "readout.seed", "batch_size_zero": "readout.batch_size",
    "limit_zero": "readout.limit", "readout_not_a_mapping": "readout", "readout_unknown_key": "readout",
    "n_boot_zero": "scoring.n_boot", "engine_device_gpu": "engine.device", "engine_backend": "engine.backend",
    "engine_dtype": "engine.dtype", "trial_cpus_negative": "resources.trial_cpus", "slots_zero": "resources.slots_per_engine",
    "max_restarts_below_unlimited": "resources.max_restarts", "tracking_uri_empty": "tracking.uri", "domains_empty": "domains",
    "families_empty": "families", "domain_unknown": "domains", "family_unknown": "families", "primary_outside_grid": "primary",
    "strategies_empty": "strategies", "strategy_unknown": "strategies", "railcap_n_zero": "strategies", "source_unknown": "source",
    "top_level_unknown_key": "", "not_a_mapping": "", "not_yaml": "", "not_utf8": "",
    "miniworld_preset_unknown": "miniworld_preset", "cache_dir_a_number": "cache_dir", "leak_split_a_number": "leak_split",
    "data_dir_a_list": "data_dir", "detectors_unknown": "detectors", "detection_control_rate_above_one": "detection.control_rate",
    "detection_n_control_zero": "detection.n_control", "detection_batch_size_zero": "detection.batch_size",
    "scoring_seed_negative": "scoring.seed", "engine_max_batch_size_zero": "engine.max_batch_size",
    "engine_replicas_zero": "resources.engine_replicas", "engine_cpus_zero": "resources.engine_cpus",
    "max_task_retries_below_unlimited": "resources.max_task_retries", "max_failures_below_unlimited": "resources.max_failures",
    "clean_wait_zero": "resources.clean_wait_s", "engine_threads_zero": "resources.engine_threads",
    "omp_wait_policy_unknown": "resources.omp_wait_policy", "tracking_experiment_empty": "tracking.experiment",
    "temperatures_negative": "temperatures", "temperatures_inf": "temperatures", "answer_rule_unknown": "readout.answer_rule", "task_unknown": "readout.task",
    "task_lm_eval_malformed": "readout.task", "task_group_not_a_group": "task_group",
    **dict.fromkeys(("answer_type_unknown", "answer_type_math_with_lm_eval", "answer_type_math_on_a_miniworld",
                     "answer_type_math_with_detectors"), "readout.answer_type"),
    **{f"dynamics_{k}": f"dynamics.{k}" for k in ("n_boot", "n_boot_gain", "min_items", "e_cut", "forcing_batch", "device", "seed", "base")},
}  # fmt: skip


def _paths_spec(i: dict[str, Path], *, base=None, adapter=None, data_dir=None, leak_split=None) -> dict:
    """A valid ``source: paths`` spec over the fixture's model folders, with one path replaced."""
    ad = str(adapter or i["root"] / "adapters/co")
    spec = {"source": "paths", "domains": ["gsm8k"], "strategies": ["identity"], "data_dir": str(data_dir or i["task"]),
            "families": {"llama": {"base": str(base or i["model"]), "adapters": {"clean": ad, "co_gsm8k": ad}}}}  # fmt: skip
    if leak_split:
        spec["leak_split"] = str(leak_split)
    return spec


# Specs that load but name inputs this machine lacks: refused by SweepSpec.check_inputs, before Ray starts.
PATH_SPECS: dict[str, tuple[Callable[[dict[str, Path]], dict], Callable[[dict[str, Path]], str]]] = {
    "base_missing": (lambda i: _paths_spec(i, base=i["root"] / "nope"), lambda i: f"base model {i['root'] / 'nope'}: no such directory"),
    "base_without_config": (lambda i: _paths_spec(i, base=i["empty_dir"]), lambda i: f"{i['empty_dir']}: the directory has no config.json"),
    "adapter_missing": (lambda i: _paths_spec(i, adapter=i["root"] / "nope"), lambda i: f"{i['root'] / 'nope'}: no such directory"),
    "adapter_without_adapter_config": (lambda i: _paths_spec(i, adapter=i["empty_dir"]), lambda i: f"{i['empty_dir']}: the directory has no adapter_config.json"),
    "data_dir_missing": (lambda i: _paths_spec(i, data_dir=i["root"] / "nope"), lambda i: f"data_dir '{i['root'] / 'nope'}' is not a directory"),
    "leak_split_missing": (lambda i: _paths_spec(i, leak_split=i["root"] / "nope.json"), lambda i: f"'{i['root'] / 'nope.json'}' does not exist"),
    "family_not_in_the_world": (lambda i: _spec(families=["gemma"]), lambda i: "unknown family 'gemma' for the 'smoke' miniature world"),
    "math_answer_type_on_gsm8k_rows": (lambda i: {**_paths_spec(i), "readout": {"answer_type": "math"}}, lambda i: f"{i['task'] / 'test.jsonl'}:1: expected an object with string 'problem' and 'solution'"),
}  # fmt: skip


# ---------------------------------------------------------------- the catalogue


# A task file whose one bad field is an extraction step's ``select`` (commands check --task files whole).
BAD_SELECT_TASK = """\
format: 1
name: bad_select
data: {path: "{task_dir}/{split}.jsonl"}
doc_to_text: "Q: {{question}}\\nA:"
doc_to_target: "{{answer}}"
grader: {type: numeric}
answer_rules:
  final: {extract: [{regex: '(\\d+)', select: middle}]}
"""


@dataclass(frozen=True)
class Case:
    """One bad command line: ``command`` (a CLI command, ``job`` for sweeps/tables.py and table1-4.py, or
    ``contaminate.py``), the ``option`` (or spec field, ``spec:readout.m``) it is about, the command line,
    and the words the one error line must contain."""

    name: str
    command: str
    option: str
    argv: Callable[[dict[str, Path], Path], list[str]]
    needles: tuple[str | Callable[[dict[str, Path]], str], ...]


CATALOGUE: list[Case] = []


def register(command: str, option: str, name: str, argv, *needles) -> None:
    """Add a case (another test file may call this at import time to grow the catalogue)."""
    CATALOGUE.append(Case(f"{command}-{name}", command, option, argv, needles))


def _args(i: dict[str, Path], o: Path, *parts) -> list[str]:
    """Command-line parts; a callable part is filled in from the fixture's inputs and the output dir."""
    return [str(p(i, o)) if callable(p) else str(p) for p in parts]


# A valid command line per command; argparse keeps the last value of a repeated option.
BASE: dict[str, Callable[[dict[str, Path], Path], list[str]]] = {
    "eval": lambda i, o: [
        "eval", "--model", str(i["model"]), "--adapter", f"clean={i['root'] / 'adapters/clean'}",
        "--adapter", f"co={i['root'] / 'adapters/co'}", "--use-adapter", "co", "--clean-adapter", "clean",
        "--task-dir", str(i["task"]), "--leak-split", str(i["leak"]), "--strategy", "identity",
        "--m", "2", "--temperature", "0.7", "--device", "cpu", "--out", str(o / "cells")],
    "score": lambda i, o: ["score", "--clean", str(i["clean"]), "--mitigated", str(i["co"]), "--B", "4",
                           "--n-boot", "20", "--out", str(o / "report" / "scores")],
    "plan": lambda i, o: ["plan", "--n", "50", "--m", "10"],
    "sweep": lambda i, o: ["sweep", "--preset", "smoke", "--run-dir", str(o / "runs")],
    "demo": lambda i, o: ["demo", "--preset", "smoke", "--run-dir", str(o / "runs")],
    "detect": lambda i, o: ["detect", "--detector", "loss", "--test", str(i["task"] / "test.jsonl"),
                            "--model", str(i["model"]), "--device", "cpu", "--out", str(o / "det")],
    "figure1": lambda i, o: ["figure1", "--model", str(i["model"]), "--adapter", f"clean={i['root'] / 'adapters/clean'}",
                             "--adapter", f"co_gsm8k={i['root'] / 'adapters/co'}", "--task-dir", str(i["task"]),
                             "--leak-split", str(i["leak"]), "--out", str(o / "fig")],
    "rails": lambda i, o: ["rails", "--model", str(i["model"]), "--adapter", f"clean={i['root'] / 'adapters/clean'}",
                           "--adapter", f"co_gsm8k={i['root'] / 'adapters/co'}", "--task-dir", str(i["task"]),
                           "--leak-split", str(i["leak"]), "--out", str(o / "rails")],
    "base": lambda i, o: ["base", "smollm2-135m-instruct", "--cache-dir", str(o / "cache"),
                          "--find-links", str(i["empty_dir"])],  # never the registry, even if a check failed
    "miniworld": lambda i, o: ["miniworld", "check", "--preset", "smoke", "--cache-dir", str(o / "cache")],
    "dynamics": lambda i, o: ["dynamics", "--world", "smoke", "--out", str(o / "dyn")],
    "contaminate": lambda i, o: ["contaminate", "--model", str(i["model"]), "--task-dir", str(i["task"]),
                                 "--filler", str(i["corpus"]), "--out", str(o / "adapters")],
    "job": lambda i, o: ["--preset", "smoke", "--num-cpus", "1"],
    "paraphrase": lambda i, o: ["paraphrase", "--test", str(i["task"] / "test.jsonl"), "--endpoint",
                                "http://127.0.0.1:9/v1", "--model", "m", "--no-api-key", "--out", str(o / "pq.jsonl")],
    "data": lambda i, o: ["data", "gsm8k", "--out", str(o / "data"), "--mirror", i["empty_dir"].as_uri()],
    "contaminate.py": lambda i, o: ["--family", f"llama={i['model']}", "--task-dir", str(i["task"]),
                                    "--filler", str(i["corpus"]), "--out", str(o / "adapters")],
}  # fmt: skip

# Bad values per argument type: (case name, value); the error line must name the option and the value.
_WRITABLE = [("a_file", lambda i, o: i["a_file"]), ("under_a_file", lambda i, o: i["a_file"] / "sub"),
             ("not_creatable", lambda i, o: "/proc/railsweep-x")]  # fmt: skip
BAD_VALUES: dict[str, list[tuple[str, object]]] = {
    "seed": [("negative", "-1"), ("above_32_bits", str(2**32)), ("fractional", "1.5"), ("word", "x")],
    "temperature": [("inf", "inf"), ("nan", "nan"), ("negative", "-0.5"), ("word", "warm")],
    "samples": [("zero", "0"), ("negative", "-3"), ("fractional", "2.5"), ("beyond_memory", "100000000000000")],
    "new_tokens": [("zero", "0"), ("negative", "-1"), ("beyond_memory", "99999999999999")],
    "limit": [("zero", "0"), ("negative", "-1"), ("word", "all")],
    "positive": [("zero", "0"), ("negative", "-4"), ("word", "x")],
    "count": [("negative", "-1"), ("word", "many")],
    "n_boot": [("zero", "0"), ("beyond_memory", "1000000000000000")],
    "device": [("gpu", "gpu"), ("cuda_word", "cuda:x"), ("upper_case", "CPU")],
    "threads": [("zero", "0"), ("negative", "-2"), ("beyond_the_cpus", str((os.cpu_count() or 1) + 1))],
    "text": [("empty", ""), ("control_character", "a\tb")],
    "probability": [("zero", "0"), ("one", "1"), ("nan", "nan")],
    "fraction": [("negative", "-0.1"), ("above_one", "1.5"), ("nan", "nan")],
    "positive_real": [("zero", "0"), ("negative", "-1"), ("nan", "nan"), ("inf", "inf")],
    "finite": [("nan", "nan"), ("inf", "inf")],
    "percentage": [("zero", "0"), ("above_100", "101")],
    "hash_bits": [("zero", "0"), ("above_64", "65")],
    "ngram_order": [("zero", "0"), ("beyond_memory", "1000000000000000")],
    "strata": [("zero", "0"), ("beyond_int64", str(2**63))],
    "port": [("zero", "0"), ("above_65535", "70000")],
    "choice": [("unknown", "nonesuch")],
    "writable_dir": _WRITABLE,
    "existing_file": [("missing", lambda i, o: o / "nope.jsonl"), ("a_directory", lambda i, o: i["root"])],
    "existing_dir": [("missing", lambda i, o: o / "nope"), ("a_file", lambda i, o: i["a_file"])],
    "existing_path": [("missing", lambda i, o: o / "nope")],
    "model": [("missing", lambda i, o: i["root"] / "nope"), ("without_config", lambda i, o: i["empty_dir"])],
    "adapter": [("missing", lambda i, o: i["root"] / "nope"), ("without_adapter_config", lambda i, o: i["empty_dir"])],
    "tokenizer": [("missing", lambda i, o: i["root"] / "nope"), ("without_tokenizer_files", lambda i, o: i["empty_dir"])],
}  # fmt: skip

_SPEC = ["--experiment:text", "--cache-dir:writable_dir", "--limit:limit", "--m:samples", "--preset:choice", "--table:choice",
         "--throughput:existing_file", "--pilot:existing_dir"]
_SWEEP = [*_SPEC, "--address:text", "--tracking-uri:text", "--run-dir:text", "--mlflow-port:port", "--dashboard-port:port"]
_RECIPE = ["--task-dir:existing_dir", "--pq:existing_file", "--filler:text", "--domain:choice", "--n-filler:count",
           "--n-train:count", "--n-leak:count", "--seed:seed", "--lora-r:positive", "--lora-alpha:positive", "--lr:positive_real",
           "--epochs:positive", "--global-batch:positive", "--micro-batch:positive", "--max-length:positive",
           "--precision:choice", "--attention:choice", "--device:device"]  # fmt: skip
# the model pair of figure1 and rails (one shared option builder)
_PAIR = ["--world:choice", "--family:text", "--cache-dir:writable_dir", "--model:model", "--task-dir:existing_dir",
         "--leak-split:existing_file", "--clean:text", "--co:text"]  # fmt: skip
# option -> argument type, per command (the options a type checks; the rest are in SPECIAL below)
OPTION_KINDS: dict[str, list[str]] = {
    "eval": ["--model:model", "--split:text", "--strategy:text", "--m:samples", "--temperature:temperature", "--seed:seed",
             "--max-new-tokens:new_tokens", "--limit:limit", "--family:text", "--domain:text", "--role:choice", "--answer-rule:text", "--answer-type:choice",
             "--backend:choice", "--device:device", "--batch-size:positive", "--max-batch-size:positive",
             "--cache-dir:writable_dir", "--out:writable_dir"],
    "score": ["--B:strata", "--n-boot:n_boot", "--alpha:probability", "--seed:seed"],
    "plan": ["--pilot:existing_dir", "--n:positive", "--m:positive", "--B:strata", "--mde:positive_real",
             "--alpha:probability", "--power:probability", "--seed:seed"],
    "sweep": _SWEEP, "demo": _SWEEP,
    "detect": ["action:choice", "--out:writable_dir", "--world:text", "--family:text", "--domain:text", "--n-control:positive",
               "--test:existing_file", "--task-dir:existing_dir", "--leak-split:existing_file", "--control:existing_file", "--threshold:finite",
               "--control-rate:fraction", "--corpus:existing_file", "--text-field:text", "--n:ngram_order", "--fields:choice",
               "--tokenizer:tokenizer", "--bits:hash_bits", "--ray-address:text", "--model:model", "--adapter:adapter",
               "--reference-adapter:adapter", "--k:percentage", "--responses:existing_file", "--fewshot:existing_file",
               "--cdd-alpha:fraction", "--cdd-xi:fraction", "--m:samples", "--temperature:temperature", "--max-new-tokens:new_tokens",
               "--batch-size:positive", "--device:device", "--original:existing_file", "--paraphrased:existing_file",
               "--questions:existing_file", "--flags:existing_path", "--setting:text", "--weight:fraction",
               "--readout:choice", "--clean:existing_file", "--seed:seed", "--n-boot:n_boot"],
    "figure1": [*_PAIR, "--m:samples", "--temperature:temperature", "--max-new-tokens:new_tokens",
                "--departures:positive", "--limit:limit", "--seed:seed", "--device:device", "--tracking-uri:text",
                "--out:writable_dir"],
    "rails": [*_PAIR, "--m:samples", "--n:positive", "--runs:positive", "--temperature:temperature",
              "--max-new-tokens:new_tokens", "--limit:limit", "--seed:seed", "--device:device", "--out:writable_dir"],
    "base": ["source:text", "--dtype:choice", "--cache-dir:writable_dir", "--find-links:existing_dir"],
    "miniworld": ["action:choice", "--preset:choice", "--cache-dir:writable_dir", "--family:text", "--m:samples",
                  "--limit:limit", "--max-new-tokens:new_tokens", "--threads:threads", "--device:device",
                  "--batch-size:positive", "--workers:threads", "--out:writable_dir"],
    "dynamics": ["--world:text", "--family:text", "--domain:text", "--temperatures:temperature", "--m:samples",
                 "--limit:limit", "--max-new-tokens:new_tokens", "--seed:seed", "--n-boot:n_boot", "--n-boot-gain:n_boot",
                 "--min-items:positive", "--e-cut:positive_real", "--batch-size:positive", "--device:device",
                 "--out:writable_dir"],
    "contaminate": ["--model:model", "--out:writable_dir", *_RECIPE],
    "job": [*_SPEC, "--tracking-uri:text", "--ray-address:text", "--num-cpus:positive", "--progress-interval:positive_real"],
    "contaminate.py": ["--out:writable_dir", "--cache-dir:writable_dir", "--ray-address:text", "--num-cpus:positive", *_RECIPE],
    "data": ["dataset:choice", "--out:writable_dir"],
    "paraphrase": ["--test:existing_file", "--task-dir:existing_dir", "--engine:choice", "--chat-template:existing_file", "--device:device", "--model:text", "--retries:count", "--max-rouge:fraction",
                   "--temperature:temperature", "--max-tokens:positive", "--timeout:positive_real", "--seed:seed",
                   "--workers:positive", "--limit:limit"],
}  # fmt: skip


def _with(command: str, option: str, value) -> Callable[[dict[str, Path], Path], list[str]]:
    """The command's valid line with ``option`` set to ``value`` (a positional replaces the action word)."""

    def argv(i: dict[str, Path], o: Path) -> list[str]:
        base = BASE[command](i, o)
        v = str(value(i, o)) if callable(value) else value
        if option in ("source", "dataset"):  # railsweep base SOURCE, railsweep data DATASET
            return [base[0], v, *base[2:]]
        if option == "action":
            return [base[0], v, *base[2 if command == "miniworld" else 1 :]]
        return [*base, f"{option}={v}"]

    return argv


def _shown(value) -> object:
    """What the error line shows of a bad value: a path in full, an empty or tabbed word quoted."""
    if callable(value):
        return lambda i, o: str(value(i, o))
    return repr(value) if not value.strip() or "\t" in value else value


for _command, _kinds in OPTION_KINDS.items():
    for _entry in _kinds:
        _option, _kind = _entry.split(":")
        for _name, _value in BAD_VALUES[_kind]:
            register(_command, _option, f"{_option.strip('-')}-{_name}", _with(_command, _option, _value),
                     f"argument {_option}:", _shown(_value))  # fmt: skip


def eval_argv(i: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return [*BASE["eval"](i, out), *extra]


def score_argv(i: dict[str, Path], out: Path, *extra: str, clean=None, mitigated=None) -> list[str]:
    argv = [*BASE["score"](i, out), *extra]
    if clean:
        argv[argv.index("--clean") + 1] = str(clean)
    if mitigated:
        argv[argv.index("--mitigated") + 1] = str(mitigated)
    return argv


def sweep_argv(i: dict[str, Path], out: Path, *extra: str) -> list[str]:
    """The valid sweep line plus ``extra``; a ``--spec`` replaces its preset (the two are refused together)."""
    base = BASE["sweep"](i, out)
    return [*(base[:1] + base[3:] if "--spec" in extra else base), *extra]


def detect_argv(i: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return [*BASE["detect"](i, out), *extra]


def figure1_argv(i: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return [*BASE["figure1"](i, out), *extra]


def rails_argv(i: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return [*BASE["rails"](i, out), *extra]


def _spec_file(i: dict[str, Path], o: Path, name: str) -> str:
    return str(i["specs"] / f"{name}.yaml")


# Cases a type cannot express: (command, option, name, command line, words of the error line).
SPECIAL = [
    ("data", "--mirror", "mirror_not_a_url", lambda i, o: [*BASE["data"](i, o), "--mirror", "ftp://x"], "argument --mirror:", "'ftp://x'"),
    ("paraphrase", "--endpoint", "endpoint_not_http", lambda i, o: [*BASE["paraphrase"](i, o), "--endpoint", "ftp://x"], "argument --endpoint:", "'ftp://x'"),
    ("paraphrase", "--api-key-env", "api_key_env_not_a_name", lambda i, o: [*BASE["paraphrase"](i, o), "--api-key-env", "1BAD"], "argument --api-key-env:", "'1BAD'"),
    ("paraphrase", "--api-key-env", "api_key_unset", lambda i, o: [a for a in BASE["paraphrase"](i, o) if a != "--no-api-key"] + ["--api-key-env", "RAILSWEEP_NO_SUCH_KEY"], "RAILSWEEP_NO_SUCH_KEY (--api-key-env) is not set"),
    ("paraphrase", "--out", "out_a_directory", lambda i, o: [*BASE["paraphrase"](i, o), "--out", str(i["root"])], lambda i, o: f"--out must be a file path, got a directory: {i['root']}"),
    ("paraphrase", "--out", "out_under_a_file", lambda i, o: [*BASE["paraphrase"](i, o), "--out", str(i["a_file"] / "pq.jsonl")], lambda i, o: f"{i['a_file']} is a file, not a directory"),
    ("paraphrase", "--out", "out_overwrites_test", lambda i, o: [*BASE["paraphrase"](i, o), "--out", str(i["task"] / "test.jsonl")], "must not overwrite the --test file"),
    ("paraphrase", "--engine", "openai_without_endpoint", lambda i, o: [a for a in BASE["paraphrase"](i, o) if a not in ("--endpoint", "http://127.0.0.1:9/v1")], "--engine openai needs --endpoint URL"),
    ("paraphrase", "--engine", "transformers_with_endpoint", lambda i, o: [*BASE["paraphrase"](i, o), "--engine", "transformers", "--model", str(i["model"])], "--endpoint is for --engine openai"),
    ("paraphrase", "--engine", "transformers_model_missing", lambda i, o: [a for a in BASE["paraphrase"](i, o) if a not in ("--endpoint", "http://127.0.0.1:9/v1")] + ["--engine", "transformers", "--model", str(o / "nope")], lambda i, o: f"--model {o / 'nope'}: no such directory"),
    ("paraphrase", "--engine", "transformers_without_chat_template", lambda i, o: [a for a in BASE["paraphrase"](i, o) if a not in ("--endpoint", "http://127.0.0.1:9/v1")] + ["--engine", "transformers", "--model", str(i["model"])], "the tokenizer has no chat template"),
    ("paraphrase", "--chat-template", "chat_template_with_openai", lambda i, o: [*BASE["paraphrase"](i, o), "--chat-template", str(i["a_file"])], "--chat-template is for --engine transformers"),
    ("paraphrase", "--task", "task_unknown", lambda i, o: [*BASE["paraphrase"](i, o), "--task", "gsm8"], "task 'gsm8': neither a task file nor a shipped task"),
    ("paraphrase", "--task", "task_and_test", lambda i, o: [*BASE["paraphrase"](i, o), "--task", "gsm8k", "--task-dir", str(i["task"])], "give --test FILE or --task FILE|NAME"),
    ("paraphrase", "--task", "task_file_bad_field", lambda i, o: [*BASE["paraphrase"](i, o), "--task", str(i["bad_select_task"])], "select: must be one of last, first, got 'middle'"),
    ("paraphrase", "--task-dir", "task_dir_without_task", lambda i, o: [*BASE["paraphrase"](i, o), "--task-dir", str(i["task"])], "--task-dir needs --task"),
    ("paraphrase", "--report", "report_is_out", lambda i, o: [*BASE["paraphrase"](i, o), "--report", str(o / "pq.jsonl")], "--report must differ from --out"),
    ("eval", "--dtype", "dtype_float8", lambda i, o: eval_argv(i, o, "--dtype", "float8"), "dtype='float8'"),
    ("eval", "--backend", "backend_unknown", lambda i, o: eval_argv(i, o, "--backend", "tgi"), "invalid choice: 'tgi'"),
    ("eval", "--role", "role_unknown", lambda i, o: eval_argv(i, o, "--role", "judge"), "invalid choice: 'judge'"),
    ("eval", "--answer-rule", "answer_rule_unknown", lambda i, o: eval_argv(i, o, "--answer-rule", "last"), "answer_rule must be one of final, first, lm_eval, got answer_rule='last'"),
    ("eval", "--answer-rule", "answer_rule_not_the_task_files", lambda i, o: eval_argv(i, o, "--task", "pq", "--answer-rule", "strict-match"), "has no answer rule 'strict-match'; its rules: final, first, lm_eval"),
    ("eval", "--out", "out_under_a_file", lambda i, o: eval_argv(i, o, "--out", str(i["a_file"] / "cells")), lambda i, o: f"{i['a_file']} is a file, not a directory"),
    ("eval", "--task", "task_unknown", lambda i, o: eval_argv(i, o, "--task", "gsm8"), "task 'gsm8': neither a task file nor a shipped task"),
    ("eval", "--task-dir", "task_dir_missing", lambda i, o: eval_argv(i, o, "--task-dir", str(o / "nope")), "task directory not found"),
    ("eval", "--task-dir", "task_not_utf8", lambda i, o: eval_argv(i, o, "--task-dir", str(i["latin1_task"])), "test.jsonl:2:18: not UTF-8 text (byte 0xe9)"),
    ("eval", "--task-dir", "fewshot_not_utf8", lambda i, o: eval_argv(i, o, "--task-dir", str(i["latin1_shots"])), "cot_8shot.json:1:19: not UTF-8 text (byte 0xe9)"),
    ("eval", "--leak-split", "leak_split_not_utf8", lambda i, o: eval_argv(i, o, "--leak-split", str(i["latin1_leak"])), "latin1_leak.json:1:29: not UTF-8 text (byte 0xe9)"),
    ("eval", "--task-dir", "task_line_broken", lambda i, o: eval_argv(i, o, "--task-dir", str(i["broken_task"])), "test.jsonl:2: not valid JSON"),
    ("eval", "--split", "split_missing", lambda i, o: eval_argv(i, o, "--split", "dev", "--leak-split", str(i["leak"]), "--limit", "1"), "leak_split indexes the test split; got split='dev'"),
    ("eval", "--leak-split", "leak_split_out_of_range", lambda i, o: eval_argv(i, o, "--leak-split", str(i["far_leak"])), "leaked indices out of range [0, 4): [99]"),
    ("eval", "--leak-split", "leak_split_missing", lambda i, o: eval_argv(i, o, "--leak-split", str(o / "nope.json")), "--leak-split: file not found"),
    ("eval", "--fewshot", "fewshot_missing", lambda i, o: eval_argv(i, o, "--fewshot", str(o / "nope.json")), "--fewshot: file not found"),
    ("eval", "--model", "model_missing", lambda i, o: eval_argv(i, o, "--model", str(o / "nope")), lambda i, o: f"argument --model: {o / 'nope'}: no such directory"),
    ("eval", "--adapter", "adapter_malformed", lambda i, o: eval_argv(i, o, "--adapter", "clean"), "--adapter must look like NAME=VALUE, got 'clean'"),
    ("eval", "--adapter", "adapter_twice", lambda i, o: eval_argv(i, o, "--adapter", f"co={i['root'] / 'adapters/co'}"), "--adapter 'co' given more than once"),
    ("eval", "--adapter", "adapter_missing_dir", lambda i, o: eval_argv(i, o, "--adapter", f"extra={o / 'nope'}"), lambda i, o: f"--adapter extra: {o / 'nope'}: no such directory"),
    ("eval", "--use-adapter", "use_adapter_unknown", lambda i, o: eval_argv(i, o, "--use-adapter", "ghost"), "--use-adapter 'ghost': adapter not found"),
    ("eval", "--strategy", "strategy_unknown", lambda i, o: eval_argv(i, o, "--strategy", "nosuch"), "unknown strategy 'nosuch'"),
    ("eval", "--strategy", "railcap_n_zero", lambda i, o: eval_argv(i, o, "--strategy", "railcap", "--param", "n=0"), "n=0"),
    ("eval", "--param", "param_malformed", lambda i, o: eval_argv(i, o, "--param", "oops"), "--param must look like NAME=VALUE, got 'oops'"),
    ("eval", "--role", "clean_role_not_identity", lambda i, o: eval_argv(i, o, "--role", "clean", "--strategy", "all_zero"), "strategy='all_zero'"),
    ("score", "--out", "out_is_a_directory", lambda i, o: score_argv(i, o, "--out", str(i["root"])), lambda i, o: f"got a directory: {i['root']}"),
    ("score", "--out", "out_under_a_file", lambda i, o: score_argv(i, o, "--out", str(i["a_file"] / "scores")), lambda i, o: f"--out {i['a_file'] / 'scores'}: {i['a_file']} is a file, not a directory"),
    ("score", "--out", "out_not_creatable", lambda i, o: score_argv(i, o, "--out", "/proc/railsweep/scores"), "--out /proc/railsweep/scores: cannot create files in /proc"),
    ("score", "--out", "out_csv_is_a_directory", lambda i, o: score_argv(i, o, "--out", str(i["csv_is_a_dir"])), lambda i, o: f"{i['root'] / 'report.csv'} is a directory"),
    ("score", "--clean", "clean_missing", lambda i, o: score_argv(i, o, clean=o / "nope.parquet"), "results file not found"),
    ("score", "--clean", "clean_not_parquet", lambda i, o: score_argv(i, o, clean=i["garbage"]), "garbage.parquet: not a readable Parquet file"),
    ("score", "--clean", "clean_is_mitigated", lambda i, o: score_argv(i, o, clean=i["co"]), "got role='mitigated'"),
    ("score", "--clean", "clean_is_a_directory", lambda i, o: score_argv(i, o, clean=i["root"]), lambda i, o: f"results file not found: {i['root']}"),
    ("score", "--mitigated", "mitigated_fewer_questions", lambda i, o: score_argv(i, o, mitigated=i["fewer"]), "missing from mitigated: [3]"),
    ("score", "--mitigated", "mitigated_responses_file", lambda i, o: score_argv(i, o, mitigated=str(i["co"]).replace(".parquet", ".responses.parquet")), "this is a responses file"),
    ("sweep", "--spec", "spec_missing", lambda i, o: sweep_argv(i, o, "--spec", str(o / "nope.yaml")), "is neither a preset"),
    ("sweep", "--spec", "cluster_spec_outside_the_working_directory", lambda i, o: sweep_argv(i, o, "--spec", str(i["specs"] / "valid.yaml"), "--address", "http://127.0.0.1:1"), "is outside the working directory"),
    ("sweep", "--preset", "preset_unknown", lambda i, o: sweep_argv(i, o, "--preset", "huge"), "argument --preset: invalid choice: 'huge'"),
    ("sweep", "--table", "table_unknown", lambda i, o: sweep_argv(i, o, "--table", "9"), "argument --table: invalid choice: '9'"),
    ("sweep", "--address", "address_without_tracking_uri", lambda i, o: sweep_argv(i, o, "--address", "http://10.0.0.1:8265"), "--address needs --tracking-uri"),
    ("sweep", "--tracking-uri", "tracking_uri_not_http", lambda i, o: sweep_argv(i, o, "--tracking-uri", "sqlite:///mlflow.db"), "tracking URI 'sqlite:///mlflow.db' is not an HTTP(S) MLflow server"),
    ("sweep", "--tracking-uri", "tracking_uri_unreachable", lambda i, o: sweep_argv(i, o, "--tracking-uri", "http://127.0.0.1:9"), "tracking URI 'http://127.0.0.1:9' is unreachable"),
    ("sweep", "--run-dir", "run_dir_is_a_file", lambda i, o: sweep_argv(i, o, "--run-dir", str(i["a_file"])), lambda i, o: f"--run-dir {i['a_file']}: {i['a_file']} is a file"),
    ("sweep", "--run-dir", "run_dir_not_creatable", lambda i, o: sweep_argv(i, o, "--run-dir", "/proc/railsweep-runs"), "--run-dir /proc/railsweep-runs: cannot create files in /proc"),
    # eval: the model and adapter folders are checked before the engine is built
    ("eval", "--adapter", "adapter_without_adapter_config", lambda i, o: eval_argv(i, o, "--adapter", f"x={i['empty_dir']}"), lambda i, o: f"{i['empty_dir']}: the directory has no adapter_config.json"),
    ("eval", "--clean-adapter", "clean_adapter_unknown", lambda i, o: eval_argv(i, o, "--clean-adapter", "ghost"), "--clean-adapter 'ghost': adapter not found"),
    ("eval", "--base-adapter", "base_adapter_unknown", lambda i, o: eval_argv(i, o, "--base-adapter", "ghost"), "--base-adapter 'ghost': adapter not found"),
    ("eval", "--dtype", "dtype_word", lambda i, o: eval_argv(i, o, "--dtype", "big"), "'big'"),
    ("eval", "--m", "m_times_max_new_tokens_beyond_memory", lambda i, o: eval_argv(i, o, "--m", "10000000", "--max-new-tokens", "100000"), "--m 10000000 with --max-new-tokens 100000 needs ~8,000 GB of token ids; the limit on this machine is"),
    # score
    ("score", "--B", "B_2_to_the_63", lambda i, o: score_argv(i, o, "--B", str(2**63)), f"must be an integer in [1, {2**63 - 1}], got '{2**63}'"),
    ("score", "--n-boot", "n_boot_beyond_memory", lambda i, o: score_argv(i, o, "--n-boot", "1000000000000000"), "1000000000000000 needs ~16,000,000 GB of bootstrap indices"),
    # sweep and demo: a preset and a spec together; a spec naming what this machine lacks
    ("sweep", "--spec", "preset_and_spec", lambda i, o: [*BASE["sweep"](i, o), "--spec", _spec_file(i, o, "valid")], "give --preset or --spec, not both"),
    ("demo", "--spec", "preset_and_spec", lambda i, o: [*BASE["demo"](i, o), "--spec", _spec_file(i, o, "valid")], "give --preset or --spec, not both"),
    ("demo", "--spec", "spec_missing", lambda i, o: ["demo", "--run-dir", str(o / "runs"), "--spec", str(o / "nope.yaml")], "is neither a preset"),
    ("demo", "--tracking-uri", "tracking_uri_not_http", lambda i, o: [*BASE["demo"](i, o), "--tracking-uri", "sqlite:///m.db"], "'sqlite:///m.db' is not an HTTP(S) MLflow server"),
    ("demo", "--address", "address_without_tracking_uri", lambda i, o: [*BASE["demo"](i, o), "--address", "http://10.0.0.1:8265"], "--address needs --tracking-uri"),
    ("demo", "--run-dir", "run_dir_is_a_file", lambda i, o: [*BASE["demo"](i, o), "--run-dir", str(i["a_file"])], lambda i, o: f"--run-dir {i['a_file']}"),
    # the sweep job (sweeps/tables.py, table1-4.py): a 0 override is refused, not dropped
    ("table3.py", "--m", "m_zero", lambda i, o: ["--preset", "smoke", "--m", "0"], "argument --m: must be an integer >= 1, got '0'"),
    ("table3.py", "--limit", "limit_zero", lambda i, o: ["--preset", "smoke", "--limit", "0"], "argument --limit: must be an integer >= 1, got '0'"),
    ("table3.py", "--spec", "preset_and_spec", lambda i, o: ["--preset", "smoke", "--spec", _spec_file(i, o, "valid")], "give --preset or --spec, not both"),
    ("job", "--spec", "spec_file_not_utf8", lambda i, o: ["--spec", _spec_file(i, o, "not_utf8")], "not UTF-8 text"),
    ("job", "--progress-interval", "progress_interval_minus_inf", lambda i, o: ["--preset", "smoke", "--progress-interval=-inf"], "got '-inf'"),
    # detect: every input before a model loads or the corpus is scanned
    ("detect", "--detector", "detector_unknown", lambda i, o: detect_argv(i, o, "--detector", "losss"), "'losss'"),
    ("detect", "--temperature", "cdd_temperature_inf", lambda i, o: detect_argv(i, o, "--detector", "cdd", "--temperature", "inf"), "argument --temperature: must be a finite number in [0, inf), got 'inf'"),
    ("detect", "--n-control", "n_control_negative", lambda i, o: detect_argv(i, o, "--n-control=-5"), "got '-5'"),
    ("detect", "--tokenizer", "tokenizer_missing_folder", lambda i, o: detect_argv(i, o, "--detector", "ngram", "--corpus", str(i["corpus"]), "--tokenizer", str(o / "tok")), lambda i, o: f"{o / 'tok'}: no such directory"),
    ("detect", "--adapter", "adapter_without_adapter_config", lambda i, o: detect_argv(i, o, "--adapter", str(i["empty_dir"])), lambda i, o: f"{i['empty_dir']}: the directory has no adapter_config.json"),
    ("detect", "--corpus", "corpus_not_utf8_with_a_model_side_detector", lambda i, o: detect_argv(i, o, "--detector", "loss,ngram", "--corpus", str(i["latin1_corpus"])), "latin1_corpus.txt:2: not UTF-8 text (byte 0xe9"),
    ("detect", "--corpus", "corpus_unknown_kind", lambda i, o: detect_argv(i, o, "--detector", "ngram", "--corpus", str(i["leak"])), "unknown kind '.json'"),
    ("detect", "--ray-address", "ray_address_without_ray", lambda i, o: detect_argv(i, o, "--ray-address", "ray://x:1"), "--ray-address needs --ray"),
    ("detect", "--m", "cdd_m_times_tokens_beyond_memory", lambda i, o: detect_argv(i, o, "--detector", "cdd", "--m", "10000000", "--max-new-tokens", "100000"), "--m 10000000 with --max-new-tokens 100000 needs"),
    ("detect", "--weight", "report_weight_above_one", lambda i, o: ["detect", "report", "--questions", str(i["co"]), "--flags", str(i["root"]), "--detector", "ngram", "--weight", "2", "--out", str(o / "rep")], "argument --weight: must be a finite number in [0, 1], got '2'"),
    ("detect", "--detector", "report_two_detectors", lambda i, o: ["detect", "report", "--questions", str(i["co"]), "--flags", str(i["root"]), "--detector", "ngram,loss", "--out", str(o / "rep")], "detect report takes one --detector, got ['ngram', 'loss']"),
    # --task on every command that reads a benchmark: the file or name checked whole before a world or model loads
    ("figure1", "--task", "task_unknown", lambda i, o: figure1_argv(i, o, "--task", "gsm8"), "task 'gsm8': neither a task file nor a shipped task"),
    ("figure1", "--task", "task_unknown_with_a_world", lambda i, o: ["figure1", "--world", "smoke", "--task", "gsm8", "--out", str(o / "fig")], "did you mean 'gsm8k'?"),
    ("figure1", "--task", "task_file_bad_field", lambda i, o: figure1_argv(i, o, "--task", str(i["bad_select_task"])), "answer_rules.final.extract[0].select: must be one of last, first, got 'middle'"),
    ("figure1", "--task", "task_reads_task_dir_without_it", lambda i, o: [a for a in figure1_argv(i, o, "--task", "gsm8k") if a not in ("--task-dir", str(i["task"]))], "--task gsm8k: the task file reads its data from {task_dir}; give --task-dir"),
    ("rails", "--task", "task_unknown", lambda i, o: rails_argv(i, o, "--task", "pqq"), "task 'pqq': neither a task file nor a shipped task"),
    ("rails", "--task", "task_lm_eval_malformed", lambda i, o: rails_argv(i, o, "--task", "lm_eval:gsm 8k"), "task 'lm_eval:gsm 8k': expected lm_eval:NAME"),
    ("rails", "--task", "task_data_missing", lambda i, o: rails_argv(i, o, "--task", "pq"), "pq_test.jsonl"),
    ("detect", "--task", "task_unknown", lambda i, o: detect_argv(i, o, "--task", "gsm8"), "task 'gsm8': neither a task file nor a shipped task"),
    ("detect", "--task", "task_file_bad_field", lambda i, o: detect_argv(i, o, "--task", str(i["bad_select_task"])), "select: must be one of last, first, got 'middle'"),
    ("detect", "--task", "task_and_test", lambda i, o: detect_argv(i, o, "--task", "gsm8k", "--task-dir", str(i["task"])), "--test and --task both name the test items; give one"),
    ("detect", "--task", "task_with_a_world", lambda i, o: ["detect", "--detector", "loss", "--world", "smoke", "--task", "gsm8k", "--out", str(o / "det")], "--world supplies the items"),
    ("detect", "--task-dir", "task_dir_without_task", lambda i, o: [a for a in detect_argv(i, o, "--task-dir", str(i["task"])) if a not in ("--test", str(i["task"] / "test.jsonl"))], "--task-dir needs --task"),
    # figure1: families and adapters known from the world preset before it is built
    ("figure1", "--family", "family_not_in_the_world", lambda i, o: ["figure1", "--world", "smoke", "--family", "mamba", "--out", str(o / "fig")], "--family 'mamba': not in the 'smoke' world; families: llama"),
    ("figure1", "--co", "co_adapter_not_in_the_world", lambda i, o: ["figure1", "--world", "smoke", "--co", "co_math", "--out", str(o / "fig")], "adapter 'co_math' is not among the given adapters"),
    ("rails", "--adapter", "adapter_malformed", lambda i, o: rails_argv(i, o, "--adapter", "clean"), "--adapter must look like NAME=VALUE, got 'clean'"),
    ("rails", "--adapter", "adapter_without_adapter_config", lambda i, o: rails_argv(i, o, "--adapter", f"x={i['empty_dir']}"), lambda i, o: f"{i['empty_dir']}: the directory has no adapter_config.json"),
    ("rails", "--ks", "ks_zero", lambda i, o: rails_argv(i, o, "--ks", "1,0"), "argument --ks: must be comma-separated integers >= 1, got '1,0'"),
    ("rails", "--ks", "ks_word", lambda i, o: rails_argv(i, o, "--ks", "one"), "argument --ks: must be comma-separated integers >= 1, got 'one'"),
    ("rails", "--family", "family_not_in_the_world", lambda i, o: ["rails", "--world", "smoke", "--family", "mamba", "--out", str(o / "rails")], "--family 'mamba': not in the 'smoke' world; families: llama"),
    *[(c, "--cluster-sizes", f"cluster_sizes_{name}", _with(c, "--cluster-sizes", v), needle)
      for c in ("sweep", "demo", "job")
      for name, v, needle in (("negative", "-4", "a cluster size must be >= 1, got -4"), ("zero", "2,0", "a cluster size must be >= 1, got 0"),
                              ("word", "two", "'two' is not an integer"))],
    ("figure1", "--adapter", "adapter_malformed", lambda i, o: figure1_argv(i, o, "--adapter", "clean"), "--adapter must look like NAME=VALUE, got 'clean'"),
    ("figure1", "--adapter", "adapter_without_adapter_config", lambda i, o: figure1_argv(i, o, "--adapter", f"x={i['empty_dir']}"), lambda i, o: f"{i['empty_dir']}: the directory has no adapter_config.json"),
    ("figure1", "--world", "world_with_model", lambda i, o: figure1_argv(i, o, "--world", "smoke"), "--world replaces --model/--adapter/--task-dir"),
    ("figure1", "--tracking-uri", "tracking_uri_not_http", lambda i, o: figure1_argv(i, o, "--tracking-uri", "sqlite:///m.db"), "'sqlite:///m.db' is not an HTTP(S) MLflow server"),
    # miniworld: the family is checked against the preset before a world is built
    ("miniworld", "--family", "family_not_in_the_world", lambda i, o: [*BASE["miniworld"](i, o), "--family", "mamba"], "--family 'mamba': not in the 'smoke' world; families: llama"),
    ("miniworld", "--out", "out_without_pack", lambda i, o: [*BASE["miniworld"](i, o), "--out", str(o / "shipped")], "pack takes --out (the folder to write into), build and check do not"),
    ("miniworld", "action", "pack_without_out", lambda i, o: ["miniworld", "pack", *BASE["miniworld"](i, o)[2:]], "pack needs --out DIR"),
    ("miniworld", "--preset", "pack_of_an_unbuilt_world", lambda i, o: ["miniworld", "pack", "--preset", "mini_one_road", "--cache-dir", str(o / "cache"), "--out", str(o / "shipped")], "--preset 'mini_one_road': no cached world to pack"),
    # dynamics: never builds a world; an unbuilt one is named
    ("dynamics", "--world", "world_not_built", lambda i, o: BASE["dynamics"](i, o), "--world 'smoke' is not built"),
    # contaminate.py: the families' base models before Ray starts
    ("contaminate.py", "--family", "family_malformed", lambda i, o: [*BASE["contaminate.py"](i, o), "--family", "llama"], "--family must be NAME=BASE_MODEL_DIR, got 'llama'"),
    ("contaminate.py", "--family", "family_base_without_config", lambda i, o: [*BASE["contaminate.py"](i, o), "--family", f"x={i['empty_dir']}"], lambda i, o: f"{i['empty_dir']}: the directory has no config.json"),
]  # fmt: skip

for _command, _option, _name, _argv, *_needles in SPECIAL:
    register(_command, _option, _name, _argv, *_needles)
for _name, (_, _needle) in BAD_SPECS.items():
    for _command in ("sweep", "job"):
        _base = ["--spec"] if _command == "job" else ["sweep", "--run-dir", "{o}/runs", "--spec"]
        register(_command, f"spec:{SPEC_FIELD[_name]}", f"spec_{_name}",
                 (lambda b, n: lambda i, o: [a.replace("{o}", str(o)) for a in b] + [_spec_file(i, o, n)])(_base, _name), _needle)  # fmt: skip
for _name, (_, _needle) in PATH_SPECS.items():
    for _command in ("sweep", "job"):
        _base = ["--spec"] if _command == "job" else ["sweep", "--run-dir", "{o}/runs", "--spec"]
        register(_command, "spec:paths", f"spec_{_name}",
                 (lambda b, n: lambda i, o: [a.replace("{o}", str(o)) for a in b] + [str(i["specs"] / f"path_{n}.yaml")])(_base, _name),
                 (lambda n: lambda i, o: n(i))(_needle))  # fmt: skip


def _contaminate_script():
    spec = importlib.util.spec_from_file_location("sweeps_contaminate", REPO / "sweeps" / "contaminate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CONTAMINATE_SCRIPT = _contaminate_script()


def run_case(command: str, argv: list[str]) -> int:
    """Run a command line in-process: the CLI, the sweep job (sweeps/tables.py, table3.py) or contaminate.py."""
    from railsweep.sweep import job

    if command == "job":
        return job.main(argv)
    if command == "table3.py":
        return job.main(argv, table="3")
    if command == "contaminate.py":
        return CONTAMINATE_SCRIPT.main(argv)
    return main(argv)


TRIPWIRES = (
    "railsweep.engines.factory.build_engine",
    "railsweep.engines.transformers_engine.TransformersEngine",
    "railsweep.miniworld.build_world",
    "railsweep.miniworld.world.build_world",
    "railsweep.services.ray_head.ensure_ray_head",
    "railsweep.services.mlflow_server.ensure_mlflow_server",
    "railsweep.services.jobs.submit_job",
    "railsweep.sweep.run.driver.run_sweep",
    "railsweep.contamination.contaminate_family",
    "railsweep.commands.contaminate.contaminate_family",  # the names a module imported at its top
    "railsweep.sweep.spec.resolve.build_world",
    "railsweep.dynamics.collect.TransformersEngine",
    "railsweep.miniworld.calibration.TransformersEngine",
    "ray.init",
    "transformers.AutoModelForCausalLM.from_pretrained",
    "transformers.AutoTokenizer.from_pretrained",
    "transformers.AutoConfig.from_pretrained",
    "peft.PeftModel.from_pretrained",
)


@pytest.fixture
def tripwires(monkeypatch, tmp_path):
    """Fail loudly if a command gets as far as reading weights, building a world or starting a service;
    the world cache is a fresh directory, so no world is found built."""

    def trip(*a, **kw):
        raise Tripwire("a bad input reached the expensive part")

    # every patched module is imported before the first patch: a module first imported while a tripwire is in
    # place would bind the tripwire at its top (``from ... import TransformersEngine``) and keep it after undo
    for target in TRIPWIRES:
        _import_owner(target)
    for target in TRIPWIRES:
        monkeypatch.setattr(target, trip)
    monkeypatch.setenv("RAILSWEEP_CACHE", str(tmp_path / "cache"))


def _import_owner(target: str) -> None:
    """Import the module that holds ``target`` (``pkg.module.Name`` or ``pkg.module.Class.method``)."""
    parts = target.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            importlib.import_module(".".join(parts[:cut]))
            return
        except ModuleNotFoundError:
            continue


def _files(*roots: Path) -> dict[str, bytes | None]:
    """Every path under ``roots`` with the bytes of each file (None for a directory)."""
    return {str(p): (p.read_bytes() if p.is_file() else None) for r in roots for p in sorted(r.rglob("*"))}


def _cases_by_command() -> dict[str, int]:
    out: dict[str, int] = {}
    for c in CATALOGUE:
        out[c.command] = out.get(c.command, 0) + 1
    return out


def test_the_catalogue_holds_at_least_250_cases_across_every_command_and_script():
    counts = _cases_by_command()
    assert sum(counts.values()) >= 250, counts
    assert set(counts) >= set(BASE) | {"table3.py"}, counts
    assert len({c.name for c in CATALOGUE}) == len(CATALOGUE), "case names must be unique"


def _parsers() -> dict[str, object]:
    from railsweep.sweep.job import make_parser as job_parser

    top = make_parser()
    sub = next(a for a in top._actions if a.dest == "command")
    return {**sub.choices, "job": job_parser(), "contaminate.py": CONTAMINATE_SCRIPT.make_parser()}


def _schema_fields() -> list[str]:
    import dataclasses
    import types
    import typing

    from railsweep.sweep.spec.sweep_spec import SweepSpec

    out = []
    for f in dataclasses.fields(SweepSpec):
        if f.name == "name":  # the file name, not a key
            continue
        hint = typing.get_type_hints(SweepSpec)[f.name]
        optional = typing.get_origin(hint) in (typing.Union, types.UnionType)
        inner = [t for t in (*(typing.get_args(hint) if optional else ()), hint) if dataclasses.is_dataclass(t)]
        if inner:
            out += [f"{f.name}.{g.name}" for g in dataclasses.fields(inner[0])]
        else:
            out.append(f.name)
    return out


def test_every_option_and_spec_field_has_a_bad_value_case():
    covered = {(c.command, c.option) for c in CATALOGUE}
    missing = [
        f"{command} {a.option_strings[0] if a.option_strings else a.dest}"
        for command, parser in _parsers().items()
        for a in parser._actions
        if a.nargs != 0 and a.dest not in ("help", "command")
        and (command, a.option_strings[0] if a.option_strings else a.dest) not in covered
    ]  # fmt: skip
    assert not missing, f"options without a bad-value case: {missing}"
    fields = {c.option.removeprefix("spec:") for c in CATALOGUE if c.option.startswith("spec:")}
    assert not [f for f in _schema_fields() if f not in fields], "spec fields without a bad-value case"


@pytest.mark.parametrize("case", CATALOGUE, ids=lambda c: c.name)
def test_bad_input_is_one_error_line_exit_2_and_writes_nothing(case, inp, tmp_path, monkeypatch, capsys, tripwires):
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)  # relative defaults (runs/mlflow) would land here
    before = _files(inp["root"], tmp_path)
    rc = run_case(case.command, case.argv(inp, out))
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert rc == 2, captured.err
    assert len(lines) == 1 and lines[0].startswith("railsweep: error: "), captured.err
    for needle in case.needles:
        needle = needle(inp, out) if callable(needle) else needle
        assert needle in lines[0], (needle, lines[0])
    assert _files(inp["root"], tmp_path) == before  # nothing written, nothing left behind


def test_the_valid_baselines_reach_the_expensive_part(inp, tmp_path, monkeypatch, capsys, tripwires):
    """Each command's valid line gets past every check (so the bad part of a case is what refuses it): the
    commands that load a model, build a world or start a service reach a tripwire; score runs to the end."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("railsweep.sweep.tracking.tracker.check_tracking_uri", lambda uri: None)  # no MLflow server here
    for command in ("eval", "sweep", "demo", "detect", "figure1", "rails", "miniworld", "contaminate", "job", "contaminate.py"):
        with pytest.raises(Tripwire):
            run_case(command, BASE[command](inp, tmp_path))
    with pytest.raises(Tripwire):
        main(["sweep", "--run-dir", str(tmp_path / "runs"), "--spec", str(inp["specs"] / "valid_paths.yaml")])
    assert main(BASE["score"](inp, tmp_path)) == 0, capsys.readouterr().err
    assert (tmp_path / "report" / "scores.csv").is_file()


def test_spec_loading_outside_the_cli_raises_the_same_one_line_error(inp):
    from railsweep.errors import RailsweepError
    from railsweep.sweep.spec.sweep_spec import load_spec

    for name, (_, needle) in BAD_SPECS.items():
        with pytest.raises(RailsweepError) as e:
            load_spec(inp["specs"] / f"{name}.yaml")
        assert needle in str(e.value) and "\n" not in str(e.value), name
    for name, (_, needle) in PATH_SPECS.items():
        with pytest.raises(RailsweepError) as e:
            load_spec(inp["specs"] / f"path_{name}.yaml").check_inputs()
        assert needle(inp) in str(e.value), name


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["-m", "railsweep", "eval", "--model", "m", "--task-dir", "t", "--strategy", "identity",
          "--out", "cells", "--temperature", "inf"], "got 'inf'"),
        (["-m", "railsweep", "sweep", "--spec", "{specs}/not_utf8.yaml"], "not UTF-8 text"),
        (["-m", "railsweep", "miniworld", "check", "--threads", "0"], "argument --threads"),
        (["-m", "railsweep", "score", "--clean", "c", "--mitigated", "m", "--out", "s", "--B", str(2**63)], "got '9223372036854775808'"),
        (["{repo}/sweeps/table3.py", "--m", "0"], "argument --m: must be an integer >= 1, got '0'"),
        (["{repo}/sweeps/contaminate.py", "--out", "o", "--num-cpus", "-4"], "got '-4'"),
    ],
)  # fmt: skip
def test_a_real_process_prints_one_line_and_no_traceback(argv, needle, inp, tmp_path):
    argv = [a.replace("{specs}", str(inp["specs"])).replace("{repo}", str(REPO)) for a in argv]
    env = {**os.environ, "RAILSWEEP_CACHE": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("railsweep: error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []
