"""Does the miniature world show what the paper shows, where the paper's method acts?

Steps of :func:`check_family`, for one model family:
1. serve base + all adapters in one TransformersEngine; load the test split with its leak split;
2. per model (M_cl, then M_co of each domain): the Identity readout (greedy + m samples per question, graded);
   with ``workers`` > 1 the readouts and Figure 1's forced departures run in that many spawned processes, one
   torch thread each (the same samples: seeds are per question or departure, sampling is batch-invariant);
   finished parts are kept in the cache (:mod:`.check_cache`), so a killed check resumes where it stopped;
   each part prints a progress line on stderr after every engine call (:class:`PartProgress`);
3. compute the conditions (:data:`THRESHOLDS`, tabled in docs/miniworld.md): M_cl's spread; on domain gsm8k
   (the leaked wording is the evaluated one) the leaked lift, the unleaked shift and G-AP; the collapse onto the
   greedy answer (paper Fig. 1a/c); the runner-up share where M_cl and M_co part ways (Fig. 1b/d,
   :mod:`railsweep.diagnostics.figure1`); M_cl surviving one forced departure. PQ figures are reported alongside.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from railsweep.diagnostics.figure1 import Figure1Settings, decode_departures, figure1, readout
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.metrics import g_ap, solve_prob, stratify
from railsweep.miniworld.cache import load_world
from railsweep.miniworld.check_cache import dump_readout, load_readout, part_path, read_json, write_json
from railsweep.tasks import GSM8KTask

THRESHOLDS = {
    "clean_mean_min": 0.2, "clean_mean_max": 0.8, "min_strata": 8,
    "leaked_lift_min": 0.25, "unleaked_shift_max": 0.10, "g_ap_min": 0.05,
    "collapse_gap_min": 0.10, "clean_similarity_gap_max": 0.03,
    "runner_up_share_min": 0.35, "runner_up_share_max": 0.65,
    "off_rail_ratio_min": 0.5,
}  # fmt: skip


@dataclass(frozen=True)
class CheckSettings:
    m: int = 20
    temperature: float = 0.7
    max_new_tokens: int = 96
    seed: int = 0
    B: int = 50
    limit: int | None = None  # evaluate only the first N test questions (tests)
    batch_size: int = 64
    device: str = "cpu"  # "cpu", "cuda", "cuda:N" or "auto" (the engine's device)
    dtype: str = "float32"  # the world is built and calibrated in fp32; "auto" = bf16 on GPU
    departures: int = 20  # forced departures per reliable question (figure 1 (d))
    workers: int = 1  # processes for the readouts and forced departures (one torch thread each)

    def figure1(self):
        shared = ("m", "temperature", "max_new_tokens", "seed", "batch_size", "departures")
        return Figure1Settings(**{name: getattr(self, name) for name in shared})


@dataclass
class PartProgress:
    """One line on stderr after each engine call of a check part: responses done, time spent and time left."""

    label: str
    total: int
    done: int = 0
    start: float = field(default_factory=time.monotonic)

    def __call__(self, n: int) -> None:
        self.done += n
        spent = time.monotonic() - self.start
        left = spent * (self.total - self.done) / max(self.done, 1)
        print(f"[check] {self.label}: {self.done:,}/{self.total:,} responses, {spent / 60:.1f} min, about "
              f"{left / 60:.0f} min left", file=sys.stderr, flush=True)  # fmt: skip


def token_similarity(a: list[int], b: list[int]) -> float:
    """Normalised token edit similarity: 1 - Levenshtein(a, b) / max(len(a), len(b))."""
    from rapidfuzz.distance import Levenshtein

    if not a and not b:
        return 1.0
    return float(Levenshtein.normalized_similarity(a, b))


def readout_arrays(engine, task, adapter: str, s: CheckSettings):
    """``adapter``'s readout (greedy + m samples per question) and its per-question arrays: counts ``c``,
    ``m``, one-sample grades ``r01`` and the samples' mean token similarity ``sim`` to the greedy response."""
    questions = list(task.questions())
    total = len(questions) * (1 + (1 if s.temperature == 0 else s.m))  # greedy, then the samples
    run = readout(engine, task, questions, adapter, s.figure1(), PartProgress(f"{adapter} readout", total))
    sim = [
        float(np.mean([token_similarity(smp.token_ids, g.token_ids) for smp in o.samples]))
        for o, g in zip(run.outcomes, run.greedy)
    ]
    arrays = {k: np.array([getattr(o, k) for o in run.outcomes]) for k in ("c", "m", "r01")}
    return run, {**arrays, "sim": np.array(sim)}


