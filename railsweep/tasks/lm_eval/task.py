"""A task run by lm-evaluation-harness's own code: its prompts and its filters, on local data files.

Building an :class:`LmEvalTask` (steps):

1. copy the harness config (:mod:`railsweep.tasks.lm_eval.spec`), its dataset pointed at local files (the
   ``datasets`` builder of their format, each split read from ``<task_dir>/<split>.<format>``);
2. build the harness's ``ConfigurableTask``, its few-shot sampler seeded as ``simple_evaluate`` does;
3. render every prompt with ``fewshot_context`` in the harness's document order (the sampler draws from one
   random stream), chat template off, no system instruction: byte for byte lm-eval's ``arguments[0]``.

Grading (:meth:`LmEvalTask.grade_under`): cut at the task's ``until``, run one filter ensemble as
``FilterEnsemble.apply`` does, score with ``process_results`` (first metric, 0/1 per document). The rule
``lm_eval`` takes the first ensemble whose output is not its fallback: ``strict`` for the first, ``flexible``
after. :func:`_compile_once` caches the Jinja templates the harness compiles on every render (10 ms each).
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from railsweep.errors import ConfigError, DataError
from railsweep.tasks.answers.gsm8k_rules import cut_at_stop
from railsweep.tasks.base import Grade, Question
from railsweep.tasks.data.leak_split import read_leak_split
from railsweep.tasks.lm_eval.spec import COMBINED_RULE, LmEvalSpec, split_file

FEWSHOT_SEED = 1234  # lm_eval.evaluator.simple_evaluate's default fewshot_random_seed
_BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


def _local_config(spec: LmEvalSpec, task_dir: str | Path) -> tuple[dict[str, Any], list[Path]]:
    """Step 1: the harness config reading each of its splits from ``task_dir``."""
    files = {split: split_file(spec, task_dir, split) for split in spec.splits()}
    builders = {_BUILDERS[p.suffix] for p in files.values()}
    if len(builders) != 1:
        raise DataError(f"task {spec.ref!r}: the split files in {task_dir} mix formats ({sorted(builders)}); use one")
    config = copy.deepcopy(spec.config)
    for key in ("tag", "group", "task_list"):  # as the harness's TaskFactory does before building
        config.pop(key, None)
    data_files = {split: str(p) for split, p in files.items()}
    config.update(dataset_path=builders.pop(), dataset_name=None, dataset_kwargs={"data_files": data_files})
    return config, list(files.values())


@functools.lru_cache(maxsize=1024)
def _compiled(env: Any, source: str) -> Any:
    return type(env).from_string(env, source)


@contextlib.contextmanager
def _compile_once() -> Iterator[None]:
    """Within the block, the harness's Jinja environment compiles each template source once (module docstring)."""
    from lm_eval import utils  # optional dependency (checked by load_lm_eval_spec)

    env = utils.env
    if "from_string" in vars(env):  # already inside a block
        yield
        return

    def from_string(source: Any, globals: Any = None, template_class: Any = None) -> Any:
        if globals is None and template_class is None and isinstance(source, str):
            return _compiled(env, source)
        return type(env).from_string(env, source, globals, template_class)

    env.from_string = from_string
    try:
        yield
    finally:
        del env.from_string  # the instance attribute shadowed the class's method


def _build(spec: LmEvalSpec, config: dict[str, Any]) -> Any:
    """Step 2: the harness's task object on the local files, its sampler seeded."""
    from lm_eval.api.task import ConfigurableTask  # optional dependency (checked by load_lm_eval_spec)

    try:
        task = ConfigurableTask(config=config)
    except Exception as e:  # datasets and the harness raise many types for unreadable data
        raise DataError(f"task {spec.ref!r}: lm_eval could not build it on {config['dataset_kwargs']} "
                        f"({type(e).__name__}: {e})") from e
    task.set_fewshot_seed(seed=FEWSHOT_SEED)
    return task


def _fallbacks(ensemble: Any) -> frozenset[str]:
    """What an ensemble's filters output when they find nothing (a regex filter's ``fallback``)."""
    made = (make() for make in ensemble.filters)
    return frozenset(f.fallback for f in made if isinstance(getattr(f, "fallback", None), str))


