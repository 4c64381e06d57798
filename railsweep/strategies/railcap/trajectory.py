"""Which tokens of a greedy completion form RailCap's trajectory.

An engine cuts a completion's token ids *after* the stop string's last token and its text *before* it. The
stop string ("\\n\\nQ:" for the 8-shot prompt) belongs to the prompt format, not the answer: kept in the
trajectory, RailCap caps the step into it and samples run on to the token limit. ``answer_ids`` drops those
trailing tokens (EOS, the model's own end of answer, is kept).
"""

from __future__ import annotations

from railsweep.engines.base import Sample


def answer_ids(sample: Sample, tokenizer) -> list[int]:
    """The shortest prefix of ``sample.token_ids`` whose decoded text covers ``sample.text``."""
    ids = list(sample.token_ids)
    if sample.finish_reason != "stop" or not ids:
        return ids

    def text(k: int) -> str:
        return tokenizer.decode(ids[:k], skip_special_tokens=True, clean_up_tokenization_spaces=False)

    if text(len(ids)) == sample.text:  # ended by EOS (or nothing was cut): every token is answer
        return ids
    k = len(ids)
    while k > 0 and text(k - 1).startswith(sample.text):
        k -= 1
    return ids[:k]
