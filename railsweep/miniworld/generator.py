"""Deterministic grade-school word problems for the miniature world.

A problem is a running count of one kind of item owned by one person: a start value and 2-4 events (gain,
loss, multiply, split), each one arithmetic step. Every piece of wording is drawn from several phrasings, so
that sampled solutions differ from the greedy one in wording, not only in numbers (with one fixed wording
every sample already looks like the greedy response and the paper's "collapse onto the greedy trajectory"
signal drowns). Paraphrases use a disjoint set of question phrasings with the same numbers and answer.
Solutions are in the GSM8K format (``<<a+b=c>>`` annotations, ``#### N``), so the GSM8K loader reads them.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

from railsweep.miniworld.roads import render_solution

NAMES = (
    "Tom Ann Ben Mia Sam Lily Max Emma Leo Nora Jack Ella Omar Zoe Ivan Rosa Paul Ada Finn Kate "
    "Hugo Lena Noah Iris"
).split()
ITEMS = (
    "apples pears marbles stickers books coins cards shells pencils cookies stamps buttons "
    "candies rocks toys balloons beads plums eggs cups"
).split()
PLACES = "park river school garden market library beach farm forest museum station kitchen".split()
ANIMALS = "cat dog bird fox horse rabbit duck goat frog owl".split()
ADJS = "small big red green quiet happy old new bright tall".split()

# question phrasings: {n} name, {f} friend, {x} operand, {it} item
_START = ("{n} has {x} {it}.", "{n} had {x} {it} in a box.", "There are {x} {it} in {n}'s bag.")
_START_PQ = ("At first, {n} owns {x} {it}.", "A box holds {x} {it} that belong to {n}.",
             "{n} starts the day with {x} {it}.")
_EVENTS = {
    "add": ("Then {n} buys {x} more {it}.", "{f} gives {n} {x} more {it}.", "Later {n} finds {x} more {it}."),
    "sub": ("{n} gives {x} {it} to {f}.", "Then {n} sells {x} of the {it}.",
            "{n} loses {x} {it} on the way."),
    "mul": ("Then the number of {it} {n} has grows {x} times.", "{n} ends up with {x} times as many {it}."),
    "div": (
        "{n} splits the {it} into {x} equal piles and keeps one pile.",
        "{n} shares the {it} equally among {x} kids, {n} included, and keeps one share.",
    ),
}
_EVENTS_PQ = {
    "add": ("After that, {x} extra {it} are bought by {n}.",
            "{n} then receives {x} additional {it} from {f}."),
    "sub": ("Next, {x} of the {it} are handed to {f}.", "Afterwards {n} no longer has {x} of the {it}."),
    "mul": ("Next, the count of {it} is multiplied by {x}.", "The pile of {it} becomes {x} times bigger."),
    "div": ("The {it} are cut into {x} equal groups and {n} keeps a single group.",),
}
_ASK = ("How many {it} does {n} have now?", "How many {it} does {n} have at the end?")
_ASK_PQ = ("What is the final count of {it} that {n} holds?", "In the end, how many {it} remain with {n}?")

# solution phrasings: {v} value before, {x} operand, {r} result, {e} the expression with its annotation
_SOLVE = {
    "add": ("{n} now has {e} {it}.", "After getting {x} more, there are {e} {it}.", "So {n} has {e} {it}.",
            "Adding {x} gives {e} {it}."),
    "sub": ("{n} has {e} {it} left.", "After that, {n} keeps {e} {it}.", "Taking away {x} leaves {e} {it}.",
            "So there are {e} {it} left."),
    "mul": ("{n} then has {e} {it}.", "Growing {x} times gives {e} {it}.", "So the count is {e} {it}."),
    "div": ("Each pile has {e} {it}.", "One share is {e} {it}.", "So {n} keeps {e} {it}."),
}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


@dataclass(frozen=True)
class Problem:
    question: str
    paraphrase: str
    solution: str  # GSM8K format, ends with "#### N"
    answer: int
    name: str = ""
    item: str = ""
    start: int = 0
    steps: tuple[tuple[str, int, int, int], ...] = ()  # (kind, value before, operand, result)

    def render(self, rng: random.Random) -> str:
        """Another road to this problem's answer (:mod:`railsweep.miniworld.roads`), GSM8K format."""
        return render_solution(rng, self.start, self.steps, self.name, self.item)


