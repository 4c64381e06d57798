"""``railsweep paraphrase`` end to end against a local fake OpenAI-compatible server (tests/fake_chat_server.py):
what is kept, retried and rejected and why, what reaches the PQ file, where the API key goes, and the errors."""

from __future__ import annotations

import json
import socket

import pytest
from fake_chat_server import MODEL, FakeChatServer

from railsweep.cli import main
from railsweep.paraphrase import SYSTEM_PROMPT
from railsweep.tasks import load_paraphrases
from railsweep.tasks.kinds.gsm8k import GSM8KTask

KEY = "sk-test-9f8e7d6c5b4a"
GOOD, RETRY, COPY, FORMAT, LEAK = (
    "Janet's ducks lay 16 eggs per day. She eats 3 for breakfast and bakes muffins with 4. She sells the rest "
    "for $2 each. How much does she make every day?",
    "Josh buys a house for $80,000 and then puts in $50,000 in repairs. How much did he spend?",
    "A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts in total does it take?",
    "Carla downloads a 200 GB file at 2 GB per minute. How many minutes does the download take?",
    "Tom has 5 boxes with 6 pens in each box. How many pens does he have?",
)
QUESTIONS = [(GOOD, "18"), (RETRY, "130,000"), (COPY, "3"), (FORMAT, "100"), (LEAK, "30")]
GOOD_REPLY = (
    "New Question: Every day Janet's ducks produce 16 eggs; after eating 3 and using 4 in muffins, she sells "
    "each leftover egg at $2. What are her daily earnings?"
)
RETRY_GOOD = "New Question: After paying $80,000 for a home, Josh spent another $50,000 fixing it up. What was his total outlay?"
REPLIES = {
    GOOD: [GOOD_REPLY],
    RETRY: [  # a changed number first, then a good paraphrase
        "New Question: Josh paid $90,000 for a house and spent $50,000 on repairs. What did he spend in all?",
        RETRY_GOOD,
    ],
    COPY: [
        "New Question: A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts in total?"
    ],
    FORMAT: [
        "Sure! Here is a rephrasing:\nNew Question: A 200 GB file comes down at 2 GB each minute; how long?"
    ],
    LEAK: [
        "New Question: Tom owns 5 boxes holding 6 pens apiece, 30 pens in all. How many pens does Tom own?"
    ],
}


def write_test(path, questions=QUESTIONS):
    rows = [{"question": q, "answer": f"Work it out.\n#### {g}"} for q, g in questions]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run(server_url, tmp_path, *extra, key=KEY, monkeypatch=None):
    test = tmp_path / "test.jsonl"
    if not test.exists():
        write_test(test)
    argv = ["paraphrase", "--test", str(test), "--endpoint", server_url, "--model", MODEL]
    argv += ["--out", str(tmp_path / "out" / "pq.jsonl"), "--workers", "2", *extra]
    return main(argv)


@pytest.fixture
def env_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.fixture
def finished(tmp_path, env_key, capsys):
    """One run over the five questions with two retries: the server, the PQ rows, the report and the output."""
    with FakeChatServer(REPLIES) as server:
        rc = run(server.url, tmp_path, "--retries", "2")
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    out = tmp_path / "out" / "pq.jsonl"
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    report = json.loads((tmp_path / "out" / "pq.report.json").read_text(encoding="utf-8"))
    return server, rows, report, captured


def test_kept_retried_and_rejected_items_are_counted_with_every_refusal_reason(finished):
    server, _, report, captured = finished
    assert {k: report[k] for k in ("items", "kept", "retried", "rejected")} == {
        "items": 5,
        "kept": 2,
        "retried": 1,
        "rejected": 3,
    }
    assert json.loads(captured.out) == {
        **{k: report[k] for k in ("items", "kept", "retried", "rejected")},
        "out": report["out"],
        "report": str(report["out"]).replace(".jsonl", ".report.json"),
    }
    rejected = {r["idx"]: [x["reason"] for x in r["refusals"]] for r in report["rejected_items"]}
    assert rejected == {2: ["near_copy"] * 3, 3: ["format"] * 3, 4: ["answer_leak"] * 3}
    retried = report["retried_items"]
    assert [r["idx"] for r in retried] == [1]
    assert [(x["attempt"], x["reason"], x["detail"]) for x in retried[0]["refusals"]] == [
        (0, "numbers_missing", "missing 80000")
    ]
    assert report["refusal_reasons"] == {"near_copy": 3, "format": 3, "answer_leak": 3, "numbers_missing": 1}
    assert report["requests"] == len(server.chat_requests()) == 1 + 2 + 3 * 3


