"""The paper's paraphrase prompt (Appendix A) and the one-line answer format it asks for.

The system prompt is the paper's, verbatim; the user message is the question alone. A reply other than one
line ``New Question: <rephrased question>`` is a ``format`` refusal, retried like any failed check.
"""

from __future__ import annotations

import re

SYSTEM_PROMPT = (
    "Significantly rephrase the given GSM8K math question. Keep ALL numbers and the final answer identical. "
    "Do not include any solution. Output exactly one line in this format and nothing else: "
    "New Question: <rephrased question>"
)
_PREFIX = re.compile(r"^\s*New Question\s*:\s*", re.IGNORECASE)


def messages(question: str) -> list[dict[str, str]]:
    """The chat messages for one question: the paper's system prompt, then the question."""
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]


def parse_reply(content: str) -> tuple[str | None, str]:
    """``(paraphrase, "")`` from a well-formed reply (blank lines around it forgiven), else ``(None, why)``."""
    lines = [line for line in content.strip().splitlines() if line.strip()]
    if not lines:
        return None, "empty reply"
    if len(lines) > 1:
        return None, f"{len(lines)} lines, not one"
    m = _PREFIX.match(lines[0])
    if not m:
        return None, f"no 'New Question:' prefix: {lines[0][:60]!r}"
    text = lines[0][m.end() :].strip()
    if not text:
        return None, "nothing after 'New Question:'"
    return text, ""
