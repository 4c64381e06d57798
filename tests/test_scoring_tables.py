"""Tables 1–4: shapes, best-per-column marks, All-Zero and the noise-floor row never best, and the writers."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from railsweep.analysis import table1, table2, table3, table4, to_csv, to_html, to_markdown, write_table
from railsweep.analysis.tables import FLOOR_ROW, format_estimate
from railsweep.errors import ConfigError

NAMES = ("g_ap", "g_app", "a_ppg", "delta_plus", "delta_minus", "sa_ppg", "s_delta_plus", "s_delta_minus")


def score(v: float, floor: float | None = 0.0) -> dict:
    """Every metric at v + i/100 with an interval; its noise floor at floor + i/1000 (below every value)."""
    return {
        k: {"value": v + i / 100, "ci_low": v - 0.01, "ci_high": v + 0.09}
        | ({} if floor is None else {"floor": floor + i / 1000})
        for i, k in enumerate(NAMES)
    }


STRATS = {"Identity": 0.33, "LNE-blocking": 0.29, "RailCap n=4 cap": 0.19, "All-Zero": 0.01}
FAMILIES = ("llama", "gemma", "pythia")


def setting_floor(fam: str, domain: str) -> float:
    """Each setting's own floor, so that a column's floor shows which cell it came from."""
    return 0.001 * (1 + FAMILIES.index(fam)) + (0.004 if domain == "PQ" else 0.0)


@pytest.fixture
def cells():
    out = []
    for domain in ("GSM8K", "PQ"):
        for fam in FAMILIES:
            for label, v in STRATS.items():
                bump = 0.2 if (label == "RailCap n=4 cap" and fam == "pythia" and domain == "PQ") else 0.0
                out.append({"family": fam, "domain": domain, "strategy": label,
                            "score": score(v + bump, setting_floor(fam, domain))})  # fmt: skip
    return out


def test_format_estimate_matches_paper_style():
    assert format_estimate(0.19141, 0.1712, 0.2103) == "0.1914 [0.17, 0.21]"
    assert format_estimate(0.19141, float("nan"), float("nan")) == "0.1914"  # a withheld interval
    assert format_estimate(float("nan"), 0, 1) == "—"


def test_table1_rows_strategies_then_the_floor_cols_gap_metrics_without_all_zero(cells):
    t = table1(cells, family="llama", domain="GSM8K")
    assert list(t.formatted.columns) == ["G-AP", "SA-PPG"]
    assert list(t.formatted.index) == ["Identity", "LNE-blocking", "RailCap n=4 cap", FLOOR_ROW]
    assert t.best.loc["RailCap n=4 cap", ["G-AP", "SA-PPG"]].all() and t.best.sum().sum() == 2
    assert t.numeric.loc["Identity", ("SA-PPG", "value")] == pytest.approx(0.33 + 5 / 100)
    # the floor row: each column's floor, no interval, never best although it is the lowest
    assert t.numeric.loc[FLOOR_ROW, ("G-AP", "value")] == pytest.approx(0.001)
    assert t.numeric.loc[FLOOR_ROW, ("SA-PPG", "value")] == pytest.approx(0.001 + 5 / 1000)
    assert t.numeric.loc[FLOOR_ROW].xs("ci_low", level=1).isna().all()
    assert t.formatted.loc[FLOOR_ROW].tolist() == ["0.0010", "0.0060"] and not t.best.loc[FLOOR_ROW].any()
    assert [n.split(":")[0] for n in t.notes] == ["Identity", "LNE-blocking", "RailCap n=4 cap"]


def test_table2_keeps_all_zero_and_the_floor_but_never_marks_them_best(cells):
    t = table2(cells, family="llama", domain="GSM8K")
    assert list(t.formatted.columns) == ["Δ+", "Δ−", "A-PPG", "G-APP", "SA-PPG"]
    assert list(t.formatted.index)[-2:] == ["All-Zero", FLOOR_ROW]
    assert not t.best.loc["All-Zero"].any() and not t.best.loc[FLOOR_ROW].any()
    assert not t.best[["Δ+", "Δ−"]].any().any()  # components are descriptive, not ranked
    assert t.best.loc["RailCap n=4 cap", ["A-PPG", "G-APP", "SA-PPG"]].all()
    assert t.numeric.loc[FLOOR_ROW, ("A-PPG", "value")] == pytest.approx(0.001 + 2 / 1000)


def test_table3_has_one_column_per_setting_domain_major_and_each_settings_floor(cells):
    t = table3(cells)
    cols = [(d, f) for d in ("GSM8K", "PQ") for f in FAMILIES]
    assert list(t.formatted.columns) == [f"{d} × {f}" for d, f in cols]
    assert t.best.loc["RailCap n=4 cap"].sum() == 5 and t.best.loc["LNE-blocking", "PQ × pythia"]
    assert list(t.formatted.index)[-1] == FLOOR_ROW and not t.best.loc[FLOOR_ROW].any()
    floors = t.numeric.loc[FLOOR_ROW].xs("value", level=1)
    assert floors.tolist() == pytest.approx([setting_floor(f, d) + 5 / 1000 for d, f in cols])


def test_table3_leaves_a_missing_cell_blank(cells):
    cells = [
        c
        for c in cells
        if not (c["family"] == "gemma" and c["strategy"] == "Identity" and c["domain"] == "PQ")
    ]
    t = table3(cells)
    assert t.formatted.loc["Identity", "PQ × gemma"] == "—"
    assert np.isnan(t.numeric.loc["Identity", ("PQ × gemma", "value")])


def test_table4_columns_and_explicit_row_order_then_the_floor(cells):
    t = table4(cells, family="llama", domain="GSM8K", rows=["RailCap n=4 cap", "All-Zero"])
    assert list(t.formatted.columns) == ["S-Δ+", "S-Δ−", "SA-PPG"]
    assert list(t.formatted.index) == ["RailCap n=4 cap", "All-Zero", FLOOR_ROW]
    assert t.best["SA-PPG"].tolist() == [True, False, False] and not t.best[["S-Δ+", "S-Δ−"]].any().any()


def test_scores_without_floors_get_no_floor_row(cells):
    cells = [{**c, "score": score(STRATS[c["strategy"]], floor=None)} for c in cells]
    assert FLOOR_ROW not in table1(cells, family="llama", domain="GSM8K").formatted.index
    assert FLOOR_ROW not in table3(cells).formatted.index


def test_ambiguous_setting_raises_config_error_listing_settings(cells):
    with pytest.raises(ConfigError, match="llama × GSM8K"):
        table1(cells)
    with pytest.raises(ConfigError, match="no settings"):
        table2(cells, family="falcon")


def test_duplicate_cell_raises_config_error(cells):
    with pytest.raises(ConfigError, match="two cells"):
        table3([*cells, cells[0]])


def test_unknown_row_raises_config_error(cells):
    with pytest.raises(ConfigError, match="TED"):
        table1(cells, family="llama", domain="GSM8K", rows=["TED"])


def test_markdown_bolds_best_ends_with_the_floor_and_escapes_pipes(cells):
    md = to_markdown(table1(cells, family="llama", domain="GSM8K"))
    lines = md.strip().splitlines()
    assert lines[2] == "| strategy | G-AP | SA-PPG |"
    railcap = lines.index("| RailCap n=4 cap | **0.1900 [0.18, 0.28]** | **0.2400 [0.18, 0.28]** |")
    assert lines[railcap + 1] == f"| {FLOOR_ROW} | 0.0010 | 0.0060 |"  # the last row, plain
    assert "a\\|b" in to_markdown(pd.DataFrame({"x": ["a|b"]}))


def test_html_marks_best_in_bold_and_escapes(cells):
    cells = [{**c, "strategy": "<RailCap>"} if c["strategy"] == "RailCap n=4 cap" else c for c in cells]
    out = to_html(table1(cells, family="llama", domain="GSM8K"))
    assert "<b>0.1900 [0.18, 0.28]</b>" in out and "&lt;RailCap&gt;" in out and "<RailCap>" not in out


def test_csv_round_trips_numbers_and_best_flags(cells):
    t = table3(cells)
    back = pd.read_csv(io.StringIO(to_csv(t)), index_col="strategy")
    assert back.loc["Identity", "GSM8K × llama"] == pytest.approx(
        t.numeric.loc["Identity", ("GSM8K × llama", "value")]
    )
    assert back.loc["Identity", "GSM8K × llama ci_high"] == pytest.approx(0.42)
    assert bool(back.loc["RailCap n=4 cap", "GSM8K × llama best"])
    assert back.loc[FLOOR_ROW, "GSM8K × llama"] == pytest.approx(0.006)
    assert not back.loc[FLOOR_ROW].filter(like="best").any()


def test_write_table_writes_three_formats_and_no_temporaries(cells, tmp_path):
    paths = write_table(table3(cells), tmp_path / "out", "table3")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["table3.csv", "table3.html", "table3.md"]
    assert paths["md"].read_text(encoding="utf-8").startswith("**Table 3")


def test_the_html_file_is_a_page_that_declares_utf8_so_a_browser_reads_its_symbols(cells, tmp_path):
    page = write_table(table3(cells), tmp_path, "table3")["html"].read_bytes()
    assert page.startswith(b"<!DOCTYPE html>") and b'<meta charset="utf-8">' in page
    assert "GSM8K × llama".encode() in page  # written as UTF-8 bytes, which the declared charset reads back
