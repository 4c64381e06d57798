"""Sweep specs: validation before anything runs, grid expansion, stable cell ids (no Ray, no model)."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from railsweep.errors import ConfigError, DataError
from railsweep.sweep.plan.cells import expand, trial_order
from railsweep.sweep.spec.resolve import resolve_spec
from railsweep.sweep.spec.sweep_spec import load_spec, spec_from_dict

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def paths_spec(tmp_path):
    """A 'paths' spec whose model/adapter/task paths exist (folders holding only their config file: nothing is
    loaded here)."""
    data = tmp_path / "data"
    data.mkdir()
    fams = {}
    for fam in ("fa", "fb"):
        ad = {}
        for a in ("clean", "co_gsm8k", "co_pq"):
            (tmp_path / fam / a).mkdir(parents=True)
            (tmp_path / fam / a / "adapter_config.json").write_text("{}")
            ad[a] = str(tmp_path / fam / a)
        (tmp_path / fam / "config.json").write_text("{}")
        fams[fam] = {"base": str(tmp_path / fam), "adapters": ad}
    return {
        "name": "t",
        "source": "paths",
        "data_dir": str(data),
        "families": fams,
        "domains": ["gsm8k", "pq"],
        "strategies": [
            "identity",
            "all_zero",
            {"name": "railcap", "grid": {"n": [1, 4], "mode": ["cap", "ban"]}},
        ],
        "readout": {"m": 3, "limit": 2},
        "tracking": {"uri": "http://127.0.0.1:9"},
    }


def test_grid_has_one_clean_reference_per_family_first_then_every_strategy_point(paths_spec):
    cells = expand(resolve_spec(spec_from_dict(paths_spec)))
    roles = [c.role for c in cells]
    assert roles[:2] == ["clean", "clean"] and set(roles[2:]) == {"mitigated"}
    # 2 families × 2 domains × (identity + all_zero + 4 railcap points)
    assert len(cells) == 2 + 2 * 2 * 6
    clean_ids = {c.family: c.cell_id for c in cells if c.role == "clean"}
    for c in cells[2:]:
        assert c.clean_id == clean_ids[c.family]
        assert c.config.adapter == f"co_{c.domain}" and c.config.clean_adapter == "clean"
    assert len({c.cell_id for c in cells}) == len(cells)


def test_trials_start_with_the_references_then_take_the_families_in_turn(paths_spec):
    cells = expand(resolve_spec(spec_from_dict(paths_spec)))
    order = trial_order(cells)
    assert sorted(c.cell_id for c in order) == sorted(c.cell_id for c in cells)
    assert [c.role for c in order[:2]] == ["clean", "clean"]
    assert [c.family for c in order[2:6]] == ["fa", "fb", "fa", "fb"]
    for fam in ("fa", "fb"):  # each family's own order is kept
        assert [c for c in order if c.family == fam and c.clean_id] == [
            c for c in cells if c.family == fam and c.clean_id
        ]
    assert trial_order([]) == []


def test_each_cell_run_is_named_and_tagged_by_family_domain_and_strategy(paths_spec):
    t3 = expand(resolve_spec(spec_from_dict(paths_spec)), "3")
    names = {c.run_name(): c.run_tags() for c in t3 if c.family == "fa"}
    assert names["fa · clean reference"]["railsweep.strategy"] == "Identity"
    assert names["fa · pq · RailCap n=4 cap"] == {
        "railsweep.family": "fa", "railsweep.domain": "pq", "railsweep.strategy": "RailCap n=4 cap"}  # fmt: skip
    assert len(names) == len([c for c in t3 if c.family == "fa"])  # every cell of a family has its own name


def test_cell_ids_are_stable_and_change_with_the_resolved_config(paths_spec):
    a = [c.cell_id for c in expand(resolve_spec(spec_from_dict(paths_spec)))]
    b = [c.cell_id for c in expand(resolve_spec(spec_from_dict(copy.deepcopy(paths_spec))))]
    assert a == b
    paths_spec["readout"]["m"] = 4
    c = [x.cell_id for x in expand(resolve_spec(spec_from_dict(paths_spec)))]
    assert not set(a) & set(c)


def test_table_filters_pick_the_primary_setting_and_the_papers_rows(paths_spec):
    spec = resolve_spec(spec_from_dict(paths_spec))
    t4 = expand(spec, "4")
    assert {(c.family, c.domain) for c in t4 if c.role == "mitigated"} == {("fa", "gsm8k")}
    assert {c.label() for c in t4 if c.role == "mitigated"} == {
        "RailCap n=1 cap", "RailCap n=1 ban", "RailCap n=4 cap", "RailCap n=4 ban", "All-Zero"}  # fmt: skip
    t3 = expand(spec, "3")
    assert {c.label() for c in t3 if c.role == "mitigated"} == {"Identity", "All-Zero", "RailCap n=4 cap"}
    assert {(c.family, c.domain) for c in t3 if c.role == "mitigated"} == {
        (f, d) for f in ("fa", "fb") for d in ("gsm8k", "pq")}  # fmt: skip


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda d: d["strategies"].append("nonesuch"), "unknown strategy 'nonesuch'"),
        (
            lambda d: d["strategies"].append({"name": "railcap", "params": {"ngram": 3}}),
            "unknown parameter(s) ['ngram']",
        ),
        (lambda d: d["strategies"].append({"name": "railcap", "grid": {"n": [0, 4]}}), "got n=0"),
        (
            lambda d: d["strategies"].append({"name": "railcap", "grid": {"n": [4, 65]}}),
            "RailCap n must be an integer in [1, 64], got n=65",
        ),
        (lambda d: d["strategies"].append({"name": "railcap", "grid": {"n": []}}), "empty"),
        (lambda d: d.update(strategies=[]), "grid is empty"),
        (lambda d: d.update(domains=["gsm8k", "mmlu"]), "unknown domain 'mmlu'"),
        (lambda d: d["readout"].update(m=0), "readout.m: input should be greater than or equal to 1, got 0"),
        (lambda d: d.update(bogus=1), "unknown key 'bogus' in the sweep spec"),
        (lambda d: d["readout"].update(m="4"), "readout.m: input should be a valid integer, got '4'"),
        (lambda d: d["readout"].update(m=2.5), "readout.m: input should be a valid integer, got 2.5"),
        (
            lambda d: d["readout"].update(temperature=float("nan")),
            "readout.temperature: input should be a finite",
        ),
        (lambda d: d.update(scoring={"B": "x"}), "scoring.B: input should be a valid integer, got 'x'"),
        (lambda d: d.update(primary="fa"), "primary: must be a mapping {family: F, domain: D}, got 'fa'"),
        (
            lambda d: d.update(primary={"family": "fa"}),
            "primary: must have exactly the keys 'family' and 'domain'",
        ),
        (lambda d: d.update(domains=[]), "domains: is an empty list"),
        (lambda d: d.update(families=[]), "families: is an empty list"),
        (
            lambda d: d.update(engine={"device": "gpu"}),
            "engine.device: must be auto, cpu, mps, cuda or cuda:N, got 'gpu'",
        ),
        (
            lambda d: d.update(resources={"trial_cpus": -1}),
            "resources.trial_cpus: input should be greater than 0, got -1",
        ),
        (lambda d: d.update(source="miniworld", families=["llama", "mamba"]), "unknown family 'mamba'"),
    ],
)
def test_bad_specs_fail_at_validation_with_the_offending_value(paths_spec, mutate, needle):
    mutate(paths_spec)
    with pytest.raises(ConfigError) as e:
        spec_from_dict(paths_spec)
    assert needle in str(e.value)


@pytest.mark.parametrize("backend", ["transformers", "vllm"])
def test_railcap_n_above_max_n_is_refused_on_every_backend(paths_spec, backend):
    paths_spec["engine"] = {"backend": backend}
    paths_spec["strategies"] = [{"name": "railcap", "params": {"n": 65}}]
    with pytest.raises(ConfigError, match=r"got n=65"):
        spec_from_dict(paths_spec)
    paths_spec["strategies"] = [{"name": "railcap", "params": {"n": 64}}]
    spec_from_dict(paths_spec)


def test_shortcut_on_vllm_passes_validation_because_its_registration_falls_back_to_transformers(paths_spec):
    paths_spec.update(engine={"backend": "vllm"}, strategies=["shortcut", "railcap", "lne_blocking"])
    assert spec_from_dict(paths_spec).engine.backend == "vllm"


def test_a_strategy_on_a_backend_its_registration_excludes_is_refused_naming_both(paths_spec, monkeypatch):
    from dataclasses import dataclass

    from railsweep.strategy_registry import STRATEGIES, register

    @dataclass(frozen=True)
    class OnlyHFConfig:
        pass

    OnlyHFConfig.switched_off = {}  # a class attribute, not a field (as the registered configs declare it)

    monkeypatch.setattr(STRATEGIES, "_entries", dict(STRATEGIES._loaded()))
    monkeypatch.setattr(STRATEGIES, "_info", dict(STRATEGIES._info))
    register("only_hf", OnlyHFConfig, display="Only-HF", backends=("transformers",))(type("OnlyHF", (), {}))
    paths_spec["strategies"] = ["identity", "only_hf"]
    spec_from_dict(paths_spec)  # transformers: accepted
    paths_spec["engine"] = {"backend": "vllm"}
    with pytest.raises(ConfigError) as e:
        spec_from_dict(paths_spec)
    assert str(e.value).endswith("strategy 'only_hf' does not run on the 'vllm' backend; it runs on: transformers")


def test_a_primary_setting_outside_the_grid_fails_at_load_time(paths_spec):
    paths_spec["primary"] = {"family": "nope", "domain": "gsm8k"}
    with pytest.raises(ConfigError, match="primary family 'nope' is not one of the sweep's families"):
        spec_from_dict(paths_spec)
    paths_spec.update(primary={"family": "fa", "domain": "pq"}, domains=["gsm8k"])
    with pytest.raises(ConfigError, match="primary domain 'pq' is not one of the sweep's domains"):
        spec_from_dict(paths_spec)


def test_sections_validate_at_construction_too_so_overrides_cannot_bypass_the_schema(paths_spec):
    spec = spec_from_dict(paths_spec)
    with pytest.raises(ConfigError, match="readout.limit: input should be greater than or equal to 1, got 0"):
        dataclasses.replace(spec.readout, limit=0)
    with pytest.raises(ConfigError, match="resources.engine_cpus: input should be greater than 0, got -2"):
        dataclasses.replace(spec.resources, engine_cpus=-2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.readout.m = 3  # type: ignore[misc]


def test_a_validated_spec_is_a_plain_picklable_dataclass_with_a_stable_sweep_id(paths_spec):
    spec = spec_from_dict(paths_spec)
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec and again.sweep_id == spec.sweep_id
    assert dataclasses.asdict(spec)["readout"]["m"] == 3
    assert spec.primary_setting == ("fa", "gsm8k")
    assert load_spec("smoke").families == ()  # absent = every family of the miniature world


def test_presets_load_and_validate():
    for name in ("smoke", "mini", "mini_six", "mini_full", "paper"):
        spec = load_spec(name)
        assert spec.name == name and spec.strategies
    assert load_spec("paper").readout.m == 50 and load_spec("paper").scoring.B == 50


@pytest.mark.parametrize(
    "entry", [[str(REPO / "sweeps" / "table3.py")], ["-m", "railsweep.sweep.job"]], ids=["script", "module"]
)
def test_entry_script_rejects_a_bad_spec_with_one_line_and_exit_2_before_ray(tmp_path, paths_spec, entry):
    paths_spec["strategies"].append({"name": "railcap", "grid": {"n": [0]}})
    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps(paths_spec))  # JSON is YAML
    r = subprocess.run([sys.executable, *entry, "--spec", str(bad)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().startswith("railsweep: error:") and "got n=0" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "Started a local Ray instance" not in r.stdout + r.stderr


def test_entry_script_rejects_an_unreachable_tracking_uri_before_ray(tmp_path):
    r = subprocess.run([sys.executable, str(REPO / "sweeps" / "tables.py"), "--preset", "smoke", "--tracking-uri",
                        "http://127.0.0.1:9"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2
    assert "tracking URI 'http://127.0.0.1:9' is unreachable" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_the_sweep_command_forwards_its_spec_options_to_the_job_as_the_job_parses_them():
    from railsweep.cli import make_parser as cli_parser
    from railsweep.sweep.job import make_parser as job_parser
    from railsweep.sweep.spec.options import forward_argv

    argv = ["--preset", "smoke", "--table", "all", "--experiment", "e", "--resume", "--cache-dir", "/c",
            "--limit", "3", "--m", "2"]  # fmt: skip
    cli = cli_parser(["sweep"]).parse_args(["sweep", *argv, "--mlflow-port", "5001"])
    job = job_parser().parse_args(forward_argv(cli))
    assert {k: getattr(job, k) for k in ("preset", "table", "experiment", "resume", "cache_dir", "limit", "m")} == {
        "preset": "smoke", "table": "all", "experiment": "e", "resume": True, "cache_dir": "/c", "limit": 3, "m": 2
    }
    assert forward_argv(cli_parser(["sweep"]).parse_args(["sweep"])) == ["--table", "3"]


def test_a_local_job_runs_this_railsweep_even_from_another_checkouts_directory(tmp_path):
    """A Ray job inherits the head's working directory; another checkout's package there must not shadow ours."""
    from railsweep.commands.sweep import _this_railsweep_env

    fake = tmp_path / "railsweep"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise SystemExit('the other checkout')\n")
    (fake / "__main__.py").write_text("")
    env = {**os.environ, **_this_railsweep_env()}
    out = subprocess.run([sys.executable, "-m", "railsweep", "--version"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0 and "the other checkout" not in out.stderr, out.stderr
    shadowed = subprocess.run([sys.executable, "-m", "railsweep", "--version"], cwd=tmp_path,
                              env={k: v for k, v in env.items() if k != "PYTHONSAFEPATH"},
                              capture_output=True, text=True, timeout=120)  # fmt: skip
    assert "the other checkout" in shadowed.stderr  # the hazard the setting removes


def test_checking_the_ready_families_alone_ignores_the_others_and_keeps_the_primary_family(paths_spec, tmp_path):
    """A world building beside the sweep: only the families it has ready are checked, whichever is primary."""
    spec = spec_from_dict(paths_spec)
    (tmp_path / "fa" / "config.json").unlink()  # fa (the primary family) not trained yet
    spec.check_paths(only={"fb"})
    with pytest.raises(DataError, match="family 'fa'"):
        spec.check_paths(only={"fa", "fb"})
