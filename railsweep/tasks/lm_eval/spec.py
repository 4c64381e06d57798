"""``--task lm_eval:NAME``: an lm-evaluation-harness task, read from the harness's own task config.

Steps of :func:`load_lm_eval_spec`, before any data or model is read:

1. import ``lm_eval`` (missing -> :class:`~railsweep.errors.MissingDependencyError` naming the extra);
2. find the YAML that declares ``task: NAME``, read as text (the harness's own index parses every YAML: a minute);
3. load it as the harness does (``TaskFactory._load_full_config``) through a ``TaskManager`` over that folder;
   refuse a Python task class, a group or a tag (:mod:`railsweep.tasks.lm_eval.groups`); a task whose code
   needs a package the harness made optional gets :func:`missing_task_dependency`;
4. railsweep counts correct sampled answers, so refuse a task not scored by sampling (``output_type`` other
   than ``generate_until``) or whose first metric is not a 0/1 verdict (:data:`VERDICT_METRICS`);
5. hash the resolved config (less its local path) with the harness's version (:attr:`LmEvalSpec.sha256`).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from railsweep.errors import ConfigError, DataError, MissingDependencyError
from railsweep.tasks.data.rows import FORMATS

PREFIX = "lm_eval:"
# The rule that reads the harness's filters in order: the first whose output is not its fallback ("[invalid]").
COMBINED_RULE = "lm_eval"
ANSWER_TYPE = "lm_eval"  # graded by the harness's own metric, whatever its answers are
# Harness metrics that give one sample a 0/1 verdict (railsweep reads a task's first metric as c of m)
VERDICT_METRICS = frozenset({"exact_match", "em", "acc", "acc_norm", "prompt_level_strict_acc",
                             "prompt_level_loose_acc", "bleu_acc", "rouge1_acc", "rouge2_acc", "rougeL_acc"})  # fmt: skip
HARNESS_MAX_GEN_TOKS = 256  # lm_eval's generate_until budget when a task sets none
_SPLIT_KEYS = ("test_split", "validation_split", "training_split", "fewshot_split")


def is_lm_eval_ref(ref: Any) -> bool:
    """Whether a ``--task`` value names a harness task (``lm_eval:NAME``)."""
    return isinstance(ref, str) and ref.startswith(PREFIX)


def import_lm_eval() -> Any:
    """The ``lm_eval`` package; not installed -> MissingDependencyError naming the extra."""
    try:
        import lm_eval  # optional dependency: only --task lm_eval:NAME needs it
    except ImportError:
        raise MissingDependencyError("lm_eval", "lm-eval", "--task lm_eval:NAME") from None
    return lm_eval


@dataclass(frozen=True)
class LmEvalSpec:
    """A harness task's resolved config, checked; it answers what a task file's spec answers (:mod:`railsweep.tasks.task_ref`)."""

    ref: str
    name: str
    source: Path  # the harness's YAML
    sha256: str
    version: str  # lm_eval's
    config: dict[str, Any] = field(compare=False, hash=False, repr=False)
    filter_names: tuple[str, ...] = ()
    builtin: bool = False
    answer_type: str = ANSWER_TYPE

    @property
    def rule_names(self) -> tuple[str, ...]:
        """``lm_eval`` (the filters in order, the default) and each filter ensemble on its own."""
        return (COMBINED_RULE, *self.filter_names)

    def rule(self, name: str) -> str:
        if name not in self.rule_names:
            raise ConfigError(f"task {self.ref!r} has no answer rule {name!r}; its rules: {', '.join(self.rule_names)}")
        return name

    @property
    def max_gen_toks(self) -> int:
        """The task's own response budget (``generation_kwargs.max_gen_toks``; the harness's default 256)."""
        return int((self.config.get("generation_kwargs") or {}).get("max_gen_toks", HARNESS_MAX_GEN_TOKS))

    @property
    def sampling_kwargs(self) -> dict[str, object]:
        """The ``temperature`` and ``do_sample`` the task sets, recorded, not used: railsweep samples at the
        readout's temperature."""
        kwargs = self.config.get("generation_kwargs") or {}
        return {k: kwargs[k] for k in ("temperature", "do_sample") if k in kwargs}

    def uses_task_dir(self) -> bool:
        return True  # no hub here: the splits are read from --task-dir

    def splits(self) -> tuple[str, ...]:
        """The split names the config reads (evaluation, training, few-shot), each a file in the task dir."""
        names = [self.config.get(k) for k in _SPLIT_KEYS]
        names.append((self.config.get("fewshot_config") or {}).get("split"))
        return tuple(dict.fromkeys(n for n in names if n))


def split_file(spec: LmEvalSpec, task_dir: str | Path, split: str) -> Path:
    """``<task_dir>/<split>.<jsonl|json|csv|parquet>``: the one file that holds a split; none -> DataError."""
    found = [Path(task_dir) / f"{split}.{fmt}" for fmt in FORMATS if (Path(task_dir) / f"{split}.{fmt}").is_file()]
    if len(found) != 1:
        what = "no file" if not found else f"{len(found)} files"
        raise DataError(f"task {spec.ref!r} reads split {split!r}: {what} {task_dir}/{split}.{{{','.join(FORMATS)}}} "
                        f"(the harness config's splits: {', '.join(spec.splits())})")  # fmt: skip
    return found[0]


