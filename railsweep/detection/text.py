"""Texts as the id arrays the n-gram index hashes: normalised words, or a tokenizer's ids.

Both encoders give ids >= 1 and 0 at a document boundary, so no n-gram crosses two documents. A corpus
word that no indexed item contains becomes 0 too, exactly: a window holding it cannot equal an indexed
n-gram, so the vocabulary (and memory) stays the test set's. Word normalisation: drop GSM8K calculator
annotations (``<<6+7=13>>``), lower-case, keep runs of letters and digits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

_ANNOTATION = re.compile(r"<<[^<>]*>>")
_WORD = re.compile(r"[a-z0-9]+")
_WORD_OR_SEP = re.compile(r"[a-z0-9]+|\x00")
SEP = "\x00"


def normalise_words(text: str) -> list[str]:
    """The normalised words of ``text``: ``"Sam has <<6+7=13>>13 Pens."`` -> ``["sam", "has", "13", "pens"]``."""
    return _WORD.findall(_ANNOTATION.sub("", text).lower())


class WordEncoder:
    """Normalised words -> ids 1..V of the words of ``texts`` (the indexed items); any other word -> 0."""

    name = "words"

    def __init__(self, texts: Iterable[str]):
        import pandas as pd

        vocab = sorted({w for t in texts for w in normalise_words(t)})
        self._index = pd.Index(vocab)
        self.vocab_size = len(vocab)

    def _lookup(self, words: Sequence[str]) -> np.ndarray:
        return (self._index.get_indexer(words) + 1).astype(np.int64)  # -1 (absent) -> 0

    def encode(self, text: str) -> np.ndarray:
        return self._lookup(normalise_words(text))

    def encode_stream(self, texts: Sequence[str], boundary: bool) -> np.ndarray:
        """All ``texts`` as one id array, a 0 after each document (after the last only if ``boundary``)."""
        joined = _ANNOTATION.sub("", SEP.join(texts)).lower()
        ids = self._lookup(_WORD_OR_SEP.findall(joined))
        return np.append(ids, 0) if boundary else ids


class TokenizerEncoder:
    """A Hugging Face tokenizer's ids + 1 (no special tokens), so 0 stays free for the boundary."""

    name = "tokens"

    def __init__(self, path: str):
        from transformers import AutoTokenizer

        self.path = str(path)
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)

    def encode(self, text: str) -> np.ndarray:
        return np.asarray(self.tokenizer(text, add_special_tokens=False)["input_ids"], dtype=np.int64) + 1

    def encode_stream(self, texts: Sequence[str], boundary: bool) -> np.ndarray:
        rows = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        parts: list[np.ndarray] = []
        for k, row in enumerate(rows):
            parts.append(np.asarray(row, dtype=np.int64) + 1)
            if boundary or k < len(rows) - 1:
                parts.append(np.zeros(1, np.int64))
        return np.concatenate(parts) if parts else np.empty(0, np.int64)
