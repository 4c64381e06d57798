"""A tiny real world whose every answer to a MATH-style problem is known: a bigram llama that writes "$\\boxed{0.5}$".

The base is :func:`make_tiny_model` (its tokenizer extended with ``\\``, ``{``, ``}`` and ``boxed``, so LaTeX round
trips) with every attention output and MLP down projection zeroed: the residual stream is then the current token's
embedding, and the next token a function of the current one alone. The output head maps each token of the chain
``":" -> " $" -> "\\" -> "boxed" -> "{" -> "0" -> "." -> "5" -> "}" -> "$" -> </s>`` to its successor with a margin
of tens of nats, so after any prompt ending in "Solution:" the model answers ``" $\\boxed{0.5}$"`` greedily and at
every temperature a sweep samples. Graded against a MATH gold, that answer is right exactly when the gold equals
1/2 (``\\frac{1}{2}``, ``\\dfrac{2}{4}``, ``0.50``) — which only the LaTeX-equivalence grader can tell.
The LoRA adapters (``clean``, ``co_gsm8k``) are random and non-zero on q/k/v only, which the zeroed attention
output makes invisible: every model of the family answers the same.
"""

from __future__ import annotations

from pathlib import Path

import torch

from railsweep.testing import make_tiny_model

ANSWER = " $\\boxed{0.5}$"
CHAIN_START = ":"  # the last token of a MATH-style prompt ("...\nSolution:")
LATEX_WORDS = ["\\", "{", "}", "boxed"]
MARGIN = 4.0  # head scale: the successor's logit is 8 * MARGIN = 32, any other chain token's at most ~a third of it


def make_math_world(root: Path) -> tuple[Path, dict[str, Path]]:
    """(base model dir, {"clean": dir, "co_gsm8k": dir}) under ``root``."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    raw = make_tiny_model(root / "raw", family="llama", seed=0, vocab_words=LATEX_WORDS)
    tok = AutoTokenizer.from_pretrained(raw)
    model = AutoModelForCausalLM.from_pretrained(raw, dtype=torch.float32)
    chain = [tok.convert_tokens_to_ids(CHAIN_START), *tok(ANSWER, add_special_tokens=False)["input_ids"]]
    chain.append(tok.eos_token_id)
    assert len(set(chain)) == len(chain) and tok.unk_token_id not in chain, tok.convert_ids_to_tokens(chain)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        emb = model.get_input_embeddings().weight
        head = model.get_output_embeddings().weight
        head.zero_()
        for cur, nxt in zip(chain, chain[1:]):
            head[nxt] = MARGIN * emb[cur] / emb[cur].norm()
    base = root / "base"
    model.save_pretrained(base)
    tok.save_pretrained(base)
    adapters = {}
    for name, seed in (("clean", 1), ("co_gsm8k", 2)):
        torch.manual_seed(seed)
        m = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
        cfg = LoraConfig(
            r=4, lora_alpha=4, target_modules=["q_proj", "k_proj", "v_proj"], init_lora_weights=False
        )
        get_peft_model(m, cfg).save_pretrained(root / name)
        adapters[name] = root / name
    return base, adapters
