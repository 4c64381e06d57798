"""``--task lm_eval:NAME`` sends lm-evaluation-harness's prompts byte for byte and reads its answers exactly.

The reference is the harness's own run: ``lm_eval.simple_evaluate`` on the task overridden the harness's way
(a YAML that ``include``s the shipped task file and names local ``data_files``), with a canned model whose
responses exercise the filters (a correct "The answer is N.", a final answer without its period, thousands
separators, dollars, negative numbers, a continuation past a stop string, "#### N", no number at all). Its
logged samples give, per document, the prompt the model got, and per filter ensemble the filtered answer and
``exact_match``; railsweep's :class:`LmEvalTask` must give the same prompt, and, from the uncut response, the
same answer and verdict under each ensemble's rule, for the first 200 GSM8K test documents of ``gsm8k_cot``
(fixed 8-shot exemplars), ``gsm8k`` (5 exemplars drawn from train by the harness's seeded sampler) and
``gsm8k_cot_llama`` (an instruction prompt, an empty target delimiter, "The final answer is" read from the last
of several groups, other stop strings).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import lm_eval
import pytest
import yaml
from lm_eval.api.model import LM

from railsweep.tasks.answers.lm_eval_gsm8k import grade_lm_eval
from railsweep.tasks.data.shared_data import shared_data_dir
from railsweep.tasks.lm_eval.spec import load_lm_eval_spec
from railsweep.tasks.lm_eval.task import LmEvalTask

GSM8K = shared_data_dir() / "gsm8k"  # the official train.jsonl / test.jsonl
N_DOCS = 200
TASKS = {"gsm8k_cot": "gsm8k/gsm8k-cot.yaml", "gsm8k": "gsm8k/gsm8k.yaml", "gsm8k_cot_llama": "gsm8k/gsm8k-cot-llama.yaml"}


def _responses(golds: list[str], seed: int) -> list[str]:
    """One canned response per document, drawn so that every filter path is taken many times."""
    rng = random.Random(seed)
    out = []
    for gold in golds:
        wrong = str(int(gold.replace(",", "")) + rng.randint(1, 9))
        big = f"{rng.randint(1, 9)},{rng.randint(100, 999)}"
        out.append(rng.choice([
            f"She has 3 + 4 = 7 left. The answer is {gold}.",
            f"So 2 * 5 = 10. The answer is {wrong}.",
            f"Adding up gives {gold}. The answer is {gold}",  # no character after the number: strict misses
            f"It costs ${big}.00 in all. The answer is ${big}.",
            f"The answer is {gold}.\n\nQ: Tom has 5 apples. How many?\nA: The answer is {wrong}.",
            f"#### {gold}\nQuestion: And then? Answer: #### {wrong}",
            f"The temperature fell to -{gold} degrees. The answer is -{gold}.",
            "I cannot work this one out.",
            f"{gold}.00",
            f"The answer is {gold}. Then 12 more arrive, so 12.",
            f"Step by step: 4 + 4 = 8. The final answer is {gold}",
            f"The final answer is {wrong}.<|eot_id|>The final answer is {gold}",
        ]))
    return out


class CannedLM(LM):
    """A model for lm_eval's evaluator: the canned response of each document, cut at the request's ``until``
    strings as lm_eval's own model classes (HFLM, vLLM) cut a generation."""

    def __init__(self, responses: list[str]):
        super().__init__()
        self.responses = responses

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        out = []
        for req in requests:
            text = self.responses[req.doc_id]
            for term in req.args[1]["until"]:
                text = text.split(term)[0]
            out.append(text)
        return out

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise AssertionError("a generate_until task asked for log-likelihoods")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise AssertionError("a generate_until task asked for log-likelihoods")


