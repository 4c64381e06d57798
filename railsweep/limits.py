"""Upper bounds on sizes a user can ask for, derived from this machine's memory or a dtype: a value that would
exhaust memory (``--m 100000000000``) or overflow is refused, before anything is allocated, with the estimate (a
lower bound, so a refused value could never have run) and the limit. Standard library only: the CLI's argument
types use it before torch is imported.
"""

from __future__ import annotations

import contextlib
import os
import resource
from pathlib import Path

from railsweep.errors import ConfigError

INT64_MAX = 2**63 - 1
SEED_MAX = 2**32 - 1  # numpy's legacy seeds and most samplers' seed words are 32-bit
TOKEN_ID_BYTES = 8  # int64 token ids
_GB = 1e9


def memory_limit_bytes() -> int:
    """What this process may hold: the smallest of physical memory, ``RLIMIT_AS`` and the cgroup limit."""
    limits = [os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")]
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:
        limits.append(soft)
    with contextlib.suppress(OSError, ValueError):
        text = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if text != "max":
            limits.append(int(text))
    return min(limits)


def check_fits(what: str, nbytes: float, of: str) -> None:
    """ConfigError unless ``nbytes`` (what ``what`` needs at the least) fits in this machine's memory.

    ``what`` names the value(s) ("--m 100000000000"); ``of`` says what the bytes hold ("token ids").
    """
    limit = memory_limit_bytes()
    if nbytes > limit:
        raise ConfigError(
            f"{what} needs ~{nbytes / _GB:,.0f} GB of {of}; the limit on this machine is {limit / _GB:,.1f} GB"
        )


def check_decode_memory(
    m: int, max_new_tokens: int, flags: str = "--m {m} with --max-new-tokens {t}"
) -> None:
    """One question's m samples of up to max_new_tokens token ids each must fit in memory."""
    check_fits(flags.format(m=m, t=max_new_tokens), m * max_new_tokens * TOKEN_ID_BYTES, "token ids")


def check_bootstrap_memory(n_boot: int, n_questions: int, flag: str = "--n-boot") -> None:
    """The stratified bootstrap holds an (n_boot, N) int64 index matrix and one float64 value per entry."""
    check_fits(f"{flag} {n_boot} over {n_questions} questions", n_boot * n_questions * 16,
               "bootstrap indices")  # fmt: skip
