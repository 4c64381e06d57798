"""A catalogue of bad inputs to ``railsweep eval``, ``score``, ``sweep`` and sweep-spec loading.

Each one must give exit code 2 and exactly one stderr line ``railsweep: error: ...`` that names the
offending value, before any model is loaded, any service started or any file written. The CLI runs
in-process (``railsweep.cli.main``); the engine and the local Ray/MLflow services are replaced by
tripwires, so a check that comes too late fails the test instead of starting them. Models and adapters
are empty directories: every check here must fire before anything is loaded from them.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from railsweep.cli import main
from railsweep.sweep.spec import PRESET_DIR

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = [("Tom has 2 apples and buys 3 more. How many apples?", "5"), ("What is 4 + 4?", "8")] * 2
SHOTS = [{"question": "What is 1 + 1?", "answer": "1 + 1 = 2. The answer is 2."}]
LATIN1 = "Caf\xe9 costs 3 dollars.".encode("latin-1")  # not UTF-8


class Tripwire(Exception):
    """Raised where the expensive part starts: a bad input got that far."""


def _write_task(root: Path, *, lines: list[bytes] | None = None, shots: bytes | None = None) -> Path:
    root.mkdir(parents=True)
    rows = [json.dumps({"question": q, "answer": f"So {g}.\n#### {g}"}).encode() for q, g in QUESTIONS]
    (root / "test.jsonl").write_bytes(b"\n".join(lines or rows) + b"\n")
    (root / "cot_8shot.json").write_bytes(shots or json.dumps(SHOTS).encode())
    return root


def _write_cells(root: Path) -> dict[str, Path]:
    """A clean and a mitigated cell, and one with a question fewer, written without a model."""
    from railsweep.config import CellConfig
    from railsweep.engines.base import Sample
    from railsweep.results import write_cell
    from railsweep.strategies.base import QuestionOutcome
    from railsweep.tasks.base import Grade, Question

    qs = [Question(i, "q", "#### 1", "1") for i in range(4)]

    def outcomes(cs):
        smp, g = Sample([1], "x", "stop"), Grade(False, None, "none")
        return [QuestionOutcome(i, [smp] * 4, [g] * 4, c, 4, 0) for i, c in enumerate(cs)]

    def cell(role, adapter):
        return CellConfig(model="m", strategy="identity", task_dir=str(root), adapter=adapter, m=4, role=role)

    return {
        "clean": write_cell(root, cell("clean", "clean"), outcomes([0, 1, 4, 2]), qs).questions,
        "co": write_cell(root, cell("mitigated", "co"), outcomes([4, 4, 4, 0]), qs).questions,
        "fewer": write_cell(root, cell("mitigated", "co3"), outcomes([4, 4, 4]), qs[:3]).questions,
    }


SMOKE = yaml.safe_load((PRESET_DIR / "smoke.yaml").read_text())


def _spec(**changes) -> dict:
    """The smoke preset with top-level keys replaced (a dict value for a section is merged into it)."""
    spec = copy.deepcopy(SMOKE)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(spec.get(key), dict) and key != "primary":
            spec[key] = {**spec[key], **value}
        else:
            spec[key] = value
    return spec


# name → the YAML text of a bad spec (a dict is dumped), and the words the error line must contain
BAD_SPECS: dict[str, tuple[dict | str | bytes, str]] = {
    "readout_m_string": (_spec(readout={"m": "4"}), "readout.m: input should be a valid integer, got '4'"),
    "scoring_B_word": (_spec(scoring={"B": "x"}), "scoring.B: input should be a valid integer, got 'x'"),
    "primary_a_name": (_spec(primary="llama"), "primary: must be a mapping {family: F, domain: D}, got 'llama'"),
    "primary_without_domain": (_spec(primary={"family": "llama"}), "keys 'family' and 'domain', got keys ['family']"),
    "temperature_nan": ("readout: {temperature: .nan}\nstrategies: [identity]\n", "readout.temperature: input should be a finite number, got nan"),
    "temperature_inf": ("readout: {temperature: .inf}\nstrategies: [identity]\n", "readout.temperature: input should be a finite number, got inf"),
    "temperature_negative": (_spec(readout={"temperature": -0.5}), "readout.temperature: input should be greater than or equal to 0, got -0.5"),
    "m_fractional": (_spec(readout={"m": 2.5}), "readout.m: input should be a valid integer, got 2.5"),
    "m_boolean": (_spec(readout={"m": True}), "readout.m: input should be a valid integer, got True"),
    "m_zero": (_spec(readout={"m": 0}), "readout.m: input should be greater than or equal to 1, got 0"),
    "max_new_tokens_zero": (_spec(readout={"max_new_tokens": 0}), "readout.max_new_tokens: input should be greater than or equal to 1, got 0"),
    "seed_negative": (_spec(readout={"seed": -1}), "readout.seed: input should be greater than or equal to 0, got -1"),
    "batch_size_zero": (_spec(readout={"batch_size": 0}), "readout.batch_size: input should be greater than or equal to 1, got 0"),
    "limit_zero": (_spec(readout={"limit": 0}), "readout.limit: input should be greater than or equal to 1, got 0"),
    "readout_not_a_mapping": (_spec(readout=5), "readout must be a mapping with keys out of"),
    "readout_unknown_key": (_spec(readout={"samples": 4}), "unknown key 'samples' in readout"),
    "n_boot_zero": (_spec(scoring={"n_boot": 0}), "scoring.n_boot: input should be greater than or equal to 1, got 0"),
    "engine_device_gpu": (_spec(engine={"device": "gpu"}), "engine.device: must be auto, cpu, mps, cuda or cuda:N, got 'gpu'"),
    "engine_backend": (_spec(engine={"backend": "tgi"}), "engine.backend: input should be 'transformers' or 'vllm', got 'tgi'"),
    "engine_dtype": (_spec(engine={"dtype": "float8"}), "got 'float8'"),
    "trial_cpus_negative": (_spec(resources={"trial_cpus": -1}), "resources.trial_cpus: input should be greater than 0, got -1"),
    "slots_zero": (_spec(resources={"slots_per_engine": 0}), "resources.slots_per_engine: input should be greater than or equal to 1, got 0"),
    "max_restarts_below_unlimited": (_spec(resources={"max_restarts": -2}), "resources.max_restarts: input should be greater than or equal to -1, got -2"),
    "tracking_uri_empty": (_spec(tracking={"uri": ""}), "tracking.uri: string should have at least 1 character, got ''"),
    "domains_empty": (_spec(domains=[]), "domains: is an empty list: the grid would be empty"),
    "families_empty": (_spec(families=[]), "families: is an empty list: the grid would be empty"),
    "domain_unknown": (_spec(domains=["gsm8k", "mmlu"]), "unknown domain 'mmlu'"),
    "family_unknown": (_spec(families=["llama", "mamba"]), "unknown family 'mamba'"),
    "primary_outside_grid": (_spec(families=["llama"], primary={"family": "gemma", "domain": "pq"}), "primary family 'gemma' is not one of the sweep's families ['llama']"),
    "strategies_empty": (_spec(strategies=[]), "the sweep has no strategies, detectors or temperatures: the grid is empty"),
    "strategy_unknown": (_spec(strategies=["identity", "nonesuch"]), "unknown strategy 'nonesuch'"),
    "railcap_n_zero": (_spec(strategies=[{"name": "railcap", "grid": {"n": [0, 4]}}]), "got n=0"),
    "source_unknown": (_spec(source="hub"), "source: input should be 'miniworld' or 'paths', got 'hub'"),
    "top_level_unknown_key": (_spec(readouts={"m": 4}), "unknown key 'readouts' in the sweep spec"),
    "not_a_mapping": ("- identity\n- railcap\n", "a sweep spec must be a mapping of keys, got list"),
    "not_yaml": ("readout: {m: 4\nstrategies: [identity]\n", "not_yaml.yaml:2:11: not valid YAML (expected ',' or '}', but got ':')"),
    "not_utf8": (b"# " + LATIN1 + b"\nstrategies: [identity]\n", ":1:6: not UTF-8 text (byte 0xe9)"),
}  # fmt: skip


@pytest.fixture(scope="module")
def inp(tmp_path_factory) -> dict[str, Path]:
    """Every input file the catalogue points at; valid unless its name says otherwise."""
    root = tmp_path_factory.mktemp("inputs")
    paths = {"root": root}
    for d in ("model", "adapters/clean", "adapters/co"):
        (root / d).mkdir(parents=True)
    paths["model"] = root / "model"
    paths["task"] = _write_task(root / "task")
    (root / "leak.json").write_text(json.dumps({"leaked": [0, 2]}))
    paths["leak"] = root / "leak.json"
    good = (root / "task" / "test.jsonl").read_bytes().splitlines()
    paths["latin1_task"] = _write_task(
        root / "latin1_task", lines=[good[0], b'{"question": "' + LATIN1 + b'"}']
    )
    paths["latin1_shots"] = _write_task(root / "latin1_shots", shots=b'[{"question": "' + LATIN1 + b'"}]')
    paths["broken_task"] = _write_task(root / "broken_task", lines=[good[0], good[1][:-3]])
    (root / "latin1_leak.json").write_bytes(b'{"leaked": [0], "note": "' + LATIN1 + b'"}')
    paths["latin1_leak"] = root / "latin1_leak.json"
    (root / "far_leak.json").write_text(json.dumps({"leaked": [0, 99]}))
    paths["far_leak"] = root / "far_leak.json"
    (root / "a_file").write_text("not a directory\n")
    paths["a_file"] = root / "a_file"
    paths.update(_write_cells(root / "cells"))
    (root / "cells" / "garbage.parquet").write_bytes(LATIN1 * 10)
    paths["garbage"] = root / "cells" / "garbage.parquet"
    (root / "report.csv").mkdir()
    paths["csv_is_a_dir"] = root / "report"
    specs = root / "specs"
    specs.mkdir()
    for name, (text, _) in BAD_SPECS.items():
        data = (
            text
            if isinstance(text, bytes)
            else (text if isinstance(text, str) else yaml.safe_dump(text)).encode()
        )
        (specs / f"{name}.yaml").write_bytes(data)
    (specs / "valid.yaml").write_text(yaml.safe_dump(SMOKE))
    paths["specs"] = specs
    return paths


def eval_argv(i: dict[str, Path], out: Path, *extra: str) -> list[str]:
    """A valid ``railsweep eval`` command line (see test_the_valid_baselines_pass_every_check) plus ``extra``;
    argparse keeps the last value of a repeated option."""
    return [
        "eval", "--model", str(i["model"]), "--adapter", f"clean={i['root'] / 'adapters/clean'}",
        "--adapter", f"co={i['root'] / 'adapters/co'}", "--use-adapter", "co", "--clean-adapter", "clean",
        "--task-dir", str(i["task"]), "--leak-split", str(i["leak"]), "--strategy", "identity",
        "--m", "2", "--temperature", "0.7", "--device", "cpu", "--out", str(out / "cells"), *extra,
    ]  # fmt: skip


def score_argv(i: dict[str, Path], out: Path, *extra: str, clean=None, mitigated=None) -> list[str]:
    return [
        "score", "--clean", str(clean or i["clean"]), "--mitigated", str(mitigated or i["co"]),
        "--B", "4", "--n-boot", "20", "--out", str(out / "report" / "scores"), *extra,
    ]  # fmt: skip


def sweep_argv(i: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return ["sweep", "--preset", "smoke", "--run-dir", str(out / "runs"), *extra]


Case = tuple[Callable[[dict[str, Path], Path], list[str]], str | Callable[[dict[str, Path]], str]]

EVAL: dict[str, Case] = {
    "temperature_inf": (lambda i, o: eval_argv(i, o, "--temperature", "inf"), "temperature=inf"),
    "temperature_nan": (lambda i, o: eval_argv(i, o, "--temperature", "nan"), "temperature=nan"),
    "temperature_minus_inf": (lambda i, o: eval_argv(i, o, "--temperature=-inf"), "temperature=-inf"),
    "temperature_negative": (lambda i, o: eval_argv(i, o, "--temperature", "-0.5"), "temperature=-0.5"),
    "temperature_word": (lambda i, o: eval_argv(i, o, "--temperature", "warm"), "invalid float value: 'warm'"),
    "m_zero": (lambda i, o: eval_argv(i, o, "--m", "0"), "m=0"),
    "m_fractional": (lambda i, o: eval_argv(i, o, "--m", "2.5"), "invalid int value: '2.5'"),
    "max_new_tokens_zero": (lambda i, o: eval_argv(i, o, "--max-new-tokens", "0"), "max_new_tokens=0"),
    "seed_negative": (lambda i, o: eval_argv(i, o, "--seed", "-1"), "seed=-1"),
    "limit_zero": (lambda i, o: eval_argv(i, o, "--limit", "0"), "limit=0"),
    "batch_size_zero": (lambda i, o: eval_argv(i, o, "--batch-size", "0"), "--batch-size must be >= 1, got 0"),
    "max_batch_size_zero": (lambda i, o: eval_argv(i, o, "--max-batch-size", "0"), "max_batch_size must be an integer >= 1, got 0"),
    "device_gpu": (lambda i, o: eval_argv(i, o, "--device", "gpu"), "device='gpu'"),
    "dtype_float8": (lambda i, o: eval_argv(i, o, "--dtype", "float8"), "dtype='float8'"),
    "backend_unknown": (lambda i, o: eval_argv(i, o, "--backend", "tgi"), "invalid choice: 'tgi'"),
    "role_unknown": (lambda i, o: eval_argv(i, o, "--role", "judge"), "invalid choice: 'judge'"),
    "out_is_a_file": (lambda i, o: eval_argv(i, o, "--out", str(i["a_file"])), lambda i: f"--out {i['a_file']}: {i['a_file']} is a file, not a directory"),
    "out_under_a_file": (lambda i, o: eval_argv(i, o, "--out", str(i["a_file"] / "cells")), lambda i: f"{i['a_file']} is a file, not a directory"),
    "out_not_creatable": (lambda i, o: eval_argv(i, o, "--out", "/proc/railsweep-cells"), "--out /proc/railsweep-cells: cannot create files in /proc"),
    "cache_dir_is_a_file": (lambda i, o: eval_argv(i, o, "--cache-dir", str(i["a_file"])), lambda i: f"--cache-dir {i['a_file']}"),
    "task_dir_missing": (lambda i, o: eval_argv(i, o, "--task-dir", str(o / "nope")), "task directory not found"),
    "task_not_utf8": (lambda i, o: eval_argv(i, o, "--task-dir", str(i["latin1_task"])), "test.jsonl:2:18: not UTF-8 text (byte 0xe9)"),
    "fewshot_not_utf8": (lambda i, o: eval_argv(i, o, "--task-dir", str(i["latin1_shots"])), "cot_8shot.json:1:19: not UTF-8 text (byte 0xe9)"),
    "leak_split_not_utf8": (lambda i, o: eval_argv(i, o, "--leak-split", str(i["latin1_leak"])), "latin1_leak.json:1:29: not UTF-8 text (byte 0xe9)"),
    "task_line_broken": (lambda i, o: eval_argv(i, o, "--task-dir", str(i["broken_task"])), "test.jsonl:2: not valid JSON"),
    "split_missing": (lambda i, o: eval_argv(i, o, "--split", "dev", "--leak-split", str(i["leak"]), "--limit", "1"), "leak_split indexes the test split; got split='dev'"),
    "leak_split_out_of_range": (lambda i, o: eval_argv(i, o, "--leak-split", str(i["far_leak"])), "leaked indices out of range [0, 4): [99]"),
    "leak_split_missing": (lambda i, o: eval_argv(i, o, "--leak-split", str(o / "nope.json")), "--leak-split: file not found"),
    "fewshot_missing": (lambda i, o: eval_argv(i, o, "--fewshot", str(o / "nope.json")), "--fewshot: file not found"),
    "model_missing": (lambda i, o: eval_argv(i, o, "--model", str(o / "nope")), "--model: directory not found"),
    "adapter_malformed": (lambda i, o: eval_argv(i, o, "--adapter", "clean"), "--adapter must look like NAME=VALUE, got 'clean'"),
    "adapter_twice": (lambda i, o: eval_argv(i, o, "--adapter", f"co={i['root'] / 'adapters/co'}"), "--adapter 'co' given more than once"),
    "adapter_missing_dir": (lambda i, o: eval_argv(i, o, "--adapter", f"extra={o / 'nope'}"), "--adapter extra: directory not found"),
    "use_adapter_unknown": (lambda i, o: eval_argv(i, o, "--use-adapter", "ghost"), "--use-adapter 'ghost': adapter not found"),
    "strategy_unknown": (lambda i, o: eval_argv(i, o, "--strategy", "nosuch"), "unknown strategy 'nosuch'"),
    "railcap_n_zero": (lambda i, o: eval_argv(i, o, "--strategy", "railcap", "--param", "n=0"), "n=0"),
    "param_malformed": (lambda i, o: eval_argv(i, o, "--param", "oops"), "--param must look like NAME=VALUE, got 'oops'"),
    "clean_role_not_identity": (lambda i, o: eval_argv(i, o, "--role", "clean", "--strategy", "all_zero"), "strategy='all_zero'"),
}  # fmt: skip

SCORE: dict[str, Case] = {
    "out_is_a_directory": (lambda i, o: score_argv(i, o, "--out", str(i["root"])), lambda i: f"got a directory: {i['root']}"),
    "out_under_a_file": (lambda i, o: score_argv(i, o, "--out", str(i["a_file"] / "scores")), lambda i: f"--out {i['a_file'] / 'scores'}: {i['a_file']} is a file, not a directory"),
    "out_not_creatable": (lambda i, o: score_argv(i, o, "--out", "/proc/railsweep/scores"), "--out /proc/railsweep/scores: cannot create files in /proc"),
    "out_csv_is_a_directory": (lambda i, o: score_argv(i, o, "--out", str(i["csv_is_a_dir"])), lambda i: f"{i['root'] / 'report.csv'} is a directory"),
    "B_zero": (lambda i, o: score_argv(i, o, "--B", "0"), "B=0"),
    "B_word": (lambda i, o: score_argv(i, o, "--B", "x"), "argument --B: invalid int value: 'x'"),
    "n_boot_zero": (lambda i, o: score_argv(i, o, "--n-boot", "0"), "--n-boot must be >= 1, got 0"),
    "alpha_above_one": (lambda i, o: score_argv(i, o, "--alpha", "1.5"), "--alpha must lie in (0, 1), got 1.5"),
    "alpha_nan": (lambda i, o: score_argv(i, o, "--alpha", "nan"), "--alpha must lie in (0, 1), got nan"),
    "seed_negative": (lambda i, o: score_argv(i, o, "--seed", "-1"), "--seed must be >= 0, got -1"),
    "clean_missing": (lambda i, o: score_argv(i, o, clean=o / "nope.parquet"), "results file not found"),
    "clean_not_parquet": (lambda i, o: score_argv(i, o, clean=i["garbage"]), "garbage.parquet: not a readable Parquet file"),
    "clean_is_mitigated": (lambda i, o: score_argv(i, o, clean=i["co"]), "got role='mitigated'"),
    "clean_is_a_directory": (lambda i, o: score_argv(i, o, clean=i["root"]), lambda i: f"results file not found: {i['root']}"),
    "mitigated_fewer_questions": (lambda i, o: score_argv(i, o, mitigated=i["fewer"]), "missing from mitigated: [3]"),
    "mitigated_responses_file": (lambda i, o: score_argv(i, o, mitigated=str(i["co"]).replace(".parquet", ".responses.parquet")), "this is a responses file"),
}  # fmt: skip

SWEEP: dict[str, Case] = {
    **{
        f"spec_{name}": ((lambda n: lambda i, o: sweep_argv(i, o, "--spec", str(i["specs"] / f"{n}.yaml")))(name), needle)
        for name, (_, needle) in BAD_SPECS.items()
    },
    "spec_missing": (lambda i, o: sweep_argv(i, o, "--spec", str(o / "nope.yaml")), "is neither a preset"),
    "cluster_spec_outside_the_working_directory": (lambda i, o: sweep_argv(i, o, "--spec", str(i["specs"] / "valid.yaml"), "--address", "http://127.0.0.1:1"), "is outside the working directory"),
    "m_zero": (lambda i, o: sweep_argv(i, o, "--m", "0"), "--m must be >= 1, got 0"),
    "preset_unknown": (lambda i, o: sweep_argv(i, o, "--preset", "huge"), "argument --preset: invalid choice: 'huge'"),
    "table_unknown": (lambda i, o: sweep_argv(i, o, "--table", "9"), "argument --table: invalid choice: '9'"),
    "limit_zero": (lambda i, o: sweep_argv(i, o, "--limit", "0"), "--limit must be >= 1, got 0"),
    "limit_word": (lambda i, o: sweep_argv(i, o, "--limit", "all"), "invalid int value: 'all'"),
    "mlflow_port_zero": (lambda i, o: sweep_argv(i, o, "--mlflow-port", "0"), "--mlflow-port must be a TCP port in 1..65535, got 0"),
    "dashboard_port_too_big": (lambda i, o: sweep_argv(i, o, "--dashboard-port", "70000"), "--dashboard-port must be a TCP port in 1..65535, got 70000"),
    "address_without_tracking_uri": (lambda i, o: sweep_argv(i, o, "--address", "http://10.0.0.1:8265"), "--address needs --tracking-uri"),
    "tracking_uri_not_http": (lambda i, o: sweep_argv(i, o, "--tracking-uri", "sqlite:///mlflow.db"), "tracking URI 'sqlite:///mlflow.db' is not an HTTP(S) MLflow server"),
    "tracking_uri_unreachable": (lambda i, o: sweep_argv(i, o, "--tracking-uri", "http://127.0.0.1:9"), "tracking URI 'http://127.0.0.1:9' is unreachable"),
    "run_dir_is_a_file": (lambda i, o: sweep_argv(i, o, "--run-dir", str(i["a_file"])), lambda i: f"--run-dir {i['a_file']}: {i['a_file']} is a file"),
    "run_dir_not_creatable": (lambda i, o: sweep_argv(i, o, "--run-dir", "/proc/railsweep-runs"), "--run-dir /proc/railsweep-runs: cannot create files in /proc"),
    "cache_dir_under_a_file": (lambda i, o: sweep_argv(i, o, "--cache-dir", str(i["a_file"] / "cache")), lambda i: f"--cache-dir {i['a_file'] / 'cache'}: cannot create the directory"),
}  # fmt: skip

CATALOGUE = {
    **{f"eval-{k}": v for k, v in EVAL.items()},
    **{f"score-{k}": v for k, v in SCORE.items()},
    **{f"sweep-{k}": v for k, v in SWEEP.items()},
}


@pytest.fixture
def tripwires(monkeypatch):
    """Fail loudly if a command gets as far as loading a model or starting a service."""

    def trip(*a, **kw):
        raise Tripwire("a bad input reached the expensive part")

    monkeypatch.setattr("railsweep.engines.factory.build_engine", trip)
    for name in ("ensure_ray_head", "ensure_mlflow_server", "submit_job"):
        monkeypatch.setattr(f"railsweep.sweep.local.{name}", trip)


def _files(*roots: Path) -> dict[str, bytes | None]:
    """Every path under ``roots`` with the bytes of each file (None for a directory)."""
    return {str(p): (p.read_bytes() if p.is_file() else None) for r in roots for p in sorted(r.rglob("*"))}


def test_the_catalogue_covers_every_command_and_at_least_40_cases():
    assert len(CATALOGUE) >= 40
    assert {k.split("-")[0] for k in CATALOGUE} == {"eval", "score", "sweep"}
    assert len(BAD_SPECS) >= 30


@pytest.mark.parametrize("case", list(CATALOGUE))
def test_bad_input_is_one_error_line_exit_2_and_writes_nothing(
    case, inp, tmp_path, monkeypatch, capsys, tripwires
):
    argv_of, needle = CATALOGUE[case]
    needle = needle(inp) if callable(needle) else needle
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)  # relative defaults (runs/mlflow) would land here
    before = _files(inp["root"], tmp_path)
    rc = main(argv_of(inp, out))
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert rc == 2, captured.err
    assert len(lines) == 1 and lines[0].startswith("railsweep: error: "), captured.err
    assert needle in lines[0], lines[0]
    assert _files(inp["root"], tmp_path) == before  # nothing written, nothing left behind


def test_the_valid_baselines_pass_every_check(inp, tmp_path, monkeypatch, capsys, tripwires):
    """The catalogue's command lines without their bad part get past every check: eval and sweep reach
    the engine / the services (the tripwire), score runs to the end."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Tripwire):
        main(eval_argv(inp, tmp_path))
    with pytest.raises(Tripwire):
        main(sweep_argv(inp, tmp_path))
    with pytest.raises(Tripwire):
        main(sweep_argv(inp, tmp_path, "--spec", str(PRESET_DIR / "smoke.yaml")))
    assert main(score_argv(inp, tmp_path)) == 0, capsys.readouterr().err
    assert (tmp_path / "report" / "scores.csv").is_file()
    assert list(tmp_path.iterdir()) == [tmp_path / "report"]  # eval and sweep wrote nothing


def test_spec_loading_outside_the_cli_raises_the_same_one_line_error(inp):
    from railsweep.errors import RailsweepError
    from railsweep.sweep.spec import load_spec

    for name, (_, needle) in BAD_SPECS.items():
        with pytest.raises(RailsweepError) as e:
            load_spec(inp["specs"] / f"{name}.yaml")
        assert needle in str(e.value) and "\n" not in str(e.value), name


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["-m", "railsweep", "eval", "--model", "m", "--task-dir", "t", "--strategy", "identity",
          "--out", "cells", "--temperature", "inf"], "temperature=inf"),
        (["-m", "railsweep", "sweep", "--spec", "{specs}/not_utf8.yaml"], "not UTF-8 text"),
    ],
)  # fmt: skip
def test_a_real_process_prints_one_line_and_no_traceback(argv, needle, inp, tmp_path):
    argv = [a.replace("{specs}", str(inp["specs"])) for a in argv]
    r = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("railsweep: error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []
