"""``railsweep paraphrase`` against a real ``vllm serve`` (the OpenAI-compatible API server) of the smoke
miniature world's llama base on CPU. The model was never taught to paraphrase, so its replies are poor and mostly
refused; what this pins is the pipeline against a real server: the model check, the requests, the checks, the
retry budget, the report and a PQ file holding only kept items with the input's gold."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from railsweep.cli import main
from railsweep.tasks.data.gsm8k_rows import read_jsonl

REPO = Path(__file__).resolve().parents[2]
# The world's word-level tokenizer has no chat template: a user turn renders as the task's own "Q: ...\nA:".
CHAT_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'user' %}Q: {{ m['content'] }}\nA:{% endif %}{% endfor %}"
)
QUESTIONS = 4
RETRIES = 1


def _smoke_world(cache: str) -> Path:
    main_py = os.environ.get("RAILSWEEP_MAIN_PYTHON") or str(REPO / ".venv" / "bin" / "python")
    build = (
        f"from railsweep.miniworld import build_world; print(build_world('smoke', cache_dir={cache!r}).root)"
    )
    out = subprocess.run([main_py, "-c", build], check=True, cwd=REPO, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the vLLM server exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=5):
                return
        except OSError:
            time.sleep(2)
    raise AssertionError(f"the vLLM server did not answer within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def test_paraphrase_against_a_vllm_server_keeps_only_checked_items(tmp_path, monkeypatch):
    cache = os.environ.get("RAILSWEEP_CACHE") or str(Path.home() / ".cache" / "railsweep")
    world = _smoke_world(cache)
    test = tmp_path / "test.jsonl"
    rows = read_jsonl(world / "data" / "test.jsonl")[:QUESTIONS]
    test.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "chat.jinja").write_text(CHAT_TEMPLATE)
    port, log = _free_port(), tmp_path / "server.log"
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(world / "families/llama/base"),
    ]
    cmd += [
        "--served-model-name",
        "mini",
        "--chat-template",
        str(tmp_path / "chat.jinja"),
        "--host",
        "127.0.0.1",
    ]
    cmd += ["--port", str(port), "--dtype", "float32", "--max-model-len", "512"]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    with log.open("w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_ready(url, proc, log)
        out = tmp_path / "pq.jsonl"
        argv = ["paraphrase", "--test", str(test), "--endpoint", url, "--model", "mini", "--no-api-key"]
        argv += ["--out", str(out), "--retries", str(RETRIES), "--max-tokens", "64", "--workers", "2"]
        assert main(argv) == 0
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    report = json.loads((tmp_path / "pq.report.json").read_text())
    kept = [json.loads(x) for x in out.read_text().splitlines()]
    assert report["items"] == QUESTIONS and report["kept"] + report["rejected"] == QUESTIONS
    assert len(kept) == report["kept"]
    rejected = {r["idx"] for r in report["rejected_items"]}
    assert rejected.isdisjoint(r["idx"] for r in kept)
    for item in report["rejected_items"]:  # every attempt of the budget was made and refused with a reason
        assert [x["attempt"] for x in item["refusals"]] == list(range(1 + RETRIES))
        assert all(x["reason"] and x["reply"] is not None for x in item["refusals"])
    for row in kept:
        assert row["answer"] == rows[row["idx"]]["answer"].split("####")[-1].strip()
    assert (
        report["requests"]
        == sum(len(r["refusals"]) for r in report["rejected_items"])
        + sum(len(r["refusals"]) for r in report["retried_items"])
        + report["kept"]
    )
