"""The n-gram containment scan as a Ray Data job, with the local scan's inputs and scores.

Steps of :func:`ray_scan`:
1. on the driver, index the items (:func:`~railsweep.detection.ngram.build_index`) and put the encoder
   and the index in the object store once;
2. read the corpus with Ray Data: JSONL with ``read_text`` (one row per line, parsed by
   :func:`~railsweep.detection.corpus.jsonl_text`), Parquet with ``read_parquet`` (the local reader's
   text columns), and each plain-text file as one row naming it (a running document, streamed in chunks
   by one worker as the local scan does);
3. ``map_batches`` with :class:`_Marker` (an actor pool fetching the index once): per batch, clear the
   marks, :func:`~railsweep.detection.ngram.feed` its documents and return the key slots hit and the
   corpus tokens (bad input, such as a line that is not JSON, comes back as one row holding the message);
4. on the driver, OR every batch's slots into the index (exact: containment counts distinct n-grams
   found anywhere) and raise a returned DataError, the usual one-line ``railsweep: error``.

JSONL and Parquet records are whole documents, so batches need no carry. Paths must be readable from
every node. The one module of the package that imports Ray; it never calls ``ray.init``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from railsweep.detection.corpus import (
    JSONL_SUFFIXES,
    PARQUET_SUFFIXES,
    Chunk,
    check_corpus_paths,
    jsonl_text,
    parquet_text_columns,
    row_texts,
    stream_corpus,
)
from railsweep.detection.ngram import (
    NgramConfig,
    ScanResult,
    build_index,
    check_not_empty,
    feed,
    make_encoder,
)
from railsweep.errors import DataError

JSONL_BATCH = 4096  # lines per map_batches call
PARQUET_BATCH = 4096  # records per map_batches call
ERROR = "!error"  # the key of a row that carries a worker's DataError message instead of hit slots


class _Marker:
    """A Ray Data actor over one copy of the index (step 3 of :func:`ray_scan`).

    ``payload``: a one-element list holding the object ref of (encoder, index, text_field, chunk_chars), so
    Ray passes the ref through; ``kind``: "jsonl" (rows: ``text`` = one line, ``path``), "parquet" (rows:
    ``columns``) or "text" (rows: ``path`` of a plain-text file).
    """

    def __init__(self, payload: list, kind: str, columns: Sequence[str] = ()):
        import ray  # optional heavy dependency: only the --ray scan needs it

        self.encoder, self.index, self.text_field, self.chunk_chars = ray.get(payload[0])
        self.kind, self.columns = kind, list(columns)

    def _chunks(self, batch: dict[str, np.ndarray]):
        if self.kind == "jsonl":
            texts = [jsonl_text(str(line), str(path), self.text_field)
                     for line, path in zip(batch["text"], batch["path"])]  # fmt: skip
            texts = [t for t in texts if t is not None]
            return [Chunk(texts, True)] if texts else []
        if self.kind == "parquet":
            texts = row_texts([[None if v is None else str(v) for v in batch[c]] for c in self.columns])
            return [Chunk(texts, True)] if texts else []
        return (c for p in batch["path"] for c in stream_corpus([str(p)], None, self.chunk_chars))

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.index.clear_seen()
        out = ScanResult(self.index)
        try:
            feed(out, self.encoder, self._chunks(batch))
        except DataError as e:  # bad corpus input: one row carrying the message to the driver
            return {"key": np.array([ERROR], dtype=object), "slots": np.array([str(e).encode()], dtype=object),
                    "tokens": np.zeros(1, np.int64), "chunks": np.zeros(1, np.int64)}  # fmt: skip
        seen = self.index.seen_slots()
        names = list(seen)
        return {"key": np.array(names, dtype=object),
                "slots": np.array([seen[k].tobytes() for k in names], dtype=object),
                "tokens": np.array([self.index.tokens] + [0] * (len(names) - 1), dtype=np.int64),
                "chunks": np.array([out.chunks] + [0] * (len(names) - 1), dtype=np.int64)}  # fmt: skip


def ray_scan(
    texts: Sequence[str], corpus: Sequence, config: NgramConfig, text_field: str | None = None,
    workers: int | None = None,
) -> ScanResult:  # fmt: skip
    """:func:`railsweep.detection.ngram.scan` on the running Ray cluster; ``workers``: the most actors per
    file kind (default: the cluster's CPUs)."""
    import ray  # optional heavy dependency: only the --ray scan needs it

    paths = check_corpus_paths(corpus)
    t0 = time.perf_counter()
    encoder = make_encoder(config, texts)
    index = build_index(encoder, texts, config)
    payload = [ray.put((encoder, index, text_field, config.chunk_chars))]
    workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    pool = {"compute": ray.data.ActorPoolStrategy(min_size=1, max_size=workers), "batch_format": "numpy"}
    jsonl = [str(p) for p in paths if p.suffix.lower() in JSONL_SUFFIXES]
    parquet = [p for p in paths if p.suffix.lower() in PARQUET_SUFFIXES]
    text = [str(p) for p in paths if p.suffix.lower() not in JSONL_SUFFIXES + PARQUET_SUFFIXES]
    parts = []
    if jsonl:
        ds = ray.data.read_text(jsonl, include_paths=True, drop_empty_lines=True)
        args = (payload, "jsonl")
        parts.append(ds.map_batches(_Marker, fn_constructor_args=args, batch_size=JSONL_BATCH, **pool))
    for p in parquet:
        cols = parquet_text_columns(p, text_field)
        ds = ray.data.read_parquet(str(p)).select_columns(cols)
        args = (payload, "parquet", cols)
        parts.append(ds.map_batches(_Marker, fn_constructor_args=args, batch_size=PARQUET_BATCH, **pool))
    if text:
        ds = ray.data.from_items([{"path": p} for p in text], override_num_blocks=len(text))
        parts.append(ds.map_batches(_Marker, fn_constructor_args=(payload, "text"), batch_size=1, **pool))
    out = ScanResult(index)
    # One part after another: each part's actor pool holds at least one CPU, so running them all at
    # once (Dataset.union) stalls on a cluster with fewer CPUs than parts.
    for part in parts:
        for batch in part.iter_batches(batch_format="numpy", batch_size=None):
            for key, slots, tokens, chunks in zip(
                batch["key"], batch["slots"], batch["tokens"], batch["chunks"]
            ):
                if key == ERROR:
                    raise DataError(bytes(slots).decode())
                index.merge_seen({str(key): np.frombuffer(slots, dtype=np.int64)}, int(tokens))
                out.chunks += int(chunks)
    out.seconds["ray_wall"] = time.perf_counter() - t0
    check_not_empty(out, paths, config)
    return out
