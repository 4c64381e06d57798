"""Vectorised 64-bit polynomial hashes of every n-token window of an id array (pure numpy).

For ids ``x_0 .. x_{T-1}`` (0 is a separator no window may contain) the window of length ``n`` at ``i``
hashes to ``P(i, n) = sum_{j<n} x_{i+j} * B^(n-1-j) (mod 2^64)``, numpy's uint64 arithmetic wrapping.
``B`` is odd, hence invertible, so with ``S[i] = sum_{k<i} x_k * B^-k`` one prefix sum serves every
``n``: ``P(i, n) = (S[i+n] - S[i]) * B^(i+n-1)``, the same wherever the window sits. The splitmix64
finaliser spreads the value before it is cut to ``bits`` bits, so even a tiny ``bits`` spreads evenly.
"""

from __future__ import annotations

import numpy as np

BASE = 0x9E3779B97F4A7C15  # odd, so invertible mod 2^64
BASE_INV = pow(BASE, -1, 1 << 64)
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _powers(base: int, count: int) -> np.ndarray:
    """uint64 (count,): base^0 .. base^(count-1) mod 2^64."""
    out = np.full(count, base, dtype=np.uint64)
    if count:
        out[0] = 1
        np.cumprod(out, out=out)  # wraps mod 2^64
    return out


def mix64(h: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, elementwise on uint64 (a bijection of 64-bit words)."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(_M1)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(_M2)
    return h ^ (h >> np.uint64(31))


class WindowHasher:
    """The prefix sums of one id array (T,) (values in [0, 2^63), 0 a separator); :meth:`hashes` gives
    the windows of any length from them."""

    _pow: np.ndarray = _powers(BASE, 0)
    _inv: np.ndarray = _powers(BASE_INV, 0)

    def __init__(self, ids: np.ndarray):
        x = np.asarray(ids).astype(np.uint64, copy=False)
        t = x.shape[0]
        if WindowHasher._pow.shape[0] < t + 1:  # grown once, shared by every later array
            WindowHasher._pow = _powers(BASE, t + 1)
            WindowHasher._inv = _powers(BASE_INV, t + 1)
        self.size = t
        with np.errstate(over="ignore"):
            self._prefix = np.zeros(t + 1, dtype=np.uint64)
            np.cumsum(x * WindowHasher._inv[:t], out=self._prefix[1:])
        self._zeros = np.zeros(t + 1, dtype=np.int32 if t < 2**31 else np.int64)
        np.cumsum(x == 0, out=self._zeros[1:])

    def hashes(self, n: int, bits: int = 64) -> np.ndarray:
        """uint64 (W,): the hashes of the separator-free windows of ``n`` ids, in order of position."""
        t = self.size
        if n < 1 or t < n:
            return np.empty(0, np.uint64)
        with np.errstate(over="ignore"):
            h = (self._prefix[n:] - self._prefix[:-n]) * WindowHasher._pow[n - 1 : t]
            h = mix64(h)
        h = h[self._zeros[n:] == self._zeros[:-n]]
        if bits < 64:
            h &= np.uint64((1 << bits) - 1)
        return h
