"""n-gram containment against a naive set-of-tuples reference, on hand-made corpora."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from railsweep.detection.base import DetectInputs, Item
from railsweep.detection.hashing import _M1, _M2, BASE, WindowHasher
from railsweep.detection.ngram import Ngram, NgramConfig, scan
from railsweep.detection.text import WordEncoder, normalise_words
from railsweep.errors import ConfigError, DataError

TEST_TEXTS = [
    "Sam has 13 marbles. Sam gives 7 marbles to Finn. How many marbles does Sam have now?",
    "Tom had 5 plums in a box. Then the plums grow 4 times. How many plums does Tom have?",
    "A red fox jumps over the lazy dog while the cat sleeps on the warm mat all day",
    "short item",
]
CORPUS_DOCS = [
    "intro text Sam has 13 marbles. Sam gives 7 marbles to Finn. How many marbles does Sam have now? end",
    "Tom had 5 plums in a box. Then something else happens entirely here",
    "the plums grow 4 times. How many plums does Tom have?",
    "A red fox jumps over the lazy dog",
    "while the cat sleeps on the warm mat all day",  # the fox item's other half, in another document
]


def naive_window_hash(window, bits: int = 64) -> int:
    """The hash of one window written out with Python integers: the polynomial, then splitmix64."""
    mask = (1 << 64) - 1
    p = 0
    for v in window:
        p = (p * BASE + int(v)) & mask
    p ^= p >> 30
    p = (p * _M1) & mask
    p ^= p >> 27
    p = (p * _M2) & mask
    p ^= p >> 31
    return p & ((1 << bits) - 1)


def naive_containment(item: str, docs: list[str], n: int) -> float:
    """The background text's definition, literally: set of n-gram tuples, documents kept apart."""

    def grams(words):
        return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}

    corpus = set().union(*(grams(normalise_words(d)) for d in docs))
    g = grams(normalise_words(item))
    return len(g & corpus) / len(g) if g else float("nan")


def naive_hashed_containment(item: str, docs: list[str], n: int, bits: int) -> float:
    """Containment over hashed n-grams: distinct item hashes found among the corpus hashes."""
    vocab = {w: i + 1 for i, w in enumerate(sorted(set(normalise_words(" ".join(TEST_TEXTS)))))}

    def hashes(text):
        ids = [vocab.get(w, 0) for w in normalise_words(text)]
        return {
            naive_window_hash(ids[i : i + n], bits)
            for i in range(len(ids) - n + 1)
            if 0 not in ids[i : i + n]
        }

    corpus = set().union(*(hashes(d) for d in docs))
    h = hashes(item)
    return len(h & corpus) / len(h) if h else float("nan")


def write_jsonl(path, docs):
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    return path


@pytest.mark.parametrize("n", [1, 3, 8])
def test_containment_equals_the_set_of_tuples_definition(tmp_path, n):
    corpus = write_jsonl(tmp_path / "c.jsonl", CORPUS_DOCS)
    got = scan(TEST_TEXTS, [corpus], NgramConfig(n=n)).index.containment(n)
    want = [naive_containment(t, CORPUS_DOCS, n) for t in TEST_TEXTS]
    np.testing.assert_allclose(got, want, equal_nan=True)