def _harness_run(name: str, responses: list[str], tmp_path: Path) -> dict[int, dict[str, dict]]:
    """lm_eval's own evaluation of ``name`` on the local GSM8K files: {doc_id: {filter: logged sample}}."""
    root = Path(lm_eval.__file__).parent / "tasks"
    override = tmp_path / f"{name}_local.yaml"
    override.write_text(yaml.safe_dump({
        "include": str(root / TASKS[name]),
        "task": name,
        "dataset_path": "json",
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {"train": str(GSM8K / "train.jsonl"), "test": str(GSM8K / "test.jsonl")}},
    }))
    manager = lm_eval.tasks.TaskManager(include_defaults=False)  # the full index parses every YAML: a minute
    tasks = manager.load([str(override)])["tasks"]
    results = lm_eval.simple_evaluate(model=CannedLM(responses), tasks=list(tasks.values()), limit=N_DOCS,
                                      log_samples=True, bootstrap_iters=0, task_manager=manager)
    logged: dict[int, dict[str, dict]] = {}
    for sample in results["samples"][name]:
        logged.setdefault(sample["doc_id"], {})[sample["filter"]] = sample
    assert len(logged) == N_DOCS
    return logged


@pytest.fixture(scope="module", params=sorted(TASKS))
def compared(request, tmp_path_factory):
    """(railsweep's task, the canned responses, the harness's logged samples) for one harness task."""
    name = request.param
    task = LmEvalTask(load_lm_eval_spec(f"lm_eval:{name}"), GSM8K, limit=N_DOCS)
    golds = [line.split("####")[-1].strip() for line in _answers()[:N_DOCS]]
    responses = _responses(golds, seed=len(name))
    return name, task, responses, _harness_run(name, responses, tmp_path_factory.mktemp(name))


def _answers() -> list[str]:
    return [json.loads(line)["answer"] for line in (GSM8K / "test.jsonl").read_text().splitlines()]


def test_prompts_are_byte_identical_to_the_harness_requests(compared):
    name, task, _, logged = compared
    questions = task.questions()
    assert [q.index for q in questions] == list(range(N_DOCS))
    for q in questions:
        for sample in logged[q.index].values():
            assert task.prompt(q) == sample["arguments"][0][0], (name, q.index)
    if name == "gsm8k":  # the seeded sampler draws different exemplars for different documents
        assert len({task.prompt(q).split("Question:")[1] for q in questions}) > N_DOCS // 2


def test_each_filter_rule_reads_and_scores_as_the_harness(compared):
    name, task, responses, logged = compared
    seen = {"invalid": 0, "correct": 0, "wrong": 0}
    for q in task.questions():
        for ensemble, sample in logged[q.index].items():
            grade = task.grade_under(ensemble, responses[q.index], q)
            assert grade.pred == sample["filtered_resps"][0], (name, ensemble, q.index, responses[q.index])
            assert grade.correct == bool(sample["exact_match"]), (name, ensemble, q.index, responses[q.index])
            seen["invalid" if grade.rule == "none" else "correct" if grade.correct else "wrong"] += 1
    assert min(seen.values()) >= 20, seen  # every outcome is exercised, not only one


def test_the_lm_eval_rule_is_strict_match_else_flexible_extract(compared):
    name, task, responses, logged = compared
    rules = {"strict": 0, "flexible": 0, "none": 0}
    for q in task.questions():
        strict, flexible = logged[q.index]["strict-match"], logged[q.index]["flexible-extract"]
        use = flexible if strict["filtered_resps"][0] == "[invalid]" else strict
        grade = task.grade(responses[q.index], q)
        rules[grade.rule] += 1
        if grade.rule == "none":
            assert flexible["filtered_resps"][0] == "[invalid]" and not grade.correct
            continue
        assert (grade.pred, grade.correct) == (use["filtered_resps"][0], bool(use["exact_match"]))
        if name == "gsm8k_cot":  # railsweep's coded re-implementation of gsm8k_cot agrees too
            coded = grade_lm_eval(responses[q.index], q.gold)
            assert (coded.pred, coded.correct, coded.rule) == (grade.pred, grade.correct, grade.rule)
    assert min(rules.values()) >= 10, rules
