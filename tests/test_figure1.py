"""Figure 1 diagnostics: ROUGE-L, divergence ranks, path diversity, off-rail robustness, RailCap's answer trajectory."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch

from railsweep.diagnostics.figure1 import (
    Figure1Settings,
    divergence_ranks,
    readout,
    rouge_l,
    rouge_tokens,
    step_logits,
    step_logits_many,
    summarise,
)
from railsweep.engines.base import Sample
from railsweep.errors import ConfigError
from railsweep.interventions.neuron_patch import use_adapter
from railsweep.strategies.railcap.trajectory import answer_ids


def _lcs(a, b) -> int:
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(b)):
            t[i + 1][j + 1] = t[i][j] + 1 if a[i] == b[j] else max(t[i][j + 1], t[i + 1][j])
    return t[-1][-1]


def test_rouge_l_is_the_lcs_f1_of_a_naive_dynamic_programme():
    rng = random.Random(0)
    for _ in range(300):
        a = [rng.choice("abcde") for _ in range(rng.randint(0, 12))]
        b = [rng.choice("abcde") for _ in range(rng.randint(0, 12))]
        want = 1.0 if not a and not b else (2 * _lcs(a, b) / (len(a) + len(b)) if a and b else 0.0)
        assert math.isclose(rouge_l(a, b), want)


def test_rouge_tokens_lowercase_and_drop_punctuation():
    assert rouge_tokens("So Tom has 12 + 5 = 17 apples.") == ["so", "tom", "has", "12", "5", "17", "apples"]


def test_divergence_rank_counts_the_tokens_above_the_clean_token():
    logits = torch.tensor(
        [[5.0, 1.0, 0.0, 0.0], [0.0, 9.0, 8.0, 7.0], [0.0, 3.0, 2.0, 1.0], [1.0, 2.0, 3.0, 4.0]]
    )
    clean = [0, 3, 2, 0]  # agree, rank 3, rank 2, rank 4
    first, early = divergence_ranks(logits, clean, first_steps=3)
    assert first == 3 and early == [3, 2]
    assert divergence_ranks(logits, [0, 1, 1, 3], 10) == (None, [])
    assert divergence_ranks(logits[:0], [], 10) == (None, [])


def test_summary_shares_and_off_rail_ratio():
    rows = []
    for i, (leak, first, off) in enumerate(
        [(True, 2, 0.5), (True, 3, np.nan), (True, 2, 1.0), (False, 4, np.nan)]
    ):
        rows.append(
            dict(
                index=i,
                leaked=leak,
                model="clean",
                adapter="clean",
                r=1.0 if not np.isnan(off) else 0.2,
                greedy_rouge_l=0.5,
                first_divergence_rank=first,
                early_divergence_ranks=[first, 2],
                distinct_correct=2,
                correct_pair_rouge_l=0.6,
                off_rail_r=off,
            )
        )
        rows.append(
            dict(
                index=i,
                leaked=leak,
                model="contaminated",
                adapter="co",
                r=0.9,
                greedy_rouge_l=0.9 if leak else 0.4,
                first_divergence_rank=None,
                early_divergence_ranks=None,
                distinct_correct=None,
                correct_pair_rouge_l=None,
                off_rail_r=None,
            )
        )
    s = summarise(rows)
    assert math.isclose(s["runner_up_share_first_leaked"], 2 / 3)
    assert math.isclose(s["runner_up_share_early_leaked"], 5 / 6)
    assert s["first_rank_hist_leaked"] == {"2": 2, "3": 1, "4": 0, "5": 0, "6": 0}
    assert math.isclose(s["collapse_gap_contaminated"], 0.5)
    assert s["reliable_questions"] == 2 and math.isclose(s["off_rail_ratio"], 0.75)


@pytest.mark.parametrize(
    "kw", [dict(m=0), dict(temperature=0.0), dict(temperature=float("nan")), dict(reliable=1.5)]
)
def test_bad_figure1_settings_are_config_errors(kw):
    with pytest.raises(ConfigError):
        Figure1Settings(**kw)


@pytest.fixture(scope="module")
def smoke_engine(smoke_world):
    from railsweep.engines.transformers_engine import TransformersEngine
    from railsweep.miniworld import build_world
    from railsweep.tasks import GSM8KTask

    smoke_world = build_world("smoke", cache_dir=smoke_world)
    fam = smoke_world.family("llama")
    eng = TransformersEngine(
        fam.base_dir, adapters={k: str(v) for k, v in fam.adapters.items()}, device="cpu", dtype="float32"
    )
    task = GSM8KTask.from_dir(
        smoke_world.data_dir, split="test", leak_split=smoke_world.leak_split_path, limit=3
    )
    yield eng, task, list(task.questions())
    eng.close()


def test_a_model_teacher_forced_on_its_own_greedy_answer_never_diverges(smoke_engine):
    eng, task, qs = smoke_engine
    run = readout(eng, task, qs, "clean", Figure1Settings(m=2, max_new_tokens=24))
    for q, g in zip(qs, run.greedy):
        ids = answer_ids(g, eng.tokenizer)
        logits = step_logits(eng, "clean", task.prompt(q), ids)
        assert logits.shape[0] == len(ids)
        assert divergence_ranks(logits, ids, 10) == (None, [])  # off by one position, this fails


def test_shared_prompt_logits_equal_one_full_forward_per_continuation(smoke_world):
    from railsweep.engines.transformers_engine import TransformersEngine
    from railsweep.miniworld import build_world
    from railsweep.tasks import GSM8KTask

    world = build_world("smoke", cache_dir=smoke_world)
    fam = world.family("llama")
    adapters = {k: str(v) for k, v in fam.adapters.items()}
    eng = TransformersEngine(fam.base_dir, adapters=adapters, device="cpu", dtype="float32")
    try:
        task = GSM8KTask.from_dir(world.data_dir, split="test", limit=1)
        prompt = task.prompt(next(iter(task.questions())))
        rng = random.Random(0)
        vocab = eng.model.config.vocab_size
        conts = [[rng.randrange(vocab) for _ in range(n)] for n in (5, 0, 1, 17, 9, 3)]
        p = eng.tokenizer(prompt, add_special_tokens=True)["input_ids"]
        for adapter in (None, *sorted(adapters)):
            got = list(step_logits_many(eng, adapter, prompt, conts, batch_size=4))
            assert [g.shape[0] for g in got] == [len(c) for c in conts]
            for c, g in zip(conts, got):
                ids = torch.tensor([list(p) + c])
                with torch.no_grad(), use_adapter(eng.model, adapter):
                    want = eng.model(input_ids=ids).logits[0, len(p) - 1 : len(p) - 1 + len(c)].float()
                torch.testing.assert_close(g, want, rtol=1e-4, atol=1e-4)
    finally:
        eng.close()


def test_answer_trajectory_drops_the_stop_string_and_keeps_eos(smoke_engine):
    eng, _, _ = smoke_engine
    tok = eng.tokenizer
    answer = tok(" So Tom has 5 apples. The answer is 5.", add_special_tokens=False)["input_ids"]
    stop = tok("\n\nQ:", add_special_tokens=False)["input_ids"]
    assert len(stop) >= 2
    text = tok.decode(answer)
    assert answer_ids(Sample(answer + stop, text, "stop"), tok) == answer
    assert answer_ids(Sample(answer + [tok.eos_token_id], text, "stop"), tok) == answer + [tok.eos_token_id]
    assert answer_ids(Sample(answer, text, "length"), tok) == answer
    assert answer_ids(Sample(stop, "", "stop"), tok) == []


def test_figure1_command_writes_rows_summary_and_plot(smoke_world, tmp_path, monkeypatch):
    import json

    import pandas as pd

    from railsweep.cli import main

    monkeypatch.setenv("RAILSWEEP_CACHE", str(smoke_world))
    out = tmp_path / "fig"
    argv = [
        "figure1",
        "--world",
        "smoke",
        "--limit",
        "2",
        "--m",
        "2",
        "--max-new-tokens",
        "16",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    rows = pd.read_parquet(out / "figure1.parquet")
    assert len(rows) == 4 and set(rows["model"]) == {"clean", "contaminated"}
    summary = json.loads((out / "figure1.json").read_text())
    assert {"runner_up_share_first_leaked", "off_rail_ratio", "collapse_gap_contaminated"} <= set(summary)
    assert (out / "figure1.png").stat().st_size > 0


def test_figure1_command_rejects_mixed_inputs_before_any_work(tmp_path, capsys):
    from railsweep.cli import main

    out = tmp_path / "fig"
    assert main(["figure1", "--world", "smoke", "--model", "x", "--out", str(out)]) == 2
    assert "--world replaces" in capsys.readouterr().err
    assert not out.exists()
