"""The sections of a sweep spec: one frozen pydantic dataclass per YAML block, each validating its own fields
with the constrained types of :mod:`railsweep.sweep.spec._schema` (a plain ``int`` would accept '4' and 0).
"""

from __future__ import annotations

import itertools
import math
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, Strict, field_validator, model_validator

from railsweep.detection.base import build_detector
from railsweep.detection.scoring import Thresholding, check_threshold
from railsweep.dynamics.regimes import E_CUT
from railsweep.strategy_registry import STRATEGIES
from railsweep.sweep.spec._schema import (
    Device,
    NonNegFloat,
    NonNegInt,
    PosFloat,
    PosInt,
    Retries,
    Text,
    schema,
)
from railsweep.tasks.answers.gsm8k_rules import check_answer_rule, check_answer_type
from railsweep.tasks.base import DEFAULT_ANSWER_RULE, DEFAULT_ANSWER_TYPE, AnswerType
from railsweep.tasks.kinds.file_spec import TaskSpec
from railsweep.tasks.lm_eval.spec import LmEvalSpec
from railsweep.tasks.task_ref import load_task_spec

DOMAINS = ("gsm8k", "pq")


def param_items(v: Any) -> Any:
    """A ``params`` mapping as written in YAML (``{param: value}``, None for none) → sorted (name, value) pairs,
    lists frozen to tuples; anything else is left for the field's type to judge."""
    if v is None:
        return ()
    if isinstance(v, dict):
        return tuple(sorted((k, tuple(x) if isinstance(x, list) else x) for k, x in v.items()))
    return v


Params = Annotated[tuple[tuple[str, Any], ...], BeforeValidator(param_items)]


@schema("families", inputs=("base", "adapters"))
class FamilySpec:
    """One model family: a base model and its LoRA adapters (clean, co_<domain>)."""

    name: Text
    base: str = ""  # path or hub id; filled by resolve() for the miniature world
    adapters: tuple[tuple[Text, Text], ...] = ()

    @field_validator("adapters", mode="before")
    @classmethod
    def _adapters(cls, v: Any) -> Any:
        if isinstance(v, dict):  # YAML: {name: path}
            return tuple(sorted(v.items()))
        return () if v is None else v

    def adapter_dict(self) -> dict[str, str]:
        return dict(self.adapters)

    def clean_adapter(self, domain: str) -> str:
        return f"clean_{domain}" if f"clean_{domain}" in self.adapter_dict() else "clean"


@schema("strategies", inputs=("name", "params", "grid"))
class StrategyGrid:
    """A strategy with fixed ``params`` and a ``grid`` crossed into parameter points."""

    name: Text
    params: Params = ()
    grid: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    @field_validator("grid", mode="before")
    @classmethod
    def _grid(cls, v: Any) -> Any:
        if v is None:
            return ()
        if not isinstance(v, dict):  # YAML: {param: [values]} (a single value is a one-point axis)
            return v
        items = []
        for k, vals in sorted(v.items()):
            vals = tuple(vals) if isinstance(vals, list | tuple) else (vals,)
            if not vals:
                raise ValueError(f"grid.{k} is an empty list: the grid would be empty")
            items.append((k, vals))
        return tuple(items)

    def __post_init__(self) -> None:
        """Every point checked once, when the grid is read (a ``__post_init__`` runs when the grid is built, not
        each time a spec holding it is copied, as a model validator would)."""
        STRATEGIES.classes(self.name)  # unknown strategy → ConfigError listing the known ones
        for point in self.points():
            STRATEGIES.make_config(self.name, point)  # RailCap n outside [1, MAX_N], ...

    def points(self) -> list[dict[str, Any]]:
        keys = [k for k, _ in self.grid]
        return [{**dict(self.params), **dict(zip(keys, values))}
                for values in itertools.product(*[v for _, v in self.grid])]  # fmt: skip


@schema("detectors", inputs=("name", "params", "threshold"))
class DetectorSpec:
    """A detector of :mod:`railsweep.detection` with its ``params`` (its config fields) and an optional
    fixed ``threshold`` (None: calibrated on the control items, else the detector's own default)."""

    name: Text
    params: Params = ()
    threshold: Annotated[float, Strict()] | None = None

    @model_validator(mode="after")
    def _is_a_known_detector(self) -> DetectorSpec:
        check_threshold(self.build(), Thresholding(self.threshold))
        return self

    def build(self) -> Any:
        """The detector object (its config validated; an unknown name gets a "did you mean")."""
        return build_detector(self.name, dict(self.params))


@schema("detection")
class Detection:
    """How the ``detectors`` are scored."""

    # the highest flag rate on the control items when a threshold is calibrated on them
    control_rate: Annotated[float, Strict(), Field(ge=0, le=1)] = 0.01
    n_control: PosInt | None = None  # fresh control problems (None = as many as test items)
    batch_size: PosInt = 16  # texts per forward pass of the model-side detectors


DEFAULT_MAX_NEW_TOKENS = 256  # tokens per response when neither the spec nor a harness task says


