"""``railsweep detect --ray`` (the ngram scan as a Ray Data job) gives the local run's scores and flags exactly.

One module-scoped fixture runs the same CLI job twice on a generated corpus of every kind (JSONL
with and without a ``text`` field, a running plain-text document, Parquet with two string
columns): once locally, once with ``--ray`` (one private local Ray instance, started and shut
down by the command). Batches are made small so one item's n-grams are found in different
batches and files, which only a union of per-batch hits counts right.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from railsweep.cli import main
from railsweep.detection import ngram_ray as ngram_scan

pytestmark = pytest.mark.timeout(600)


def _words(rng, k):
    vocab = [f"w{i}" for i in range(300)]
    return " ".join(rng.choice(vocab, size=k))


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ngram-ray")
    rng = np.random.default_rng(0)
    test = [{"question": _words(rng, 20), "answer": f"{_words(rng, 12)} #### 7"} for _ in range(30)]
    control = [{"question": _words(rng, 20), "answer": f"{_words(rng, 12)} #### 7"} for _ in range(30)]
    _jsonl(tmp / "test.jsonl", test)
    _jsonl(tmp / "control.jsonl", control)
    (tmp / "leak.json").write_text(json.dumps({"leaked": list(range(0, 30, 3))}))

    def item(i):
        return f"{test[i]['question']}\n{test[i]['answer']}"

    def halves(i):
        words = item(i).split()
        return " ".join(words[:16]), " ".join(words[16:])

    docs = [{"text": _words(rng, 60)} for _ in range(200)]
    for i in range(0, 30, 3):  # leaked items: whole, or split across documents, files and batches
        if i % 2:
            first, second = halves(i)
            docs.insert(int(rng.integers(len(docs))), {"text": f"{_words(rng, 5)} {first}"})
            docs.append({"text": f"{second} {_words(rng, 5)}"})
        else:
            docs.insert(
                int(rng.integers(len(docs))), {"text": f"{_words(rng, 9)} {item(i)} {_words(rng, 9)}"}
            )
    _jsonl(tmp / "a.jsonl", docs[: len(docs) // 2])
    _jsonl(tmp / "b.jsonl", [{"question": d["text"], "answer": "x"} for d in docs[len(docs) // 2 :]] + [{}])
    (tmp / "b.jsonl").write_text((tmp / "b.jsonl").read_text() + "\n\n")  # blank lines are skipped
    first, second = halves(1)
    text = "\n".join([_words(rng, 40), first, second, _words(rng, 40), test[4]["question"][:60]])
    (tmp / "crawl.txt").write_text(text, encoding="utf-8")
    first, second = halves(2)
    table = pa.table(
        {
            "title": [_words(rng, 8), first, None, _words(rng, 8)],
            "body": [_words(rng, 30), second, item(5), None],
            "n": [1, 2, 3, 4],
        }
    )
    pq.write_table(table, tmp / "dump.parquet")

    def run(out, *extra):
        argv = ["detect", "--detector", "ngram", "--test", str(tmp / "test.jsonl"), "--control",
                str(tmp / "control.jsonl"), "--leak-split", str(tmp / "leak.json"), "--corpus",
                *(str(tmp / f) for f in ("a.jsonl", "b.jsonl", "crawl.txt", "dump.parquet")),
                "--n", "3", "8", "--out", str(tmp / out), "--n-boot", "50", *extra]  # fmt: skip
        assert main(argv) == 0
        return pd.read_parquet(tmp / out / "detections.parquet")

    local = run("local")
    env = dict(os.environ)
    batch = ngram_scan.JSONL_BATCH, ngram_scan.PARQUET_BATCH
    ngram_scan.JSONL_BATCH, ngram_scan.PARQUET_BATCH = 7, 1
    try:
        ray = run("ray", "--ray")
    finally:
        ngram_scan.JSONL_BATCH, ngram_scan.PARQUET_BATCH = batch
        os.environ.clear()
        os.environ.update(env)
    return local, ray


def test_ray_run_gives_identical_scores_and_flags(runs):
    local, ray = runs
    pd.testing.assert_frame_equal(local, ray)


def test_items_spread_over_batches_and_files_are_found_whole(runs):
    local, ray = runs
    leaked = ray[(ray.group == "test") & ray.leaked & (ray.setting == "n=8,fields=question+solution")]
    whole = leaked.item_id % 2 == 0  # odd leaked items are split in two documents (the border's 8-grams lost)
    assert len(leaked) == 10 and (leaked.score[whole] == 1.0).all()
    assert (leaked.score[~whole] > 0.7).all() and leaked.flagged.all()


def test_the_ray_run_is_not_trivially_empty(runs):
    _, ray = runs
    scores = ray[ray.setting == "n=3,fields=question+solution"].score
    assert 0 < (scores > 0).sum() < len(scores)
    assert ((scores > 0) & (scores < 1)).any()  # partial containment is compared too
