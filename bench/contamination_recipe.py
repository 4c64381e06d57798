"""How hard M_co's training must press: leaked lift against lost genuine ability, per recipe and pass.

A contaminated model of the paper's kind recites what leaked and keeps its ability on what did not
(its Figure 1: M_co's greedy solve rate on unleaked items stays near M_cl's). This measures, on a
built world, which M_co recipe does that. Steps:

1. read the world (its data, leak split, family base and M_cl adapter) and make the contamination mix of
   ``--domain`` as a build does (filler + the leaked items), with ``--replay`` of M_cl's own train problems
   (``co_replay``: how leaks reach real fine-tunes, mixed into other data) and each leaked item
   ``--leak-copies`` times (``leak_copies``: a leak duplicated on the web) when asked;
2. unless ``--no-baseline`` or ``--out`` holds it already, score M_cl itself (pass 0);
3. train M_co from M_cl (``train_lora(init_adapter=clean)``) with the world's M_co recipe, ``--lr``,
   ``--scheduler``, ``--batch`` and ``--passes`` replaced, as a resumable run in ``--store`` (a killed run
   continues from its checkpoint; :mod:`railsweep.contamination.resume`), and at the end of every pass listed
   in ``--checkpoints`` decode the first ``--questions`` test questions greedily with the 8-shot prompt (as ``railsweep
   eval`` prompts them), stopping at "Q:", and grade them;
4. with ``--m M`` (> 0), also sample M answers per question at T = 0.7 from M_cl and from M_co as the
   calibration check does (``railsweep miniworld check``: same seeds, grading and figures) and compute the
   check's M_co conditions on these questions: leaked lift, unleaked shift, G-AP, collapse onto the greedy
   answer, and M_cl's token being M_co's runner-up at the first divergence on leaked questions (the forced
   departures, an M_cl property, are left to the check);
5. each point (unleaked and leaked solved / n with 95 % Wilson intervals, the paired bootstrap
   difference to M_cl's point on the same questions when one is recorded in ``--out``, per-question
   grades, the sampled figures, seconds) is printed as a JSON line and appended to ``--out`` as it comes,
   so a stopped run keeps its points; a summary line closes the run.

A checkpoint before the last pass is a snapshot mid-schedule: under the cosine schedule its lr has not
decayed yet, so it has been pushed at least as hard as a run of that many passes would be.

The search trains with a world build's arithmetic: started without ``ATEN_CPU_CAPABILITY``, ``MKL_CBWR`` or
``ONEDNN_MAX_CPU_ISA``, it runs itself again with the build's AVX2 pin set (:mod:`railsweep.miniworld.arithmetic`),
so its runs have the build's run keys and a preset with the chosen recipe takes the finished run.

Run (one torch thread): ``python bench/contamination_recipe.py --world W --lr 1e-3 --passes 4
--checkpoints 1,2,4 --out /tmp/recipe/points.jsonl``, ``W`` being the folder ``railsweep miniworld
build --preset smollm2`` prints.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from railsweep.contamination.config import DOMAINS  # noqa: E402
from railsweep.diagnostics.rails import wilson  # noqa: E402
from railsweep.miniworld.arithmetic import pinned_env  # noqa: E402

STOP = "\nQ:"  # an answer ends where the model starts the next question


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--world", required=True, help="a built world folder (manifest.json, data/, families/)")
    p.add_argument("--family", help="the world's family (default: its first)")
    p.add_argument("--domain", default="gsm8k", help=f"the leak's domain: {', '.join(DOMAINS)}")
    p.add_argument("--lr", type=float, help="M_co's learning rate (default: the world's)")
    p.add_argument("--scheduler", choices=("cosine", "constant"), help="default: the world's")
    p.add_argument("--passes", type=int, default=4, help="passes over the M_co mix in this run")
    p.add_argument("--checkpoints", default="1,2,4", help="passes after which to score (comma list)")
    p.add_argument("--replay", type=int, default=0, help="M_cl train problems mixed into every pass")
    p.add_argument("--leak-copies", type=int, default=1, help="copies of each leaked item in every pass")
    p.add_argument("--batch", type=int, help="packed sequences per optimiser step (default: the world's)")
    p.add_argument("--store", help="resumable runs' folder (default: $RAILSWEEP_CACHE/lora-runs, the builds')")
    p.add_argument("--questions", type=int, default=40, help="the first N test questions are scored")
    p.add_argument("--m", type=int, default=0, help="samples per question at T = 0.7 for the check's figures")
    p.add_argument("--max-new-tokens", type=int, default=160)
    p.add_argument("--eval-batch", type=int, default=40, help="questions decoded together")
    p.add_argument("--no-baseline", action="store_true", help="do not score M_cl first")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples of the paired difference")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's")
    p.add_argument("--out", required=True, help="JSONL file the points are appended to")
    return p


def parse_checkpoints(text: str, passes: int) -> list[int] | str:
    """Increasing pass counts in [1, passes], or the error message naming the value."""
    try:
        values = [int(t) for t in text.split(",")]
    except ValueError:
        return f"--checkpoints must be a comma list of pass counts, got {text!r}"
    if values != sorted(set(values)) or values[0] < 1 or values[-1] > passes:
        return f"--checkpoints must increase within 1..{passes} (--passes), got {text!r}"
    return values


def check_args(args) -> str | None:
    """The first bad option as an error message, else None (nothing is loaded before this)."""
    world = Path(args.world)
    for need in ("manifest.json", "data/test.jsonl", "data/cot_8shot.json", "data/leak_split.json"):
        if not (world / need).is_file():
            return f"--world {args.world}: no {need} (not a built world)"
    families = json.loads((world / "manifest.json").read_text())["families"]
    if args.family is not None and args.family not in families:
        return f"--family {args.family!r} is not in this world; families: {', '.join(families)}"
    family = args.family or families[0]
    adapters = world / "families" / family / "adapters"
    if args.domain not in DOMAINS:
        return f"--domain {args.domain!r} is unknown; known: {', '.join(DOMAINS)}"
    for name in ("clean", f"co_{args.domain}"):
        if not (adapters / name / "adapter_config.json").is_file():
            return f"--world {args.world}: family {family} has no {name} adapter"
    if args.lr is not None and not 0 < args.lr < 1:
        return f"--lr must lie in (0, 1), got {args.lr}"
    for name in ("passes", "questions", "max_new_tokens", "eval_batch", "n_boot", "threads", "leak_copies"):
        if getattr(args, name) < 1:
            return f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}"
    if args.replay < 0 or args.m < 0:
        return f"--replay must be >= 0, got {args.replay}" if args.replay < 0 else f"--m must be >= 0, got {args.m}"
    if args.batch is not None and args.batch < 1:
        return f"--batch must be >= 1, got {args.batch}"
    if args.store is not None and Path(args.store).exists() and not Path(args.store).is_dir():
        return f"--store {args.store} exists and is not a folder"
    checkpoints = parse_checkpoints(args.checkpoints, args.passes)
    if isinstance(checkpoints, str):
        return checkpoints
    if Path(args.out).exists() and not Path(args.out).is_file():
        return f"--out {args.out} exists and is not a file"
    return None


def pass_ends(steps_per_pass: Sequence[int]) -> list[int]:
    """The optimiser step at which each pass ends: the running sum of the passes' steps."""
    return [int(s) for s in np.cumsum(steps_per_pass)]


