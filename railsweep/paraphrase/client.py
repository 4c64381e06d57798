"""A minimal client for any OpenAI-compatible ``chat/completions`` endpoint (a vLLM server, a hosted API).

Standard library only: ``GET /models`` checks that the endpoint serves the model, ``POST /chat/completions``
asks. The API key travels only in the ``Authorization`` header, ``***`` in messages (a server may echo it).
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Protocol

from railsweep.errors import ConfigError, ServiceError

_BODY_SHOWN = 200  # characters of an error body quoted in a message
# A later attempt may not get these (nor a 5xx); other 4xx (a bad key, a wrong model) stop the run.
_TRANSIENT_STATUS = (408, 429)


class RequestFailed(ServiceError):
    """A request failed in a way the next may not (HTTP 5xx, 408, 429, a timeout, a dropped connection): the
    paraphrase loop counts it against the item's retry budget."""


class Chat(Protocol):
    """One reply to chat messages (:class:`ChatClient`, or :class:`~railsweep.paraphrase.local.LocalChat`)."""

    def complete(self, messages: list[dict[str, str]], seed: int | None = None) -> str: ...


def normalise_endpoint(url: str) -> str:
    """The endpoint's base URL (``http[s]://host[:port]/v1``): a trailing ``/`` or ``/chat/completions`` dropped.
    A user or password is refused: the key belongs in the environment, not a URL that logs repeat."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--endpoint must be an http:// or https:// URL with a host, got {url!r}")
    if parts.username or parts.password:
        raise ConfigError("--endpoint must not carry a user or password; put the API key in the environment")
    base = url.strip().rstrip("/")
    return base.removesuffix("/chat/completions").rstrip("/")


@dataclass(frozen=True)
class ChatSettings:
    """What every request sends besides the messages."""

    temperature: float = 0.7
    max_tokens: int = 512
    timeout: float = 120.0


@dataclass
class ChatClient:
    endpoint: str  # base URL, see normalise_endpoint
    model: str
    api_key: str | None = field(default=None, repr=False)
    settings: ChatSettings = ChatSettings()

    def _redact(self, text: str) -> str:
        return text.replace(self.api_key, "***") if self.api_key else text

    def _call(self, path: str, payload: dict[str, Any] | None = None) -> Any:
        """One request's decoded JSON answer; else a ServiceError naming the URL (RequestFailed: retry may help)."""
        url = f"{self.endpoint}/{path}"
        headers = {"Accept": "application/json"}
        data = None
        if payload is not None:
            data = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
        try:
            with urllib.request.urlopen(request, timeout=self.settings.timeout) as r:
                body = r.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace").strip().replace("\n", " ")[:_BODY_SHOWN]
            error = RequestFailed if e.code >= 500 or e.code in _TRANSIENT_STATUS else ServiceError
            raise error(self._redact(f"{url} answered HTTP {e.code} {e.reason}: {text}")) from None
        except urllib.error.URLError as e:
            raise RequestFailed(self._redact(f"cannot reach {url}: {e.reason}")) from None
        except (OSError, http.client.HTTPException) as e:  # a timeout, a dropped connection
            raise RequestFailed(self._redact(f"cannot reach {url}: {e or type(e).__name__}")) from None
        try:
            return json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            shown = body[:_BODY_SHOWN].decode("utf-8", "replace")
            what = f"{url} answered something that is not JSON: {shown!r}"
            raise ServiceError(self._redact(what)) from None

    def check(self) -> None:
        """Fail before any work unless ``GET /models`` answers and lists :attr:`model`."""
        answer = self._call("models")
        listed = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(listed, list):
            raise ServiceError(f"{self.endpoint}/models answered without a 'data' list of models")
        names = [m.get("id") for m in listed if isinstance(m, dict)]
        if self.model not in names:
            shown = ", ".join(str(n) for n in names[:10]) or "none"
            raise ServiceError(f"--model {self.model!r} is not served by {self.endpoint} (it serves: {shown})")

    def complete(self, messages: list[dict[str, str]], seed: int | None = None) -> str:
        """The first choice's message content for ``messages``; a malformed answer is a :class:`ServiceError`."""
        s = self.settings
        payload: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": s.temperature,
                                   "max_tokens": s.max_tokens, "n": 1}  # fmt: skip
        if seed is not None:
            payload["seed"] = seed
        answer = self._call("chat/completions", payload)
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            shown = json.dumps(answer)[:_BODY_SHOWN]
            what = f"{self.endpoint}/chat/completions answered without choices[0].message.content: {shown}"
            raise ServiceError(self._redact(what))
        return content
