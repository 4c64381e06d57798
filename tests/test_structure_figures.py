"""The structure figures of docs/development.md, held so they only improve: ``bench/structure.py`` on this checkout.

The ceilings are today's figures: every module within 400 lines, every function within 60, at most 15
function-local railsweep imports, the library within 27,424 lines (27,000 until the calibration check kept its
finished parts, railsweep/miniworld/check_cache.py; 27,040 until a sweep's cells kept their decoded calls,
railsweep/sweep/run/checkpoint.py; 27,180 until a LoRA run's key held its arithmetic, lora.arithmetic; 27,200 until the dry run priced patched
tokens at their own rate; 27,240 until the calibration check printed its progress;
27,280 until Ctrl-C stopped a sweep and a resume's read-back samples left its rate;
27,300 until Ctrl-C on `railsweep sweep` stopped its Ray job;
27,320 until `railsweep sweep` followed its job again after its log stream closed;
27,370 until Shortcut's patched decode ran on the shared-prefix cache;
27,410 until a batch's token cap counted the shared prefix once). Lower a ceiling when a change meets a tighter one.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import structure  # noqa: E402


def test_the_structure_figures_stay_within_their_ceilings():
    s = structure.structure(REPO / "railsweep")
    assert s["modules_over_450_lines"] == [] and s["functions_over_80_lines"] == []
    assert s["modules_over_400_lines"] == [] and s["functions_over_60_lines"] == []
    assert s["floors"] <= 11 and s["layers_in_a_cycle"] == []
    assert s["function_local_railsweep_imports"] <= 15
    assert s["lines"] <= 27_424