class LmEvalTask:
    """An lm-eval ``generate_until`` task on local data, graded by its own filters and metric."""

    def __init__(self, spec: LmEvalSpec, task_dir: str | Path, limit: int | None = None,
                 leak_split: str | Path | None = None, answer_rule: str | None = None):  # fmt: skip
        self.spec = spec
        self.name = spec.ref
        self.answer_type = spec.answer_type
        self.answer_rule = spec.rule(answer_rule or COMBINED_RULE)
        config, files = _local_config(spec, task_dir)
        self.files: tuple[Path, ...] = tuple(files)
        with _compile_once():
            self.harness = _build(spec, config)
            self._render(limit, leak_split)
        until = self.harness.config.generation_kwargs.get("until", [])
        self.stop: tuple[str, ...] = (until,) if isinstance(until, str) else tuple(until)
        self._ensembles = {e.name: e for e in self.harness._filters}
        self._fallbacks = {name: _fallbacks(e) for name, e in self._ensembles.items()}
        metrics = [m["metric"] for m in self.harness.config.metric_list or ()] or list(self.harness._metric_fn_list)
        self._metric = metrics[0]

    def _render(self, limit: int | None, leak_split: str | Path | None) -> None:
        """Step 3: every prompt, in the harness's document order, and the questions."""
        task = self.harness
        leaked = read_leak_split(leak_split, len(task.eval_docs))
        self.files += (Path(leak_split),) if leak_split is not None else ()
        shots = task.config.num_fewshot or 0
        self._docs: dict[int, dict[str, Any]] = {}
        self._prompts: dict[int, str] = {}
        questions = []
        for index, doc in task.doc_iterator(rank=0, limit=limit, world_size=1):
            prompt = task.fewshot_context(doc=doc, num_fewshot=shots, system_instruction=None,
                                          apply_chat_template=False, fewshot_as_multiturn=False, chat_template=None,
                                          gen_prefix=task.doc_to_prefix(doc))  # fmt: skip
            if not isinstance(prompt, str):
                raise DataError(f"task {self.name!r}: document {index} has several contexts (multiple inputs)")
            target = task.doc_to_target(doc)
            self._docs[index], self._prompts[index] = doc, prompt
            gold = target if isinstance(target, str) else repr(target)
            was_leaked = None if leaked is None else index in leaked
            questions.append(Question(index, str(task.doc_to_text(doc)), "", gold, was_leaked))
        self._questions = tuple(questions)
        self._cache: dict[tuple[str, int, str], Grade] = {}

    def questions(self) -> Sequence[Question]:
        return self._questions

    def prompt(self, question: Question) -> str:
        return self._prompts[question.index]

    def grade(self, response: str, question: Question) -> Grade:
        return self.grade_under(self.answer_rule, response, question)

    def grade_under(self, rule: str, response: str, question: Question) -> Grade:
        """``response`` graded under ``lm_eval`` or one filter ensemble (module docstring); cached: samples
        repeat, and every response is graded under every rule."""
        key = (rule, question.index, response)
        if key not in self._cache:
            with _compile_once():
                self._cache[key] = self._grade(self.spec.rule(rule), cut_at_stop(response, self.stop), question.index)
        return self._cache[key]

    def filtered(self, ensemble: str, response: str, index: int) -> Any:
        """One filter ensemble's output for one (already cut) response, as ``FilterEnsemble.apply`` computes it."""
        doc = self._docs[index]
        resps: Any = [[response]]
        for make in self._ensembles[ensemble].filters:
            resps = list(make().apply(resps, [doc]))
        return resps[0]

    def _score(self, value: Any, index: int) -> bool:
        result = self.harness.process_results(self._docs[index], [value])[self._metric]
        if result not in (0, 1):  # also True / False
            raise DataError(
                f"task {self.name!r}: its metric {self._metric!r} gave {result!r} for document {index}; railsweep "
                "reads a 0/1 per-document metric (exact_match, acc)"
            )
        return bool(result)

    def _grade(self, rule: str, text: str, index: int) -> Grade:
        names = tuple(self._ensembles) if rule == COMBINED_RULE else (rule,)
        for i, name in enumerate(names):
            value = self.filtered(name, text, index)
            pred = value if isinstance(value, str) else repr(value)
            if rule == COMBINED_RULE and pred in self._fallbacks[name]:
                continue
            kind = "none" if pred in self._fallbacks[name] else ("strict" if i == 0 else "flexible")
            return Grade(correct=self._score(value, index), pred=pred, rule=kind)  # type: ignore[arg-type]
        return Grade(correct=False, pred=None, rule="none")

    def gold_chain(self, question: Question) -> str:
        raise ConfigError(f"task {self.name!r}: a harness task declares no gold chain of thought (dynamics step)")
