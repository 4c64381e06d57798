"""Shortcut-neuron localisation (baselines.md §3.3–3.5), once per (model, domain), cached with a manifest.

M_co (``ctx.adapter``) plays the official M2, M_cl (``ctx.clean_adapter``) M1, the base (``ctx.base_adapter``)
M0. Steps:

1. comparative score: M_co greedy-decodes the first ``n_questions`` leaked questions; M_co and M_cl are
   teacher-forced on prompt + that completion and ``change[l, j] = sqrt(mean_t (a_cl[t,l,j] − a_co[t,l,j])²)``
   over all completion tokens pooled, fp32, layers 0..L−2;
2. causal score: for each layer l ≤ L−2 and each block B of consecutive neurons, greedy accuracy on the
   first ``n_questions`` questions of ``Δ2 = EM(M_co) − EM(M_co, B patched with M_cl)`` and
   ``Δ0 = EM(M0, B patched with M_cl) − EM(M0)``; every neuron of B gets Δ2 + Δ0;
3. score = change + Δ2 + Δ0 (the official unweighted sum); neurons ranked by score, descending (ties keep
   (layer, index) order).

Prompts are the task's 8-shot ones (the official RMS pass: zero-shot Tulu chat). For budget, ``n_questions``
(official: 657 RMS, 1,319 causal) and ``n_blocks`` blocks per layer (official: 43): the causal term costs
``2 · (L−1) · n_blocks`` patched greedy runs plus 2 unpatched (Llama-2-7B at the defaults: 63k decodes).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from railsweep.atomic import write_dir_atomic
from railsweep.engines.base import Request, SamplingSpec
from railsweep.errors import ConfigError, DataError
from railsweep.interventions import NeuronPatchSpec
from railsweep.interventions.neuron_patch import down_projections, hooks, mlp_widths, use_adapter
from railsweep.strategies.base import EvalContext
from railsweep.strategies.shortcut.plan import LocalisationParams, engine_model, select_indices
from railsweep.tasks.base import Question

MANIFEST_VERSION = 1


@dataclass
class Localisation:
    scores: list[np.ndarray]  # per layer 0..L−2: final score per neuron
    change: list[np.ndarray]  # the comparative (RMS) term
    causal: list[np.ndarray]  # the causal term Δ2 + Δ0 (zeros when causal=False)
    ranking: np.ndarray  # [N, 2] int64 (layer, neuron), best first
    manifest: dict[str, Any]


def _select(questions: Sequence[Question], n: int, leaked_first: bool) -> list[Question]:
    by_index = {q.index: q for q in questions}
    leaked = {q.index for q in questions if q.leaked}
    return [by_index[i] for i in select_indices([q.index for q in questions], leaked, n, leaked_first)]


def _greedy_requests(ctx, qs, adapter, spec=None) -> list[Request]:
    s = ctx.settings
    sampling = SamplingSpec(n=1, temperature=0.0, max_new_tokens=s.max_new_tokens, stop=ctx.task.stop)
    return [Request(ctx.task.prompt(q), sampling, adapter=adapter, intervention=spec) for q in qs]


def _accuracies_of_jobs(ctx, jobs: list[list[tuple]]) -> list[list[float]]:
    """Greedy accuracy of each (questions, adapter, patch) group of every job (one engine call each, shared
    with idle engines on a sweep's engine), in order."""
    built = []
    for groups in jobs:
        reqs, spans = [], []
        for qs, adapter, spec in groups:
            spans.append((len(reqs), qs))
            reqs += _greedy_requests(ctx, qs, adapter, spec)
        built.append((reqs, spans))
    share = getattr(ctx.engine, "generate_shares", None)
    comps_of = share([r for r, _ in built]) if share else [ctx.engine.generate(r) for r, _ in built]
    out = []
    for comps, (_, spans) in zip(comps_of, built):
        if ctx.progress:
            ctx.progress(len(comps))
        out.append([
            sum(ctx.task.grade(comps[lo + i].samples[0].text, q).correct for i, q in enumerate(qs)) / len(qs)
            for lo, qs in spans
        ])  # fmt: skip
    return out


def _fold_batch(model, downs, ids, mask, keep, adapters, sumsq: list[torch.Tensor]) -> None:
    """Teacher-force one batch under M_co then M_cl; add Σ_t (a_cl − a_co)² over completion tokens to sumsq."""
    co_acts: dict[int, torch.Tensor] = {}

    def record(layer: int):
        def hook(_mod, args):
            co_acts[layer] = args[0][keep].float()

        return hook

    def accumulate(layer: int):
        def hook(_mod, args):
            sumsq[layer] += ((args[0][keep].float() - co_acts.pop(layer)) ** 2).sum(0).double()

        return hook

    for adapter, make in zip(adapters, (record, accumulate)):
        with hooks(downs, make), torch.no_grad(), use_adapter(model, adapter):
            model(input_ids=ids, attention_mask=mask, use_cache=False, logits_to_keep=1)


def comparative_scores(ctx: EvalContext, qs: Sequence[Question], params: LocalisationParams) -> tuple:
    """Step 1: RMS of (M_cl − M_co) down-projection inputs on M_co's greedy completions; memory stays at one
    batch of activations (the M_cl pass folds its squared difference into float64 sums inside the hook)."""
    model, tok = engine_model(ctx)
    downs = down_projections(model)[:-1]
    comps = ctx.engine.generate(_greedy_requests(ctx, qs, ctx.adapter))
    seqs = [(list(tok(ctx.task.prompt(q))["input_ids"]), c.samples[0].token_ids) for q, c in zip(qs, comps)]
    device = next(model.parameters()).device
    sumsq = [torch.zeros(w, dtype=torch.float64, device=device) for w in mlp_widths(model)[:-1]]
    n_tok = 0
    for lo in range(0, len(seqs), params.teacher_batch):
        chunk = seqs[lo : lo + params.teacher_batch]
        width = max(len(p) + len(c) for p, c in chunk)
        ids = torch.zeros(len(chunk), width, dtype=torch.long)
        mask = torch.zeros_like(ids)
        keep = torch.zeros(len(chunk), width, dtype=torch.bool)  # completion-token positions
        for i, (p, c) in enumerate(chunk):
            ids[i, : len(p) + len(c)] = torch.tensor(p + list(c))
            mask[i, : len(p) + len(c)] = 1
            keep[i, len(p) : len(p) + len(c)] = True
        ids, mask, keep = ids.to(device), mask.to(device), keep.to(device)
        _fold_batch(model, downs, ids, mask, keep, (ctx.adapter, ctx.clean_adapter), sumsq)
        n_tok += int(keep.sum())
    if n_tok == 0:
        raise DataError(
            "shortcut localisation: M_co's greedy completions are all empty; no tokens to compare"
        )
    return [np.sqrt((s / n_tok).cpu().numpy()) for s in sumsq], n_tok


def causal_scores(ctx: EvalContext, qs: Sequence[Question], params: LocalisationParams) -> tuple:
    """Step 2: block-wise patching with M_cl's activations; Δ2 + Δ0 per block, broadcast to its neurons."""
    model, _ = engine_model(ctx)
    widths = mlp_widths(model)[:-1]
    co, cl, base = ctx.adapter, ctx.clean_adapter, ctx.base_adapter
    em_co, em_base = _accuracies_of_jobs(ctx, [[(qs, co, None), (qs, base, None)]])[0]
    blocks = []  # (layer, first neuron, end) of every block of layers 0..L−2
    for layer, w in enumerate(widths):
        size = math.ceil(w / params.n_blocks)
        blocks += [(layer, lo, min(w, lo + size)) for lo in range(0, w, size)]
    specs = [NeuronPatchSpec(neurons=((layer, tuple(range(lo, hi))),), reference_adapter=cl) for layer, lo, hi in blocks]
    patched = _accuracies_of_jobs(ctx, [[(qs, co, spec), (qs, base, spec)] for spec in specs])
    out = [np.zeros(w) for w in widths]
    for (layer, lo, hi), (em_co_p, em_base_p) in zip(blocks, patched):
        out[layer][lo:hi] = (em_co - em_co_p) + (em_base_p - em_base)
    runs = 2 + 2 * len(blocks)
    shared = getattr(ctx.engine, "shared", 0)
    return out, {"em_co": em_co, "em_base": em_base, "greedy_runs": runs, "greedy_decodes": runs * len(qs),
                 "shared_block_runs": shared}  # fmt: skip


def cache_key(ctx: EvalContext, params: LocalisationParams, qs_rmse, qs_causal) -> str:
    ident = {
        "version": MANIFEST_VERSION,
        "engine": getattr(ctx.engine, "name", type(ctx.engine).__name__),
        "model": str(getattr(ctx.engine, "model_path", "")),
        "adapters": [ctx.adapter, ctx.clean_adapter, ctx.base_adapter],
        "task": getattr(ctx.task, "name", ""),
        "prompt_sha": hashlib.sha256("\n".join(ctx.task.prompt(q) for q in qs_causal).encode()).hexdigest(),
        "rms_questions": [q.index for q in qs_rmse],
        "causal_questions": [q.index for q in qs_causal],
        "max_new_tokens": ctx.settings.max_new_tokens,
        "params": asdict(params),
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]


def _rank(scores: list[np.ndarray]) -> np.ndarray:
    pairs = np.array([(layer, j) for layer, s in enumerate(scores) for j in range(len(s))], dtype=np.int64)
    flat = np.concatenate(scores)
    return pairs[np.argsort(-flat, kind="stable")]


def _save(path: Path, loc: Localisation) -> None:
    """Write under a temporary name, then rename: a reader never sees half a localisation."""
    def write(tmp: Path) -> None:
        arrays = {f"change_{i}": a for i, a in enumerate(loc.change)}
        arrays.update({f"causal_{i}": a for i, a in enumerate(loc.causal)})
        np.savez(tmp / "scores.npz", ranking=loc.ranking, **arrays)
        (tmp / "manifest.json").write_text(json.dumps(loc.manifest, indent=2, sort_keys=True))

    write_dir_atomic(path, write)  # a concurrent writer that finished first keeps its (identical) result


def _load(path: Path) -> Localisation:
    try:
        manifest = json.loads((path / "manifest.json").read_text())
        with np.load(path / "scores.npz") as z:
            n = manifest["n_layers_scored"]
            change = [z[f"change_{i}"] for i in range(n)]
            causal = [z[f"causal_{i}"] for i in range(n)]
            ranking = z["ranking"]
    except (OSError, KeyError, ValueError, json.JSONDecodeError) as e:
        raise DataError(f"corrupt shortcut localisation cache {path}: {e}; delete it to recompute") from e
    return Localisation([c + k for c, k in zip(change, causal)], change, causal, ranking, manifest)


_MEMO: dict[str, Localisation] = {}


def localise(ctx: EvalContext, questions: Sequence[Question], params: LocalisationParams) -> Localisation:
    """The cached localisation for this (model, adapters, task, questions, params); computed if missing."""
    if ctx.clean_adapter is None:
        raise ConfigError("shortcut localisation needs the clean model: EvalContext.clean_adapter is None")
    qs_rms = _select(questions, params.n_questions, leaked_first=True)
    qs_causal = _select(questions, params.n_questions, leaked_first=False)
    if not qs_rms:
        raise DataError("shortcut localisation got no questions")
    key = cache_key(ctx, params, qs_rms, qs_causal)
    path = Path(ctx.cache_dir) / "shortcut" / key if ctx.cache_dir is not None else None
    if key in _MEMO:
        return _MEMO[key]
    if path is not None and path.exists():
        _MEMO[key] = _load(path)
        return _MEMO[key]
    t0 = time.perf_counter()
    change, n_tok = comparative_scores(ctx, qs_rms, params)
    if params.causal:
        causal, stats = causal_scores(ctx, qs_causal, params)
    else:
        causal, stats = [np.zeros_like(c) for c in change], {"greedy_runs": 0, "greedy_decodes": 0}
    scores = [c + k for c, k in zip(change, causal)]
    manifest = {
        "version": MANIFEST_VERSION,
        "key": key,
        "adapters": {"co": ctx.adapter, "clean": ctx.clean_adapter, "base": ctx.base_adapter},
        "task": getattr(ctx.task, "name", ""),
        "params": asdict(params),
        "n_layers_scored": len(change),
        "d_mlp": [len(c) for c in change],
        "rms_questions": [q.index for q in qs_rms],
        "causal_questions": [q.index for q in qs_causal],
        "rms_tokens": n_tok,
        "wall_s": round(time.perf_counter() - t0, 3),
        **stats,
    }
    loc = Localisation(scores, change, causal, _rank(scores), manifest)
    if path is not None:
        _save(path, loc)
    _MEMO[key] = loc
    return loc
