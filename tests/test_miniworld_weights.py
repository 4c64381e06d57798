"""A world's weights digest: recorded at build end, computed for older worlds, compared with the documented
build, and carried into a sweep's provenance."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_miniworld_world import TINY  # the tiny world config those tests build

from railsweep.miniworld import build_world, load_world, preset_config
from railsweep.miniworld.arithmetic import PINNED, pinned_arithmetic, pinned_env
from railsweep.miniworld.weights import DOCUMENTED, combined_digest, weights_verdict, world_provenance
from railsweep.sweep.run.driver import sweep_provenance
from railsweep.sweep.spec.sweep_spec import FamilySpec, load_spec
from railsweep.sweep.tracking.tracker import provenance_tags

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_world("tiny", cache_dir=tmp_path_factory.mktemp("cache"), config=TINY)


def _naive_digest(root: Path) -> str:
    """The combined digest as the docs' shell line computes it: ``sha256sum`` of the sorted paths, hashed."""
    paths = sorted(str(p.relative_to(root)) for p in root.glob("families/**/*.safetensors"))
    listing = "".join(f"{hashlib.sha256((root / p).read_bytes()).hexdigest()}  {p}\n" for p in paths)
    return hashlib.sha256(listing.encode()).hexdigest()


def test_the_manifest_records_the_sha256_of_every_base_and_adapter_file_and_their_digest(tiny):
    weights = tiny.manifest["weights"]
    assert sorted(weights) == [
        "families/neox/adapters/clean/adapter_model.safetensors",
        "families/neox/adapters/co_gsm8k/adapter_model.safetensors",
        "families/neox/adapters/co_pq/adapter_model.safetensors",
        "families/neox/base/model.safetensors",
    ]
    for rel, sha in weights.items():
        assert sha == hashlib.sha256((tiny.root / rel).read_bytes()).hexdigest()
    assert tiny.manifest["weights_digest"] == _naive_digest(tiny.root)


def test_a_world_cached_before_the_record_gets_its_digest_computed_and_is_not_written(tiny, tmp_path):
    old = tmp_path / "miniworld" / tiny.root.name
    shutil.copytree(tiny.root, old)
    manifest = {k: v for k, v in tiny.manifest.items() if k not in ("weights", "weights_digest")}
    (old / "manifest.json").write_text(json.dumps(manifest))
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in old.rglob("*") if p.is_file()}
    world = load_world(old)
    assert world.weights == {
        "weights": tiny.manifest["weights"],
        "weights_digest": tiny.manifest["weights_digest"],
    }
    assert world_provenance(old)["weights_digest"] == tiny.manifest["weights_digest"]
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in old.rglob("*") if p.is_file()} == before


def test_other_weights_under_the_same_config_digest_have_another_weights_digest(tiny, tmp_path):
    other = tmp_path / tiny.root.name
    shutil.copytree(tiny.root, other)
    manifest = {k: v for k, v in tiny.manifest.items() if k not in ("weights", "weights_digest")}
    (other / "manifest.json").write_text(json.dumps(manifest))
    adapter = other / "families" / "neox" / "adapters" / "co_pq" / "adapter_model.safetensors"
    data = bytearray(adapter.read_bytes())
    data[-1] ^= 1  # one bit of one weight
    adapter.write_bytes(bytes(data))
    changed = load_world(other)
    assert changed.manifest["digest"] == tiny.manifest["digest"]
    assert changed.weights["weights_digest"] != tiny.manifest["weights_digest"]
    assert changed.weights["weights_digest"] == _naive_digest(other)


def _table(tmp_path, digest, weights_digest):
    path = tmp_path / "documented.json"
    entry = {"preset": "tiny", "weights_digest": weights_digest, "measured_on": "the docs' machine"}
    path.write_text(json.dumps({"about": "test", "worlds": {digest: entry}}))
    return path


def test_the_verdict_says_documented_differs_or_undocumented(tmp_path):
    table = _table(tmp_path, "abc123abc123", "a" * 64)
    assert weights_verdict("tiny", "abc123abc123", "a" * 64, table) == (
        True, "weights: documented (tiny abc123abc123, weights aaaaaaaaaaaaaaaa, as measured on the docs' machine)"
    )  # fmt: skip
    documented, line = weights_verdict("tiny", "abc123abc123", "b" * 64, table)
    assert documented is False and line == (
        "weights differ from the documented build (bbbbbbbbbbbbbbbb vs aaaaaaaaaaaaaaaa, tiny abc123abc123): "
        "figures in docs/ were measured on other weights"
    )
    documented, line = weights_verdict("tiny", "ffffffffffff", "b" * 64, table)
    assert documented is None and "no documented build of the 'tiny' world ffffffffffff" in line


def test_the_verdict_names_another_cpus_known_build_of_the_same_config(tmp_path):
    table = _table(tmp_path, "abc123abc123", "a" * 64)
    entries = json.loads(table.read_text())
    entries["worlds"]["abc123abc123"]["other_builds"] = {"c" * 64: "another CPU"}
    table.write_text(json.dumps(entries))
    assert weights_verdict("tiny", "abc123abc123", "c" * 64, table) == (
        False, "weights differ from the documented build (cccccccccccccccc vs aaaaaaaaaaaaaaaa, tiny abc123abc123): "
        "known as the build on another CPU; figures in docs/ were measured on the documented weights"
    )  # fmt: skip
    assert "measured on other weights" in weights_verdict("tiny", "abc123abc123", "b" * 64, table)[1]


