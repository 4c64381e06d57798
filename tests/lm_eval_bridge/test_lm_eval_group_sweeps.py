"""A sweep whose ``readout.task`` is a harness group or tag runs one sweep per member task, in the harness's
order, each reading ``<data_dir>/<member>/`` and recording the group on every cell run."""

from __future__ import annotations

import pytest
import yaml

from railsweep.cli import main
from railsweep.errors import ConfigError
from railsweep.sweep import job
from railsweep.sweep.plan.cells import expand
from railsweep.sweep.spec.members import load_specs
from railsweep.sweep.spec.sweep_spec import spec_from_dict
from railsweep.tasks.lm_eval.groups import expand_lm_eval_ref

TAG = "lm_eval:mgsm_direct"


def _members() -> list[str]:
    return [m.split(":", 1)[1] for m in expand_lm_eval_ref(TAG).members]


def _spec_file(tmp_path, model_dir, members=None, **extra) -> str:
    data = tmp_path / "data"
    for m in _members() if members is None else members:
        (data / m).mkdir(parents=True, exist_ok=True)
    for name in ("clean", "co_gsm8k"):
        (tmp_path / name).mkdir(exist_ok=True)
        (tmp_path / name / "adapter_config.json").write_text("{}")
    spec = {
        "source": "paths",
        "data_dir": str(data),
        "domains": ["gsm8k"],
        "families": {"llama": {"base": str(model_dir), "adapters": {n: str(tmp_path / n) for n in ("clean", "co_gsm8k")}}},
        "strategies": ["identity", {"name": "railcap", "params": {"n": 4, "mode": "cap"}}],
        "readout": {"task": TAG, "m": 2, "limit": 3},
        **extra,
    }
    path = tmp_path / "group.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def test_a_sweep_over_a_tag_is_one_spec_per_member_in_the_harness_order(tmp_path, model_dir):
    specs = load_specs(_spec_file(tmp_path, model_dir))
    members = _members()
    assert [s.readout.task for s in specs] == [f"lm_eval:{m}" for m in members]
    assert [s.name for s in specs] == [f"group-{m}" for m in members]
    assert {s.task_group for s in specs} == {TAG}
    assert [s.data_dir for s in specs] == [str(tmp_path / "data" / m) for m in members]
    assert len({s.sweep_id for s in specs}) == len(members)
    assert specs[0].readout.max_new_tokens == 256  # mgsm_direct's own max_gen_toks is not set: the default


def test_each_member_cell_is_named_and_tagged_with_its_task_and_the_group(tmp_path, model_dir):
    spec = load_specs(_spec_file(tmp_path, model_dir))[2]
    member = _members()[2]
    cells = expand(spec)
    assert cells and all(c.task_group == TAG for c in cells)
    mitigated = [c for c in cells if c.role == "mitigated"]
    assert mitigated[0].run_name() == f"llama · gsm8k · Identity · {member}"
    assert mitigated[0].run_tags()["railsweep.task_group"] == TAG
    assert mitigated[0].flat_params()["task"] == f"lm_eval:{member}"


def test_a_spec_on_one_task_loads_as_one_spec_with_no_group(tmp_path, model_dir):
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump({"source": "paths", "data_dir": str(tmp_path),
                                    "families": {"llama": {"base": str(model_dir), "adapters": {}}},
                                    "strategies": ["identity"], "readout": {"task": "lm_eval:gsm8k_cot"}}))  # fmt: skip
    (spec,) = load_specs(path)
    assert spec.task_group is None and spec.readout.task == "lm_eval:gsm8k_cot"
    assert "task_group" not in expand(spec)[0].flat_params()


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_group_without_a_folder_per_member_is_one_line_before_anything_starts(tmp_path, model_dir, capsys,
                                                                                  monkeypatch, dry_run):  # fmt: skip
    from railsweep.services import mlflow_server, ray_head

    def started(*a, **k):
        raise AssertionError("a service started")

    monkeypatch.setattr(mlflow_server, "ensure_mlflow_server", started)
    monkeypatch.setattr(ray_head, "ensure_ray_head", started)
    path = _spec_file(tmp_path, model_dir, members=["mgsm_direct_bn"])
    code = main(["sweep", "--spec", path, *(["--dry-run"] if dry_run else [])])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"railsweep: error: readout.task {TAG!r} (a harness tag of 11 tasks) reads each member's "
                             f"split files from data_dir/<member>/: no folder {tmp_path / 'data' / 'mgsm_direct_de'}")  # fmt: skip


def test_a_dry_run_prices_every_member(tmp_path, model_dir, capsys):
    assert main(["sweep", "--spec", _spec_file(tmp_path, model_dir), "--dry-run", "--cluster-sizes", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("[dry-run] lm_eval:mgsm_direct, member ") == 11
    assert f"member lm_eval:{_members()[0]} (group-{_members()[0]})" in out


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"task_group": TAG}, "leave task_group out"),
        ({"leak_split": "leaked.json"}, "leak_split marks one task's questions"),
    ],
)
def test_a_group_spec_that_cannot_expand_is_refused_naming_the_key(tmp_path, model_dir, extra, named):
    with pytest.raises(ConfigError, match=named):
        load_specs(_spec_file(tmp_path, model_dir, **extra))


def test_a_task_group_that_does_not_hold_the_task_is_refused(tmp_path, model_dir):
    body = {"source": "paths", "data_dir": str(tmp_path), "families": {"llama": {"base": str(model_dir)}},
            "strategies": ["identity"], "readout": {"task": "lm_eval:gsm8k_cot"}, "task_group": TAG}  # fmt: skip
    with pytest.raises(ConfigError, match=r"readout.task 'lm_eval:gsm8k_cot' is not a member of task_group"):
        spec_from_dict(body)


def test_the_job_runs_every_member_sweep_in_turn(tmp_path, model_dir, monkeypatch, capsys):
    import ray

    import railsweep.sweep.run.driver as driver
    import railsweep.sweep.tracking.tracker as tracking

    ran = []

    def fake_run_sweep(spec, **kw):
        ran.append(spec.readout.task)
        return driver.SweepOutcome(parent_run_id=f"p{len(ran)}", experiment_id="1", cells=[], skipped=[], failed=[],
                                   wall_s=0.0)  # fmt: skip

    monkeypatch.setattr(tracking, "check_tracking_uri", lambda uri: None)
    monkeypatch.setattr(ray, "init", lambda **kw: None)
    monkeypatch.setattr(driver, "run_sweep", fake_run_sweep)
    assert job.main(["--spec", _spec_file(tmp_path, model_dir), "--cluster-sizes", "2"], table="3") == 0
    assert ran == [f"lm_eval:{m}" for m in _members()]
    out = capsys.readouterr().out
    assert f"[sweep] {TAG}: member 11 of 11, lm_eval:{_members()[-1]}" in out
    assert out.count("[sweep] done in") == 11


def test_a_member_sweeps_parent_run_names_its_task_and_group(tmp_path, model_dir):
    from railsweep.sweep.run.driver import _parent_params

    spec = load_specs(_spec_file(tmp_path, model_dir))[0]
    params = _parent_params(spec, "3", expand(spec))
    assert params["task"] == f"lm_eval:{_members()[0]}" and params["task_group"] == TAG