def test_ngrams_do_not_cross_documents(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", CORPUS_DOCS)
    fox = scan(TEST_TEXTS, [corpus], NgramConfig(n=13)).index.containment(13)[2]
    assert fox == 0.0  # both halves are in the corpus, but in two documents


def test_a_text_file_read_in_tiny_chunks_finds_ngrams_across_chunk_borders(tmp_path):
    text = tmp_path / "c.txt"
    text.write_text(" ".join(CORPUS_DOCS[3:]))  # one running document: the fox item whole
    for chunk_chars in (7, 50, 1 << 20):
        res = scan(TEST_TEXTS, [text], NgramConfig(n=13, chunk_chars=chunk_chars))
        assert res.index.containment(13)[2] == 1.0
        assert res.index.verbatim()[2]
        assert res.chunks >= 1


def test_jsonl_parquet_and_text_corpora_agree(tmp_path):
    jsonl = write_jsonl(tmp_path / "c.jsonl", CORPUS_DOCS)
    parquet = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": list(range(len(CORPUS_DOCS))), "text": CORPUS_DOCS}), parquet)
    texts = []
    for k, d in enumerate(CORPUS_DOCS):
        texts.append(tmp_path / f"c{k}.txt")
        texts[-1].write_text(d)
    for n in (2, 5):
        a = scan(TEST_TEXTS, [jsonl], NgramConfig(n=n)).index.containment(n)
        b = scan(TEST_TEXTS, [parquet], NgramConfig(n=n, chunk_chars=600)).index.containment(n)
        c = scan(TEST_TEXTS, texts, NgramConfig(n=n)).index.containment(n)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_verbatim_is_the_whole_item_as_one_window(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", CORPUS_DOCS)
    res = scan(TEST_TEXTS, [corpus], NgramConfig(n=3))
    assert res.index.verbatim().tolist() == [True, False, False, False]


@pytest.mark.parametrize("bits", [3, 5, 8])
def test_a_tiny_hash_collides_exactly_like_the_naive_hashed_reference(tmp_path, bits):
    corpus = write_jsonl(tmp_path / "c.jsonl", CORPUS_DOCS)
    got = scan(TEST_TEXTS, [corpus], NgramConfig(n=3, bits=bits)).index.containment(3)
    want = [naive_hashed_containment(t, CORPUS_DOCS, 3, bits) for t in TEST_TEXTS]
    np.testing.assert_allclose(got, want, equal_nan=True)
    exact = [naive_containment(t, CORPUS_DOCS, 3) for t in TEST_TEXTS]
    if bits <= 5:  # collisions are forced: some item looks more contained than it is
        assert any(g > e for g, e in zip(got, exact) if g == g)


def test_window_hashes_equal_the_term_by_term_polynomial():
    ids = np.random.default_rng(0).integers(0, 30, size=400)
    for n in (1, 4, 13):
        for bits in (64, 7):
            want = [
                naive_window_hash(ids[i : i + n], bits)
                for i in range(len(ids) - n + 1)
                if 0 not in ids[i : i + n]
            ]
            assert WindowHasher(ids).hashes(n, bits).tolist() == want


def test_unknown_corpus_words_become_separators():
    enc = WordEncoder(["a b c"])
    assert enc.encode_stream(["a x b", "c"], boundary=True).tolist() == [1, 0, 2, 0, 3, 0]


def test_the_detector_reports_one_score_per_order(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", CORPUS_DOCS)
    items = [Item(i, "test", t, "#### 1") for i, t in enumerate(TEST_TEXTS)]
    out = Ngram(NgramConfig(n=(8, 3), fields="question")).score(items, DetectInputs(corpus=(corpus,)))
    assert [s.setting for s in out] == ["n=8,fields=question", "n=3,fields=question"]
    np.testing.assert_allclose(out[1].score, [naive_containment(t, CORPUS_DOCS, 3) for t in TEST_TEXTS])


@pytest.mark.parametrize(
    "params", [{"n": 0}, {"n": (13, -1)}, {"bits": 0}, {"bits": 65}, {"fields": "answer"}]
)
def test_bad_ngram_settings_are_refused_at_construction(params):
    with pytest.raises(ConfigError):
        NgramConfig(**params)


def test_an_empty_corpus_is_a_data_error(tmp_path):
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    with pytest.raises(DataError, match="empty"):
        scan(TEST_TEXTS, [empty], NgramConfig())
    wordless = write_jsonl(tmp_path / "w.jsonl", ["!!! ???"])
    with pytest.raises(DataError, match="corpus is empty"):
        scan(TEST_TEXTS, [wordless], NgramConfig())
    with pytest.raises(DataError, match="no corpus files"):
        scan(TEST_TEXTS, [], NgramConfig())