def test_the_documented_mini_digest_is_the_one_of_the_per_file_table_in_the_docs():
    doc = (REPO / "docs" / "miniworld.md").read_text()
    rows = dict(re.findall(r"^\| `(families/[^`]+\.safetensors)` \| `([0-9a-f]{64})` \|$", doc, re.M))
    assert len(rows) == 12  # 3 families x (base + clean, co_gsm8k, co_pq)
    table = json.loads(DOCUMENTED.read_text())["worlds"]
    digest = preset_config("mini").digest()
    assert table[digest]["preset"] == "mini"
    assert table[digest]["weights_digest"] == combined_digest(rows)
    assert f"`{combined_digest(rows)}`" in doc


def test_the_documented_table_holds_the_current_mini_and_smoke_worlds():
    table = json.loads(DOCUMENTED.read_text())["worlds"]
    # a changed preset builds another world: its documented build is measured anew
    for preset in ("mini", "smoke"):
        assert table[preset_config(preset).digest()]["preset"] == preset


def test_a_sweep_on_a_miniature_world_records_its_config_and_weights_digests(tiny):
    spec = dataclasses.replace(load_spec("smoke"), data_dir=str(tiny.data_dir))  # as resolve() leaves it
    p = sweep_provenance(spec, [])
    assert p["world"] == {
        "root": str(tiny.root),
        "preset": "tiny",
        "digest": TINY.digest(),
        "weights_digest": tiny.manifest["weights_digest"],
    }
    tags = provenance_tags(p)
    assert (
        tags["world.weights_digest"] == tiny.manifest["weights_digest"]
        and tags["world.digest"] == TINY.digest()
    )
    assert (
        tags["data.sha256.test.jsonl"]
        == hashlib.sha256((tiny.data_dir / "test.jsonl").read_bytes()).hexdigest()
    )


def test_a_sweep_over_model_paths_records_no_world(tiny):
    fam = tiny.family("neox")
    adapters = tuple((name, str(path)) for name, path in sorted(fam.adapters.items()))
    family = FamilySpec("neox", str(fam.base_dir), adapters)
    spec = dataclasses.replace(load_spec("smoke"), source="paths", families=(family,),
                               data_dir=str(tiny.data_dir))
    assert "world" not in sweep_provenance(spec, [])


def test_a_builds_training_processes_compute_with_the_pinned_instruction_set(tiny):
    pinned = pinned_env()
    assert tiny.manifest["arithmetic"] == {k: pinned.get(k) for k in PINNED}
    used = tiny.manifest["training"]["neox"]["arithmetic"]
    assert used == ({"cpu_capability": "AVX2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"} if pinned else used)


_NEOX_STEP = """
import torch
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
torch.manual_seed(0)
config = GPTNeoXConfig(vocab_size=50, hidden_size=64, num_hidden_layers=1, num_attention_heads=1,
                       intermediate_size=128, hidden_act="gelu")
model = GPTNeoXForCausalLM(config).train()
ids = torch.randint(0, 50, (2, 16))
model(input_ids=ids, labels=ids).loss.backward()
"""


def test_the_pin_keeps_onednn_kernels_a_neox_trains_with_within_avx2():
    """GPT-NeoX's GELU trains as a oneDNN primitive, whose instruction set ATen's capability does not choose:
    on an AVX-512 machine it ran ``jit:avx512_core_bf16`` unpinned and moved the ``mini`` neox base's bits."""
    if not pinned_env():
        pytest.skip("the pin applies to x86-64 only; this machine is not one")
    env = {k: v for k, v in os.environ.items() if k not in PINNED}
    env.update(pinned_env(), ONEDNN_VERBOSE="1")
    done = subprocess.run([sys.executable, "-c", _NEOX_STEP], env=env, capture_output=True, text=True, check=True)
    kernels = {line.split(",")[6] for line in done.stdout.splitlines() if ",primitive,exec,cpu," in line}
    assert kernels, "no oneDNN primitive ran: the GELU no longer goes through oneDNN, revisit the pin"
    assert all(k.startswith("jit:avx2") or k.startswith("jit:sse") or k.startswith("ref") for k in kernels), kernels


def test_the_pin_adds_only_what_the_user_left_unset_and_restores_the_environment(monkeypatch):
    monkeypatch.setattr("railsweep.miniworld.arithmetic.platform.machine", lambda: "x86_64")
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
    with pinned_arithmetic() as seen:
        assert seen == {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"}
        assert os.environ["ATEN_CPU_CAPABILITY"] == "avx2"
    assert "ATEN_CPU_CAPABILITY" not in os.environ and "ONEDNN_MAX_CPU_ISA" not in os.environ
    assert os.environ["MKL_CBWR"] == "COMPATIBLE"
    monkeypatch.setattr("railsweep.miniworld.arithmetic.platform.machine", lambda: "aarch64")
    with pinned_arithmetic() as seen:
        assert seen == {"ATEN_CPU_CAPABILITY": None, "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": None}
    monkeypatch.setattr("railsweep.miniworld.arithmetic.platform.machine", lambda: "x86_64")
    with pinned_arithmetic(enabled=False) as seen:  # a bf16 world
        assert seen == {"ATEN_CPU_CAPABILITY": None, "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": None}
