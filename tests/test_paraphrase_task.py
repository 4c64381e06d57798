"""``railsweep paraphrase --task``: the questions of any task file (its own row format, question index and
gold), paraphrased through the same checks; the PQ rows carry the task's index and gold."""

from __future__ import annotations

import json

from fake_chat_server import MODEL, FakeChatServer
from test_paraphrase_cli import GOOD, GOOD_REPLY, RETRY, RETRY_GOOD

from railsweep.cli import main

TASK = """\
format: 1
name: mine
data: {path: "rows.jsonl"}
fields: {index: id, question: problem}
doc_to_text: "Q: {{problem}}\\nA:"
doc_to_target: "{{target}}"
grader: {type: numeric}
answer_rules:
  final: {extract: [{regex: '(\\\\d+)'}]}
"""


def test_a_task_files_questions_are_paraphrased_with_its_index_and_gold(tmp_path, capsys):
    rows = [{"id": 7, "problem": GOOD, "target": "18"}, {"id": 40, "problem": RETRY, "target": "130,000"}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "mine.yaml").write_text(TASK)
    out = tmp_path / "out" / "pq.jsonl"
    replies = {GOOD: [GOOD_REPLY], RETRY: [RETRY_GOOD]}
    with FakeChatServer(replies) as server:
        argv = ["paraphrase", "--task", str(tmp_path / "mine.yaml"), "--endpoint", server.url, "--model", MODEL,
                "--no-api-key", "--out", str(out)]  # fmt: skip
        assert main(argv) == 0, capsys.readouterr().err
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(r["idx"], r["answer"]) for r in got] == [(7, "18"), (40, "130000")]  # the numeric grader's gold
    assert got[0]["question"] == GOOD_REPLY.removeprefix("New Question: ")
    report = json.loads(out.with_name("pq.report.json").read_text())
    assert report["task"] == str(tmp_path / "mine.yaml") and report["test"] is None
    assert set(report["provenance"]["datasets"]) == {str(tmp_path / "mine.yaml"), str(tmp_path / "rows.jsonl")}


MATH_TASK = """\
format: 1
name: latex
data: {path: "rows.jsonl"}
fields: {question: problem}
doc_to_text: "Problem: {{problem}}\\nSolution:"
doc_to_target: "{{target}}"
grader: {type: math}
answer_rules:
  final: {extract: [{regex: 'answer is (.+)'}]}
"""
LATEX_Q = r"If $\frac{1}{2} x + 3 = 7$, what is $x$?"


def test_a_math_tasks_paraphrase_must_keep_its_formulas_and_hide_its_latex_gold(tmp_path, capsys):
    (tmp_path / "rows.jsonl").write_text(json.dumps({"problem": LATEX_Q, "target": r"\frac{16}{2}"}) + "\n")
    (tmp_path / "latex.yaml").write_text(MATH_TASK)
    out = tmp_path / "pq.jsonl"
    replies = {LATEX_Q: [
        r"New Question: Find $x$ when $\frac{1}{2} x = 7 - 3$.",  # the formula changed
        r"New Question: Solve $\frac{1}{2}x+3=7$ for $x$, which is $\dfrac{16}{2}$.",  # states the gold
        r"New Question: What value of \(x\) makes \(\dfrac{1}{2}x + 3 = 7\) hold?",
    ]}  # fmt: skip
    with FakeChatServer(replies) as server:
        argv = ["paraphrase", "--task", str(tmp_path / "latex.yaml"), "--endpoint", server.url, "--model", MODEL,
                "--no-api-key", "--out", str(out)]  # fmt: skip
        assert main(argv) == 0, capsys.readouterr().err
    [row] = [json.loads(x) for x in out.read_text().splitlines()]
    assert row["question"].startswith("What value of") and row["answer"] == r"\frac{16}{2}"
    report = json.loads(out.with_name("pq.report.json").read_text())
    assert report["refusal_reasons"] == {"formulas_missing": 1, "answer_leak": 1}
