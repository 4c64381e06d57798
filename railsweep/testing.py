"""Tiny real models for tests (no module of the library imports it): a word-level tokenizer (exact round trip
for GSM-style text) and a random 2-layer model that ``AutoModelForCausalLM`` loads like any Hub checkpoint. The
config comes from :func:`railsweep.miniworld.models.family_config`; ``gemma`` here is Gemma 1 (the family the
cascade decode path does not take).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from railsweep.atomic import write_dir_atomic
from railsweep.errors import ConfigError
from railsweep.miniworld.models import family_config

FAMILIES = ("llama", "neox", "gemma")
_CONFIG_FAMILY = {"llama": "llama", "neox": "neox", "gemma": "gemma1"}  # this module's name → the factory's

SPECIAL_TOKENS = {"unk": "<unk>", "bos": "<s>", "eos": "</s>", "pad": "<pad>"}

# Words of GSM8K-style questions, solutions and the 8-shot CoT answers ("The answer is 18.").
_BASE_WORDS = """
The the answer is Answer Question Q A So so and of to in a an for with how many much each per
total left has have had he she they it there are was were be will would does did do can if then
than more less times half twice what How What When Janet ducks eggs day days sells makes dollars
at market every morning bakes muffins friends four three two one five six seven eight nine ten
bolts blue white fiber takes It robe buys buy bought sold sell cost costs price profit money
first second third week weeks month months year years hour hours minute minutes
apples oranges books cars people students class school store miles feet inches
pounds cups hand We we start started now after before from by on into out
their his her its our you your I me my Let let s t calculation remaining
minus plus divided multiplied equals number numbers answers step steps think
She He They There In If Then Each This That These Since After Before On At For To By But And
duck chickens dogs cats fish birds cows horses pigs trees flowers plants
makes made make earn earns earned pay pays paid spend spends spent save saves saved gets got get
gives gave give uses used use needs need wants want takes took take runs ran walks walked reads
read writes wrote works worked eats ate drinks drank plays played wins won loses lost finds found
dollar cents cent price prices bill bills coin coins ticket tickets box boxes bag bags bottle bottles
pizza pizzas cookies cake cakes candy candies water milk juice bread sandwich sandwiches
page pages friend family mother father brother sister son daughter kids children
boys girls teacher teachers team teams game games player players points score
total altogether together remaining rest left over more fewer less than twice triple double
percent fraction quarter third fifth tenth hundred thousand million dozen dozens pair pairs
long wide tall high deep big small large old new young same different equal
rate speed distance time times round trip weekly daily monthly yearly every
all both some any none no not only just also still even already again
""".split()

_PUNCT = list(".,:;?!$%#=+-*/()<>'\"")


def _vocab(extra_words: Iterable[str] | None) -> list[str]:
    words = list(dict.fromkeys(_BASE_WORDS + [w for w in (extra_words or []) if w]))
    numbers = [str(i) for i in range(1001)]
    pieces = [SPECIAL_TOKENS[k] for k in ("pad", "unk", "bos", "eos")] + ["\n", " ", "  "]
    for w in words + numbers + _PUNCT:
        pieces += [w, " " + w]
    return list(dict.fromkeys(pieces))


def _build_tokenizer(vocab_words: Iterable[str] | None):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(_vocab(vocab_words))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIAL_TOKENS["unk"]))
    # One piece per word / number / punctuation mark, carrying its leading space; newlines alone.
    pattern = Regex(r"\n| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]| +")
    tok.pre_tokenizer = pre_tokenizers.Split(pattern, behavior="isolated")
    tok.decoder = decoders.Fuse()  # pieces carry their own spaces: concatenate
    bos = SPECIAL_TOKENS["bos"]
    tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                       special_tokens=[(bos, vocab[bos])])  # fmt: skip
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=SPECIAL_TOKENS["bos"],
                                   eos_token=SPECIAL_TOKENS["eos"], pad_token=SPECIAL_TOKENS["pad"],
                                   unk_token=SPECIAL_TOKENS["unk"], clean_up_tokenization_spaces=False,
                                   padding_side="left")  # fmt: skip


def _config(family: str, vocab_size: int, ids: dict[str, int]):
    # initializer_range 0.2: peaked, non-degenerate next-token distributions
    common = dict(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=2, max_position_embeddings=1024, bos_token_id=ids["bos"],
                  eos_token_id=ids["eos"], pad_token_id=ids["pad"], initializer_range=0.2,
                  tie_word_embeddings=False)  # fmt: skip
    if family in ("llama", "gemma"):
        common.update(num_key_value_heads=1, head_dim=32)
    return family_config(_CONFIG_FAMILY[family], **common)


def make_tiny_model(
    path: str | os.PathLike, family: str = "llama", seed: int = 0, vocab_words: Iterable[str] | None = None,
    logit_scale: float = 1.0,
) -> Path:
    """Write a tiny random ``family`` model + tokenizer to ``path`` atomically (same arguments → byte-identical
    weights). ``vocab_words`` extends the vocabulary; ``logit_scale`` multiplies the output embedding: at 1.0 the
    next-token entropy is ~6.5 nats (near uniform), at 3.0 ~2 nats, so T=0.7 samples often follow the greedy path.
    """
    import torch
    from transformers import AutoModelForCausalLM

    if family not in FAMILIES:
        raise ConfigError(f"tiny model family must be one of {FAMILIES}, got {family!r}")
    path = Path(path)
    if path.exists() and any(path.iterdir()):
        raise ConfigError(f"tiny model directory {path} already exists and is not empty")
    tokenizer = _build_tokenizer(vocab_words)
    ids = {k: tokenizer.convert_tokens_to_ids(v) for k, v in SPECIAL_TOKENS.items()}
    config = _config(family, len(tokenizer), ids)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        with torch.no_grad():
            model.get_output_embeddings().weight.mul_(logit_scale)
    model.generation_config.pad_token_id = ids["pad"]

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / "railsweep_tiny.json").write_text(json.dumps({"family": family, "seed": seed}))

    return write_dir_atomic(path, write)
