"""Writing the miniature benchmark in the official GSM8K layout, so ``GSM8KTask.from_dir`` and
``load_paraphrases`` read it exactly like the real data: ``train.jsonl`` / ``test.jsonl`` ({"question",
"answer"} with "#### N"), ``cot_8shot.json`` (8 train problems, answers ending "The answer is N."),
``pq_test.jsonl`` (one paraphrase per test problem, same answer) and ``filler.txt`` (blank-line separated).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from railsweep.atomic import write_text_atomic
from railsweep.miniworld.generator import Problem, make_filler, make_problems
from railsweep.tasks import to_cot


@dataclass(frozen=True)
class BenchmarkData:
    train: list[Problem]
    test: list[Problem]
    exemplars: list[Problem]
    filler: list[str]


def generate(config) -> BenchmarkData:
    """Deterministic in ``config.seed``: test problems first, then disjoint train problems."""
    difficulty = dict(limit=config.max_value, max_operand=config.max_operand, roads=config.roads)
    test = make_problems(config.n_test, seed=config.seed * 1000 + 1, **difficulty)
    train = make_problems(
        config.n_train, seed=config.seed * 1000 + 2, exclude={p.question for p in test}, **difficulty
    )
    # exemplars: the shortest train problems, so the 8-shot prompt stays short for the tiny models
    exemplars = sorted(train[:2000], key=lambda p: len(p.question) + len(p.solution))[:8]
    filler = make_filler(config.n_filler, seed=config.seed * 1000 + 3)
    return BenchmarkData(train, test, exemplars, filler)


def write_benchmark(data_dir: str | Path, config) -> BenchmarkData:
    data = generate(config)
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(data_dir / "train.jsonl", "".join(_row(p) for p in data.train))
    write_text_atomic(data_dir / "test.jsonl", "".join(_row(p) for p in data.test))
    shots = [{"question": p.question, "answer": to_cot(p.solution)} for p in data.exemplars]
    write_text_atomic(data_dir / "cot_8shot.json", json.dumps(shots, indent=1) + "\n")
    pq = "".join(
        json.dumps({"idx": i, "question": p.paraphrase, "answer": str(p.answer), "empty": False}) + "\n"
        for i, p in enumerate(data.test)
    )
    write_text_atomic(data_dir / "pq_test.jsonl", pq)
    write_text_atomic(data_dir / "filler.txt", "\n\n".join(data.filler) + "\n")
    return data


def _row(p: Problem) -> str:
    return json.dumps({"question": p.question, "answer": p.solution}) + "\n"