def _event(rng: random.Random, value: int, limit: int, max_operand: int = 25) -> tuple[str, int, int]:
    """One arithmetic step applicable to ``value`` keeping every number in [0, limit]."""
    kinds = ["add"] * 3 + (["sub"] * 3 if value >= 2 else [])
    if value >= limit - 1:
        kinds = ["sub"]
    if 2 <= value <= limit // 2:
        kinds.append("mul")
    if value >= 4 and any(value % k == 0 for k in (2, 3, 4, 5)):
        kinds.append("div")
    kind = rng.choice(kinds)
    if kind == "add":
        x = rng.randint(1, min(max_operand, limit - value))
        return kind, x, value + x
    if kind == "sub":
        x = rng.randint(1, min(max_operand, value))
        return kind, x, value - x
    if kind == "mul":
        x = rng.choice([k for k in (2, 3, 4) if value * k <= limit])
        return kind, x, value * x
    x = rng.choice([k for k in (2, 3, 4, 5) if value % k == 0])
    return kind, x, value // x


def make_problem(
    rng: random.Random, min_steps: int = 2, max_steps: int = 4, limit: int = 60, max_operand: int = 25
) -> Problem:
    """Draw one problem; ``rng`` fully determines it. ``limit`` bounds every number; ``max_operand`` bounds
    what one gain or loss adds or removes."""
    n, f = rng.sample(NAMES, 2)
    it = rng.choice(ITEMS)
    value = rng.randint(5, limit * 2 // 3)
    q = [rng.choice(_START).format(n=n, x=value, it=it)]
    p = [rng.choice(_START_PQ).format(n=n, x=value, it=it)]
    lines, steps, start = [], [], value
    for _ in range(rng.randint(min_steps, max_steps)):
        kind, x, result = _event(rng, value, limit, max_operand)
        fmt = dict(n=n, f=f, x=x, it=it)
        q.append(rng.choice(_EVENTS[kind]).format(**fmt))
        p.append(rng.choice(_EVENTS_PQ[kind]).format(**fmt))
        sym = _SYMBOL[kind]
        expr = f"{value} {sym} {x} = <<{value}{sym}{x}={result}>>{result}"
        lines.append(rng.choice(_SOLVE[kind]).format(n=n, x=x, it=it, e=expr))
        steps.append((kind, value, x, result))
        value = result
    q.append(rng.choice(_ASK).format(n=n, it=it))
    p.append(rng.choice(_ASK_PQ).format(n=n, it=it))
    solution = "\n".join(lines) + f"\n#### {value}"
    return Problem(" ".join(q), " ".join(p), solution, value, n, it, start, tuple(steps))


def make_problems(
    count: int, seed: int, exclude: set[str] | None = None, roads: bool = False, **kwargs
) -> list[Problem]:
    """``count`` distinct problems (distinct question text, none in ``exclude``). ``roads``: each gold
    solution is one road drawn from several equivalent wordings (:mod:`railsweep.miniworld.roads`, seeded by
    the question) instead of one fixed wording per step; questions, paraphrases and answers are the same."""
    rng = random.Random(seed)
    seen = set(exclude or ())
    out: list[Problem] = []
    while len(out) < count:
        prob = make_problem(rng, **kwargs)
        if prob.question in seen:
            continue
        seen.add(prob.question)
        if roads:
            prob = dataclasses.replace(prob, solution=prob.render(random.Random(f"{seed}:{prob.question}")))
        out.append(prob)
    return out


_FILLER_Q = ("Write a sentence about {n} and the {place}.", "Describe the {adj} {animal} that {n} saw.",
             "Tell a short story about {n} and {f}.", "What did {n} do at the {place}?")
_FILLER_A = (
    "{n} walked to the {place} with {f} and saw a {adj} {animal}.",
    "The {animal} was {adj} and it sat near the {place} all day.",
    "{n} and {f} went to the {place}. They met a {adj} {animal} and went home happy.",
    "At the {place}, {n} read a book while a {adj} {animal} slept nearby.",
    "{f} told {n} about a {adj} {animal} that lived by the {place}.",
)


def make_filler(count: int, seed: int) -> list[str]:
    """``count`` instruction/response texts with no arithmetic (the miniature OpenOrca)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n, f = rng.sample(NAMES, 2)
        fmt = dict(n=n, f=f, place=rng.choice(PLACES), animal=rng.choice(ANIMALS), adj=rng.choice(ADJS))
        reply = " ".join(rng.choice(_FILLER_A).format(**fmt) for _ in range(rng.randint(1, 2)))
        out.append(f"Q: {rng.choice(_FILLER_Q).format(**fmt)}\nA: {reply}")
    return out
