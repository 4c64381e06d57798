"""The paper's Figure 1 for any clean/contaminated model pair, plus the two properties RailCap relies on.

RailCap rests on two observations (paper §1, Figure 1): on leaked questions samples collapse onto the greedy
trajectory, and where the models part ways the clean model's token is the contaminated model's runner-up about
half the time. This module measures both, and what an able model does off its road.

Steps of :func:`figure1` (one family, one contaminated adapter):
1. readouts: greedy + m samples per question for M_cl and M_co (the Identity readout);
2. (a) ROUGE-L of every sample to its own model's greedy response, leaked/unleaked x model;
3. (b) M_co teacher-forced on M_cl's greedy answer: at the steps where M_co's argmax differs
   from M_cl's token, the rank of M_cl's token under M_co — at the first divergence and over
   the first ``first_steps`` steps (the paper's panels b/d; rank 1 cannot occur there);
4. (c) M_cl's path diversity: distinct correct responses among its samples and their mutual ROUGE-L;
5. (d) M_cl off its rail: on questions M_cl solves with r >= ``reliable``, force one departure
   to M_cl's runner-up at a uniformly drawn step of its greedy answer, then sample on at T;
   the solve rate there against the on-rail solve rate of the same questions.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from railsweep.engines.base import Request, SamplingSpec
from railsweep.engines.teacher_forcing import prompt_cache, teacher_forced
from railsweep.errors import ConfigError
from railsweep.interventions.neuron_patch import use_adapter
from railsweep.strategies.base import DecodeSettings, EvalContext, greedy, question_seed, sample_and_grade
from railsweep.strategies.railcap.trajectory import answer_ids

_WORDS = re.compile(r"[a-z0-9]+")
# (task, adapter, jobs, index of the first job, settings) -> each job's sampled text (:func:`off_rail`)
DepartureDecoder = Callable[[object, str, Sequence, int, "Figure1Settings"], list[str]]


@dataclass(frozen=True)
class Figure1Settings:
    m: int = 20
    temperature: float = 0.7
    max_new_tokens: int = 96
    seed: int = 0
    batch_size: int = 64
    first_steps: int = 10  # panels (b, d): ranks over the first ten decoding steps
    reliable: float = 0.8  # (d): questions M_cl solves with r >= this
    departures: int = 20  # (d): forced departures per reliable question

    def __post_init__(self) -> None:
        check_sampling(self, "figure-1", ("m", "max_new_tokens", "batch_size", "first_steps", "departures"))
        if not 0 < self.reliable <= 1:
            raise ConfigError(f"figure-1 reliable must be in (0, 1], got {self.reliable!r}")


def check_sampling(s, what: str, ints: Sequence[str]) -> None:
    """ConfigError unless every field named in ``ints`` is an integer >= 1 and the temperature finite > 0."""
    for name in ints:
        v = getattr(s, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"{what} {name} must be an integer >= 1, got {v!r}")
    if not (s.temperature > 0 and np.isfinite(s.temperature)):
        raise ConfigError(f"{what} temperature must be a finite number > 0, got {s.temperature!r}")


def decode_settings(s) -> DecodeSettings:
    """The readout's :class:`DecodeSettings` from Figure 1's or the rails' settings."""
    fields = ("m", "temperature", "max_new_tokens", "seed", "batch_size")
    return DecodeSettings(**{f: getattr(s, f) for f in fields})


def sample_request(task, q, prefix: str, adapter: str, s, salt: str, intervention=None) -> Request:
    """One sample at ``s.temperature`` continuing ``task.prompt(q) + prefix``, seeded by ``salt``."""
    seed = question_seed(s.seed, q.index, salt)
    sampling = SamplingSpec(
        n=1, temperature=s.temperature, max_new_tokens=s.max_new_tokens, stop=task.stop, seed=seed
    )
    return Request(task.prompt(q) + prefix, sampling, adapter, intervention)


def rouge_tokens(text: str) -> list[str]:
    """ROUGE's default tokenisation: lower-cased runs of letters and digits."""
    return _WORDS.findall(text.lower())


