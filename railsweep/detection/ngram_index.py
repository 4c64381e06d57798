"""The test items' n-grams as sorted 64-bit hashes, and the corpus streamed past them.

Steps:
1. per n, hash every item's n-grams (:mod:`railsweep.detection.hashing`); keep the distinct hashes of all
   items in one sorted uint64 array ``keys`` and each item's slots in it;
2. for verbatim matching, also hash each whole item: one sorted array per item length;
3. :meth:`NgramIndex.update` hashes a corpus chunk's windows of every n (and item length) and marks the
   keys it meets; a bitmap over the hashes' low bits skips most misses before the binary search;
4. containment of item i = its distinct n-gram hashes marked / its distinct n-gram hashes.

Copies of one index fed parts of the corpus (Ray workers) combine exactly by ORing their
:meth:`~NgramIndex.seen_slots` (:meth:`~NgramIndex.merge_seen`). Memory is proportional to the test set.
Two n-grams with one hash count as one (a false positive, negligible at 64 bits; ``bits`` forces it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from railsweep.detection.hashing import WindowHasher
from railsweep.errors import ConfigError

_BITMAP_MAX_BITS = 22  # at most 4 Mi flags (4 MiB); ~16 flags per key below that


class _KeySet:
    """Sorted distinct hashes with a "seen in the corpus" mark each."""

    def __init__(self, hashes: np.ndarray):
        self.keys = np.unique(hashes)
        self.seen = np.zeros(self.keys.shape[0], dtype=bool)
        width = min(_BITMAP_MAX_BITS, max(10, int(np.ceil(np.log2(16 * max(1, self.keys.size))))))
        self._mask = np.uint64((1 << width) - 1)
        self._bitmap = np.zeros(1 << width, dtype=bool)
        self._bitmap[(self.keys & self._mask).astype(np.int64)] = True

    def mark(self, h: np.ndarray) -> None:
        if not self.keys.size or not h.size:
            return
        h = h[self._bitmap[(h & self._mask).astype(np.int64)]]
        if not h.size:
            return
        pos = np.searchsorted(self.keys, h)
        pos[pos == self.keys.size] = 0
        self.seen[pos[self.keys[pos] == h]] = True

    def slots(self, h: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.keys, h)


class NgramIndex:
    """Containment of each indexed item in everything passed to :meth:`update`.

    items: one id array per item (ids >= 1, see :mod:`railsweep.detection.text`); ns: the n-gram orders;
    bits: hash width (smaller than 64 forces collisions); verbatim: also track whole items.
    """

    def __init__(self, items: Sequence[np.ndarray], ns: Sequence[int], bits: int = 64, verbatim: bool = True):
        ns = tuple(int(n) for n in ns)
        if not ns or any(n < 1 for n in ns):
            raise ConfigError(f"n-gram order n must be >= 1, got n={list(ns)}")
        if not 1 <= bits <= 64:
            raise ConfigError(f"hash width bits must lie in [1, 64], got bits={bits}")
        self.ns, self.bits, self.n_items = ns, bits, len(items)
        hashers = [WindowHasher(np.asarray(ids)) for ids in items]
        self._sets: dict[int, _KeySet] = {}
        self._slots: dict[int, list[np.ndarray]] = {}
        for n in ns:
            per_item = [np.unique(hs.hashes(n, bits)) for hs in hashers]
            keyset = _KeySet(np.concatenate(per_item) if per_item else np.empty(0, np.uint64))
            self._sets[n] = keyset
            self._slots[n] = [keyset.slots(h) for h in per_item]
        self._full: dict[int, _KeySet] = {}
        self._full_hash: list[tuple[int, np.uint64] | None] = []
        if verbatim:
            whole = [(hs.size, hs.hashes(hs.size, bits)) for hs in hashers]
            self._full_hash = [(size, h[0]) if h.size else None for size, h in whole]
            by_len: dict[int, list] = {}
            for entry in self._full_hash:
                if entry is not None:
                    by_len.setdefault(entry[0], []).append(entry[1])
            self._full = {size: _KeySet(np.array(hs, dtype=np.uint64)) for size, hs in by_len.items()}
        self.tokens = 0  # corpus ids seen, separators excluded

    @property
    def span(self) -> int:
        """The longest window the index looks for (the carry a chunked stream needs is span - 1)."""
        return max([*self.ns, *self._full])

    def update(self, ids: np.ndarray, new_from: int = 0) -> None:
        """Mark every indexed n-gram (and whole item) in ``ids`` (0 = separator); ids before ``new_from`` were
        carried over from the previous chunk (not counted again)."""
        ids = np.asarray(ids)
        self.tokens += int(np.count_nonzero(ids[new_from:]))
        hasher = WindowHasher(ids)
        for n, keyset in self._sets.items():
            keyset.mark(hasher.hashes(n, self.bits))
        for size, keyset in self._full.items():
            keyset.mark(hasher.hashes(size, self.bits))

    def _all_sets(self) -> dict[str, _KeySet]:
        return {**{f"n{n}": s for n, s in self._sets.items()},
                **{f"full{k}": s for k, s in self._full.items()}}  # fmt: skip

    def seen_slots(self) -> dict[str, np.ndarray]:
        """The marked slots of every key set (``"n13"``, ``"full60"``, ...) as int64 arrays."""
        return {name: np.flatnonzero(s.seen).astype(np.int64) for name, s in self._all_sets().items()}

    def merge_seen(self, seen: dict[str, np.ndarray], tokens: int = 0) -> None:
        """OR another copy's :meth:`seen_slots` into this index and add its corpus ``tokens``."""
        sets = self._all_sets()
        for name, slots in seen.items():
            sets[name].seen[np.asarray(slots, dtype=np.int64)] = True
        self.tokens += int(tokens)

    def clear_seen(self) -> None:
        """Forget every mark and the token count (the keys stay)."""
        for s in self._all_sets().values():
            s.seen = np.zeros(s.keys.shape[0], dtype=bool)  # new arrays: a shared copy may be read-only
        self.tokens = 0

    def containment(self, n: int) -> np.ndarray:
        """float (items,): share of each item's distinct n-grams seen; NaN for items shorter than n."""
        keyset = self._sets[n]
        return np.array([keyset.seen[s].mean() if s.size else np.nan for s in self._slots[n]])

    def verbatim(self) -> np.ndarray:
        """bool (items,): the whole item occurred as one window (False for empty items)."""
        out = np.zeros(self.n_items, dtype=bool)
        for i, entry in enumerate(self._full_hash):
            if entry is not None:
                keyset = self._full[entry[0]]
                out[i] = keyset.seen[keyset.slots(np.array([entry[1]], dtype=np.uint64))[0]]
        return out
