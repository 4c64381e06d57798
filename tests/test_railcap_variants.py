"""RailCap's restrictions as strategy options: validated at load, invisible in the ids of cells without them,
labelled as Table 4 rows, number tokens found with the engine's tokenizer, and their effect on a real
tiny model (a ban that stops after the first departure triggers at most once per sample)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from railsweep.config import CellConfig
from railsweep.engines.base import Request, SamplingSpec
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.errors import ConfigError
from railsweep.interventions.railcap import RailCapSpec
from railsweep.strategies.base import config_dict, make_config
from railsweep.strategies.railcap.numbers import is_number_text, number_token_ids
from railsweep.strategies.railcap.strategy import RailCap, RailCapConfig
from railsweep.strategy_registry import in_table, strategy_label
from railsweep.testing import make_tiny_model


@pytest.mark.parametrize(
    ("params", "needle"),
    [({"stop_after_departure": "yes"}, "stop_after_departure"), ({"spare_numbers": 1}, "spare_numbers")],
)
def test_bad_restriction_values_fail_at_load_naming_the_value(params, needle):
    with pytest.raises(ConfigError, match=needle):
        make_config("railcap", params)


def test_restrictions_stay_out_of_the_ids_of_cells_that_leave_them_off():
    def cell(params):
        return CellConfig(model="/m", strategy="railcap", task_dir="/d", strategy_params=params)

    plain, explicit = cell({}), cell({"stop_after_departure": False, "spare_numbers": False})
    assert plain.cell_id == explicit.cell_id
    assert (
        "stop_after_departure" not in plain.strategy_params and "spare_numbers" not in plain.strategy_params
    )
    on = cell({"stop_after_departure": True, "spare_numbers": True})
    assert on.cell_id != plain.cell_id and on.strategy_params["spare_numbers"] is True
    cfg = make_config("railcap", {"stop_after_departure": True})
    assert make_config("railcap", config_dict(cfg)) == cfg


def test_restricted_rows_get_their_own_table4_label_and_are_never_the_main_row():
    assert strategy_label("railcap", {"n": 4, "mode": "cap"}) == "RailCap n=4 cap"
    assert strategy_label("railcap", {"n": 4, "mode": "cap", "stop_after_departure": True}) == (
        "RailCap n=4 cap stop at departure"
    )
    assert (
        strategy_label("railcap", {"n": 4, "mode": "cap", "spare_numbers": True})
        == "RailCap n=4 cap spare numbers"
    )
    main = CellConfig(model="/m", strategy="railcap", task_dir="/d", strategy_params={})
    variant = CellConfig(
        model="/m", strategy="railcap", task_dir="/d", strategy_params={"spare_numbers": True}
    )
    for table in ("1", "2", "3"):
        assert in_table("railcap", main.strategy_params, table)
        assert not in_table("railcap", variant.strategy_params, table)
    assert in_table("railcap", variant.strategy_params, "4")


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("7", True),
        (" 42", True),
        ("\u258112", True),
        ("\u01203", True),
        ("3.5", True),
        ("1,000", True),
        ("\n9", True),
        (".", False),
        (",", False),
        ("-3", False),
        ("$", False),
        ("3x", False),
        ("12th", False),
        ("", False),
        (" ", False),
        ("1.", False),
        ("٣", False),
    ],  # fmt: skip
)
def test_a_number_token_is_ascii_digits_in_groups_joined_by_point_or_comma(text, number):
    assert is_number_text(text) is number


class PieceTokenizer:
    """Decodes each id to a fixed piece, like a digit-splitting SentencePiece vocabulary."""

    pieces = {0: "\u2581The", 1: "\u25812", 2: "2", 3: "\u2581+", 4: "\u25818", 5: ".", 6: "\u2581=", 7: "30"}

    def decode(self, ids, **_kw):
        return "".join(self.pieces[i] for i in ids).replace("\u2581", " ")


def test_number_tokens_are_found_one_trajectory_token_at_a_time_with_the_engines_tokenizer():
    rail = [0, 1, 2, 3, 4, 6, 1, 7, 5]
    assert number_token_ids(PieceTokenizer(), rail) == (1, 2, 4, 7)
    ctx = SimpleNamespace(engine=SimpleNamespace(tokenizer=PieceTokenizer(), name="fake"))
    spec = RailCap(RailCapConfig(spare_numbers=True))
    assert spec.config.spec(rail, spec._spare(ctx, rail)) == RailCapSpec(tuple(rail), spare=(1, 2, 4, 7))
    assert RailCap(RailCapConfig())._spare(ctx, rail) == ()
    with pytest.raises(ConfigError, match="spare_numbers"):
        spec._spare(SimpleNamespace(engine=SimpleNamespace(tokenizer=None, name="x")), rail)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    path = make_tiny_model(tmp_path_factory.mktemp("sharp") / "llama", seed=0, logit_scale=3.0)
    eng = TransformersEngine(path, device="cpu", dtype="float32")
    yield eng
    eng.close()


def _samples(engine, spec):
    req = Request(
        "Question: Janet sells 16 eggs every day.\nAnswer:",
        SamplingSpec(n=12, temperature=0.7, max_new_tokens=40, seed=3),
        intervention=spec,
    )
    return engine.generate([req])[0].samples


def test_a_ban_that_stops_after_departure_triggers_at_most_once_per_sample(engine):
    """A ban always departs, so with stop_after_departure the first ban is the last (Algorithm 1 bans on)."""
    trajectory = tuple(t for s in _samples(engine, None) for t in s.token_ids)
    plain = _samples(engine, RailCapSpec(trajectory, n=1, mode="ban", successor="all"))
    stopped = _samples(
        engine, RailCapSpec(trajectory, n=1, mode="ban", successor="all", stop_after_departure=True)
    )
    assert max(s.triggers for s in plain) > 1
    assert [s.triggers for s in stopped] == [1] * len(stopped)
