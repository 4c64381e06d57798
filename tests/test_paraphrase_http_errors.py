"""``railsweep paraphrase`` when single requests fail: an HTTP 5xx, a timeout, a dropped or refused connection
costs the item one attempt of its retry budget; the run goes on and finishes. Against a real local HTTP server
(tests/fake_chat_server.py) whose script fails chosen requests."""

from __future__ import annotations

import json

import pytest
from fake_chat_server import MODEL, SLOW, FakeChatServer
from test_paraphrase_cli import COPY, FORMAT, GOOD, GOOD_REPLY, LEAK, REPLIES, RETRY, RETRY_GOOD, run

from railsweep.errors import ConfigError
from railsweep.paraphrase import Budget, ChatClient, ChatSettings, Item
from railsweep.paraphrase.build import REQUEST_FAILED, paraphrase_one


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def _finished(tmp_path, capsys, server, *extra):
    rc = run(server.url, tmp_path, *extra)
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    rows = [json.loads(x) for x in (tmp_path / "out" / "pq.jsonl").read_text().splitlines()]
    report = json.loads((tmp_path / "out" / "pq.report.json").read_text())
    return rows, report


def _refusals(report, idx):
    for entry in report["rejected_items"] + report["retried_items"]:
        if entry["idx"] == idx:
            return entry["refusals"]
    return []


def test_a_5xx_costs_one_attempt_and_an_item_failing_every_attempt_is_rejected_not_retried_forever(tmp_path, capsys):
    replies = {**REPLIES, GOOD: ["<HTTP 503>", GOOD_REPLY], RETRY: ["<HTTP 500>"]}
    with FakeChatServer(replies) as server:
        rows, report = _finished(tmp_path, capsys, server, "--retries", "2")
    assert server.asked(GOOD) == 2 and server.asked(RETRY) == 3  # 1 + --retries, then given up
    assert [r["idx"] for r in rows] == [0]  # GOOD kept on its second attempt; the others refused as before
    assert report["kept"] == 1 and report["retried"] == 1 and report["rejected"] == 4
    good = _refusals(report, 0)
    assert [(r["attempt"], r["reason"]) for r in good] == [(0, REQUEST_FAILED)] and "HTTP 503" in good[0]["detail"]
    retry = _refusals(report, 1)
    assert [r["reason"] for r in retry] == [REQUEST_FAILED] * 3 and all("HTTP 500" in r["detail"] for r in retry)
    assert report["refusal_reasons"][REQUEST_FAILED] == 4


def test_a_timeout_and_a_dropped_connection_each_cost_one_attempt(tmp_path, capsys):
    replies = {**REPLIES, GOOD: ["<SLOW>", GOOD_REPLY], RETRY: ["<DROP>", RETRY_GOOD]}
    with FakeChatServer(replies) as server:
        rows, report = _finished(tmp_path, capsys, server, "--retries", "1", "--timeout", str(SLOW / 6))
    assert {r["idx"]: r["question"] for r in rows} == {
        0: GOOD_REPLY.removeprefix("New Question: "),
        1: RETRY_GOOD.removeprefix("New Question: "),
    }
    assert "timed out" in _refusals(report, 0)[0]["detail"]
    assert [r["reason"] for r in _refusals(report, 1)] == [REQUEST_FAILED]


def test_a_server_gone_mid_run_rejects_the_rest_after_their_budget_and_keeps_what_was_done(tmp_path, capsys):
    with FakeChatServer(REPLIES, close_after=1) as server:  # answers GOOD, then refuses every connection
        rows, report = _finished(tmp_path, capsys, server, "--retries", "1", "--workers", "1")
    assert [r["idx"] for r in rows] == [0]
    for idx in range(1, 5):
        refusals = _refusals(report, idx)
        assert [r["reason"] for r in refusals] == [REQUEST_FAILED] * 2, refusals
    assert len(server.chat_requests()) == 1
    for question in (RETRY, COPY, FORMAT, LEAK):
        assert server.asked(question) == 0


def test_a_run_whose_every_request_fails_is_one_error_and_writes_nothing(tmp_path, capsys):
    replies = {q: ["<HTTP 502>"] for q in REPLIES}
    with FakeChatServer(replies) as server:
        assert run(server.url, tmp_path, "--retries", "1") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("railsweep: error: every request failed (10 of them)"), err
    assert "HTTP 502" in err[0] and "/chat/completions" in err[0]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_key_or_path_error_still_stops_the_run_at_once(tmp_path, capsys):
    replies = {**REPLIES, GOOD: ["<HTTP 404>"]}
    with FakeChatServer(replies) as server:
        assert run(server.url, tmp_path, "--workers", "1") == 2
    assert "HTTP 404" in capsys.readouterr().err
    assert server.asked(GOOD) == 1  # not retried: every request would fail the same way


def test_the_wait_before_each_attempt_after_a_failed_request_doubles_from_the_backoff(monkeypatch):
    waits = []
    monkeypatch.setattr("railsweep.paraphrase.build.time.sleep", waits.append)  # record, do not wait
    with FakeChatServer({GOOD: ["<HTTP 503>", "<HTTP 503>", "<HTTP 429>", "<HTTP 503>", GOOD_REPLY]}) as server:
        client = ChatClient(server.url, MODEL, None, ChatSettings(timeout=10))
        outcome = paraphrase_one(client, Item(0, GOOD, "18"), Budget(retries=4, backoff=0.5))
    assert outcome.kept and len(outcome.refusals) == 4
    assert waits == [0.5, 1.0, 2.0, 4.0]
    with pytest.raises(ConfigError, match="backoff must be in"):
        Budget(backoff=-1)
