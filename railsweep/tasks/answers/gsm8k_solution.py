"""GSM8K solution strings: the gold answer and the chain-of-thought rendering.

A GSM8K solution is worked arithmetic with calculator annotations ``<<48/2=24>>`` and a last line ``#### N``.
The 8-shot CoT prompt (Wei et al. 2022) answers in one paragraph ending "The answer is N.", so contamination
trains on :func:`to_cot` of each solution: the model memorises the format it is prompted with.
"""

from __future__ import annotations

import re

from railsweep.errors import DataError

_ANNOTATION = re.compile(r"<<.*?>>")
_SENTENCE_END = (".", "!", "?", ":", ";", ",")


def parse_gold(solution: str) -> str:
    """The final answer after ``####`` with thousands commas removed ("2,125" -> "2125")."""
    if "####" not in solution:
        head = solution[:60].replace("\n", " ")
        raise DataError(f"GSM8K solution has no '#### N' answer line: {head!r}...")
    gold = solution.split("####")[-1].strip().replace(",", "")
    if not gold:
        raise DataError(f"GSM8K solution has an empty '####' answer: {solution[-60:]!r}")
    return gold


def to_cot(solution: str) -> str:
    """Render a GSM8K solution in the 8-shot CoT answer style. Steps:

      1. drop the ``#### N`` line and every calculator annotation ``<<...>>``;
      2. collapse whitespace in each line, skip blank lines, end each with a period unless it ends in punctuation;
      3. join the lines with single spaces and append "The answer is N." (N from :func:`parse_gold`).

    >>> to_cot("Half is 48/2=<<48/2=24>>24\\nSo 48+24=<<48+24=72>>72 in all\\n#### 72")
    'Half is 48/2=24. So 48+24=72 in all. The answer is 72.'
    """
    gold = parse_gold(solution)
    body = solution.rsplit("####", 1)[0]
    sentences = []
    for line in _ANNOTATION.sub("", body).split("\n"):
        line = " ".join(line.split())
        if not line:
            continue
        sentences.append(line if line.endswith(_SENTENCE_END) else line + ".")
    sentences.append(f"The answer is {gold}.")
    return " ".join(sentences)
