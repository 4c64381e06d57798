"""Does the miniature world show what the paper shows? (issue 3, "Calibration")

Steps of :func:`check_family`, for one model family:
1. serve base + all adapters in one TransformersEngine; load the test split with its leak split;
2. per model (M_cl, then M_co of each domain): greedy response + m samples at
   T per test question (the Identity readout), graded;
3. compute the conditions:
   - spread: M_cl's mean solve probability in [0.2, 0.8] and >= 8 non-empty strata (B = 50);
   - contamination (domain gsm8k): on leaked questions mean r_co - r_cl >= 0.25, on
     unleaked |r_co - r_cl| <= 0.10, and G-AP of Identity >= 0.05;
   - collapse onto the greedy trajectory (paper Fig. 1a/c): mean normalised
     token edit similarity of samples to the greedy response is >= 0.10 higher
     on leaked than on unleaked questions under M_co, and within ±0.03 under M_cl.
PQ figures are reported alongside; the thresholds apply to domain gsm8k, where
the leaked wording is the evaluated wording.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

THRESHOLDS = {
    "clean_mean_min": 0.2,
    "clean_mean_max": 0.8,
    "min_strata": 8,
    "leaked_lift_min": 0.25,
    "unleaked_shift_max": 0.10,
    "g_ap_min": 0.05,
    "collapse_gap_min": 0.10,
    "clean_similarity_gap_max": 0.03,
}


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


def token_similarity(a: list[int], b: list[int]) -> float:
    """Normalised token edit similarity: 1 - Levenshtein(a, b) / max(len(a), len(b))."""
    from rapidfuzz.distance import Levenshtein

    if not a and not b:
        return 1.0
    return float(Levenshtein.normalized_similarity(a, b))


def _readout(engine, task, questions, adapter: str, s: CheckSettings) -> dict[str, np.ndarray]:
    from railsweep.strategies.base import DecodeSettings, EvalContext, greedy, sample_and_grade

    ctx = EvalContext(
        engine=engine,
        task=task,
        adapter=adapter,
        settings=DecodeSettings(
            m=s.m,
            temperature=s.temperature,
            max_new_tokens=s.max_new_tokens,
            seed=s.seed,
            batch_size=s.batch_size,
        ),
    )
    outs = sample_and_grade(ctx, questions)
    greedies = greedy(ctx, questions)
    sim = [
        float(np.mean([token_similarity(smp.token_ids, g.token_ids) for smp in o.samples]))
        for o, g in zip(outs, greedies)
    ]
    return {
        "c": np.array([o.c for o in outs]),
        "m": np.array([o.m for o in outs]),
        "r01": np.array([o.r01 for o in outs]),
        "sim": np.array(sim),
    }


def check_family(world, family: str, settings: CheckSettings | None = None) -> dict:
    """The calibration figures and pass/fail of each condition for one family (JSON-ready)."""
    from railsweep.engines.transformers_engine import TransformersEngine
    from railsweep.metrics import g_ap, solve_prob, stratify
    from railsweep.tasks import GSM8KTask

    s = settings or CheckSettings()
    fam = world.family(family)
    engine = TransformersEngine(
        fam.base_dir,
        adapters={k: str(v) for k, v in fam.adapters.items()},
        device=s.device,
        dtype=s.dtype,
    )
    try:
        task = GSM8KTask.from_dir(
            world.data_dir, split="test", leak_split=world.leak_split_path, limit=s.limit
        )
        questions = list(task.questions())
        leaked = np.array([bool(q.leaked) for q in questions])
        runs = {name: _readout(engine, task, questions, name, s) for name in fam.adapters}
    finally:
        engine.close()
    cl = runs["clean"]
    r_cl = solve_prob(cl["c"], cl["m"])
    out: dict = {
        "family": family,
        "questions": len(questions),
        "leaked": int(leaked.sum()),
        "m": s.m,
        "clean_mean": float(r_cl.mean()),
        "clean_strata": int(len(np.unique(stratify(cl["c"], cl["m"], B=s.B)))),
        "clean_similarity_leaked": float(cl["sim"][leaked].mean()),
        "clean_similarity_unleaked": float(cl["sim"][~leaked].mean()),
    }
    out["clean_similarity_gap"] = out["clean_similarity_leaked"] - out["clean_similarity_unleaked"]
    for name, run in runs.items():
        if name == "clean":
            continue
        r_co = solve_prob(run["c"], run["m"])
        out[name] = {
            "leaked_lift": float(r_co[leaked].mean() - r_cl[leaked].mean()),
            "unleaked_shift": float(r_co[~leaked].mean() - r_cl[~leaked].mean()),
            "g_ap_identity": float(g_ap(run["r01"], cl["r01"])),
            "similarity_leaked": float(run["sim"][leaked].mean()),
            "similarity_unleaked": float(run["sim"][~leaked].mean()),
        }
        out[name]["collapse_gap"] = out[name]["similarity_leaked"] - out[name]["similarity_unleaked"]
    out["conditions"] = conditions(out)
    out["passed"] = all(out["conditions"].values())
    return out


def conditions(fig: dict) -> dict[str, bool]:
    t = THRESHOLDS
    co = fig.get("co_gsm8k", {})
    return {
        "clean_mean_in_range": t["clean_mean_min"] <= fig["clean_mean"] <= t["clean_mean_max"],
        "clean_strata": fig["clean_strata"] >= t["min_strata"],
        "leaked_lift": co.get("leaked_lift", -1.0) >= t["leaked_lift_min"],
        "unleaked_stable": abs(co.get("unleaked_shift", 1.0)) <= t["unleaked_shift_max"],
        "g_ap_above_zero": co.get("g_ap_identity", 0.0) >= t["g_ap_min"],
        "collapse_on_leaked": co.get("collapse_gap", -1.0) >= t["collapse_gap_min"],
        "no_collapse_clean": abs(fig["clean_similarity_gap"]) <= t["clean_similarity_gap_max"],
    }
