"""A local OpenAI-compatible chat server for the ``railsweep paraphrase`` tests (stdlib ``http.server``).

It listens on 127.0.0.1 at a free port, in a thread. ``replies`` maps a question to the replies it gives
on the 1st, 2nd, ... request for that question (the last one repeats). A scripted reply may instead fail
that one request: ``<HTTP 503>`` answers that status, ``<SLOW>`` answers only after :data:`SLOW` seconds
(a client with a shorter timeout gives up first), ``<DROP>`` closes the connection without an answer.
``mode`` breaks the whole server in one way (``http500``, ``not_json``, ``no_choices``, ``no_models``,
``echo_401``); ``close_after=N`` stops listening once N chat requests are answered (later connections are
refused). Every request's path, ``Authorization`` header and JSON body is recorded.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "fake-paraphraser"
SLOW = 3.0  # seconds a <SLOW> reply waits
_STATUS = re.compile(r"^<HTTP (\d{3})>$")
DROP = None  # what _answer returns for a request to drop


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        pass  # a client that gave up on a <SLOW> reply breaks the pipe: part of the tests, not news


class FakeChatServer:
    def __init__(self, replies: dict[str, list[str]], mode: str = "ok", close_after: int | None = None):
        self.replies = replies
        self.mode = mode
        self.close_after = close_after
        self.requests: list[dict] = []
        self._asked: defaultdict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.httpd = _Server(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and close the listening socket (once)."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def chat_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def asked(self, question: str) -> int:
        """How many chat requests asked ``question``."""
        return sum(1 for r in self.chat_requests() if r["body"]["messages"][-1]["content"] == question)

    def _reply_for(self, question: str) -> str:
        with self._lock:
            n = self._asked[question]
            self._asked[question] += 1
        script = self.replies[question]
        return script[min(n, len(script) - 1)]

    def _answer(self, path: str, auth: str, body: dict | None) -> tuple[int, bytes] | None:
        if self.mode == "echo_401":
            return 401, json.dumps({"error": f"bad key in header {auth!r}"}).encode()
        if path.endswith("/models"):
            if self.mode == "no_models":
                return 200, json.dumps({"data": [{"id": "another-model"}]}).encode()
            return 200, json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode()
        if self.mode == "http500":
            return 500, b"internal error"
        if self.mode == "not_json":
            return 200, b"<html>gateway</html>"
        if self.mode == "no_choices":
            return 200, json.dumps({"id": "x", "choices": []}).encode()
        content = self._reply_for(body["messages"][-1]["content"])
        if status := _STATUS.match(content):
            return int(status.group(1)), b"try again later"
        if content == "<DROP>":
            return DROP
        if content == "<SLOW>":
            time.sleep(SLOW)
        return 200, json.dumps(
            {"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        ).encode()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                auth = self.headers.get("Authorization", "")
                with server._lock:
                    server.requests.append({"path": self.path, "auth": auth, "body": body})
                answer = server._answer(self.path, auth, body)
                if answer is DROP:
                    self.close_connection = True  # no status line, no body: the client sees the drop
                    return
                status, data = answer
                if server.close_after is not None and len(server.chat_requests()) >= server.close_after:
                    # stop listening before answering: the client, waiting for this reply, cannot connect again
                    # before the socket is closed (after the reply, a busy machine let one more request in)
                    server.close()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

            do_GET = do_POST = _serve

            def log_message(self, *args) -> None:  # keep the test output clean
                pass

        return Handler
