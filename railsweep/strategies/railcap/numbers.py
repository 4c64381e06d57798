"""Which tokens are number tokens, for RailCap's ``spare_numbers`` restriction.

A token is a number token when its own decoded text, stripped of surrounding
whitespace, is ASCII digits, optionally in groups joined by single ``.`` or ``,``
(``7``, `` 42``, ``3.5``, ``1,000``). It is decided on the engine's tokenizer, one
token id at a time, so it follows the tokenizer: a digit-splitting tokenizer
(Llama, SmolLM2) spares every digit token, a one-token-per-number tokenizer (the
miniature world's) spares whole numbers. Not number tokens: a lone ``.`` or ``,``,
signs (``-``, ``$``), and mixed text (``3x``, ``12th``). Only the trajectory's own
tokens are asked, since only they can be RailCap's targets.
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
    return tuple(
        sorted(
            i
            for i in set(int(t) for t in ids)
            if is_number_text(
                tokenizer.decode([i], skip_special_tokens=True, clean_up_tokenization_spaces=False)
            )
        )
    )
