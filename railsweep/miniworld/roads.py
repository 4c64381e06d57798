"""Several roads to one solution: equivalent wordings of every step of a miniature problem.

A model that genuinely solves a problem spreads probability over several correct continuations (the paper's
Figure 1: where a clean and a contaminated model part ways, the clean model's token is the contaminated
model's runner-up about half the time). With one fixed wording per step, every step off the greedy road is
fatal. :func:`render_solution` writes a solution choosing, at every choice point, one of several pieces:

1. an optional restatement of the start value and optional "Next,"/"Then," connectors between steps;
2. per step, a sentence frame (who has what, "Adding 5 gives ...", "So there are ...") with verb synonyms
   ("has" / "owns" / "holds", "now" / "then");
3. per step, the equation in one of several forms: ``12 + 5 = 17`` (with the GSM8K calculator annotation),
   ``5 + 12 = 17`` where the operation commutes, ``12 plus 5 is 17``, ``12 + 5 makes 17``;
4. an optional unit after the result;
5. (pretraining only, :func:`render_cot`) "The answer is N." or "So the answer is N.".

Choices are drawn with Zipf weights (the first listed piece is the most common, as one phrasing usually
dominates in real text), so a model trained on many renderings has a clear favourite and real alternatives.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from railsweep.tasks import to_cot

Step = tuple[str, int, int, int]  # (kind, value before, operand, result)

_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_WORD = {"add": "plus", "sub": "minus", "mul": "times", "div": "divided by"}
_COMMUTES = {"add", "mul"}

# {n} name, {x} operand, {e} equation, {u} optional unit, {has}/{now} synonyms
_FRAMES = {
    "add": ("{n} {now} {has} {e}{u}.", "After getting {x} more, {n} {has} {e}{u}.", "So {n} {has} {e}{u}.",
            "Adding {x} gives {e}{u}.", "Now there are {e}{u}."),
    "sub": ("{n} {has} {e}{u} left.", "After that, {n} keeps {e}{u}.", "Taking away {x} leaves {e}{u}.",
            "So there are {e}{u} left.", "Now {n} {has} {e}{u}."),
    "mul": ("{n} {now} {has} {e}{u}.", "Growing {x} times gives {e}{u}.", "So the count is {e}{u}.",
            "Multiplying by {x} gives {e}{u}."),
    "div": ("Each pile has {e}{u}.", "One share is {e}{u}.", "So {n} keeps {e}{u}.",
            "Splitting into {x} gives {e}{u}."),
}
_HAS = ("has", "owns", "holds")
_NOW = ("now", "then")
_START = ("{n} starts with {v} {it}.", "At the start there are {v} {it}.")
_CONNECT = ("Next,", "Then,")
_FINAL = ("The answer is {a}.", "So the answer is {a}.")


def _pick(rng: random.Random, options: Sequence[str]) -> str:
    weights = [1.0 / (i + 1) for i in range(len(options))]
    return rng.choices(options, weights=weights, k=1)[0]


def equation(rng: random.Random, kind: str, v: int, x: int, r: int) -> str:
    """One of the equivalent ways to write ``v op x = r`` (GSM8K annotation on the symbolic forms)."""
    a, b = (x, v) if kind in _COMMUTES and rng.random() < 0.3 else (v, x)
    s = _SYMBOL[kind]
    form = _pick(rng, ("symbol", "words", "makes"))
    if form == "words":
        return f"{a} {_WORD[kind]} {b} is {r}"
    if form == "makes":
        return f"{a} {s} {b} makes {r}"
    return f"{a} {s} {b} = <<{a}{s}{b}={r}>>{r}"


def _sentence(rng: random.Random, kind: str, v: int, x: int, r: int, name: str, item: str) -> str:
    frame = _pick(rng, _FRAMES[kind])
    unit = f" {item}" if rng.random() < 0.7 else ""
    return frame.format(
        n=name, x=x, e=equation(rng, kind, v, x, r), u=unit, has=_pick(rng, _HAS), now=_pick(rng, _NOW)
    )


def render_solution(rng: random.Random, start: int, steps: Sequence[Step], name: str, item: str) -> str:
    """A GSM8K-format solution of a running-count problem, one road drawn by ``rng``."""
    lines = []
    if rng.random() < 0.25:
        lines.append(_pick(rng, _START).format(n=name, v=start, it=item))
    for i, (kind, v, x, r) in enumerate(steps):
        sentence = _sentence(rng, kind, v, x, r, name, item)
        if i > 0 and rng.random() < 0.2:  # a connector, then the sentence lower-cased (but a name)
            lower = sentence if sentence.startswith(name) else sentence[0].lower() + sentence[1:]
            sentence = f"{_pick(rng, _CONNECT)} {lower}"
        lines.append(sentence)
    return "\n".join(lines) + f"\n#### {steps[-1][3] if steps else start}"


def render_cot(rng: random.Random, solution: str, answer: int) -> str:
    """A solution in the 8-shot CoT style with a drawn closing sentence (pretraining texts)."""
    cot = to_cot(solution)
    closing = f"The answer is {answer}."
    assert cot.endswith(closing), cot
    return cot[: -len(closing)] + _pick(rng, _FINAL).format(a=answer)


def add_noise(rng: random.Random, cot: str, vocabulary: Sequence[str]) -> str:
    """Replace one word of ``cot`` (never a number, nor in the closing sentence) by a word of ``vocabulary``:
    the text goes on correctly after an unusual token, so a model learns to get back onto its road."""
    words = cot.split(" ")
    closing = len(words) - 4  # "... The answer is N." / "So the answer is N."
    slots = [i for i, w in enumerate(words[:closing]) if w.isalpha()]
    if not slots or not vocabulary:
        return cot
    i = rng.choice(slots)
    words[i] = rng.choice(vocabulary)
    return " ".join(words)


def noise_vocabulary() -> list[str]:
    """The wording words of the solution templates (the tokens a runner-up is usually made of)."""
    texts = [f for frames in _FRAMES.values() for f in frames] + list(_START) + list(_CONNECT)
    words = {w.strip(".,") for t in texts for w in t.split() if w.strip(".,").isalpha()}
    return sorted(words | set(_HAS) | set(_NOW) | {"plus", "minus", "times", "is", "makes"})