def test_rejected_items_never_reach_the_pq_file(finished):
    _, rows, _, _ = finished
    assert [r["idx"] for r in rows] == [0, 1]
    assert [r["question"] for r in rows] == [
        GOOD_REPLY.removeprefix("New Question: "),
        RETRY_GOOD.removeprefix("New Question: "),
    ]
    text = json.dumps(rows)
    assert "robe" not in text and "200 GB" not in text and "30 pens" not in text


def test_gold_answers_are_carried_over_verbatim_and_the_pq_loader_reads_the_file(finished, tmp_path):
    _, rows, _, _ = finished
    assert [(r["answer"], r["empty"]) for r in rows] == [("18", False), ("130,000", False)]
    (tmp_path / "cot_8shot.json").write_text(json.dumps([{"question": "q", "answer": "The answer is 1."}]))
    task = GSM8KTask.from_dir(tmp_path, split="test")  # tmp_path/test.jsonl is the input
    loaded = load_paraphrases(tmp_path / "out" / "pq.jsonl", originals=task.questions())
    assert loaded == {0: rows[0]["question"], 1: rows[1]["question"]}


def test_each_request_carries_the_papers_prompt_the_question_and_a_seed_per_attempt(finished):
    server, _, _, _ = finished
    asked_retry = [r["body"] for r in server.chat_requests() if r["body"]["messages"][-1]["content"] == RETRY]
    assert [b["seed"] for b in asked_retry] == [0, 1]
    for body in asked_retry:
        assert body["model"] == MODEL
        assert body["messages"] == [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": RETRY},
        ]


def test_the_report_records_settings_and_the_key_variable_name_but_never_the_key(finished, tmp_path):
    server, rows, report, captured = finished
    assert report["settings"] == {
        "retries": 2,
        "max_rouge": 0.7,
        "seed": 0,
        "temperature": 0.7,
        "max_tokens": 512,
    }
    assert report["api_key_env"] == "OPENAI_API_KEY" and report["prompt"] == SYSTEM_PROMPT
    assert all(r["auth"] == f"Bearer {KEY}" for r in server.requests)
    written = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "out").iterdir())
    assert KEY not in written + captured.out + captured.err


def test_a_retry_budget_of_zero_asks_each_question_once(tmp_path, env_key, capsys):
    with FakeChatServer(REPLIES) as server:
        assert run(server.url, tmp_path, "--retries", "0") == 0
    report = json.loads((tmp_path / "out" / "pq.report.json").read_text())
    assert len(server.chat_requests()) == 5
    assert (report["kept"], report["retried"], report["rejected"]) == (1, 0, 4)
    assert [r["idx"] for r in report["rejected_items"]] == [1, 2, 3, 4]


def test_a_higher_rouge_threshold_keeps_the_near_copy(tmp_path, env_key, capsys):
    with FakeChatServer(REPLIES) as server:
        assert run(server.url, tmp_path, "--retries", "0", "--max-rouge", "0.99") == 0
    rows = [json.loads(x) for x in (tmp_path / "out" / "pq.jsonl").read_text().splitlines()]
    assert [r["idx"] for r in rows] == [0, 2]


