"""The numbers a math question states, as values, so a paraphrase can be checked for keeping them.

A number is written in digits, compared by value (``1,000`` = ``1000``, ``$3`` = 3, ``25%`` = 25), or a cardinal
(:data:`WORDS`, ``twenty-five``: ``three eggs`` states 3) or count word (``twice`` 2, ``triple`` 3). Not counted:
``one`` (often an article: ``one day``), ordinals, fractions in words, ``dozen``, ``pair``, multi-word numbers
(``two hundred`` is 2 and 100). So ``a dozen`` -> ``12`` is refused as adding a number: refusing a good
paraphrase costs one retry, keeping a changed number corrupts the item.
"""

from __future__ import annotations

import re
from collections import Counter
from decimal import Decimal, InvalidOperation

_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen twenty").split()  # fmt: skip
_TENS = {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_COUNTS = {"twice": 2, "double": 2, "thrice": 3, "triple": 3, "quadruple": 4}
WORDS = {**{w: i for i, w in enumerate(_UNITS) if w != "one"}, **_TENS, **_COUNTS,
         "hundred": 100, "thousand": 1000, "million": 10**6}  # fmt: skip

_DIGITS = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
_TENS_UNITS = r"(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)-(?:one|two|three|four|five|six|seven|eight|nine)"
_WORD = r"\b(?:" + _TENS_UNITS + "|" + "|".join(sorted(WORDS, key=len, reverse=True)) + r")\b"
_NUMBER = re.compile(rf"(?P<digits>{_DIGITS})|(?P<word>{_WORD})", re.IGNORECASE)


def _word_value(word: str) -> Decimal:
    word = word.lower()
    if "-" in word:
        tens, unit = word.split("-")
        return Decimal(WORDS[tens] + _UNITS.index(unit))  # "one" counts here: "twenty-one" is no article
    return Decimal(WORDS[word])


def numbers(text: str) -> Counter[Decimal]:
    """The multiset of number values ``text`` states (see the module docstring for what counts)."""
    out: Counter[Decimal] = Counter()
    for m in _NUMBER.finditer(text):
        value = Decimal(m["digits"].replace(",", "")) if m["digits"] else _word_value(m["word"])
        out[value.normalize()] += 1
    return out


def value(text: str) -> Decimal | None:
    """The value of one number string (a gold answer such as ``1,200`` or ``-3.50``); None if it is not one."""
    try:
        return Decimal(text.replace(",", "").replace("$", "").strip()).normalize()
    except InvalidOperation:
        return None