@schema("readout")
class Readout:
    """``answer_rule``: how responses are graded (``final``, ``first`` or ``lm_eval``), or with ``task`` one
    of that task's rules (a harness task's: ``lm_eval`` or a harness filter, e.g. ``strict-match``).
    ``answer_type``: ``numeric`` (GSM8K-format data) or ``math`` (MATH-format, ``final`` or ``first`` only).
    ``task``: a task file or a shipped task's name (``data_dir`` is its ``{task_dir}``), None = the built-in
    task; a file's path is made absolute, since the trials run in directories of their own."""

    m: PosInt = 50
    temperature: NonNegFloat = 0.7  # finite: NaN and infinities are rejected
    max_new_tokens: PosInt | None = None  # None: a harness task's own max_gen_toks (ifeval: 1280), else 256
    seed: NonNegInt = 0
    batch_size: PosInt = 64  # prompts per engine call (m rows each); engine.max_batch_size: rows
    limit: PosInt | None = None  # first N test questions (None = all)
    answer_rule: Text = DEFAULT_ANSWER_RULE
    answer_type: AnswerType = DEFAULT_ANSWER_TYPE
    task: Text | None = None

    @model_validator(mode="after")
    def _rule_reads_the_type(self) -> Readout:
        if self.task is not None:
            spec = load_task_spec(self.task)  # checked completely now, before any cell is built
            if isinstance(spec, TaskSpec) and not spec.builtin:  # a trial runs in its own directory
                object.__setattr__(self, "task", str(spec.source.resolve()))
            if self.answer_rule != DEFAULT_ANSWER_RULE:  # final: the task's first rule when it has none so named
                spec.rule(self.answer_rule)
            if self.max_new_tokens is None and isinstance(spec, LmEvalSpec):  # the harness task's generation_kwargs
                object.__setattr__(self, "max_new_tokens", spec.max_gen_toks)
        else:
            check_answer_rule(self.answer_rule)
            check_answer_type(self.answer_type, self.answer_rule)  # lm_eval is GSM8K's harness rule
        if self.max_new_tokens is None:
            object.__setattr__(self, "max_new_tokens", DEFAULT_MAX_NEW_TOKENS)
        return self


@schema("scoring")
class Scoring:
    B: PosInt = 50
    n_boot: PosInt = 1000
    seed: NonNegInt = 0


@schema("engine")
class EngineSpec:
    backend: Literal["transformers", "vllm"] = "transformers"
    device: Device = "auto"  # auto, cpu, mps, cuda, cuda:N
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    # Most rows one engine decodes together (vLLM's max_num_seqs); None = the backend's default, which fills
    # the machine (railsweep.engines.config.EngineConfig). Samples do not depend on it.
    max_batch_size: PosInt | None = None


@schema("resources")
class Resources:
    """What the engine actors and trials reserve; ``max_*``: -1 means unlimited (Ray's convention)."""

    engine_replicas: PosInt | None = None  # per family; None = the cores (or GPUs) dealt out, at least 1 each
    engine_cpus: PosFloat | None = None  # per engine actor when no GPU is present; None = fit the cluster
    trial_cpus: PosFloat = 0.25
    slots_per_engine: PosInt = 2  # concurrent trials per engine actor (one decodes while another grades)
    max_restarts: Retries = 3
    max_task_retries: Retries = 3
    max_failures: Retries = 1  # Tune retries of a failed trial
    clean_wait_s: PosFloat = 1800.0  # how long a mitigated cell waits for its clean reference
    # torch/OpenMP threads per engine actor (None = the CPUs it holds, rounded down, at least 1) and the
    # OpenMP wait policy of its threads (PASSIVE: idle threads sleep instead of spinning on shared cores)
    engine_threads: PosInt | None = None
    omp_wait_policy: Literal["PASSIVE", "ACTIVE"] = "PASSIVE"


@schema("tracking")
class Tracking:
    uri: Text = "http://127.0.0.1:5000"
    experiment: Text = "railsweep"


@schema("dynamics")
class DynamicsSpec:
    """The dynamics step of a sweep with ``temperatures`` (railsweep.dynamics.settings.DynamicsSettings):
    ``min_items``: positions reached by fewer items are left out of a group's mean NLL curve; ``e_cut``: nats
    per token above which E is decoherence; ``base``: also sample and teacher-force each family's base model
    without an adapter, as model ``base`` (the model a pretraining-replica world's duplicates went into)."""

    n_boot: PosInt = 200  # item resamples for the fit CIs
    n_boot_gain: PosInt = 1000  # for the gain CIs
    min_items: PosInt = 5
    e_cut: PosFloat = E_CUT
    forcing_batch: PosInt = 8  # sequences per teacher-forcing forward pass
    device: Device = "cpu"  # where the teacher forcing runs
    seed: NonNegInt = 0  # the bootstrap RNG
    base: Annotated[bool, Strict()] = False


def parse_temperatures(v: Any) -> tuple[float, ...]:
    """``temperatures:`` of a spec → sorted floats (``greedy`` = 0.0)."""
    if not isinstance(v, list | tuple):
        raise ValueError(f"must be a list of temperatures ('greedy' or numbers >= 0), got {v!r}")
    if not v:
        raise ValueError("is an empty list (leave 'temperatures' out for no temperature dimension)")
    out: list[float] = []
    for t in v:
        if isinstance(t, str) and t.strip().lower() == "greedy":
            t = 0.0
        elif isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0:
            raise ValueError(f"bad temperature {t!r}: each must be 'greedy' or a finite number >= 0 "
                             "(0 = greedy)")
        if float(t) in out:
            shown = "greedy (0)" if float(t) == 0 else repr(t)
            raise ValueError(f"lists the temperature {shown} twice: {list(v)}")
        out.append(float(t))
    return tuple(sorted(out))


def names_or_mappings(v: Any, what: str) -> Any:
    """A YAML list of names or mappings, each name as ``{"name": name}``; None is the empty tuple."""
    if v is None:
        return ()
    if not isinstance(v, list | tuple):
        raise ValueError(f"must be a list of {what}")
    return tuple({"name": x} if isinstance(x, str) else x for x in v)
