"""The dynamics tables from synthetic collected data (no model), and ``railsweep dynamics``'s bad inputs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from railsweep.cli import main
from railsweep.dynamics.analyse import analyse
from railsweep.dynamics.family_data import FamilyData
from railsweep.dynamics.forcing import PositionStats
from railsweep.dynamics.observe import Observed
from railsweep.dynamics.output import family_summary, write_run
from railsweep.dynamics.settings import DynamicsSettings
from railsweep.dynamics.survival import loss_curve, survival_at
from railsweep.errors import ConfigError

PARAMS = {("M_cl", False): (0.3, 1.0, 0.5), ("M_cl", True): (0.3, 1.0, 0.5),
          ("M_co", False): (0.3, 1.0, 0.5), ("M_co", True): (0.0, 0.5, 1.5)}  # fmt: skip
TAUS = (0.0, 0.5, 1.0)


def synthetic(n=24, seed=0) -> FamilyData:
    """Items whose gold NLL curves follow known (E, A, alpha) per model x group, with small noise."""
    rng = np.random.default_rng(seed)
    leaked = np.arange(n) % 3 == 0
    gold, greedy, observed = {}, {}, {}
    for model in ("M_cl", "M_co"):
        gold[model], greedy[model] = [], []
        for i in range(n):
            T = int(rng.integers(20, 40))
            t = np.arange(1, T + 1)
            nll = np.abs(loss_curve(t, *PARAMS[(model, bool(leaked[i]))]) + rng.normal(0, 0.01, T))
            st = PositionStats(
                list(range(T)), nll, 1 + np.log(t), 1 + np.log(t), {tau: nll / max(tau, 0.1) for tau in TAUS}
            )
            gold[model].append(st)
            greedy[model].append(PositionStats(list(range(T)), nll, 2 + np.log(t), 2 + np.log(t)))
        observed[model] = {
            tau: Observed(
                solve=np.clip(
                    rng.random(n) * 0.3 + (0.6 * leaked if model == "M_co" else 0) * (1 - tau / 2), 0, 1
                ),
                verbatim=np.zeros(n),
                samples=[None] * n,
            )
            for tau in TAUS
        }
    return FamilyData("fam", list(range(n)), leaked, gold, greedy, observed)


@pytest.fixture(scope="module")
def tables():
    return analyse(synthetic(), DynamicsSettings(temperatures=TAUS, n_boot=30, n_boot_gain=100))


def test_native_fits_recover_each_groups_parameters_and_regime(tables):
    nat = tables.fits[tables.fits["kind"] == "native"].set_index(["model", "group"])
    for (model, lk), (E, _A, alpha) in PARAMS.items():
        row = nat.loc[(model, "leaked" if lk else "unleaked")]
        assert row["E"] == pytest.approx(E, abs=0.02) and row["alpha"] == pytest.approx(alpha, abs=0.1)
        assert row["E_lo"] <= row["E"] <= row["E_hi"]
    assert nat.loc[("M_co", "leaked"), "regime"] == "lock-in"
    assert nat.loc[("M_cl", "leaked"), "regime"] == "decoherence"
    assert nat.loc[("M_co", "leaked"), "margin_slope"] == pytest.approx(1.0)


def test_predictions_use_the_group_fit_with_alpha_over_tau_and_the_items_length(tables):
    pred, fits = tables.predictions, tables.fits
    g = fits[(fits["kind"] == "native") & (fits["model"] == "M_co") & (fits["group"] == "leaked")].iloc[0]
    for row in pred[(pred["model"] == "M_co") & pred["leaked"]].head(6).itertuples():
        assert row.p_group == pytest.approx(survival_at(g.E, g.A, g.alpha, row.T, row.tau))
    assert len(pred) == 2 * 24 * len(TAUS)
    assert set(tables.accuracy["predictor"]) == {"p_group", "p_item", "p_tf"}


def test_gain_rows_per_tau_and_summary_is_json(tables, tmp_path):
    assert tables.gains["tau"].tolist() == list(TAUS)
    s = family_summary(tables)
    assert json.loads(json.dumps(s)) == s and "M_co/leaked" in s["fits"]
    paths = write_run(tmp_path, {"fam": tables}, {"families": {"fam": s}})
    assert {p.name for p in paths} >= {"fits.parquet", "summary.json", "calibration_fam.png"}
    assert not list(tmp_path.glob(".*tmp"))
    assert len(pd.read_parquet(tmp_path / "predictions.parquet")) == len(tables.predictions)


@pytest.mark.parametrize(
    "kw,needle",
    [({"temperatures": (-0.5,)}, "temperatures"), ({"temperatures": (float("nan"),)}, "temperatures"),
     ({"m": 0}, "m must"), ({"limit": 0}, "limit"), ({"e_cut": 0.0}, "e_cut"), ({"temperatures": ()}, "temperature")],
)  # fmt: skip
def test_bad_settings_fail_at_construction_naming_the_value(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        DynamicsSettings(**kw)


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--temperatures", "-1"], "temperatures"),
        (["--temperatures", "inf"], "temperatures"),
        (["--m", "0"], "argument --m: must be an integer >= 1, got '0'"),
        (["--family", "nosuch"], "nosuch"),
        (["--world", "nosuch_world"], "nosuch_world"),
    ],
)
def test_railsweep_dynamics_bad_input_is_one_error_line_and_exit_2(argv, needle, tmp_path, capsys, request):
    if "--family" in argv:  # an unknown family of a built world: the smoke world
        from railsweep.miniworld import build_world

        world = build_world("smoke", cache_dir=request.getfixturevalue("smoke_world"))
        argv = [*argv, "--world", str(world.root)]
    request.getfixturevalue("monkeypatch").setenv("RAILSWEEP_CACHE", str(tmp_path / "cache"))  # nothing is built
    rc = main(["dynamics", *argv, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and needle in err[0] and err[0].startswith("railsweep: error:")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "cache" / "miniworld").exists() or not any(
        (tmp_path / "cache" / "miniworld").iterdir()
    )


def test_an_unbuilt_world_is_refused_not_built(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAILSWEEP_CACHE", str(tmp_path / "cache"))
    assert main(["dynamics", "--world", "mini", "--out", str(tmp_path / "out")]) == 2
    assert "not built" in capsys.readouterr().err
    assert not (tmp_path / "cache" / "miniworld").exists() or not any(
        (tmp_path / "cache" / "miniworld").iterdir()
    )
