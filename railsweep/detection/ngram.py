"""Corpus side: n-gram containment of each item in a training corpus.

containment(item) = |distinct n-grams of the item found in the corpus| / |distinct n-grams of the item|
(containment, not Jaccard: the item is short and the question is how much of it was seen), over
normalised words (:mod:`railsweep.detection.text`) or, with ``tokenizer``, its token ids. An item shorter
than n scores NaN; ``verbatim`` (the whole item occurs as one window) is reported beside each score.

Steps of :func:`scan`:
1. encode the items and index their n-grams (:class:`~railsweep.detection.ngram_index.NgramIndex`);
2. :func:`feed`: stream the corpus in chunks (:func:`~railsweep.detection.corpus.stream_corpus`), encode
   each (the tokenisation time) and mark the indexed n-grams it holds (the hashing + lookup time),
   carrying a chunk's last ``span - 1`` ids into the next so that n-grams across a border are found;
3. read off containment per n, and the verbatim flags.

:class:`Ngram` takes either this ``scanner`` or the Ray Data one (:mod:`railsweep.detection.ngram_ray`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from railsweep.detection.base import DetectInputs, Detector, Item, Scores, register
from railsweep.detection.corpus import Chunk, check_corpus_paths, stream_corpus
from railsweep.detection.ngram_index import NgramIndex
from railsweep.detection.text import TokenizerEncoder, WordEncoder
from railsweep.errors import ConfigError, DataError


@dataclass(frozen=True)
class NgramConfig:
    """n: the n-gram orders (one score each; default 13, the usual document-level order). fields:
    "question+solution" (the item as a benchmark holds it) or "question". tokenizer: None = normalised words;
    a tokenizer directory or hub name = its token ids. bits: hash width in [1, 64]; below 64 only to force
    collisions in tests. verbatim: also report whether the whole item occurs verbatim. chunk_chars:
    characters of corpus text per chunk (memory vs. per-chunk overhead)."""

    n: tuple[int, ...] = (13,)
    fields: str = "question+solution"
    tokenizer: str | None = None
    bits: int = 64
    verbatim: bool = True
    chunk_chars: int = 8 << 20

    def __post_init__(self) -> None:
        ns = (self.n,) if isinstance(self.n, int) else tuple(self.n)
        if not ns:
            raise ConfigError("n-gram order n: give at least one order")
        for n in ns:
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ConfigError(f"n-gram order n must be an integer >= 1, got n={n!r}")
        object.__setattr__(self, "n", ns)
        if self.fields not in ("question", "question+solution"):
            raise ConfigError(f"fields must be 'question' or 'question+solution', got {self.fields!r}")
        if isinstance(self.bits, bool) or not isinstance(self.bits, int) or not 1 <= self.bits <= 64:
            raise ConfigError(f"hash width bits must be an integer in [1, 64], got bits={self.bits!r}")
        if self.chunk_chars < 1:
            raise ConfigError(f"chunk_chars must be >= 1, got {self.chunk_chars}")


@dataclass
class ScanResult:
    index: NgramIndex
    chunks: int = 0
    # wall and CPU (this process) seconds of the two phases
    _phases = ("tokenise", "hash_lookup", "tokenise_cpu", "hash_lookup_cpu")
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(ScanResult._phases, 0.0))


def make_encoder(config: NgramConfig, texts: Sequence[str]):
    return TokenizerEncoder(config.tokenizer) if config.tokenizer else WordEncoder(texts)


def scan(
    texts: Sequence[str], corpus: Sequence, config: NgramConfig, text_field: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> ScanResult:  # fmt: skip
    """Index ``texts`` and stream ``corpus`` (file paths) past them; see the module docstring."""
    paths = check_corpus_paths(corpus)
    encoder = make_encoder(config, texts)
    out = ScanResult(build_index(encoder, texts, config))
    feed(out, encoder, stream_corpus(paths, text_field, config.chunk_chars), progress)
    check_not_empty(out, paths, config)
    return out


def check_not_empty(out: ScanResult, paths: Sequence, config: NgramConfig) -> None:
    """DataError when the scan met no corpus token (no text, or no words)."""
    if out.index.tokens == 0:
        raise DataError(f"the corpus is empty: {', '.join(map(str, paths))} hold no text "
                        + ("" if config.tokenizer else "(no words)"))  # fmt: skip


def build_index(encoder, texts: Sequence[str], config: NgramConfig) -> NgramIndex:
    """Step 1: the items' n-gram index."""
    return NgramIndex([encoder.encode(t) for t in texts], config.n, config.bits, config.verbatim)


def feed(out: ScanResult, encoder, chunks: Iterable[Chunk],
         progress: Callable[[int], None] | None = None) -> None:  # fmt: skip
    """Step 2 of :func:`scan`."""
    index = out.index
    carry = np.empty(0, np.int64)
    keep = index.span - 1
    for chunk in chunks:
        t0, c0 = time.perf_counter(), time.process_time()
        ids = encoder.encode_stream(chunk.texts, chunk.boundary)
        t1, c1 = time.perf_counter(), time.process_time()
        joined = np.concatenate([carry, ids])
        index.update(joined, new_from=carry.size)
        carry = joined[-keep:] if keep else joined[:0]
        out.seconds["tokenise"] += t1 - t0
        out.seconds["hash_lookup"] += time.perf_counter() - t1
        out.seconds["tokenise_cpu"] += c1 - c0
        out.seconds["hash_lookup_cpu"] += time.process_time() - c1
        out.chunks += 1
        if progress:
            progress(index.tokens)


@register("ngram", NgramConfig)
class Ngram(Detector):
    bounded = True

    def __init__(self, config: NgramConfig | None = None, scanner: Callable[..., ScanResult] | None = None):
        super().__init__(config)
        # scan(texts, corpus, config, text_field) -> ScanResult: local by default, or the Ray Data one
        self.scanner = scanner or scan

    def score(self, items: Sequence[Item], inputs: DetectInputs) -> list[Scores]:
        inputs.require(self.name, "corpus")
        c = self.config
        result = self.scanner([it.text(c.fields) for it in items], inputs.corpus, c, inputs.text_field)
        extras = {"verbatim": result.index.verbatim().astype(float)} if c.verbatim else {}
        return [Scores(f"n={n},fields={c.fields}", result.index.containment(n), dict(extras)) for n in c.n]
