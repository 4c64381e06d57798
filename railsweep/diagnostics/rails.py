"""Where RailCap acts on a model pair (``railsweep rails``).

Whether RailCap (method.md §3) restores or removes ability depends on four things measured here: M_cl's
recovery when pushed to its runner-up at k steps, by the kind of token (wording, number, final answer); how often
M_cl's correct answers run along M_co's greedy answer (exposure); RailCap on M_cl with its own greedy rail; and
the caps per M_co sample and how many leave the rail.

Steps of :func:`rails`:
1. M_cl's Identity readout (greedy + m samples) and RailCap on M_cl with its own greedy rail;
2. RailCap on M_co (its greedy answer is the rail, as in the sweeps);
3. exposure of each correct M_cl sample to M_co's rail;
4. per M_co RailCap sample: caps from the engine's trigger count, caps and departures replayed on M_co's
   teacher-forced logits;
5. on questions M_cl solves at least once: ``runs`` decodes per k with the runner-up forced at k steps drawn
   uniformly from the length of M_cl's greedy answer, graded and classified;
6. the summary, every figure with a 95 % interval (Wilson for a rate, a bootstrap over questions otherwise).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from railsweep.diagnostics.figure1 import (
    check_sampling,
    decode_settings,
    readout,
    sample_request,
    step_logits_many,
)
from railsweep.diagnostics.positions import (
    CLASSES,
    caps_and_departures,
    exposed_steps,
    position_class,
    rail_targets,
    run_class,
)
from railsweep.errors import ConfigError
from railsweep.interventions.force_runner_up import ForceRunnerUpSpec
from railsweep.interventions.railcap import DEFAULT_N
from railsweep.metrics.bootstrap import across_strata_indices, percentile_ci
from railsweep.strategies.base import EvalContext, question_seed
from railsweep.strategies.railcap.strategy import RailCap, RailCapConfig
from railsweep.strategies.railcap.trajectory import answer_ids
from railsweep.tasks.base import Question


@dataclass(frozen=True)
class RailsSettings:
    m: int = 10  # samples per question (Identity and RailCap readouts)
    temperature: float = 0.7
    max_new_tokens: int = 96
    seed: int = 0
    batch_size: int = 64
    n: int = DEFAULT_N  # RailCap's n-gram length (exposure uses the same n)
    ks: tuple[int, ...] = (1, 2, 4)  # forced departures per decode
    runs: int = 10  # forced decodes per question and k
    n_boot: int = 1000

    def __post_init__(self) -> None:
        check_sampling(self, "rails", ("m", "max_new_tokens", "batch_size", "n", "runs", "n_boot"))
        if not self.ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in self.ks):
            raise ConfigError(f"rails ks must be integers >= 1, got {self.ks!r}")


@dataclass
class Rails:
    """``questions``: one row per question; ``runs``: one per forced decode; ``samples``: one per
    RailCap sample of M_co; ``summary``: the figures with their intervals."""

    questions: list[dict] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)
    samples: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)


class Progress:
    """Logs each step's time and an ETA for the rest, counted in decoded responses: every readout
    decodes ``m + 1`` per question (greedy and samples), a forced run one; the rate is the one
    measured so far. The teacher-forced replays (one forward pass per sample) are timed, not estimated."""

    def __init__(self, n_questions: int, s: RailsSettings, log: Callable[[str], None] | None):
        self.log = log
        self.t0 = time.time()
        self.done = 0  # responses decoded so far
        self.forced = n_questions * len(s.ks) * s.runs  # forced runs: an upper bound until M_cl's readout
        self.total = 3 * n_questions * (s.m + 1) + self.forced  # Identity, RailCap on M_cl and on M_co, forced
        if log is not None:
            log(f"rails: {n_questions} questions, at most {self.total} responses to decode")

    def step(self, name: str, responses: int = 0, forced_jobs: int | None = None) -> None:
        self.done += responses
        if forced_jobs is not None:  # the exact number of forced runs, known once M_cl's readout is in
            self.total, self.forced = self.total - self.forced + forced_jobs, forced_jobs
        if self.log is None:
            return
        elapsed = time.time() - self.t0
        left = max(0, self.total - self.done)
        eta = f", eta {elapsed / self.done * left:.0f}s" if self.done else ""
        self.log(f"rails: {name} ({self.done}/{self.total} responses, {elapsed:.0f}s{eta})")


def rails(
    engine,
    task,
    questions: Sequence[Question],
    clean: str,
    co: str,
    s: RailsSettings,
    log: Callable[[str], None] | None = None,
    sink: Callable[[str, list[dict]], None] | None = None,
) -> Rails:
    """The four diagnostics for M_cl = ``clean`` and M_co = ``co`` (adapter names of ``engine``);
    ``log`` gets each step's progress and an ETA; ``sink(table, rows)`` gets each table's rows as
    soon as a step adds to them (``questions`` and ``samples`` once, ``runs`` after each batch)."""
    tok = engine.tokenizer
    railcap = RailCap(RailCapConfig(n=s.n))
    ctx_cl = EvalContext(engine=engine, task=task, adapter=clean, settings=decode_settings(s))
    ctx_co = EvalContext(engine=engine, task=task, adapter=co, settings=decode_settings(s))
    progress = Progress(len(questions), s, log)
    per_readout = len(questions) * (s.m + 1)
    ident = readout(engine, task, questions, clean, s)  # 1.
    jobs = _forced_jobs(questions, ident, s, tok)
    progress.step("M_cl readout", per_readout, forced_jobs=len(jobs))
    rc_cl = railcap.run(ctx_cl, questions)
    progress.step("RailCap on M_cl", per_readout)
    rc_co = railcap.run(ctx_co, questions)  # 2.
    progress.step("RailCap on M_co", per_readout)
    out = Rails()
    for i, q in enumerate(questions):
        rail = answer_ids(rc_co[i].greedy, tok)
        exposed = [  # 3.
            exposed_steps(answer_ids(smp, tok), rail, s.n)
            for smp, g in zip(ident.outcomes[i].samples, ident.outcomes[i].grades)
            if g.correct
        ]
        caps = _replay_caps(engine, co, task.prompt(q), rc_co[i].samples, rail, s.n)  # 4.
        for j, (smp, (c, d)) in enumerate(zip(rc_co[i].samples, caps)):
            out.samples.append(
                {"index": q.index, "sample": j, "triggers": smp.triggers, "caps": c, "departures": d}
            )
        out.questions.append(
            {"index": q.index, "leaked": bool(q.leaked), "r_clean": float(ident.r[i]),
             "r_clean_railcap": rc_cl[i].solve_prob, "r_co_railcap": rc_co[i].solve_prob,
             "correct_clean": len(exposed), "exposed_steps": int(sum(exposed)),
             "exposed_answers": int(sum(e > 0 for e in exposed))}
        )  # fmt: skip
    progress.step("caps replayed on M_co's logits")
    if sink is not None:
        sink("questions", out.questions)
        sink("samples", out.samples)
    runs_sink = None if sink is None else (lambda rows: sink("runs", rows))
    out.runs = forced_runs(engine, task, questions, ident, s, jobs, progress, runs_sink)  # 5.
    out.summary = summarise(out.questions, out.runs, out.samples, s)  # 6.
    return out


def _replay_caps(engine, co: str, prompt: str, samples, rail: list[int], n: int) -> list[tuple[int, int]]:
    """(caps, departures) per sample: the sample's RailCap targets checked against M_co's own logits."""
    targets = [rail_targets(smp.token_ids, rail, n) for smp in samples]
    hit = [j for j, t in enumerate(targets) if any(x is not None for x in t)]
    out = [(0, 0)] * len(samples)
    for j, logits in zip(hit, step_logits_many(engine, co, prompt, [samples[j].token_ids for j in hit])):
        out[j] = caps_and_departures(logits.cpu().numpy(), samples[j].token_ids, targets[j])
    return out


def _forced_jobs(questions: Sequence[Question], ident, s: RailsSettings, tok) -> list[tuple]:
    """(question position, k, run, forced steps) for every forced decode: questions M_cl solves at least once."""
    jobs = []
    for i, q in enumerate(questions):
        length = len(answer_ids(ident.greedy[i], tok))
        if ident.r[i] == 0 or length == 0:
            continue
        for k in s.ks:
            for j in range(s.runs):
                rng = random.Random(question_seed(s.seed, q.index, f"forced-steps:{k}:{j}"))
                jobs.append((i, k, j, tuple(sorted(rng.sample(range(length), min(k, length))))))
    return jobs


def forced_runs(
    engine,
    task,
    questions: Sequence[Question],
    ident,
    s: RailsSettings,
    jobs: list[tuple],
    progress: Progress,
    sink: Callable[[list[dict]], None] | None = None,
) -> list[dict]:
    """Step 5: one row per forced decode of M_cl (``correct``, its forced positions' classes); ``jobs``:
    :func:`_forced_jobs`. ``sink`` gets the rows so far after each batch."""
    rows = []
    for lo in range(0, len(jobs), s.batch_size):
        chunk = jobs[lo : lo + s.batch_size]
        reqs = [
            sample_request(
                task, questions[i], "", ident.adapter, s, f"forced-sample:{k}:{j}", ForceRunnerUpSpec(steps)
            )
            for i, k, j, steps in chunk
        ]
        samples = [comp.samples[0] for comp in engine.generate(reqs)]
        found = _classify(engine, ident.adapter, task, questions, chunk, samples)
        for (i, k, j, steps), smp, (classes, agree) in zip(chunk, samples, found):
            q = questions[i]
            rows.append(
                {"index": q.index, "k": k, "run": j, "steps": list(steps), "forced": smp.triggers,
                 "classes": classes, "class": run_class(classes), "runner_up_agrees": agree,
                 "correct": bool(task.grade(smp.text, q).correct), "r_clean": float(ident.r[i])}
            )  # fmt: skip
        progress.step(f"forced runs {lo + len(chunk)}/{len(jobs)}", len(chunk))
        if sink is not None:
            sink(rows)
    return rows


def _classify(engine, adapter: str, task, questions, chunk, samples) -> list[tuple[list[str], int]]:
    """Per forced decode of ``chunk``: the classes of the forced steps it reached (by the token M_cl
    would have emitted there), and at how many of them the emitted token is M_cl's teacher-forced
    runner-up (a consistency check). One teacher-forced pass per question, shared by its decodes."""
    out: list[tuple[list[str], int]] = [([], 0)] * len(chunk)
    by_question: dict[int, list[int]] = {}
    for pos, ((i, _, _, steps), smp) in enumerate(zip(chunk, samples)):
        if any(t < len(smp.token_ids) for t in steps):
            by_question.setdefault(i, []).append(pos)
    for i, members in by_question.items():
        conts = [samples[pos].token_ids for pos in members]
        for pos, logits in zip(members, step_logits_many(engine, adapter, task.prompt(questions[i]), conts)):
            top2 = logits.topk(2, dim=1).indices.tolist()
            out[pos] = _classes(engine.tokenizer, samples[pos].token_ids, chunk[pos][3], top2)
    return out


def _classes(tok, ids: list[int], steps, top2: list[list[int]]) -> tuple[list[str], int]:
    done = [t for t in steps if t < len(ids)]

    def text(x: list[int]) -> str:
        return tok.decode(x, skip_special_tokens=True, clean_up_tokenization_spaces=False)

    classes = []
    for t in done:
        prefix = text(ids[:t])
        classes.append(position_class(prefix, text(ids[:t] + [top2[t][0]])[len(prefix) :]))
    return classes, sum(ids[t] == top2[t][1] for t in done)


def _ratio(num, den, s: RailsSettings, salt: str) -> dict:
    """sum(num) / sum(den) over questions, with a percentile bootstrap over questions."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if den.sum() == 0:
        return {"value": float("nan"), "lo": float("nan"), "hi": float("nan")}
    rng = np.random.default_rng(question_seed(s.seed, 0, salt) % 2**32)

    idx = across_strata_indices(len(num), s.n_boot, rng)
    d = den[idx].sum(-1)
    ratios = num[idx].sum(-1)[d > 0] / d[d > 0]  # a resample without a denominator has no ratio: left out
    lo, hi = percentile_ci(ratios)
    return {"value": float(num.sum() / den.sum()), "lo": lo, "hi": hi}


def wilson(c: int, m: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of c successes in m trials (95 % by default); nan for m = 0."""
    if m == 0:
        return float("nan"), float("nan")
    p = c / m
    centre = (p + z * z / (2 * m)) / (1 + z * z / m)
    half = z * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / (1 + z * z / m)
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def _per_question(rows: Sequence[dict], index: Sequence[int], value) -> np.ndarray:
    pos = {q: i for i, q in enumerate(index)}
    out = np.zeros(len(index))
    for r in rows:
        out[pos[r["index"]]] += value(r)
    return out


def summarise(
    questions: Sequence[dict], runs: Sequence[dict], samples: Sequence[dict], s: RailsSettings
) -> dict:
    """The JSON-ready figures: recovery per k and class, exposure, RailCap on M_cl, caps and departures."""
    idx = [q["index"] for q in questions]
    settings = {"m": s.m, "n": s.n, "runs": s.runs, "ks": list(s.ks)}
    out: dict = {"questions": len(idx), "settings": settings, "recovery": {}}
    nan = float("nan")
    for k in s.ks:
        for cls in ("all", *CLASSES):
            sel = [r for r in runs if r["k"] == k and (cls == "all" or r["class"] == cls)]
            c = sum(r["correct"] for r in sel)
            lo, hi = wilson(c, len(sel))
            solved = _per_question(sel, idx, lambda r: float(r["correct"]))
            base = _per_question(sel, idx, lambda r: r["r_clean"])
            out["recovery"][f"k{k}_{cls}"] = {
                "runs": len(sel), "solve_rate": c / len(sel) if sel else nan, "solve_rate_lo": lo,
                "solve_rate_hi": hi, "unforced": float(base.sum() / len(sel)) if sel else nan,
                "kept": _ratio(solved, base, s, f"kept:{k}:{cls}"),
            }  # fmt: skip
    forced = [r for r in runs if r["forced"]]
    reach = [r["forced"] == len(r["steps"]) for r in runs]
    out["forced_runs_reaching_every_step"] = float(np.mean(reach)) if runs else nan
    n_forced = sum(len(r["classes"]) for r in forced)
    out["runner_up_agreement"] = sum(r["runner_up_agrees"] for r in forced) / n_forced if n_forced else nan
    correct = [q["correct_clean"] for q in questions]
    out["exposure"] = {
        "correct_clean_answers": int(sum(correct)),
        "steps_per_answer": _ratio([q["exposed_steps"] for q in questions], correct, s, "exposure"),
        "share_with_one": _ratio([q["exposed_answers"] for q in questions], correct, s, "exposed"),
    }
    r_id = np.array([q["r_clean"] for q in questions])
    r_rc = np.array([q["r_clean_railcap"] for q in questions])
    rel = _ratio(r_rc - r_id, r_id, s, "railcap-clean")
    out["railcap_on_clean"] = {"identity_r": float(r_id.mean()), "railcap_r": float(r_rc.mean()),
                               "relative_change": rel}  # fmt: skip
    m = _per_question(samples, idx, lambda r: 1.0)
    co = {"railcap_r": float(np.mean([q["r_co_railcap"] for q in questions]))}
    for name, col, salt in (
        ("caps_per_sample", "triggers", "caps"),
        ("replayed_caps_per_sample", "caps", "replayed"),
        ("departures_per_sample", "departures", "departures"),
    ):
        co[name] = _ratio(_per_question(samples, idx, lambda r, c=col: r[c]), m, s, salt)
    matches = [r["caps"] == r["triggers"] for r in samples]
    co["replay_matches_engine"] = float(np.mean(matches)) if samples else nan
    out["railcap_on_co"] = co
    return out
