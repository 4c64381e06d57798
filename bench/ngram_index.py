"""Throughput and peak memory of the n-gram containment index on a synthetic corpus streamed from disk.

Steps:
  1. draw ``--items`` test items (60 words each, Zipf-distributed words from a 50k vocabulary);
  2. write a synthetic JSONL corpus of about ``--gb`` GB (documents of 50-400 Zipf words; every
     10th test item pasted verbatim into some document) to a temporary directory;
  3. stream it past the items' index (:func:`railsweep.detection.ngram.scan`, n = 8 and 13);
  4. print JSON: corpus bytes and tokens, tokenisation time and tokens/s, hashing + lookup time and
     tokens/s (wall, and per CPU second of this process: the machine may be shared), peak resident
     memory (ru_maxrss), and whether the pasted items were found;
  5. with ``--ray``: scan the same files again as a Ray Data job on a private local Ray instance
     (:func:`railsweep.detection.ngram_ray.ray_scan`) and add its wall time (Ray's start apart), its
     tokens/s and whether its containment equals the local scan's, under ``"ray"``.

Run: ``python bench/ngram_index.py`` (0.05 GB, about a minute on one core) or ``--gb 1``. The
local scan is one process, so its tokens/s figures are per core. The corpus is written first and
not timed; ``--shards K`` writes it as K files (Ray Data reads files in parallel).
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from railsweep.detection.ngram import NgramConfig, scan


def vocabulary(size: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return np.array(["".join(rng.choice(letters, size=int(rng.integers(2, 9)))) for _ in range(size)])


def zipf_words(rng, vocab: np.ndarray, count: int) -> np.ndarray:
    return vocab[np.minimum(rng.zipf(1.2, size=count), vocab.size) - 1]


def write_corpus(path: Path, target_bytes: int, items: list[str], vocab: np.ndarray, seed: int = 0) -> int:
    rng = np.random.default_rng(1 + seed)
    written = 0
    paste = items[::10]
    with open(path, "w", encoding="utf-8") as f:
        k = 0
        while written < target_bytes:
            words = zipf_words(rng, vocab, 200_000)
            cuts = np.cumsum(rng.integers(50, 400, size=1000))
            cuts = cuts[cuts < words.size]
            lines = []
            for doc in np.split(words, cuts):
                text = " ".join(doc.tolist())
                if k < len(paste) and rng.random() < 0.01:
                    text = f"{text} {paste[k]}"
                    k += 1
                lines.append(json.dumps({"text": text}))
            block = "\n".join(lines) + "\n"
            f.write(block)
            written += len(block)
    return written


def ray_bench(items: list[str], corpus: list[Path], config: NgramConfig, local) -> dict:
    """Step 5: the same scan as a Ray Data job on a private local Ray instance."""
    from railsweep.commands.detect_ray import ray_session
    from railsweep.detection.ngram_ray import ray_scan

    t0 = time.perf_counter()
    with ray_session(None):
        started = time.perf_counter() - t0
        t1 = time.perf_counter()
        result = ray_scan(items, corpus, config)
        wall = time.perf_counter() - t1
    same = all(
        np.array_equal(result.index.containment(n), local.index.containment(n), equal_nan=True)
        for n in config.n
    )
    return {
        "ray_start_seconds": round(started, 2),
        "wall_seconds": round(wall, 2),
        "tokens_per_s": round(result.index.tokens / wall),
        "batches": result.chunks,
        "containment_identical_to_local": bool(same and result.index.tokens == local.index.tokens),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=0.05, help="corpus size in GB (the acceptance target is 1)")
    ap.add_argument("--items", type=int, default=1000, help="test items indexed")
    ap.add_argument("--chunk-mb", type=float, default=8, help="characters per chunk, in millions")
    ap.add_argument("--shards", type=int, default=1, help="write the corpus as this many JSONL files")
    ap.add_argument("--ray", action="store_true", help="also time the Ray Data scan on a private local Ray")
    args = ap.parse_args()
    vocab = vocabulary(50_000)
    rng = np.random.default_rng(2)
    items = [" ".join(zipf_words(rng, vocab, 60).tolist()) for _ in range(args.items)]
    with tempfile.TemporaryDirectory(prefix="ngram-bench-") as tmp:
        corpus = [Path(tmp) / f"corpus-{k}.jsonl" for k in range(args.shards)]
        size = sum(
            write_corpus(c, int(args.gb * 1e9 / args.shards), items, vocab, seed=k)
            for k, c in enumerate(corpus)
        )
        config = NgramConfig(
            n=(8, 13), fields="question", verbatim=False, chunk_chars=int(args.chunk_mb * 1e6)
        )
        t0 = time.perf_counter()
        result = scan(items, corpus, config)
        wall = time.perf_counter() - t0
        ray_figures = ray_bench(items, corpus, config, result) if args.ray else None
    tokens = result.index.tokens
    tok_s, hash_s = result.seconds["tokenise"], result.seconds["hash_lookup"]
    found = result.index.containment(13)[::10]
    print(
        json.dumps(
            {
                "corpus_bytes": size,
                "corpus_tokens": tokens,
                "items": args.items,
                "orders": list(config.n),
                "chunks": result.chunks,
                "tokenise_seconds": round(tok_s, 2),
                "tokenise_tokens_per_s": round(tokens / tok_s),
                "hash_lookup_seconds": round(hash_s, 2),
                "hash_lookup_tokens_per_s": round(tokens / hash_s),
                "hash_lookup_tokens_per_s_per_order": round(tokens * len(config.n) / hash_s),
                "tokenise_cpu_tokens_per_s": round(tokens / result.seconds["tokenise_cpu"]),
                "hash_lookup_cpu_tokens_per_s": round(tokens / result.seconds["hash_lookup_cpu"]),
                "wall_seconds": round(wall, 2),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "pasted_items_found": int((found == 1.0).sum()),
                "pasted_items_max": len(found),
                "python": platform.python_version(),
                "numpy": np.__version__,
                "shards": args.shards,
                "ray": ray_figures,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