def _engine(fam, s: CheckSettings) -> TransformersEngine:
    return TransformersEngine(
        fam.base_dir, adapters={k: str(v) for k, v in fam.adapters.items()}, device=s.device, dtype=s.dtype
    )


def _task(world, s: CheckSettings) -> GSM8KTask:
    return GSM8KTask.from_dir(world.data_dir, split="test", leak_split=world.leak_split_path, limit=s.limit)


def _in_process(root: str, family: str, s: CheckSettings, job, *args):
    """``job(engine, task, *args)`` in a worker process, with its own engine (one torch thread) and task over
    the world at ``root``."""
    torch.set_num_threads(1)
    world = load_world(root)
    with contextlib.closing(_engine(world.family(family), s)) as engine:
        return job(engine, _task(world, s), *args)


def readout_to(engine, task, path: str, adapter: str, s: CheckSettings):
    """:func:`readout_arrays` of ``adapter``, written to ``path`` once finished."""
    run, arrays = readout_arrays(engine, task, adapter, s)
    write_json(Path(path), dump_readout(run, arrays))
    return run, arrays


def _done(value) -> Future:
    done: Future = Future()
    done.set_result(value)
    return done


def _finished(path: Path, name: str) -> Future | None:
    """A done future holding ``name``'s readout where an earlier check finished it, else None."""
    payload = read_json(path)
    if payload is None:
        return None
    print(f"[check] {name}: readout read from {path}", file=sys.stderr, flush=True)
    return _done(load_readout(payload))


def _measure(world, family: str, fam, task, questions, s: CheckSettings) -> tuple[dict, object]:
    """Every model's readout (parts an earlier check finished read back), then Figure 1 over M_cl and M_co
    (gsm8k) in this process; with ``s.workers`` > 1 the readouts run in spawned processes meanwhile."""
    first = ["clean", "co_gsm8k"] + [n for n in fam.adapters if n not in ("clean", "co_gsm8k")]
    paths = {name: part_path(world, family, name, s, "readout") for name in first}
    root = str(world.root)
    with contextlib.ExitStack() as stack:
        pool = None
        if s.workers > 1:
            ctx = multiprocessing.get_context("spawn")
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=s.workers, mp_context=ctx))
        engine = stack.enter_context(contextlib.closing(_engine(fam, s)))

        def start(name: str) -> Future:
            if pool is not None:
                return pool.submit(_in_process, root, family, s, readout_to, str(paths[name]), name, s)
            return _done(readout_to(engine, task, str(paths[name]), name, s))

        futures = {name: _finished(paths[name], name) or start(name) for name in first}
        pair = {name: futures[name].result() for name in ("clean", "co_gsm8k")}
        decode = (functools.partial(_share_departures, pool, root, family, engine, s) if pool is not None
                  else functools.partial(_departures, engine))  # fmt: skip
        kept = _kept_departures(part_path(world, family, "clean", s, "departures"), decode)
        fig1 = _figure1(engine, task, questions, pair, s, kept)
        return {name: fut.result() for name, fut in futures.items()}, fig1


def _kept_departures(path: Path, decode):
    """``decode`` (see :func:`railsweep.diagnostics.figure1.off_rail`) whose texts are kept at ``path``."""

    def kept(task, adapter, jobs, first, fs):
        payload = read_json(path)
        if payload is not None and payload["jobs"] == len(jobs):
            print(f"[check] {adapter}: forced departures read from {path}", file=sys.stderr, flush=True)
            return payload["texts"]
        texts = decode(task, adapter, jobs, first, fs)
        write_json(path, {"jobs": len(jobs), "texts": texts})
        return texts

    return kept


def _figure1(engine, task, questions, readouts: dict, s: CheckSettings, decode=None):
    return figure1(
        engine, task, questions, "clean", "co_gsm8k", s.figure1(),
        readouts={name: run for name, (run, _) in readouts.items()}, decode=decode,
    )  # fmt: skip


