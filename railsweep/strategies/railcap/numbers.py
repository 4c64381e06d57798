"""Which tokens are number tokens, for RailCap's ``spare_numbers`` restriction.

A number token's own decoded text, stripped of whitespace, is ASCII digits, optionally in groups joined by
single ``.`` or ``,`` (``7``, `` 42``, ``3.5``, ``1,000``); not a lone ``.`` or ``,``, signs or mixed text
(``3x``). Decided per token id on the engine's tokenizer, so a digit-splitting tokenizer (Llama, SmolLM2)
spares every digit token, the miniature world's whole numbers. Only the trajectory's tokens are asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_SPACE_MARKS = " \t\r\n\u2581\u0120"  # whitespace, SentencePiece's ▁ and byte-level BPE's Ġ, if left in


def is_number_text(text: str) -> bool:
    """True for a token text that is a number (see the module docstring)."""
    return NUMBER.fullmatch(text.strip(_SPACE_MARKS)) is not None


def number_token_ids(tokenizer, ids: Iterable[int]) -> tuple[int, ...]:
    """The sorted distinct ids among ``ids`` whose single-token decoding is a number."""
    def text(i: int) -> str:
        return tokenizer.decode([i], skip_special_tokens=True, clean_up_tokenization_spaces=False)

    return tuple(sorted(i for i in set(int(t) for t in ids) if is_number_text(text(i))))
