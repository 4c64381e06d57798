"""Pure token-position arithmetic behind ``railsweep rails``: token classes, rail look-ups, caps.

No model here, so each function is pinned by a test on hand-built sequences: :func:`position_class`
(is a step wording, a number, or the final answer?), :func:`rail_targets` / :func:`exposed_steps` (at
which steps RailCap, method.md §3 Algorithm 1, finds its last n tokens in the rail's n-gram index H),
:func:`caps_and_departures` (where the cap fired, and where the sampled token then left the rail).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

WORDING, NUMBER, FINAL = "wording", "number", "final answer"
CLASSES = (WORDING, NUMBER, FINAL)  # in order of consequence: a run's class is its worst position's
_DIGIT = re.compile(r"\d")
# the text before a final-answer token: the grader's marker, then possibly the number's earlier tokens
_FINAL_PREFIX = re.compile(r"the answer is\s*:?\s*\$?\s*[\d,]*$", re.IGNORECASE)


def position_class(prefix: str, piece: str) -> str:
    """The class of a token whose text is ``piece``, emitted after the response text ``prefix``: final
    answer, a token with a digit right after "The answer is" (or continuing that number); number, any other
    token with a digit; wording, everything else (words, operators, punctuation)."""
    if not _DIGIT.search(piece):
        return WORDING
    return FINAL if _FINAL_PREFIX.search(prefix) else NUMBER


def run_class(classes: Sequence[str]) -> str | None:
    """The most consequential class among a run's forced positions (None when no step was forced)."""
    return max(classes, key=CLASSES.index) if classes else None


def rail_index(rail: Sequence[int], n: int) -> dict[tuple[int, ...], int]:
    """RailCap's H: every n-gram of ``rail`` that has a successor, mapped to the successor of its LAST
    occurrence (method.md §3, ``successor="last"``)."""
    return {tuple(rail[k : k + n]): rail[k + n] for k in range(len(rail) - n)}


def rail_targets(response: Sequence[int], rail: Sequence[int], n: int) -> list[int | None]:
    """Per step t of ``response``: H[last n tokens before t], the token RailCap would cap, or None."""
    h = rail_index(rail, n)
    return [h.get(tuple(response[t - n : t])) if t >= n else None for t in range(len(response))]


def exposed_steps(response: Sequence[int], rail: Sequence[int], n: int) -> int:
    """How many steps of ``response`` continue an n-gram of ``rail`` (where RailCap would look up a cap)."""
    return sum(x is not None for x in rail_targets(response, rail, n))


def caps_and_departures(
    logits: np.ndarray, response: Sequence[int], targets: Sequence[int | None]
) -> tuple[int, int]:
    """(caps, departures) of one RailCap sample in cap mode. ``logits[T, V]``: the unmodified logits at
    each of the T steps of ``response`` (teacher-forced); ``targets``: its :func:`rail_targets`. The cap fires
    at a step whose target is the unique argmax (otherwise ``min(l[x], v2)`` changes nothing); a departure is
    a fired step whose sampled token is not the target."""
    caps = departures = 0
    for t, x in enumerate(targets):
        if x is None:
            continue
        others = np.delete(logits[t], x)
        if logits[t, x] > others.max():
            caps += 1
            departures += int(response[t] != x)
    return caps, departures