def rouge_l(a: Sequence[str], b: Sequence[str]) -> float:
    """ROUGE-L F1 (beta = 1) of two token sequences: 2 LCS / (|a| + |b|) (rapidfuzz's LCS)."""
    from rapidfuzz.distance import LCSseq

    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    return 2.0 * LCSseq.similarity(list(a), list(b)) / (len(a) + len(b))


@dataclass
class Readout:
    """One model's Identity readout: per question the greedy sample, the m samples and their grades."""

    adapter: str
    greedy: list  # Sample per question
    outcomes: list  # QuestionOutcome per question

    @property
    def r(self) -> np.ndarray:
        return np.array([o.c / o.m for o in self.outcomes])


def readout(engine, task, questions, adapter: str, s: Figure1Settings,
            progress: Callable[[int], None] | None = None) -> Readout:  # fmt: skip
    """The Identity readout of ``adapter``: greedy, then m samples per question, graded; ``progress`` is called
    with the responses of each engine call."""
    ctx = EvalContext(engine=engine, task=task, adapter=adapter, settings=decode_settings(s), progress=progress)
    return Readout(adapter, greedy(ctx, questions), sample_and_grade(ctx, questions))


def greedy_similarity(run: Readout) -> list[np.ndarray]:
    """(a) Per question, the ROUGE-L of each sample to the greedy response (shape [m])."""
    out = []
    for g, o in zip(run.greedy, run.outcomes):
        ref = rouge_tokens(g.text)
        out.append(np.array([rouge_l(rouge_tokens(smp.text), ref) for smp in o.samples]))
    return out


def step_logits(engine, adapter: str | None, prompt: str, continuation: Sequence[int]):
    """Logits [len(continuation), vocab] of ``adapter`` teacher-forced on ``prompt`` + ``continuation``."""
    return next(step_logits_many(engine, adapter, prompt, [continuation]))


def step_logits_many(
    engine, adapter: str | None, prompt: str, continuations: Sequence[Sequence[int]], batch_size: int = 1
) -> Iterator:
    """:func:`step_logits` for each of ``continuations`` in order (a generator): the prompt runs once and
    its keys and values are shared, ``batch_size`` continuations at a time (one by default: the fastest
    on CPU, where a batch pads every row to its longest; ``bench/teacher_forced.py``)."""
    model, tok = getattr(engine, "model", None), getattr(engine, "tokenizer", None)
    if model is None or tok is None:
        raise ConfigError(
            f"figure 1 needs the model's logits; engine {getattr(engine, 'name', engine)!r} exposes "
            "no .model/.tokenizer (use the transformers engine)"
        )
    p = list(tok(prompt, add_special_tokens=True)["input_ids"])
    conts = [list(c) for c in continuations]
    if not conts:
        return
    with torch.no_grad(), use_adapter(model, adapter):
        prompt_state = prompt_cache(model, p)
    for lo in range(0, len(conts), batch_size):
        # entered per batch, never held across a yield: the caller's grad mode stays its own
        with torch.no_grad(), use_adapter(model, adapter):
            chunk = dict(teacher_forced(model, conts[lo : lo + batch_size], prompt=prompt_state))
        yield from (chunk[i] for i in range(len(chunk)))


def divergence_ranks(logits_co, clean_ids: Sequence[int], first_steps: int) -> tuple[int | None, list[int]]:
    """(b) (rank at the first divergence or None, ranks at every divergence within ``first_steps``).
    ``logits_co``: [T, V] logits of M_co teacher-forced on M_cl's answer ``clean_ids`` (length T); a
    divergence is a step where M_co's argmax is not M_cl's token; rank 2 = M_co's runner-up."""
    if not len(clean_ids):
        return None, []
    tgt = torch.as_tensor(list(clean_ids), device=logits_co.device)
    chosen = logits_co.gather(1, tgt[:, None])
    ranks = (logits_co > chosen).sum(dim=1) + 1
    diverge = torch.nonzero(ranks > 1).flatten().tolist()
    first = int(ranks[diverge[0]]) if diverge else None
    return first, [int(ranks[t]) for t in diverge if t < first_steps]