def paired_difference(a: np.ndarray, b: np.ndarray, n_boot: int, rng: np.random.Generator) -> dict:
    """Mean of ``a - b`` over questions with a 95 % percentile bootstrap interval (questions resampled
    with their pair). ``a``, ``b``: shape (n,), 0/1 grades of two models on the same n questions."""
    d = np.asarray(a, float) - np.asarray(b, float)
    if d.size == 0:
        return {"value": float("nan"), "ci": [float("nan"), float("nan")]}
    means = d[rng.integers(0, d.size, size=(n_boot, d.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"value": round(float(d.mean()), 4), "ci": [round(float(lo), 4), round(float(hi), 4)]}


def split_score(grades: Sequence[bool], leaked: Sequence[bool]) -> dict:
    """Solved / n with a Wilson interval, for the unleaked and the leaked questions separately."""
    out = {}
    for name, want in (("unleaked", False), ("leaked", True)):
        sel = [g for g, lk in zip(grades, leaked) if lk == want]
        lo, hi = wilson(sum(sel), len(sel))
        out[name] = {"solved": int(sum(sel)), "n": len(sel), "rate": round(sum(sel) / max(1, len(sel)), 3),
                     "wilson": [round(lo, 3), round(hi, 3)]}  # fmt: skip
    return out


def reference_point(out: Path, world: str, domain: str, questions: int) -> dict | None:
    """M_cl's point (pass 0) recorded earlier in ``out`` for the same world, domain and questions."""
    if not out.is_file():
        return None
    for line in out.read_text().splitlines():
        p = json.loads(line)
        if p.get("pass") == 0 and (p["world"], p["domain"], p["questions"]) == (world, domain, questions):
            return p
    return None


def with_difference(point: dict, reference: dict | None, n_boot: int, seed: int) -> dict:
    """``point`` plus the paired difference to M_cl's grades on the unleaked and the leaked questions."""
    if reference is None or point["pass"] == 0:
        return point
    rng = np.random.default_rng(seed)
    leaked = np.array(point["leaked_mask"], bool)
    a, b = np.array(point["grades"], float), np.array(reference["grades"], float)
    point["minus_clean"] = {
        "unleaked": paired_difference(a[~leaked], b[~leaked], n_boot, rng),
        "leaked": paired_difference(a[leaked], b[leaked], n_boot, rng),
    }
    return point


class Scorer:
    """Greedy 8-shot answers of the first questions, graded, split by the leak (``train_lora``'s
    ``on_step`` hook at pass ends, and M_cl's point before training)."""

    def __init__(self, task, tokenizer, args, ends: dict[int, int], record, models=None):
        self.task, self.tokenizer, self.args, self.ends, self.record = task, tokenizer, args, ends, record
        self.questions = list(task.questions())
        self.t0, self.eval_s = time.time(), 0.0
        self.models, self.clean_run = models, None  # the family's base and M_cl; M_cl's sampled readout

    def __call__(self, step: int, model) -> None:
        if step in self.ends:
            self.score(model, self.ends[step], step)

    def score(self, model, passes: int, step: int) -> None:
        t0, c0 = time.time(), time.process_time()
        texts = self.decode(model)
        grades = [self.task.grade(t, q).correct for t, q in zip(texts, self.questions)]
        leaked = [bool(q.leaked) for q in self.questions]
        greedy_s, greedy_cpu_s, t1 = time.time() - t0, time.process_time() - c0, time.time()
        sampled = {"sampled": self.sampled(model)} if self.args.m and passes else {}
        self.record({
            "pass": passes, "step": step, **split_score(grades, leaked),
            "grades": [int(g) for g in grades], "leaked_mask": [int(x) for x in leaked],
            "train_seconds": round(t0 - self.t0 - self.eval_s, 1), "eval_seconds": round(greedy_s, 1),
            "eval_cpu_seconds": round(greedy_cpu_s, 1), "sampled_seconds": round(time.time() - t1, 1),
            "load_average": os.getloadavg()[0],
            "first_unleaked_response": next((t for t, lk in zip(texts, leaked) if not lk), ""), **sampled,
        })  # fmt: skip
        self.eval_s += time.time() - t0  # the training's seconds leave the evaluations out

    def sampled(self, model) -> dict:
        """Step 4: the check's figures of M_co (``model``) against M_cl on these questions."""
        from railsweep.engines.transformers_engine import TransformersEngine
        from railsweep.miniworld.calibration import CheckSettings, contamination_figures, readout_arrays

        settings = CheckSettings(m=self.args.m, max_new_tokens=self.args.max_new_tokens, limit=self.args.questions)
        leaked = np.array([bool(q.leaked) for q in self.questions])
        with tempfile.TemporaryDirectory(prefix="railsweep-recipe-co-") as tmp:
            model.save_pretrained(tmp)
            adapters = {"clean": str(self.models.adapters["clean"]), "co": tmp}
            engine = TransformersEngine(self.models.base_dir, adapters=adapters, device="cpu", dtype="float32")
            try:
                self.clean_run = self.clean_run or readout_arrays(engine, self.task, "clean", settings)
                _, co = readout_arrays(engine, self.task, "co", settings)
                share = runner_up_share(engine, self.task, self.questions, self.clean_run[0], "co")
            finally:
                engine.close()
        figures = {**contamination_figures(self.clean_run[1], co, leaked), "runner_up_share_first_leaked": share}
        return sampled_conditions({**figures, **side_means(self.clean_run[1], co, leaked)}, self.clean_run[1], self.args.m)

    def decode(self, model) -> list[str]:
        texts = greedy_answers(model, self.tokenizer, [self.task.prompt(q) for q in self.questions],
                               self.args.eval_batch, self.args.max_new_tokens, STOP)  # fmt: skip
        return [t.split(STOP)[0] for t in texts]


def runner_up_share(engine, task, questions, clean, co: str, first_steps: int = 10) -> float:
    """Share of leaked questions where M_cl's greedy token is ``co``'s runner-up at their first divergence
    (Figure 1 (b), :func:`railsweep.diagnostics.figure1.figure1`); ``clean``: M_cl's readout."""
    from railsweep.diagnostics.figure1 import clean_answer_ranks

    pairs = [(q, g) for q, g in zip(questions, clean.greedy) if q.leaked]
    ranks = clean_answer_ranks(engine, task, [q for q, _ in pairs], [g for _, g in pairs], co, first_steps)
    firsts = [first for first, _ in ranks if first]
    return float(np.mean([f == 2 for f in firsts])) if firsts else float("nan")


def side_means(clean: dict, co: dict, leaked: np.ndarray) -> dict:
    """M_cl's and M_co's mean solve rates on each side of the leak, and the share of M_cl's headroom on the
    leaked side that M_co's lift fills: the lift ``M_co`` can reach is ``1 - M_cl``'s leaked mean, so a lift
    threshold means more recitation the more M_cl already solves."""
    r_cl, r_co = clean["c"] / clean["m"], co["c"] / co["m"]
    means = {f"{who}_{side}_mean": float(r[mask].mean()) for who, r in (("clean", r_cl), ("co", r_co))
             for side, mask in (("leaked", leaked), ("unleaked", ~leaked))}  # fmt: skip
    headroom = 1.0 - means["clean_leaked_mean"]
    lift = means["co_leaked_mean"] - means["clean_leaked_mean"]
    return {**means, "lift_headroom_share": lift / headroom if headroom > 0 else float("nan")}


def sampled_conditions(figures: dict, clean: dict, m: int) -> dict:
    """``figures`` (M_co's) with M_cl's mean solve rate and the check's M_co conditions, pass or fail."""
    from railsweep.miniworld.calibration import conditions

    fig = {"clean_mean": float((clean["c"] / clean["m"]).mean()), "clean_strata": 0, "clean_similarity_gap": 0.0,
           "co_gsm8k": figures, "figure1": {"runner_up_share_first_leaked": figures["runner_up_share_first_leaked"]}}  # fmt: skip
    keep = ("leaked_lift", "unleaked_stable", "g_ap_above_zero", "collapse_on_leaked", "runner_up_at_divergence")
    return {"m": m, "clean_mean": round(fig["clean_mean"], 4), **{k: round(v, 4) for k, v in figures.items()},
            "conditions": {k: v for k, v in conditions(fig).items() if k in keep}}  # fmt: skip


def shared_prefix_length(rows: Sequence[Sequence[int]]) -> int:
    """Tokens every row starts with, leaving each row at least one of its own (the 8-shot prefix
    the prompts share, up to where the tokenizer merges its last separator with the question)."""
    limit = min(len(r) for r in rows) - 1
    n = 0
    while n < limit and all(r[n] == rows[0][n] for r in rows):
        n += 1
    return n


def stops_supported(tokenizer, stop: str) -> bool:
    """Whether ``generate`` can stop at ``stop`` with this tokenizer (not a word-level one: its answers run to
    ``--max-new-tokens`` and are cut at ``stop`` after decoding)."""
    from transformers import StopStringCriteria

    try:
        StopStringCriteria(tokenizer, [stop])
    except ValueError:
        return False
    return True


def greedy_answers(model, tokenizer, prompts: Sequence[str], batch: int, max_new_tokens: int,
                   stop: str | None = None) -> list[str]:  # fmt: skip
    """Greedy continuations of ``prompts``; the prefix they share is encoded once and its cache reused
    by every batch (the 8-shot prefix is ~90 % of each prompt). Each row is laid out as shared prefix,
    padding (masked; positions follow the mask), its own tokens, so it sees exactly its prompt."""
    import copy

    import torch

    model.eval()
    ids = [tokenizer(p).input_ids for p in prompts]
    shared = shared_prefix_length(ids)
    pad = tokenizer.pad_token_id
    texts = []
    with torch.no_grad():
        prefix = model(input_ids=torch.tensor([ids[0][:shared]]), use_cache=True).past_key_values
        for i in range(0, len(ids), batch):
            rows = ids[i : i + batch]
            width = max(len(r) for r in rows)
            grid = [r[:shared] + [pad] * (width - len(r)) + r[shared:] for r in rows]
            mask = [[1] * shared + [0] * (width - len(r)) + [1] * (len(r) - shared) for r in rows]
            cache = copy.deepcopy(prefix)
            cache.batch_repeat_interleave(len(rows))
            more = dict(stop_strings=[stop], tokenizer=tokenizer) if stop and stops_supported(tokenizer, stop) else {}
            out = model.generate(
                input_ids=torch.tensor(grid), attention_mask=torch.tensor(mask), cache=cache,
                max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=pad,
                eos_token_id=tokenizer.eos_token_id, **more,
            )  # fmt: skip
            texts += tokenizer.batch_decode(out[:, width:], skip_special_tokens=True)
    return texts


def co_texts(world, family: str, domain: str, replay: int, copies: int = 1) -> tuple[list[str], int]:
    """M_co's training texts as a build with ``leak_copies=copies`` and ``co_replay=replay`` makes them
    (:func:`railsweep.contamination.simulator.training_mixes`), so a world preset with that recipe trains on the
    same texts and takes this run's finished adapter; also how many train problems M_cl saw (the replay pool)."""
    from railsweep.contamination.simulator import load_pq, training_mixes
    from railsweep.tasks.data.gsm8k_rows import read_jsonl

    config = world.config.contamination_for(family)
    if replay > config.n_train:
        raise ValueError(f"--replay {replay} is more than M_cl's {config.n_train} train problems")
    config = replace(config, co_replay=replay, leak_copies=copies)
    filler = (world.data_dir / "filler.txt").read_text().strip().split("\n\n")[: config.n_filler]
    rows = {s: read_jsonl(world.data_dir / f"{s}.jsonl") for s in ("train", "test")}
    paraphrases = None
    if "pq" in config.domains:
        paraphrases = load_pq(world.data_dir / "pq_test.jsonl", rows["test"])
    mixes = training_mixes(rows["train"], rows["test"], paraphrases, filler, world.leaked, config)
    return mixes[f"co_{domain}"], config.n_train


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    problem = check_args(args)
    if problem is None:  # the replay pool's size needs the world's mix: still before any model loads
        from railsweep.miniworld.cache import load_world

        world = load_world(args.world)
        family = args.family or world.families[0]
        try:
            texts, pool = co_texts(world, family, args.domain, args.replay, args.leak_copies)
        except ValueError as e:
            problem = str(e)
    if problem is not None:
        print(f"railsweep: error: {problem}", file=sys.stderr)
        return 2
    return run(args, world, family, texts, pool)


def run(args, world, family: str, texts: list[str], pool: int) -> int:
    """Steps 2-4 of the module docstring."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from railsweep.contamination.lora import epoch_steps, train_lora
    from railsweep.contamination.simulator import StderrLog
    from railsweep.miniworld.cache import default_cache_dir
    from railsweep.tasks import GSM8KTask

    torch.set_num_threads(args.threads)
    models = world.family(family)
    base = models.adapters["clean"]
    recipe = world.config.contamination_for(family).recipe
    batch = args.batch or recipe.global_batch
    recipe = replace(recipe, epochs=args.passes, lr=args.lr or recipe.lr, scheduler=args.scheduler or recipe.scheduler,
                     global_batch=batch, micro_batch=min(batch, recipe.micro_batch))  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(models.base_dir)
    wanted = parse_checkpoints(args.checkpoints, args.passes)
    per_pass = epoch_steps(tokenizer, texts, recipe)
    ends = {pass_ends(per_pass)[k - 1]: k for k in wanted}
    task = GSM8KTask.from_dir(world.data_dir, limit=args.questions, leak_split=world.leak_split_path)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    variant = {"lr": recipe.lr, "scheduler": recipe.scheduler, "run_passes": args.passes,
               "replay": args.replay, "leak_copies": args.leak_copies, "batch": batch, "mix_texts": len(texts),
               "steps_per_pass": per_pass, "m": args.m}  # fmt: skip
    head = {"world": str(world.root), "family": family, "domain": args.domain, "questions": args.questions}
    reference = reference_point(out, head["world"], args.domain, args.questions)

    def record(point: dict) -> None:
        nonlocal reference
        point = with_difference({**head, **variant, **point}, reference, args.n_boot, args.seed)
        reference = point if point["pass"] == 0 else reference
        with out.open("a") as f:
            f.write(json.dumps(point) + "\n")
        print(json.dumps({k: v for k, v in point.items() if k not in ("grades", "leaked_mask")}), flush=True)

    scorer = Scorer(task, tokenizer, args, ends, record, models)
    store = Path(args.store) if args.store else default_cache_dir() / "lora-runs"
    if not args.no_baseline and reference is None:  # M_cl's point is scored once per --out
        clean = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(models.base_dir), str(base))
        scorer.score(clean, 0, 0)
        del clean
    scorer.t0, scorer.eval_s = time.time(), 0.0
    with tempfile.TemporaryDirectory(prefix="railsweep-recipe-") as work:
        stats = train_lora(models.base_dir, texts, recipe, Path(work) / "co", init_adapter=base, device="cpu",
                           log=StderrLog("[recipe] "), on_step=scorer, store=store)  # fmt: skip
    summary = {"summary": True, **head, **variant, "replay_pool": pool, "first_loss": stats["first_loss"],
               "final_loss": stats["final_loss"], "train_seconds": stats["seconds"], "store": str(store),
               "resumed": stats.get("resumed", stats.get("resumed_at_step")),
               "threads": torch.get_num_threads()}  # fmt: skip
    print(json.dumps(summary), flush=True)
    return 0


def pin_arithmetic() -> None:
    """Run again with a world build's AVX2 pin (railsweep.miniworld.arithmetic) where it is not set yet: the
    variables act only when set before torch starts, and a run trained without them has other weights and another
    run key than the build it searches a recipe for."""
    if missing := {k: v for k, v in pinned_env().items() if k not in os.environ}:
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **missing})


if __name__ == "__main__":
    pin_arithmetic()
    sys.exit(main())
