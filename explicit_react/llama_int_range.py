"""An integer's bounds (``minimum``, ``maximum`` and their exclusive forms) as a grammar of its digits.

llama-cpp-python's grammar converter drops a number's bounds, so a local model could send
``{"count": 0}`` to a tool whose schema says ``minimum: 1`` and learn of it only as an invalid call.
For an ``integer`` the bounds can be written as text: the decimal numbers from ``low`` to ``high``
are, for each digit count, a few runs of digit ranges (from 123 to 456: ``1`` then 23 to 99, or
``[2-3]`` then any two digits, or ``4`` then 00 to 56). A ``number`` that may have a fraction or an
exponent keeps the converter's rule, and its bounds are checked when the call is read.

An alternative is a tuple of digit ranges, one per position, each ``(first, last)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["MAX_DIGITS", "alternatives", "integer_bounds", "range_grammar", "range_regex"]

MAX_DIGITS = 16
"""The most digits the converter's own integer rule allows; bounds past it are left to the check."""

Digits = tuple[tuple[int, int], ...]
_BOUND_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def integer_bounds(schema: Mapping[str, Any]) -> tuple[int | None, int | None] | None:
    """The least and greatest integer ``schema`` allows (``None``: unbounded on that side); ``None``
    when it has no bound this module can write (none given, one not a number, or past ``MAX_DIGITS``)."""
    low: int | None = None
    high: int | None = None
    for key in _BOUND_KEYS:
        if key not in schema:
            continue
        value = schema[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        if key == "minimum":
            low = _tighter(low, math.ceil(value), max)
        elif key == "exclusiveMinimum":
            low = _tighter(low, math.floor(value) + 1, max)
        elif key == "maximum":
            high = _tighter(high, math.floor(value), min)
        else:
            high = _tighter(high, math.ceil(value) - 1, min)
    if low is None and high is None:
        return None
    if any(bound is not None and len(str(abs(bound))) > MAX_DIGITS for bound in (low, high)):
        return None
    if low is not None and high is not None and low > high:
        return None  # no integer fits: the check when the call is read says so
    return low, high


def _tighter(current: int | None, new: int, pick: Any) -> int:
    return new if current is None else int(pick(current, new))


def alternatives(low: int, high: int | None) -> list[tuple[Digits, bool]]:
    """The decimal numbers from ``low`` (at least 0) to ``high`` (``None``: up to ``MAX_DIGITS``
    digits), without leading zeros, as alternatives; the flag says the alternative may go on with
    more digits, up to ``MAX_DIGITS`` in all."""
    first = len(str(low))
    if high is None:
        longer = ((1, 9), *[(0, 9)] * first) if first < MAX_DIGITS else None
        same = [(digits, False) for digits in _same_length(str(low), "9" * first)]
        return same + ([(longer, True)] if longer else [])
    out: list[tuple[Digits, bool]] = []
    last = len(str(high))
    for length in range(first, last + 1):
        start = str(low) if length == first else "1" + "0" * (length - 1)
        end = str(high) if length == last else "9" * length
        out += [(digits, False) for digits in _same_length(start, end)]
    return out


def _same_length(start: str, end: str) -> Iterator[Digits]:
    """The numbers from ``start`` to ``end``, both of the same number of digits, position by position."""
    if not start:
        yield ()
        return
    first, last, rest = int(start[0]), int(end[0]), len(start) - 1
    if first == last:
        for tail in _same_length(start[1:], end[1:]):
            yield ((first, first), *tail)
        return
    from_bottom = start[1:] == "0" * rest  # the first digit's every number is in
    to_top = end[1:] == "9" * rest
    if not from_bottom:
        for tail in _same_length(start[1:], "9" * rest):
            yield ((first, first), *tail)
    middle = (first if from_bottom else first + 1, last if to_top else last - 1)
    if middle[0] <= middle[1]:
        yield (middle, *[(0, 9)] * rest)
    if not to_top:
        for tail in _same_length("0" * rest, end[1:]):
            yield ((last, last), *tail)


def _sides(low: int | None, high: int | None) -> tuple[list[tuple[Digits, bool]], list[tuple[Digits, bool]]]:
    """The alternatives of the numbers at least 0, and of the magnitudes of the negative ones
    (``low`` is at most ``high``)."""
    positive = alternatives(max(low or 0, 0), high) if high is None or high >= 0 else []
    if low is not None and low >= 0:
        return positive, []
    negative = alternatives(max(1, -high) if high is not None else 1, None if low is None else -low)
    return positive, negative


def range_grammar(low: int | None, high: int | None) -> str:
    """The GBNF text of the integers from ``low`` to ``high``, as JSON writes them."""
    return _render(low, high, gbnf=True)


def range_regex(low: int | None, high: int | None) -> str:
    """The same language as a Python regular expression (for tests and for reading)."""
    return _render(low, high, gbnf=False)


def _render(low: int | None, high: int | None, *, gbnf: bool) -> str:
    positive, negative = _sides(low, high)
    minus = '"-" ' if gbnf else "-"
    parts = [_digits(digits, more, gbnf) for digits, more in positive]
    parts += [minus + _digits(digits, more, gbnf) for digits, more in negative]
    return "(" + " | ".join(parts) + ")" if gbnf else "(?:" + "|".join(parts) + ")"


def _runs(digits: Digits) -> Iterator[tuple[tuple[int, int], int]]:
    """Consecutive equal digit ranges, with how many times each repeats."""
    index = 0
    while index < len(digits):
        count = 1
        while index + count < len(digits) and digits[index + count] == digits[index]:
            count += 1
        yield digits[index], count
        index += count


def _digits(digits: Digits, more: bool, gbnf: bool) -> str:
    parts = []
    for (first, last), count in _runs(digits):
        item = (f'"{first}"' if gbnf else str(first)) if first == last else f"[{first}-{last}]"
        parts.append(item if count == 1 else f"{item}{{{count}}}")
    if more:
        parts.append(f"[0-9]{{0,{MAX_DIGITS - len(digits)}}}")
    return "(" + " ".join(parts) + ")" if gbnf else "".join(parts)