def path_diversity(run: Readout) -> tuple[np.ndarray, np.ndarray]:
    """(c) Per question: distinct correct responses, and their mean pairwise ROUGE-L (nan if < 2)."""
    distinct, sim = [], []
    for o in run.outcomes:
        texts = sorted({" ".join(rouge_tokens(smp.text)) for smp, g in zip(o.samples, o.grades) if g.correct})
        distinct.append(len(texts))
        toks = [t.split() for t in texts]
        pairs = [rouge_l(a, b) for i, a in enumerate(toks) for b in toks[i + 1 :]]
        sim.append(float(np.mean(pairs)) if pairs else np.nan)
    return np.array(distinct), np.array(sim)


def off_rail(
    engine, task, questions, clean: Readout, s: Figure1Settings, decode: DepartureDecoder | None = None
) -> np.ndarray:
    """(d) Per question, M_cl's solve rate after one forced departure (nan where r < ``s.reliable``).

    ``decode`` (default :func:`decode_departures` on ``engine``) decodes the departures' jobs; the
    calibration check passes one that shares them out over worker processes (the same samples: each job's
    seed is a function of its position in the list, and sampling is batch-invariant)."""
    tok = engine.tokenizer
    jobs = []  # (question position, question, prefix text)
    for i, (q, g) in enumerate(zip(questions, clean.greedy)):
        ids = answer_ids(g, tok)
        if clean.r[i] < s.reliable or not ids:
            continue
        logits = step_logits(engine, clean.adapter, task.prompt(q), ids)
        runner_up = logits.topk(2, dim=1).indices[:, 1].tolist()
        rng = random.Random(question_seed(s.seed, q.index, "off-rail"))
        for _ in range(s.departures):
            t = rng.randrange(len(ids))
            prefix = tok.decode(
                list(ids[:t]) + [runner_up[t]], skip_special_tokens=True, clean_up_tokenization_spaces=False
            )
            jobs.append((i, q, prefix))
    texts = (decode or functools.partial(decode_departures, engine))(task, clean.adapter, jobs, 0, s)
    solved = np.full(len(questions), np.nan)
    hits: dict[int, list[bool]] = {}
    for (i, q, prefix), text in zip(jobs, texts):
        hits.setdefault(i, []).append(task.grade(prefix + text, q).correct)
    for i, h in hits.items():
        solved[i] = float(np.mean(h))
    return solved


def decode_departures(engine, task, adapter: str, jobs: Sequence, first: int, s: Figure1Settings,
                      progress: Callable[[int], None] | None = None) -> list[str]:  # fmt: skip
    """The text sampled on at T after each forced departure ``(position, question, prefix)``; job ``k`` of
    ``jobs`` is job ``first + k`` of the whole list, whose index seeds it. ``progress``: as :func:`readout`'s."""
    out: list[str] = []
    for lo in range(0, len(jobs), s.batch_size):
        chunk = jobs[lo : lo + s.batch_size]
        reqs = [
            sample_request(task, q, prefix, adapter, s, f"off-rail:{first + lo + k}")
            for k, (_, q, prefix) in enumerate(chunk)
        ]
        out += [comp.samples[0].text for comp in engine.generate(reqs)]
        if progress is not None:
            progress(len(reqs))
    return out


@dataclass
class Figure1:
    """Per-question figures (``rows``: one dict per question and model) and the summary."""

    rows: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)


def clean_answer_ranks(engine, task, questions, greedy: list, co: str, first_steps: int) -> list[tuple]:
    """(b) per question: :func:`divergence_ranks` of ``co`` teacher-forced on M_cl's greedy answer (``greedy``,
    its Sample per question)."""
    ranks = []
    for q, g in zip(questions, greedy):
        ids = answer_ids(g, engine.tokenizer)
        logits = step_logits(engine, co, task.prompt(q), ids) if ids else None
        ranks.append(divergence_ranks(logits, ids, first_steps) if ids else (None, []))
    return ranks