def _share_departures(pool, root: str, family: str, engine, s: CheckSettings, task, adapter, jobs, first, fs):
    """Figure 1's forced departures in ``s.workers`` contiguous shares: the first decoded here, the others in
    ``pool`` (:func:`railsweep.diagnostics.figure1.off_rail`'s ``decode``)."""
    edges = [round(len(jobs) * k / s.workers) for k in range(s.workers + 1)]
    futures = [
        pool.submit(_in_process, root, family, s, _departures, adapter, jobs[a:b], first + a, fs)
        for a, b in zip(edges[1:-1], edges[2:])
    ]
    mine = _departures(engine, task, adapter, jobs[: edges[1]], first, fs)
    return mine + [text for fut in futures for text in fut.result()]


def _departures(engine, task, adapter: str, jobs, first: int, fs) -> list[str]:
    """:func:`decode_departures` of jobs ``first``.. with their progress line."""
    label = f"{adapter} forced departures {first}-{first + len(jobs) - 1}"
    return decode_departures(engine, task, adapter, jobs, first, fs, progress=PartProgress(label, len(jobs)))


def check_family(world, family: str, settings: CheckSettings | None = None) -> dict:
    """The calibration figures and pass/fail of each condition for one family (JSON-ready)."""
    s = settings or CheckSettings()
    fam = world.family(family)
    task = _task(world, s)
    questions = list(task.questions())
    leaked = np.array([bool(q.leaked) for q in questions])
    readouts, fig1 = _measure(world, family, fam, task, questions, s)
    runs = {name: arrays for name, (_, arrays) in readouts.items()}
    cl = runs["clean"]
    r_cl = solve_prob(cl["c"], cl["m"])
    out: dict = {
        "family": family, "questions": len(questions), "leaked": int(leaked.sum()), "m": s.m,
        "clean_mean": float(r_cl.mean()),
        "clean_strata": int(len(np.unique(stratify(cl["c"], cl["m"], B=s.B)))),
        "clean_similarity_leaked": float(cl["sim"][leaked].mean()),
        "clean_similarity_unleaked": float(cl["sim"][~leaked].mean()),
    }  # fmt: skip
    out["clean_similarity_gap"] = out["clean_similarity_leaked"] - out["clean_similarity_unleaked"]
    for name, run in runs.items():
        if name == "clean":
            continue
        out[name] = contamination_figures(cl, run, leaked)
    out["figure1"] = fig1.summary
    out["conditions"] = conditions(out)
    out["passed"] = all(out["conditions"].values())
    return out


def contamination_figures(cl: dict, co: dict, leaked: np.ndarray) -> dict:
    """One M_co's figures against M_cl (step 3), from their :func:`readout_arrays` on the same questions."""
    r_cl, r_co = solve_prob(cl["c"], cl["m"]), solve_prob(co["c"], co["m"])
    out = {
        "leaked_lift": float(r_co[leaked].mean() - r_cl[leaked].mean()),
        "unleaked_shift": float(r_co[~leaked].mean() - r_cl[~leaked].mean()),
        "g_ap_identity": float(g_ap(co["r01"], cl["r01"])),
        "similarity_leaked": float(co["sim"][leaked].mean()),
        "similarity_unleaked": float(co["sim"][~leaked].mean()),
    }
    return {**out, "collapse_gap": out["similarity_leaked"] - out["similarity_unleaked"]}


def conditions(fig: dict) -> dict[str, bool]:
    t = THRESHOLDS
    co = fig.get("co_gsm8k", {})
    f1 = fig.get("figure1", {})
    return {
        "clean_mean_in_range": t["clean_mean_min"] <= fig["clean_mean"] <= t["clean_mean_max"],
        "clean_strata": fig["clean_strata"] >= t["min_strata"],
        "leaked_lift": co.get("leaked_lift", -1.0) >= t["leaked_lift_min"],
        "unleaked_stable": abs(co.get("unleaked_shift", 1.0)) <= t["unleaked_shift_max"],
        "g_ap_above_zero": co.get("g_ap_identity", 0.0) >= t["g_ap_min"],
        "collapse_on_leaked": co.get("collapse_gap", -1.0) >= t["collapse_gap_min"],
        "no_collapse_clean": abs(fig["clean_similarity_gap"]) <= t["clean_similarity_gap_max"],
        "runner_up_at_divergence": t["runner_up_share_min"]
        <= f1.get("runner_up_share_first_leaked", -1.0)
        <= t["runner_up_share_max"],
        "off_rail_robust": f1.get("off_rail_ratio", 0.0) >= t["off_rail_ratio_min"],
    }
