"""Reading an answer: the numbers in it, its words, and whether it says the fact is not there.

Shared by the hand-written question sets (``run.py``) and the generated ones (``worlds.py``).
Pure Python, no model and no LangChain.
"""

from __future__ import annotations

import re

# A number not glued to a letter before it: "T9" and "H2" are product names, not answers.
# A minus sign counts unless a letter or digit stands right before it: "-5 years" and "x=-5" are
# not 5, "2016-2011" is two years.
_NUMBER = re.compile(r"(?:(?<![A-Za-z\d])-)?(?<![A-Za-z\d.])\d+(?:\.\d+)?")

# How an answer says that the files do not hold the fact asked for.
_NOT_FOUND = re.compile(
    r"\bnot\s+(?:\w+ly\s+)?(?:in|found|mentioned|stated|given|available|provided|listed|specified|included|known"
    r"|recorded|present|contained)\b"
    r"|\bno\s+(?:information|data|mention|record|details?|figures?|facts?|passages?)\b"
    r"|\b(?:does|do|did)\s*(?:not|n't)\s+(?:say|mention|state|contain|include|give|list|specify|provide"
    r"|have|exist)\b"
    r"|\b(?:cannot|can't|can\s+not|could\s+not|couldn't|unable\s+to)\s+(?:be\s+)?(?:find|found|determine"
    r"|determined|answer|answered|tell|locate|say)\b"
    r"|\bunknown\b|\bnot\s+enough\s+information\b|\binsufficient\s+information\b",
    re.IGNORECASE,
)


def numbers_in(text: str) -> list[float]:
    """Every number in ``text``; thousands separators (``53,544``) and ``$`` are understood."""
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text).replace("\u2212", "-").replace("$", "")
    return [float(n) for n in _NUMBER.findall(text)]


def normalise(text: str) -> str:
    """Lowercase words separated by single spaces, punctuation dropped."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def contains(text: str, phrase: str) -> bool:
    """Whether ``phrase`` appears in ``text`` as whole words, ignoring case and punctuation."""
    return f" {normalise(phrase)} " in f" {normalise(text)} "


def says_not_found(text: str) -> bool:
    """Whether ``text`` says the fact could not be found ("The files do not say ...")."""
    return bool(_NOT_FOUND.search(text.replace("\u2019", "'")))


def number_matches(text: str, expected: float, tolerance: float = 0.0) -> bool:
    """Whether a number in ``text`` equals ``expected``: within ``tolerance`` (relative, and half a
    hundredth absolute for rounding to two decimals) when it is above 0, else up to float noise."""
    allowed = max(tolerance * abs(expected), 0.005) if tolerance else max(1e-6 * abs(expected), 1e-9)
    return any(abs(n - expected) <= allowed for n in numbers_in(text))