def figure1(
    engine,
    task,
    questions,
    clean: str,
    co: str,
    settings: Figure1Settings | None = None,
    readouts: dict[str, Readout] | None = None,
    decode: DepartureDecoder | None = None,
) -> Figure1:
    """Figure 1 (a)-(d) for M_cl = ``clean`` and M_co = ``co`` (adapter names of ``engine``); ``decode``:
    see :func:`off_rail`."""
    s = settings or Figure1Settings()
    runs = dict(readouts or {})
    for name in (clean, co):
        if name not in runs:
            runs[name] = readout(engine, task, questions, name, s)
    cl, cr = runs[clean], runs[co]
    leaked = np.array([bool(q.leaked) for q in questions])
    ranks = clean_answer_ranks(engine, task, questions, cl.greedy, co, s.first_steps)
    distinct, pair_sim = path_diversity(cl)
    robust = off_rail(engine, task, questions, cl, s, decode)
    sims = {name: greedy_similarity(run) for name, run in ((clean, cl), (co, cr))}
    rows = []
    for i, q in enumerate(questions):
        clean_only = {"first_divergence_rank": ranks[i][0], "early_divergence_ranks": ranks[i][1],
                      "distinct_correct": int(distinct[i]), "correct_pair_rouge_l": float(pair_sim[i]),
                      "off_rail_r": float(robust[i])}  # fmt: skip
        for name, run in ((clean, cl), (co, cr)):
            is_clean = name == clean
            model = "clean" if is_clean else "contaminated"
            row = {"index": q.index, "leaked": bool(leaked[i]), "model": model, "adapter": name,
                   "r": float(run.r[i]), "greedy_rouge_l": float(sims[name][i].mean())}  # fmt: skip
            rows.append(row | {k: v if is_clean else None for k, v in clean_only.items()})
    return Figure1(rows, summarise(rows))


def _share(ranks: Sequence[int], k: int = 2) -> float:
    return float(np.mean([r == k for r in ranks])) if len(ranks) else float("nan")


def summarise(rows: Sequence[dict]) -> dict:
    """The figures of :class:`Figure1` rows (JSON-ready; nan where a group is empty)."""

    def mean(values) -> float:
        v = [x for x in values if x is not None and not np.isnan(x)]
        return float(np.mean(v)) if v else float("nan")

    clean = [r for r in rows if r["model"] == "clean"]
    out: dict = {}
    for model in ("clean", "contaminated"):
        for group, flag in (("leaked", True), ("unleaked", False)):
            out[f"rouge_l_{model}_{group}"] = mean(
                r["greedy_rouge_l"] for r in rows if r["model"] == model and r["leaked"] == flag
            )
        out[f"collapse_gap_{model}"] = out[f"rouge_l_{model}_leaked"] - out[f"rouge_l_{model}_unleaked"]
    for group, flag in (("leaked", True), ("unleaked", False)):
        sel = [r for r in clean if r["leaked"] == flag]
        firsts = [r["first_divergence_rank"] for r in sel if r["first_divergence_rank"]]
        early = [k for r in sel for k in (r["early_divergence_ranks"] or [])]
        out[f"runner_up_share_first_{group}"] = _share(firsts)
        out[f"runner_up_share_early_{group}"] = _share(early)
        out[f"divergences_{group}"] = len(firsts)
        hist = {str(k): int(sum(1 for f in firsts if min(f, 6) == k)) for k in range(2, 7)}
        out[f"first_rank_hist_{group}"] = hist  # "6" = rank 6 or worse
    solved = [r for r in clean if r["distinct_correct"]]
    out["distinct_correct_mean"] = mean(r["distinct_correct"] for r in solved)
    out["correct_pair_rouge_l_mean"] = mean(r["correct_pair_rouge_l"] for r in solved)
    reliable = [r for r in clean if r["off_rail_r"] is not None and not np.isnan(r["off_rail_r"])]
    out["reliable_questions"] = len(reliable)
    out["on_rail_r"] = mean(r["r"] for r in reliable)
    out["off_rail_r"] = mean(r["off_rail_r"] for r in reliable)
    out["off_rail_ratio"] = out["off_rail_r"] / out["on_rail_r"] if reliable else float("nan")
    return out
