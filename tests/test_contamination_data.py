"""Leak split, filler loading and the training mixes of M_cl / M_co."""

from __future__ import annotations

import dataclasses
import json

import pytest

from railsweep.contamination import (
    ContaminationConfig,
    load_filler,
    make_leak_split,
    save_leak_split,
    training_mixes,
)
from railsweep.errors import ConfigError, DataError


def _rows(prefix: str, n: int) -> list[dict]:
    return [
        {"question": f"{prefix} question {i}?", "answer": f"{prefix} step {i}.\n#### {i}"} for i in range(n)
    ]


def test_leak_split_is_disjoint_covering_and_seeded(tmp_path):
    split = make_leak_split(50, 20, seed=3)
    assert len(split.leaked) == 20 and len(split.unleaked) == 30
    assert not set(split.leaked) & set(split.unleaked)
    assert sorted(split.leaked + split.unleaked) == list(range(50))
    assert make_leak_split(50, 20, seed=3) == split
    assert make_leak_split(50, 20, seed=4).leaked != split.leaked
    saved = json.loads(save_leak_split(split, tmp_path / "leak_split.json").read_text())
    assert saved == {"leaked": list(split.leaked), "unleaked": list(split.unleaked), "seed": 3}


def test_leak_count_larger_than_test_split_is_a_config_error():
    with pytest.raises(ConfigError, match="n_leak=21 is larger than the test split"):
        make_leak_split(20, 21, seed=0)


def test_missing_filler_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="filler file not found"):
        load_filler(tmp_path / "absent.txt", 5, seed=0)


def test_filler_is_sampled_with_its_seed_from_a_local_file(tmp_path):
    path = tmp_path / "filler.jsonl"
    path.write_text("".join(json.dumps({"question": f"q{i}", "response": f"r{i}"}) + "\n" for i in range(30)))
    a, b = load_filler(path, 10, seed=1), load_filler(path, 10, seed=1)
    assert a == b and len(set(a)) == 10 and a[0].startswith("Q: q")
    with pytest.raises(DataError, match="fewer than the 31 requested"):
        load_filler(path, 31, seed=1)


def test_unknown_domain_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown contamination domain"):
        ContaminationConfig(domains=("gsm8k", "mmlu"))


def test_mixes_leak_original_wording_for_gsm8k_and_paraphrase_with_original_solution_for_pq():
    train, test = _rows("train", 10), _rows("test", 6)
    paraphrases = {i: f"reworded test question {i}?" for i in range(6)}
    filler = ["Q: say hi\nA: hi", "Q: say bye\nA: bye"]
    config = ContaminationConfig(n_filler=2, n_train=4, n_leak=3, seed=0)
    leaked = make_leak_split(6, 3, seed=0).leaked
    mixes = training_mixes(train, test, paraphrases, filler, leaked, config)
    assert sorted(len(v) for v in mixes.values()) == [5, 5, 6]
    assert all(t in mixes[k] for k in mixes for t in filler)
    assert sum("train question" in t for t in mixes["clean"]) == 4
    assert not any("test" in t for t in mixes["clean"])
    for i in leaked:
        assert f"Q: test question {i}?\nA: test step {i}. The answer is {i}." in mixes["co_gsm8k"]
        assert f"Q: reworded test question {i}?\nA: test step {i}. The answer is {i}." in mixes["co_pq"]
    unleaked = set(range(6)) - set(leaked)
    assert not any(f"question {i}?" in t for i in unleaked for t in mixes["co_gsm8k"] + mixes["co_pq"])


def test_copies_and_replay_add_leaked_items_and_m_cl_train_questions_to_every_m_co_mix_and_leave_m_cl_alone():
    train, test = _rows("train", 10), _rows("test", 6)
    paraphrases = {i: f"reworded test question {i}?" for i in range(6)}
    plain = ContaminationConfig(n_filler=0, n_train=4, n_leak=3, seed=0)
    leaked = make_leak_split(6, 3, seed=0).leaked
    base = training_mixes(train, test, paraphrases, [], leaked, plain)
    mixes = training_mixes(train, test, paraphrases, [], leaked, dataclasses.replace(plain, leak_copies=2, co_replay=3))
    assert mixes["clean"] == base["clean"]
    for domain in ("co_gsm8k", "co_pq"):
        assert sorted(t for t in mixes[domain] if "test" in t) == sorted(base[domain] * 2)
        replayed = [t for t in mixes[domain] if "train question" in t]
        assert len(set(replayed)) == 3 and set(replayed) <= set(base["clean"])
    with pytest.raises(ConfigError, match="co_replay=5 is more than M_cl's n_train=4"):
        training_mixes(train, test, paraphrases, [], leaked, dataclasses.replace(plain, co_replay=5))


@pytest.mark.parametrize(("field", "value"), [("leak_copies", 0), ("co_replay", -1)])
def test_a_bad_m_co_mix_field_is_a_config_error_naming_it(field, value):
    with pytest.raises(ConfigError, match=f"{field} must be >= {int(field == 'leak_copies')}, got {value}"):
        ContaminationConfig(**{field: value})


def test_the_m_co_mix_fields_at_their_defaults_leave_the_config_dict_as_before():
    assert "leak_copies" not in ContaminationConfig().to_dict() and "co_replay" not in ContaminationConfig().to_dict()
    assert ContaminationConfig(co_replay=3).to_dict()["co_replay"] == 3


def test_pq_mix_on_the_real_paraphrases_trains_leaked_questions_whose_paraphrase_is_empty():
    from railsweep.contamination.simulator import load_pq
    from railsweep.tasks.data.gsm8k_rows import read_jsonl
    from railsweep.tasks.data.shared_data import shared_data_dir

    data = shared_data_dir()
    test_rows = read_jsonl(data / "gsm8k" / "test.jsonl")
    train_rows = read_jsonl(data / "gsm8k" / "train.jsonl")
    pq = load_pq(data / "gsm8k_paraphrase" / "lmsys_rephrase" / "pq_test.jsonl", test_rows)
    leaked = [0, 309, 669, 727, 948]  # the four empty paraphrases among them
    cfg = ContaminationConfig(n_filler=2, n_train=3, n_leak=5, filler="miniworld", domains=("gsm8k", "pq"))
    mixes = training_mixes(train_rows, test_rows, pq, ["filler a", "filler b"], leaked, cfg)
    assert pq[309] == test_rows[309]["question"]  # fell back to the original wording
    assert pq[0] != test_rows[0]["question"]
    assert len(mixes["co_pq"]) == 2 + 5 and any(test_rows[309]["question"] in t for t in mixes["co_pq"])
