"""The frozen, validated record of one evaluated cell (:class:`CellConfig`; its engine:
:class:`railsweep.engines.config.EngineConfig`).

Its :attr:`CellConfig.cell_id` hashes the resolved config (strategy defaults filled in), so reruns are
idempotent. Defaults are left out of the dict so old cells keep their ids (the ``final`` rule, the ``numeric``
type, no task file or the shipped ``gsm8k``); another task file records its path and content hash
(``task_sha256``): editing the file makes new cells.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from railsweep.errors import ConfigError
from railsweep.strategies.base import DecodeSettings, config_dict, make_config
from railsweep.tasks.answers.gsm8k_rules import check_answer_rule, check_answer_type
from railsweep.tasks.base import DEFAULT_ANSWER_RULE, DEFAULT_ANSWER_TYPE, DEFAULT_TASK, MATH_FEWSHOT
from railsweep.tasks.lm_eval.spec import LmEvalSpec
from railsweep.tasks.task_ref import AnyTaskSpec, load_task_spec, spec_files

Role = Literal["clean", "mitigated"]


@dataclass(frozen=True)
class CellConfig:
    """One evaluated cell: a model (+adapter) decoded under a strategy, read out with m samples.

    Fields:
        model: base model directory or hub id; adapter: LoRA adapter under evaluation (None = base model).
        strategy: registered strategy name; strategy_params: its config fields, sorted, defaults filled in
            (``{}`` and the explicit defaults give the same cell id).
        family, domain: model family / contamination domain labels (informational, part of the id).
        m: samples per question (paper 50); temperature: T (paper 0.7; 0 = greedy); seed: run seed
            (per-question seeds derive from it); max_new_tokens: generation cap; limit: the first N questions.
        task_dir: directory with ``<split>.jsonl`` (GSM8K format, or MATH for ``answer_type="math"``) and the
            exemplars; split: which JSONL file; fewshot: exemplar JSON (None = ``task_dir/cot_8shot.json``, or
            the package's MATH exemplars).
        leak_split: JSON ``{"leaked": [...]}`` marking leaked questions (None = unknown).
        role: ``"clean"`` for the reference cell (identity on M_cl), else ``"mitigated"``.
        clean_adapter / base_adapter: the M_cl / base adapters for strategies that compare against them
            (Shortcut); None when unused / base model.
        answer_rule: how an answer is read (``final``, ``first`` or ``lm_eval``,
            :mod:`railsweep.tasks.answers.gsm8k_rules`); answer_type: ``numeric`` (GSM8K, ``#### N``) or
            ``math`` (LaTeX in ``\\boxed{}``, rules ``final``/``first`` only).
        task: a task file or a shipped task's name (None = the built-in task of ``answer_type``;
            ``"gsm8k"`` is stored as None). With a task file, ``answer_rule`` names one of its rules
            (``final``: its first rule when none is so named) and ``answer_type`` is its grader's type.
        task_sha256: sha256 of a task file that is not shipped; filled in from the file, checked on load.
    """

    model: str
    strategy: str
    task_dir: str
    adapter: str | None = None
    strategy_params: dict[str, Any] = field(default_factory=dict)
    family: str | None = None
    domain: str | None = None
    m: int = 50
    temperature: float = 0.7
    seed: int = 0
    max_new_tokens: int = 256
    limit: int | None = None
    split: str = "test"
    fewshot: str | None = None
    leak_split: str | None = None
    role: Role = "mitigated"
    clean_adapter: str | None = None
    base_adapter: str | None = None
    answer_rule: str = DEFAULT_ANSWER_RULE
    answer_type: str = DEFAULT_ANSWER_TYPE
    task: str | None = None
    task_sha256: str | None = None

    def __post_init__(self) -> None:
        for name in ("model", "strategy", "task_dir", "split"):
            value = getattr(self, name)
            if not isinstance(value, (str, Path)) or not str(value):
                raise ConfigError(f"cell {name} must be a non-empty string, got {name}={value!r}")
            object.__setattr__(self, name, str(value))
        for name in ("fewshot", "leak_split"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, str(value))
        if self.task == DEFAULT_TASK and self.answer_type == DEFAULT_ANSWER_TYPE:
            object.__setattr__(self, "task", None)
        if self.task is None:
            if self.task_sha256 is not None:
                raise ConfigError(f"task_sha256 is only recorded with a task file, got {self.task_sha256!r}")
            check_answer_rule(self.answer_rule)
            check_answer_type(self.answer_type, self.answer_rule)
        else:
            self._check_task_file()
        _check_int("m", self.m, minimum=1)
        _check_int("seed", self.seed, minimum=0)
        _check_int("max_new_tokens", self.max_new_tokens, minimum=1)
        if self.limit is not None:
            _check_int("limit", self.limit, minimum=1)
        if isinstance(self.temperature, bool) or not isinstance(self.temperature, (int, float)):
            raise ConfigError(f"temperature must be a number, got temperature={self.temperature!r}")
        if not 0 <= self.temperature < math.inf:  # also rejects NaN
            raise ConfigError(
                f"temperature must be a finite number >= 0, got temperature={self.temperature!r}"
            )
        object.__setattr__(self, "temperature", float(self.temperature))
        if self.role not in ("clean", "mitigated"):
            raise ConfigError(f"role must be 'clean' or 'mitigated', got role={self.role!r}")
        if self.role == "clean" and self.strategy != "identity":
            raise ConfigError(
                f"a clean reference cell is strategy 'identity' on the clean adapter, got strategy={self.strategy!r}"
            )
        if not isinstance(self.strategy_params, dict):
            raise ConfigError(f"strategy_params must be a dict, got {self.strategy_params!r}")
        built = make_config(self.strategy, self.strategy_params)  # the one check of the strategy's settings
        resolved = config_dict(built)
        object.__setattr__(self, "strategy_params", {k: resolved[k] for k in sorted(resolved)})
        object.__setattr__(self, "_strategy_config", built)
        try:
            json.dumps(self.strategy_params, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ConfigError(
                f"strategy_params must be JSON values, got {self.strategy_params!r}: {e}"
            ) from e

    @property
    def strategy_config(self) -> Any:
        """The strategy's config dataclass at ``strategy_params``, built and checked once, with the cell: labels,
        table membership, pricing and the strategy itself read it instead of rebuilding it from the dict."""
        return self._strategy_config

    def task_spec(self) -> AnyTaskSpec | None:
        """The cell's task file or harness task, checked (None for the built-in task)."""
        return None if self.task is None else load_task_spec(self.task)

    def _check_task_file(self) -> None:
        """Resolve the rule and answer type against the task file; record a custom file's content hash."""
        if not isinstance(self.task, (str, Path)) or not str(self.task):
            raise ConfigError(f"cell task must be a task file or a shipped task's name, got task={self.task!r}")
        object.__setattr__(self, "task", str(self.task))
        spec = load_task_spec(self.task)
        if isinstance(spec, LmEvalSpec):
            self._check_harness_task()
        if self.answer_rule == DEFAULT_ANSWER_RULE and self.answer_rule not in spec.rule_names:
            object.__setattr__(self, "answer_rule", spec.rule_names[0])
        spec.rule(self.answer_rule)  # names the rules when it has no such one
        if self.answer_type not in (DEFAULT_ANSWER_TYPE, spec.answer_type):
            raise ConfigError(
                f"answer_type={self.answer_type!r} but task {self.task} grades {spec.answer_type!r} answers"
            )
        object.__setattr__(self, "answer_type", spec.answer_type)
        if spec.builtin:
            if self.task_sha256 is not None:
                raise ConfigError(f"task_sha256 is not recorded for the shipped task {self.task!r}")
        elif self.task_sha256 is None:
            object.__setattr__(self, "task_sha256", spec.sha256)

    def _check_harness_task(self) -> None:
        """An lm-eval task takes its few-shot examples and its evaluation split from the harness's config."""
        if self.fewshot is not None:
            raise ConfigError(f"fewshot={self.fewshot!r}: task {self.task} takes its few-shot examples from lm_eval")
        if self.split != "test":
            raise ConfigError(
                f"split={self.split!r}: task {self.task} evaluates the split its lm_eval config names (keep 'test')"
            )

    # ---------------------------------------------------------------- identity

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict; ``CellConfig.from_dict(c.to_dict()) == c``. Defaults are left out (module
        docstring), so old cells keep their ids; results record the rule in ``railsweep.grading``."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["strategy_params"] = dict(self.strategy_params)
        if self.answer_rule == DEFAULT_ANSWER_RULE:
            del d["answer_rule"]
        if self.answer_type == DEFAULT_ANSWER_TYPE:
            del d["answer_type"]
        for name in ("task", "task_sha256"):
            if d[name] is None:
                del d[name]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CellConfig:
        if not isinstance(d, dict):
            raise ConfigError(f"a cell config must be a mapping, got {type(d).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"unknown cell config field(s) {unknown}; allowed: {sorted(names)}")
        missing = sorted(f.name for f in dataclasses.fields(cls) if f.name not in d and _required(f))
        if missing:
            raise ConfigError(f"cell config is missing required field(s) {missing}")
        return cls(**d)

    def __hash__(self) -> int:  # strategy_params is a dict, so hash the canonical form
        return hash(self.canonical_json())

    def canonical_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False)

    @property
    def cell_id(self) -> str:
        """First 16 hex digits of the sha256 of the canonical JSON of the resolved config."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]

    # ---------------------------------------------------------------- derived

    def label(self) -> str:
        """Short human label, e.g. ``railcap mode=cap n=4 successor=last``."""
        params = " ".join(f"{k}={v}" for k, v in self.strategy_params.items())
        return f"{self.strategy} {params}".strip()

    def _default_fewshot(self) -> Path:
        return MATH_FEWSHOT if self.answer_type == "math" else Path(self.task_dir) / "cot_8shot.json"

    def adapters_used(self) -> tuple[str | None, ...]:
        """(adapter, clean_adapter, base_adapter): the names this cell decodes with (None: the base alone)."""
        return (self.adapter, self.clean_adapter, self.base_adapter)

    def task_files(self) -> list[Path]:
        """The data files this cell reads (for checksums)."""
        spec = self.task_spec()
        if spec is not None:
            files = spec_files(spec, self.task_dir, self.split, self.fewshot)
            return files + ([Path(self.leak_split)] if self.leak_split else [])
        root = Path(self.task_dir)
        files = [root / f"{self.split}.jsonl",
                 Path(self.fewshot) if self.fewshot else self._default_fewshot()]  # fmt: skip
        if self.leak_split:
            files.append(Path(self.leak_split))
        return files

    def decode_settings(self, batch_size: int = 64) -> Any:
        return DecodeSettings(m=self.m, temperature=self.temperature, max_new_tokens=self.max_new_tokens,
                              seed=self.seed, batch_size=batch_size)  # fmt: skip


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _check_int(name: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer, got {name}={value!r}")
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {name}={value}")
