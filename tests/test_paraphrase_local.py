"""``railsweep paraphrase --engine transformers``: the paper's prompt to a local model through railsweep's
transformers engine, on the smoke world's llama base (a GSM8K solver never taught to paraphrase: every reply
is refused, the pipeline and its checks are real)."""

from __future__ import annotations

import json

import pytest
from jinja2 import Template

from railsweep.cli import main
from railsweep.engines.base import Request, SamplingSpec
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.miniworld import build_world
from railsweep.paraphrase import SYSTEM_PROMPT, ChatSettings
from railsweep.paraphrase.local import LocalChat, has_chat_template
from railsweep.paraphrase.prompt import messages

TEMPLATE = (
    "{% for m in messages %}{{ m['role'] | capitalize }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}Assistant:{% endif %}"
)


def render(msgs):
    """The chat template rendered as a tokenizer's ``apply_chat_template`` would (generation prompt added)."""
    return Template(TEMPLATE).render(messages=msgs, add_generation_prompt=True)


@pytest.fixture(scope="module")
def world(smoke_world):
    return build_world("smoke", cache_dir=smoke_world)  # already built by the fixture: found, not rebuilt


@pytest.fixture
def template(tmp_path):
    path = tmp_path / "chat.jinja"
    path.write_text(TEMPLATE)
    return path


def test_a_local_model_paraphrases_through_the_checks_and_the_retry_budget(world, template, tmp_path, capsys):
    base = world.family("llama").base_dir
    out = tmp_path / "pq" / "pq_test.jsonl"
    argv = ["paraphrase", "--engine", "transformers", "--model", str(base), "--chat-template", str(template),
            "--test", str(world.data_dir / "test.jsonl"), "--limit", "2", "--retries", "1", "--max-tokens", "24",
            "--device", "cpu", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    printed = json.loads(capsys.readouterr().out)
    assert {k: printed[k] for k in ("items", "kept", "rejected")} == {"items": 2, "kept": 0, "rejected": 2}
    assert out.read_text() == ""  # a rejected item never reaches the PQ file
    report = json.loads(out.with_name("pq_test.report.json").read_text())
    assert report["requests"] == 4 and report["engine"] == "transformers" and report["endpoint"] is None
    assert report["model"] == str(base) and report["api_key_env"] is None
    refusals = [r for item in report["rejected_items"] for r in item["refusals"]]
    assert [r["attempt"] for r in refusals] == [0, 1, 0, 1]
    assert all(r["reason"] == "format" and r["reply"] for r in refusals)  # it answers instead of rewording


def test_local_chat_samples_the_rendered_chat_with_the_attempts_seed(world):
    base = world.family("llama").base_dir
    assert not has_chat_template(base)  # hence the template given here
    engine = TransformersEngine(base, device="cpu", dtype="float32")
    try:
        settings = ChatSettings(temperature=0.7, max_tokens=16)
        chat = LocalChat(engine, render, settings)
        msgs = messages("Tom has 3 apples. How many?")
        prompt = render(msgs)
        assert prompt.startswith(f"System: {SYSTEM_PROMPT}\nUser: Tom has 3 apples") and prompt.endswith("Assistant:")
        want = [
            engine.generate([Request(prompt, SamplingSpec(n=1, temperature=0.7, max_new_tokens=16, seed=s))])[0]
            .samples[0].text
            for s in (5, 6)
        ]
        assert [chat.complete(msgs, seed=5), chat.complete(msgs, seed=6)] == want
    finally:
        engine.close()
