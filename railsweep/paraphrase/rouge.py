"""ROUGE-L between a paraphrase and its original, in pure Python: a paraphrase that keeps most of the
original's words in order is a near copy, and training on it would leak the test question almost verbatim."""

from __future__ import annotations

import re
from collections.abc import Sequence

_WORDS = re.compile(r"[a-z0-9]+")


def rouge_tokens(text: str) -> list[str]:
    """ROUGE's default tokenisation: lower-cased runs of letters and digits."""
    return _WORDS.findall(text.lower())


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences (one row of the DP table kept)."""
    if len(b) > len(a):
        a, b = b, a
    row = [0] * (len(b) + 1)
    for x in a:
        prev_diag = 0
        for j, y in enumerate(b, start=1):
            keep = row[j]
            row[j] = prev_diag + 1 if x == y else max(row[j], row[j - 1])
            prev_diag = keep
    return row[-1]


def rouge_l(a: str, b: str) -> float:
    """ROUGE-L F1 (beta = 1) of two texts: 2 LCS / (|a| + |b|) over :func:`rouge_tokens`; 1.0 when both are empty."""
    ta, tb = rouge_tokens(a), rouge_tokens(b)
    if not ta and not tb:
        return 1.0
    if not ta or not tb:
        return 0.0
    return 2.0 * lcs_length(ta, tb) / (len(ta) + len(tb))
