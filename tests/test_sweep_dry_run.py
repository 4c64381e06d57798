"""``--dry-run`` prices a sweep without starting anything: every shipped preset, both entry points
(``railsweep sweep`` and the sweep job behind ``sweeps/*.py``), the documented sample counts, bad values,
and the token estimate against the tokens a smoke sweep's cells really generate."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess

import pytest

from railsweep import cli
from railsweep.errors import DataError
from railsweep.miniworld.presets import preset_config
from railsweep.sweep import job
from railsweep.sweep.plan.price_inputs import dry_resolve, mlp_widths_of, sweep_questions
from railsweep.sweep.plan.pricing import _tokens, format_price, price_params, price_sweep, sweep_price
from railsweep.sweep.plan.throughput import load_throughput
from railsweep.sweep.spec import options
from railsweep.sweep.spec.resolve import resolve_spec
from railsweep.sweep.spec.sweep_spec import PRESETS, load_spec


class Tripped(AssertionError):
    pass


@pytest.fixture
def tripwire(monkeypatch, tmp_path):
    """Fail the test if anything starts: Ray, the local services, a world build, a model load, a process;
    run in an empty directory with an empty cache, which must stay empty."""
    import ray
    import transformers

    import railsweep.miniworld
    import railsweep.miniworld.world
    from railsweep.services import jobs, mlflow_server, ray_head

    def trip(what):
        def fail(*a, **k):
            raise Tripped(f"--dry-run started {what}")

        return fail

    monkeypatch.setattr(ray, "init", trip("ray.init"))
    for module, name in ((mlflow_server, "ensure_mlflow_server"), (ray_head, "ensure_ray_head"), (jobs, "submit_job")):
        monkeypatch.setattr(module, name, trip(name))
    monkeypatch.setattr(railsweep.miniworld, "build_world", trip("a world build"))
    monkeypatch.setattr(railsweep.miniworld.world, "build_world", trip("a world build"))
    monkeypatch.setattr(railsweep.miniworld.world, "load_world", trip("a world load"))
    monkeypatch.setattr(transformers.PreTrainedModel, "from_pretrained", trip("a model load"))
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", trip("a model load"))
    monkeypatch.setattr(subprocess.Popen, "__init__", trip("a process"))
    work, cache = tmp_path / "cwd", tmp_path / "cache"
    work.mkdir()
    cache.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("RAILSWEEP_CACHE", str(cache))
    yield
    assert not any(work.iterdir()) and not any(cache.iterdir()), "--dry-run wrote files"


@pytest.mark.parametrize("preset", PRESETS)
def test_dry_run_of_every_shipped_preset_prints_the_price_and_starts_nothing(tripwire, capsys, preset):
    assert cli.main(["sweep", "--preset", preset, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"[dry-run] sweep {preset!r}" in out and "nothing started" in out
    assert "engine (family)" in out and "\ntotal " in out
    assert "wall time" in out and ("CPU-hours" in out or "GPU-hours" in out)
    assert "smallest difference between two strategies detectable at 80% power" in out
    assert "\n  1319   50   50 " in out  # the paper's design beside the sweep's own


def test_the_planner_row_prices_the_questions_the_sweep_reads_not_the_whole_split(tripwire, capsys):
    assert cli.main(["sweep", "--preset", "smollm2_table3", "--dry-run"]) == 0  # limit: 100 of 200 questions
    out = capsys.readouterr().out
    assert "\n   100   10   10 " in out and "\n   200   10   10 " not in out


@pytest.mark.parametrize("table", ["1", "3", "4"])
def test_the_sweep_scripts_dry_run_through_the_same_option_builder(tripwire, capsys, table):
    assert job.main(["--preset", "mini_ablation", "--dry-run"], table=table) == 0
    assert f"sweep 'mini_ablation', table {table}" in capsys.readouterr().out


# Sample counts the docs and the presets' comments quote for real runs (docs/mini_six.md, README).
DOCUMENTED = [("mini", "3", 21, 61_200), ("mini_six", "all", 7, 18_624), ("mini_dynamics", "all", 36, 12_300),
              ("mini_replica", "all", 7, 7_000)]  # fmt: skip


@pytest.mark.parametrize(("preset", "table", "cells", "samples"), DOCUMENTED)
def test_priced_cells_and_samples_equal_what_the_documented_sweeps_decoded(preset, table, cells, samples):
    price = price_sweep(load_spec(preset), table, load_throughput())
    assert (price.cells, price.samples) == (cells, samples)


def test_a_sweep_that_starts_prints_its_plan_without_the_dry_runs_words():
    price = price_sweep(load_spec("smoke"), "3", load_throughput())
    started = format_price(price, dry_run=False)
    assert started.startswith("[sweep] plan of sweep 'smoke', table 3")
    assert "dry-run" not in started and "nothing started" not in started
    assert started.split("\n", 1)[1] == format_price(price).split("\n", 1)[1]  # the same plan below the first line


def test_limit_narrows_the_price_as_it_narrows_the_sweep():
    """bench/sweep_overhead.py --preset mini --limit 40 decoded 12,240 samples (docs/benchmarks.md)."""
    args = job.make_parser("3").parse_args(["--preset", "mini", "--limit", "40"])
    (spec,) = options.chosen_specs(args)
    assert sweep_price(spec, "3", args).samples == 12_240


def test_cpu_wall_time_is_the_slowest_familys_tokens_over_its_cores_share(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"hardware": "x", "entries": [
        {"backend": "transformers", "device": "cpu", "model": "miniworld:mini/llama", "units": 2, "tokens_per_s": 800},
        {"backend": "transformers", "device": "cpu", "model": "*", "units": 1, "tokens_per_s": 1000}]}))  # fmt: skip
    price = price_sweep(load_spec("mini"), "3", load_throughput(path), [6])
    by = {e.family: e.total_tokens for e in price.engines}
    # 6 cores over 3 engines: llama 400 tokens/s per core x 2 cores, the others 1000 x 2
    want = max(by["llama"] / 800, by["neox"] / 2000, by["gemma"] / 2000)
    assert price.clusters[0].wall_s == pytest.approx(want)
    assert price.clusters[0].device_hours == pytest.approx(6 * want / 3600)


def _shortcut_prices(tmp_path, patched_rate, backend="transformers"):
    """A vLLM sweep decodes Shortcut's cells on a transformers engine: its patched rate is that engine's."""
    entries = [{"backend": backend, "device": "cpu", "model": "*", "units": 1, "tokens_per_s": 100}]
    if patched_rate:
        entries.append({**entries[0], "backend": "transformers", "tokens_per_s": patched_rate, "decode": "patched"})
    path = tmp_path / f"t{patched_rate}.json"
    path.write_text(json.dumps({"hardware": "x", "entries": entries}))
    spec = load_spec("smollm2_heavy_shortcut")
    spec = dataclasses.replace(spec, engine=dataclasses.replace(spec.engine, backend=backend))
    return price_sweep(spec, "3", load_throughput(path), [2])


def test_shortcuts_patched_tokens_are_priced_at_the_tables_patched_rate_or_said_to_be_plain(tmp_path):
    """The Shortcut cells' own tokens (2 of the preset's 5 cells; its localisation has no patched passes) are
    patched; 2 cores = 2 one-core engines."""
    price = _shortcut_prices(tmp_path, 10)
    (engine,) = price.engines
    assert _shortcut_prices(tmp_path, 10, backend="vllm").clusters == price.clusters
    plain = _shortcut_prices(tmp_path, None)
    assert 0 < engine.patched_tokens < engine.total_tokens and plain.engines == price.engines
    want = ((engine.total_tokens - engine.patched_tokens) / 100 + engine.patched_tokens / 10) / 2
    assert price.clusters[0].wall_s == pytest.approx(want)
    assert plain.clusters[0].wall_s == pytest.approx(engine.total_tokens / 100 / 2)
    assert any("priced at 10.0 tokens/s of one core (its plain rate: 100.0)" in n for n in price.notes)
    assert any("priced at its plain rate" in n and "--patched" in n for n in plain.notes)
    identity_only = dataclasses.replace(load_spec("smollm2_heavy_shortcut"), strategies=tuple(
        st for st in load_spec("smollm2_heavy_shortcut").strategies if st.name != "shortcut"))  # fmt: skip
    assert price_sweep(identity_only, "3", load_throughput()).engines[0].patched_tokens == 0


def test_a_gpu_sweep_needs_one_gpu_per_family_and_replicates_over_the_rest(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"entries": [{"backend": "vllm", "device": "cuda", "model": "*", "units": 1,
                                             "tokens_per_s": 5000}]}))  # fmt: skip
    price = price_sweep(load_spec("paper"), "3", load_throughput(path), [2, 3, 6])
    short, one, two = price.clusters
    assert short.wall_s is None and "needs >= 3 GPUs" in short.note
    assert (one.engines, two.engines) == (3, 6)
    assert two.wall_s == pytest.approx(one.wall_s / 2)


def test_the_sweep_job_logs_the_price_as_parent_run_parameters(monkeypatch):
    import ray

    import railsweep.sweep.run.driver as driver
    import railsweep.sweep.tracking.tracker as tracking

    seen = {}

    def fake_run_sweep(spec, **kw):
        seen.update(kw)
        raise SystemExit(0)

    monkeypatch.setattr(tracking, "check_tracking_uri", lambda uri: None)
    monkeypatch.setattr(ray, "init", lambda **kw: None)
    monkeypatch.setattr(driver, "run_sweep", fake_run_sweep)
    with pytest.raises(SystemExit):
        job.main(["--preset", "mini_six", "--cluster-sizes", "2"], table="3")
    want = price_params(price_sweep(load_spec("mini_six"), "3", load_throughput(), [2]))
    assert seen["params"] == want and want["cost.samples"] == "18624"


def _error(capsys, argv):
    rc = cli.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    return rc, err


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--cluster-sizes", "2,-4"], "-4"),
        (["--cluster-sizes", "0"], "got 0"),
        (["--cluster-sizes", "two"], "'two'"),
        (["--throughput", "THROUGHPUT"], "THROUGHPUT"),
        (["--spec", "SPEC"], "SPEC"),
        (["--pilot", "/no/such/pilot"], "/no/such/pilot"),
    ],
)
def test_bad_dry_run_values_are_one_clear_error_with_exit_2(tripwire, capsys, tmp_path, extra, named):
    bad_tp = tmp_path / "tp.json"
    bad_tp.write_text('{"entries": [{"backend": "transformers", "device": "cpu", "model": "*", "units": 1, '
                      '"tokens_per_s": -3}]}')  # fmt: skip
    bad_spec = tmp_path / "spec.yaml"
    bad_spec.write_text("strategies: [no_such_strategy]\n")
    extra = [str(bad_tp) if x == "THROUGHPUT" else str(bad_spec) if x == "SPEC" else x for x in extra]
    named = str(bad_tp) if named == "THROUGHPUT" else str(bad_spec) if named == "SPEC" else named
    argv = ["sweep", "--dry-run", *extra] + ([] if "--spec" in extra else ["--preset", "mini"])
    rc, err = _error(capsys, argv)
    assert rc == 2 and len(err) == 1 and err[0].startswith("railsweep: error:")
    assert named in err[0] or "no_such_strategy" in err[0]


def test_a_malformed_throughput_file_is_refused_naming_the_file(tripwire, capsys, tmp_path):
    warp = ('{"entries": [{"backend": "transformers", "device": "cpu", "model": "*", "units": 1, "tokens_per_s": 5, '
            '"decode": "warp"}]}')  # fmt: skip
    for text in ("not json", '{"entries": []}', '{"entries": [{"backend": "transformers"}]}', warp):
        path = tmp_path / "t.json"
        path.write_text(text)
        rc, err = _error(capsys, ["sweep", "--preset", "smoke", "--dry-run", "--throughput", str(path)])
        assert rc == 2 and len(err) == 1 and str(path) in err[0]


def test_an_unknown_preset_is_refused(tripwire, capsys):
    rc, err = _error(capsys, ["sweep", "--preset", "nope", "--dry-run"])
    assert rc == 2 and len(err) == 1 and "'nope'" in err[0]


def test_the_job_dry_run_without_a_preset_is_refused(tripwire, capsys):
    assert job.main(["--dry-run"], table="3") == 2
    assert "--dry-run needs --preset or --spec" in capsys.readouterr().err


class _TokenCounter:
    """The engine, counting the responses and generated tokens of every call."""

    def __init__(self, engine):
        self._engine, self.samples, self.tokens = engine, 0, 0

    def generate(self, requests):
        out = self._engine.generate(requests)
        self.samples += sum(len(c.samples) for c in out)
        self.tokens += sum(len(s.token_ids) for c in out for s in c.samples)
        return out

    def __getattr__(self, item):
        return getattr(self._engine, item)


def test_shipped_gold_lengths_are_the_smoke_worlds_own(smoke_world):
    from railsweep.miniworld import build_world
    from railsweep.miniworld.lengths import gold_token_lengths, shipped_lengths

    world = build_world("smoke", cache_dir=smoke_world)
    measured = gold_token_lengths(world.data_dir / "test.jsonl", world.root / "tokenizer" / "tokenizer.json")
    assert shipped_lengths("smoke") == measured


def test_smoke_token_estimate_is_within_20_percent_of_the_tokens_its_cells_generate(smoke_world, tmp_path):
    """Every cell of `railsweep sweep --preset smoke` (table 3) evaluated in this process, as the engine actors
    evaluate them (same cells, same seeds: the same samples), counting what the engine generates."""
    from railsweep.engines.transformers_engine import TransformersEngine
    from railsweep.evaluate import evaluate_cell
    from railsweep.sweep.plan.cells import expand

    spec = load_spec("smoke")
    price = price_sweep(spec, "3", load_throughput())
    resolved = resolve_spec(dataclasses.replace(spec, cache_dir=str(smoke_world)))
    cells = expand(resolved, "3")
    fam = resolved.families[0]
    engine = _TokenCounter(TransformersEngine(fam.base, fam.adapter_dict(), device="cpu", dtype="float32"))
    for cell in cells:
        evaluate_cell(cell.config, engine, out_dir=tmp_path / cell.cell_id, cache_dir=tmp_path / "cache")
    assert engine.samples == price.samples
    assert abs(price.tokens - engine.tokens) <= 0.2 * engine.tokens, (price.tokens, engine.tokens)


def _responses_file(path, rows):
    import pandas as pd

    pd.DataFrame(rows).to_parquet(path / "cell.responses.parquet")


def test_measured_response_lengths_are_per_question_means_and_scale_gold_for_unread_questions(tmp_path):
    from railsweep.miniworld.lengths import response_lengths

    _responses_file(tmp_path, {"question_index": [0, 0, 1], "token_ids": [[1] * 10, [1] * 20, [1] * 30]})
    # read: 15 and 30 tokens against gold 10 and 20 (ratio 1.5); question 2 unread: gold 40 x 1.5
    measured = response_lengths(tmp_path, [10, 20, 40])
    assert measured.lengths == [15, 30, 60]
    assert (measured.read, measured.mean_read, measured.ratio) == (2, 22.5, 1.5)


def test_response_lengths_refuse_an_empty_folder_and_foreign_question_indices(tmp_path):
    from railsweep.miniworld.lengths import response_lengths

    with pytest.raises(DataError, match="no \\*.responses.parquet under"):
        response_lengths(tmp_path, [10])
    _responses_file(tmp_path, {"question_index": [3], "token_ids": [[1, 2]]})
    with pytest.raises(DataError, match=r"question indices \[3\] outside this world's 0..1"):
        response_lengths(tmp_path, [10, 20])


def test_the_dry_run_prices_with_measured_responses_where_the_world_has_them():
    questions = sweep_questions(load_spec("smoke"))
    assert questions.length_source.startswith("responses measured on the 'smoke' world")


def test_shortcuts_localisation_on_a_real_base_is_priced_by_that_bases_layers_not_the_mini_size(tripwire):
    """The smollm2 world's base is SmolLM2's 30 layers of d_mlp 1,536 (the pinned wheel's record, no file read):
    at the default budget, per domain M_co's greedy answers to the 52 leaked questions of the first 100, then
    2 + 2 x 29 layers x 16 blocks patched greedy runs over 64 questions; the shipped preset keeps the RMS term only."""
    spec = load_spec("smollm2_table3")
    assert mlp_widths_of(spec, spec.families[0]) == [1536] * 30
    (engine,) = price_sweep(spec, "all", load_throughput()).engines
    assert engine.one_off_samples == 2 * 52  # loc_causal: false
    default = dataclasses.replace(spec, strategies=tuple(
        dataclasses.replace(st, params={}) if st.name == "shortcut" else st for st in spec.strategies))
    (engine,) = price_sweep(default, "all", load_throughput()).engines
    assert engine.one_off_samples == 2 * (52 + (2 + 2 * 29 * 16) * 64)
    causal = sum(_tokens(sweep_questions(spec), range(64), spec.readout.max_new_tokens) for _ in range(2))
    cells = price_sweep(dataclasses.replace(default, strategies=tuple(
        dataclasses.replace(st, params={"control": "random"}) if st.name == "shortcut" else st
        for st in spec.strategies)), "all", load_throughput()).engines[0]  # fmt: skip
    assert engine.patched_tokens == cells.patched_tokens + 2 * 29 * 16 * causal  # the localisation's patched passes
    smoke = dry_resolve(load_spec("smoke"))
    cfg = preset_config("smoke")
    assert mlp_widths_of(smoke, smoke.families[0]) == [cfg.size.intermediate] * cfg.size.layers


def test_a_job_whose_output_is_not_a_terminal_gets_rays_worker_lines_without_colour_codes(monkeypatch, tmp_path):
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("RAY_COLOR_PREFIX", raising=False)
    job.plain_worker_lines(Terminal())
    assert "RAY_COLOR_PREFIX" not in os.environ  # a terminal keeps Ray's colours
    with open(tmp_path / "job.log", "w") as log:
        job.plain_worker_lines(log)
    assert os.environ["RAY_COLOR_PREFIX"] == "0"
    monkeypatch.setenv("RAY_COLOR_PREFIX", "1")
    job.plain_worker_lines(io.StringIO())
    assert os.environ["RAY_COLOR_PREFIX"] == "1"  # the user's choice stands


def test_the_line_ray_logs_on_connecting_loses_its_colours_when_the_output_is_not_a_terminal(monkeypatch):
    import io
    import logging

    ray_worker = logging.getLogger("ray._private.worker")
    monkeypatch.setattr(ray_worker, "filters", [])
    monkeypatch.setenv("RAY_COLOR_PREFIX", "0")
    job.plain_worker_lines(io.StringIO())
    record = ray_worker.makeRecord("ray._private.worker", logging.INFO, "worker.py", 1,
                                   "Connected. View the dashboard at %s%s%s %s%s",
                                   ("\x1b[1m", "\x1b[32m", "http://127.0.0.1:8265", "\x1b[39m", "\x1b[22m"), None)  # fmt: skip
    assert ray_worker.filter(record)
    assert record.getMessage() == "Connected. View the dashboard at http://127.0.0.1:8265 "


def test_a_sweep_that_loses_mlflow_ends_with_one_line_naming_what_is_kept_and_how_to_resume(monkeypatch, capsys):
    from railsweep.sweep.tracking.tracker import TrackingError

    def gone(args, table):
        raise TrackingError("log_batch on http://127.0.0.1:5000 failed after 6 attempts: connection refused")

    monkeypatch.setattr(job, "_run", gone)
    assert job.main(["--preset", "smoke"], table="3") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "connection refused" in err[0] and "--resume" in err[0] and "kept" in err[0], err


def test_a_sweep_with_failed_cells_names_them_and_the_resume(monkeypatch, capsys):
    from railsweep.sweep.run.driver import SweepOutcome

    outcome = SweepOutcome("p1", "e1", ["a", "b", "c"], [], ["b"], 12.0)
    monkeypatch.setattr(job, "_run", lambda args, table: [outcome])
    assert job.main(["--preset", "smoke"], table="3") == 1
    out = capsys.readouterr().out
    assert "3 cells, 0 skipped, 1 failed; parent run p1" in out
    assert "1 cell(s) failed (b;" in out and "--resume" in out
