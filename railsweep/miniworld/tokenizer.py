"""The miniature world's word-level tokenizer.

Trained with ``tokenizers`` (a WordLevel model over the world's own texts) and saved as ``tokenizer.json`` +
config so ``transformers.AutoTokenizer`` loads it. Every piece carries its leading space, so decoding is plain
concatenation and text round-trips exactly; every number 0..``max_number`` is a single token, with and without
a leading space, so the tiny models do arithmetic on whole numbers, never on digit strings.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path

SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")
_PATTERN = r"\n| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]| +"


def train_tokenizer(texts: Iterable[str], out_dir: str | Path, max_number: int = 200) -> Path:
    """Train on ``texts`` (plus every number up to ``max_number``) and save to ``out_dir``."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(_PATTERN), behavior="isolated")
    tok.decoder = decoders.Fuse()
    numbers = " ".join(str(i) for i in range(max_number + 1))
    anchors = [numbers, numbers.replace(" ", "\n"), "Q: A: The answer is 0.\n\n", "  ", " "]
    trainer = trainers.WordLevelTrainer(special_tokens=list(SPECIALS), min_frequency=1, show_progress=False)
    tok.train_from_iterator(itertools.chain(anchors, texts), trainer=trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
        clean_up_tokenization_spaces=False, padding_side="left",
    )  # fmt: skip
    out_dir = Path(out_dir)
    fast.save_pretrained(out_dir)
    return out_dir
