"""Paraphrasing with a local model through a railsweep engine instead of an HTTP endpoint.

:class:`LocalChat` answers ``complete(messages, seed)`` as :class:`~railsweep.paraphrase.client.ChatClient`
does, so the ask-check-retry loop runs unchanged; the caller builds the engine (this module loads nothing):

1. the chat messages become one prompt through the model's chat template (``render``);
2. the engine samples one reply (temperature, token limit and the attempt's seed as a request would send them);
3. requests from the loop's threads take turns: an engine decodes one call at a time.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from railsweep.engines.base import Engine, Request, SamplingSpec
from railsweep.errors import ConfigError
from railsweep.paraphrase.client import ChatSettings

Messages = list[dict[str, str]]
TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")


def has_chat_template(model_dir: str | Path) -> bool:
    """Whether a local model folder ships a chat template (:data:`TEMPLATE_FILES` or ``tokenizer_config.json``'s
    ``chat_template``), read without loading the tokenizer."""
    d = Path(model_dir)
    if any((d / f).is_file() for f in TEMPLATE_FILES):
        return True
    config = d / "tokenizer_config.json"
    try:
        return bool(json.loads(config.read_text(encoding="utf-8")).get("chat_template"))
    except (OSError, ValueError, AttributeError):
        return False


def check_chat_template(model_dir: str | Path, template: str | Path | None) -> None:
    """ConfigError unless the prompt can be rendered: ``--chat-template`` given, or the model ships one."""
    if template is None and not has_chat_template(model_dir):
        raise ConfigError(
            f"--model {model_dir}: the tokenizer has no chat template (tokenizer_config.json 'chat_template' or "
            f"{' / '.join(TEMPLATE_FILES)}); the paraphrase prompt is a chat (system + user message): use an "
            "instruct model or give --chat-template FILE (a Jinja template over 'messages', as vllm serve takes)"
        )


class LocalChat:
    """``complete(messages, seed) -> reply`` on a local engine (module docstring)."""

    def __init__(self, engine: Engine, render: Callable[[Messages], str], settings: ChatSettings):
        self.engine = engine
        self.render = render
        self.settings = settings
        self._turn = threading.Lock()

    def complete(self, messages: Messages, seed: int | None = None) -> str:
        sampling = SamplingSpec(n=1, temperature=self.settings.temperature, max_new_tokens=self.settings.max_tokens,
                                seed=seed)  # fmt: skip
        request = Request(prompt=self.render(messages), sampling=sampling)
        with self._turn:
            (completion,) = self.engine.generate([request])
        return completion.samples[0].text