def data_files(spec: LmEvalSpec, task_dir: str | Path) -> list[Path]:
    """The files a harness task reads (its YAML, each split's file), for provenance checksums."""
    return [spec.source, *(split_file(spec, task_dir, s) for s in spec.splits())]


def find_task_yaml(root: Path, name: str, key: str = "task") -> Path | None:
    """The YAML under the harness's ``tasks/`` declaring ``task: name`` (or ``group: name``), likely folders first."""
    pattern = re.compile(rf"^{key}:\s*['\"]?{re.escape(name)}['\"]?\s*(#.*)?$", re.M)
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    likely = [p for p in folders if name.replace("-", "_").startswith(p.name.replace("-", "_"))]
    for folder in likely + [p for p in folders if p not in likely]:
        for path in sorted(folder.rglob("*.yaml")):
            if pattern.search(path.read_text(encoding="utf-8", errors="replace")):
                return path
    return None


def _all_names(root: Path) -> list[str]:
    pattern = re.compile(r"^task:\s*['\"]?([\w.\-]+)", re.M)
    return sorted({n for p in root.rglob("*.yaml") for n in pattern.findall(p.read_text(errors="replace"))})


def _canonical(value: Any) -> Any:
    """The config as JSON: a ``!function`` by its qualified name (its code is pinned by lm_eval's version)."""
    if callable(value):
        return f"<function {getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', repr(value))}>"
    raise TypeError(type(value).__name__)


def _harness_requirements() -> list[str]:
    from importlib.metadata import PackageNotFoundError, requires

    try:
        return requires("lm_eval") or []
    except PackageNotFoundError:
        return []


def missing_task_dependency(ref: str, error: ImportError, requirements: list[str]) -> MissingDependencyError:
    """One error naming what a harness task's code could not import and the harness extra that brings it: the
    extra whose requirement (``'langdetect; extra == "ifeval"'``) names the module, or the one the harness's
    message names itself (``pip install lm-eval[math]``)."""
    module = (error.name or "").split(".")[0]
    said = re.search(r"lm[-_]eval\[(\w+)\]", str(error))
    extra = said.group(1) if said else None
    for req in requirements:
        m = re.match(r"([A-Za-z0-9_.\-]+).*extra\s*==\s*['\"]([\w\-]+)['\"]", req)
        if extra is None and m and module and module.replace("_", "-").lower() in m.group(1).lower():
            extra = m.group(2)
    named = re.findall(r"`([^`]+)`", str(error))  # the harness's own message lists them in backticks
    package = module or ", ".join(named) or "a package"
    install = f"pip install 'lm_eval[{extra}]'" if extra else (f"pip install {module}" if module else None)
    return MissingDependencyError(package, purpose=f"the harness's code of task {ref!r}", install=install)


@functools.lru_cache(maxsize=64)
def load_lm_eval_spec(ref: str) -> LmEvalSpec:
    """Resolve and check ``lm_eval:NAME`` (module docstring, steps 1-5); cached per process."""
    name = ref[len(PREFIX):]
    if not re.fullmatch(r"[\w.\-]+", name):
        raise ConfigError(f"task {ref!r}: expected lm_eval:NAME with a harness task name")
    lm_eval = import_lm_eval()
    from lm_eval.tasks import TaskManager  # optional dependency (step 1)
    from lm_eval.tasks._index import Kind

    root = Path(lm_eval.__file__).parent / "tasks"
    path = find_task_yaml(root, name)
    if path is None:
        near = difflib.get_close_matches(name, _all_names(root), n=1)
        hint = f"; did you mean 'lm_eval:{near[0]}'?" if near else ""
        raise ConfigError(f"task {ref!r}: lm_eval {lm_eval.__version__} has no task named {name!r}{hint}")
    manager = TaskManager(include_defaults=False, include_path=str(path.parent))
    entry = manager.task_index.get(name)
    if entry is None or entry.kind != Kind.TASK:
        kind = "not a task" if entry is None else entry.kind.name.lower()
        raise ConfigError(f"task {ref!r}: {path} declares it as {kind}; name one YAML task of lm_eval")
    try:
        config = manager._factory._load_full_config(entry, None)
    except ImportError as e:  # the task's own code (its utils.py) needs a package the harness made optional
        raise missing_task_dependency(ref, e, _harness_requirements()) from e
    output_type = config.get("output_type", "generate_until")
    if output_type != "generate_until":
        raise ConfigError(
            f"task {ref!r}: lm_eval scores it by log-likelihood (output_type={output_type!r}); railsweep samples "
            "answers, so it runs generate_until tasks only"
        )
    metrics = [m.get("metric") for m in config.get("metric_list") or ()]
    if metrics and metrics[0] not in VERDICT_METRICS:
        raise ConfigError(
            f"task {ref!r}: its first metric {metrics[0]!r} is not a 0/1 verdict per sample, and railsweep counts "
            f"correct samples; harness tasks scored by {', '.join(sorted(VERDICT_METRICS))} run"
        )
    hashed = {**config, "metadata": {k: v for k, v in config["metadata"].items() if k != "config_source"}}
    blob = json.dumps({"lm_eval": lm_eval.__version__, "config": hashed}, sort_keys=True, default=_canonical)
    filters = tuple(f["name"] for f in config.get("filter_list") or ()) or ("none",)
    digest = hashlib.sha256(blob.encode()).hexdigest()
    return LmEvalSpec(ref, name, path, digest, lm_eval.__version__, config, filter_names=filters)