def test_no_api_key_sends_no_authorization_header(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeChatServer(REPLIES) as server:
        assert run(server.url, tmp_path, "--no-api-key", "--limit", "1") == 0
    assert [r["auth"] for r in server.requests] == ["", ""]  # the /models check, one question


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_error_line(capsys, *needles):
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("railsweep: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.mark.parametrize(
    "mode, needles, asked",
    [
        ("http500", ["HTTP 500", "/chat/completions"], True),
        ("not_json", ["not JSON", "<html>gateway"], True),
        ("no_choices", ["choices[0].message.content", "/chat/completions"], True),
        ("no_models", [f"--model '{MODEL}' is not served", "another-model"], False),
    ],
)
def test_a_broken_endpoint_is_one_error_and_leaves_no_file(tmp_path, env_key, capsys, mode, needles, asked):
    with FakeChatServer(REPLIES, mode=mode) as server:
        assert run(server.url, tmp_path) == 2
    _one_error_line(capsys, *needles)
    assert bool(server.chat_requests()) == asked  # the model check fails before any question is sent
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_failed_run_leaves_an_earlier_output_untouched(tmp_path, env_key, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "pq.jsonl").write_text("earlier\n")
    with FakeChatServer(REPLIES, mode="http500") as server:
        assert run(server.url, tmp_path) == 2
    assert sorted(p.name for p in out.iterdir()) == ["pq.jsonl"]
    assert (out / "pq.jsonl").read_text() == "earlier\n"


def test_an_unreachable_endpoint_is_one_error_naming_it(tmp_path, env_key, capsys):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    assert run(url, tmp_path) == 2
    _one_error_line(capsys, f"cannot reach {url}/models")
    assert not (tmp_path / "out").exists()


def test_a_key_the_server_echoes_back_is_redacted_from_the_error(tmp_path, env_key, capsys):
    with FakeChatServer(REPLIES, mode="echo_401") as server:
        assert run(server.url, tmp_path) == 2
    line = _one_error_line(capsys, "HTTP 401", "Bearer ***")
    assert KEY not in line


def test_a_missing_key_variable_is_one_error_before_any_request(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MY_KEY", raising=False)
    with FakeChatServer(REPLIES) as server:
        assert run(server.url, tmp_path, "--api-key-env", "MY_KEY") == 2
    _one_error_line(capsys, "MY_KEY", "--no-api-key")
    assert server.requests == []


@pytest.mark.parametrize(
    "rows, needle",
    [
        ('{"question": "q", "answer": "#### 1"}\nnot json\n', "test.jsonl:2: not valid JSON"),
        (
            '{"question": "q", "answer": "no final line"}\n',
            "test.jsonl:1: 'answer' must be a solution string",
        ),
    ],
)
def test_a_malformed_test_file_is_one_error_before_any_request(tmp_path, env_key, capsys, rows, needle):
    (tmp_path / "test.jsonl").write_text(rows)
    with FakeChatServer(REPLIES) as server:
        assert run(server.url, tmp_path) == 2
    _one_error_line(capsys, needle)
    assert server.requests == []


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--max-rouge", "0"], "--max-rouge: must be a finite number in (0, 1], got '0'"),
        (["--max-rouge", "1.5"], "got '1.5'"),
        (["--retries", "-1"], "--retries: must be an integer >= 0, got '-1'"),
        (["--workers", "0"], "--workers: must be an integer in [1, 256], got '0'"),
        (["--api-key-env", "1BAD"], "must be an environment variable name, got '1BAD'"),
        (["--temperature", "nan"], "--temperature"),
        (["--endpoint", "ftp://host/v1"], "ftp://host/v1"),
        (["--endpoint", "http://user:pw@host/v1"], "must not carry a user or password"),
        (["--test", "missing.jsonl"], "--test: must be an existing file, got 'missing.jsonl'"),
    ],
)
def test_a_bad_option_is_one_error_naming_the_value(tmp_path, env_key, capsys, argv, needle):
    with FakeChatServer(REPLIES) as server:
        assert run(server.url, tmp_path, *argv) == 2
    _one_error_line(capsys, needle)
    assert server.requests == []


def test_an_output_path_that_is_a_directory_is_refused(tmp_path, env_key, capsys):
    (tmp_path / "out" / "pq.jsonl").mkdir(parents=True)
    with FakeChatServer(REPLIES) as server:
        assert run(server.url, tmp_path) == 2
    _one_error_line(capsys, "--out must be a file path", "pq.jsonl")
    assert server.requests == []
