"""What the model writes, read as an expression: units dropped, operation words refused with the
symbols to use, thousands separators read (``evaluate`` in ``calculator.py`` computes the result).

The names the calculator knows (``FUNCTIONS``, ``CONSTANTS``) and its error (``CalculationError``) live
here too, since the reading must tell them from words; ``calculator.py`` re-exports them.
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Callable
from typing import Any

Number = int | float

MAX_ROUND_DIGITS = 1_300  # round(x, n) computes 10 ** abs(n) inside CPython: keep that power small

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "floor": math.floor,
    "ceil": math.ceil,
    "abs": abs,
    "round": lambda value, digits=None: _round_half_up(value, _round_digits(digits)),
    "min": lambda *values: _smallest_or_largest(min, values),
    "max": lambda *values: _smallest_or_largest(max, values),
    "sum": lambda *values: sum(values),  # sum(140, 65, 38), as models write it
}
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


class CalculationError(ValueError):
    """The expression is not supported arithmetic, or its result cannot be computed."""


def _smallest_or_largest(choose: Callable[..., Number], values: tuple[Number, ...]) -> Number:
    """``min`` or ``max`` of the numbers given as arguments, one number included: Python's ``min(1)``
    takes its one argument for a list and fails ("'int' object is not iterable")."""
    if not values:
        raise TypeError(f"{choose.__name__}() needs at least one number")
    return choose(values)


def _round_digits(digits: Number | None) -> int | None:
    """``round``'s second argument, refused when CPython would compute a huge power of ten for it
    (``round(1, -10**9)`` ran for minutes, holding the GIL, where no timeout can stop it)."""
    if digits is None:
        return None
    if not isinstance(digits, int):
        raise CalculationError("round()'s second argument must be a whole number of digits")
    if abs(digits) > MAX_ROUND_DIGITS:
        raise CalculationError(f"round() to more than {MAX_ROUND_DIGITS:,} digits is not supported")
    return digits


def _round_half_up(value: Number, digits: int | None) -> Number:
    """``round`` as a calculator rounds: halves away from zero, on the decimal number as written.
    Python's rounds halves to even and works on the binary float: round(2.5) was 2, round(0.125, 2)
    0.12. Like Python's, it gives an int without ``digits``, else a number of ``value``'s type."""
    if isinstance(value, float) and not math.isfinite(value):
        return round(value, digits)  # raises as Python's does: inf cannot be an integer
    exact = decimal.Decimal(repr(value) if isinstance(value, float) else value)
    places = decimal.Decimal(1).scaleb(-(digits or 0))
    # Enough digits for the whole result: the integer part's, the decimals kept, the value's own.
    whole = max(exact.adjusted(), 0) + 1
    context = decimal.Context(prec=whole + abs(digits or 0) + len(exact.as_tuple().digits) + 2)
    rounded = exact.quantize(places, rounding=decimal.ROUND_HALF_UP, context=context)
    if digits is None or isinstance(value, int):
        return int(rounded)
    return float(rounded)


_PERCENT_SIGN = re.compile(
    r"%[ \t]*(?:[+-][ \t]|[*/)]|(?:of|x)(?![\w.])|\Z)"  # "15%", "15% * 200", "15% of 200", "15% + 5"
    r"|(?<=[\w.)])%[ \t]*[+-]"  # a % on its number, then a sign: "200*15%+5", "100-20%-5"
)
"""A ``%`` written as a percentage, which Python reads as the remainder of a division: at the end,
before ``)``, an operator, "of" or "x", or a sign ("200 * 15% + 5" is 200*15 % +5, which is 0). A
remainder by a negative number is written with the ``%`` apart from its left number ("10 % -3") or
the number in parentheses ("7%(-2)")."""


def percent_sign(text: str) -> CalculationError | None:
    """An error for a ``%`` written as a percentage, which the calculator would read as the remainder
    of a division; ``None`` when there is none."""
    if _PERCENT_SIGN.search(text) is None:
        return None
    return CalculationError(
        f"% is the remainder of a division here (7 % 3 is 1), not a percentage ({text!r}). "
        "Write a percentage as a fraction: 15 percent of 200 is 15/100*200; a remainder by a "
        "negative number as 7 % (-2)"
    )


_CURRENCY_SIGNS = {"$": "dollar", "€": "euro", "£": "pound", "¥": "yen", "₹": "rupee"}
_SIGN_AND_NUMBER = re.compile(r"([$€£¥₹])[ \t]?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?![\w.])")


def with_currency_words(text: str) -> str:
    """``$1,500 * 3`` -> ``1,500 dollar * 3``: a currency sign before a number as the unit after it,
    which ``without_unit`` drops when it is the only unit ("$5 + €3" mixes two)."""
    return _SIGN_AND_NUMBER.sub(lambda match: f"{match[2]} {_CURRENCY_SIGNS[match[1]]}", text)


_DECIMAL_COMMA = re.compile(r"(?<![\w.,])\d+,(?:\d{1,2}|\d{4,})(?![\d,])")


def decimal_comma_error(text: str) -> CalculationError | None:
    """For a list of values that is a number written with a decimal comma ("3,50 * 2"), the error
    saying so; ``None`` otherwise."""
    if (match := _DECIMAL_COMMA.search(text)) is None:
        return None
    return CalculationError(
        f"a comma may only separate a function's arguments, as in max(3, 5): {match[0]!r} in {text!r} "
        f"reads as two values. Write a decimal with a point ({match[0].replace(',', '.')}), and "
        "thousands as 1,500 or 1500"
    )


_WORD = re.compile(r"[A-Za-z_][A-Za-z_]+")
_KNOWN_NAMES = frozenset(name.lower() for name in (*FUNCTIONS, *CONSTANTS))
_ANY_WORD = re.compile(r"[A-Za-z_]+")
_NUMBER_AND_WORD = re.compile(
    r"(?<![A-Za-z_\d.])((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[ \t]*"
    r"((?:(?i:square|sq|cubic|cu)[ \t]+)?[A-Za-z]{2,})\b(?![ \t]*\()"
)


def _unit_words(text: str) -> frozenset[str]:
    """The words of ``text``, separated by spaces."""
    return frozenset(text.split())


# The units dropped after a number, in lower case and the singular ("inches" and "centuries" are
# found as "inch" and "century"): only words that are clearly a unit. Any other word stays and is
# refused, since a word dropped as a unit must never change the result ("5 squared" was 5,
# "3 thousand * 2 thousand" was 6, when every word of two letters or more counted as a unit).
_LENGTH_UNITS = _unit_words(
    "mm cm dm km in ft yd mi inch foot feet yard mile meter metre millimeter millimetre centimeter "
    "centimetre kilometer kilometre"
)
_UNITS = _LENGTH_UNITS | _unit_words(
    # mass
    "mg kg lb lbs oz gram gramme milligram kilogram kilo tonne ton pound ounce stone "
    # time
    "ms sec min hr hrs yr yrs wk millisecond microsecond nanosecond second minute hour day week "
    "fortnight month year decade century "
    # volume and area
    "ml cl dl cc qt tbsp tsp litre liter gallon gal pint quart cup barrel bbl acre hectare sqm sqft "
    # temperature, data, frequency, energy, power, speed
    "degree deg celsius fahrenheit kelvin bit byte kb mb gb tb pb kib mib gib tib kbps mbps gbps "
    "hz khz mhz ghz watt kw kwh wh mah volt amp joule calorie cal kcal hp rpm mph kph kmh knot "
    # money: currency words (those of the generated worlds too: crown, mark, florin, taler) and codes
    "dollar buck cent penny pence euro quid yen yuan renminbi rupee franc peso krona kronor krone "
    "kroner crown mark florin taler thaler guilder ruble rouble lira won rand dinar dirham shilling "
    "usd eur gbp jpy cny rmb inr chf cad aud nzd sek nok dkk mxn brl rub krw zar hkd sgd "
    # counts
    "people person employee worker staff member customer user student resident inhabitant visitor "
    "passenger item unit piece pcs box pack pair copy"
)
# Operations and scales in words, each with how to write it in symbols: they are never units.
_OPERATION_WORDS: dict[str, str] = {
    **dict.fromkeys(("squared", "square"), "5 squared is 5**2"),
    **dict.fromkeys(("cubed", "cube"), "5 cubed is 5**3"),
    **dict.fromkeys(("twice", "double", "doubled"), "twice 5 is 2*5"),
    **dict.fromkeys(("thrice", "triple", "tripled"), "three times 5 is 3*5"),
    **dict.fromkeys(("half", "halved", "halves"), "half of 5 is 5/2"),
    **dict.fromkeys(("quarter", "quarters"), "a quarter of 5 is 5/4"),
    "factorial": "5 factorial is 5*4*3*2*1",
    **dict.fromkeys(("inverse", "reciprocal"), "the inverse of 5 is 1/5"),
    **dict.fromkeys(("sqrt", "root"), "the square root of 16 is sqrt(16)"),
    **dict.fromkeys(("hundred", "hundreds"), "3 hundred is 3*100"),
    **dict.fromkeys(("thousand", "thousands", "grand"), "3 thousand is 3*1000"),
    **dict.fromkeys(("million", "millions", "mn", "mln"), "3 million is 3*1000000"),
    **dict.fromkeys(("billion", "billions", "bn"), "3 billion is 3*10**9"),
    **dict.fromkeys(("trillion", "trillions"), "3 trillion is 3*10**12"),
    **dict.fromkeys(("dozen", "dozens"), "3 dozen is 3*12"),
    "lakh": "3 lakh is 3*100000",
    "crore": "3 crore is 3*10000000",
    **dict.fromkeys(("percent", "percentage", "pct"), "10 percent of 200 is 10/100*200"),
    **dict.fromkeys(("times", "multiplied"), "3 times 4 is 3*4"),
    "plus": "3 plus 4 is 3+4",
    "minus": "3 minus 4 is 3-4",
    **dict.fromkeys(("divided", "over"), "3 divided by 4 is 3/4"),
    **dict.fromkeys(("mod", "modulo"), "7 modulo 3 is 7%3"),
    **dict.fromkeys(("power", "pow"), "2 to the power 10 is 2**10"),
}
_WORD_NOT_CALLED = re.compile(r"(?<![A-Za-z_])[A-Za-z_]+(?![A-Za-z_]|[ \t]*\()")


def without_unit(text: str) -> str | None:
    """``90 minutes - 38 minutes`` -> ``90 - 38``: the expression without its unit, when every word in
    it is one known unit written right after a number; ``None`` when a word stands anywhere else, or
    is not clearly a unit ("squared", "thousand", "percent", "robots"): a dropped word must never
    change the result.

    Small models write quantities with their units (Qwen2.5 1.5B: "(3 years - 2 years) * 12", "3.2
    kg * 3", "1270 dollars * 3"); with a single unit the arithmetic is not in doubt. Two different
    units are an error: converting them is the model's job, and guessing it here could be wrong. A
    function's name written as a unit ("3 min") counts as a unit when no "(" follows it.
    """
    stripped, units = _units_dropped(text)
    if not units or any(word.lower() not in _KNOWN_NAMES for word in _ANY_WORD.findall(stripped)):
        return None
    if len({_singular(unit, units) for unit in units}) > 1:
        shown = ", ".join(dict.fromkeys(units))
        raise CalculationError(
            f"the expression mixes units ({shown} in {text!r}). Convert every value to one unit "
            "first, then write the expression with the numbers alone"
        )
    return stripped


def _units_dropped(text: str) -> tuple[str, list[str]]:
    """``text`` without the known units written right after its numbers, and those units."""
    units: list[str] = []

    def drop(match: re.Match[str]) -> str:
        if not _is_unit(match[2]):
            return match[0]
        units.append(" ".join(match[2].split()))
        return match[1]

    return _NUMBER_AND_WORD.sub(drop, text), units


def _is_unit(written: str) -> bool:
    """Whether ``written`` ("kg", "Minutes", "square kilometres") is clearly a unit: in ``_UNITS``,
    singular or plural; after "square" or "cubic", a unit of length."""
    *prefix, word = written.lower().split()
    forms = {word, word.removesuffix("s"), word.removesuffix("es")}
    if word.endswith("ies"):
        forms.add(word[:-3] + "y")
    return not forms.isdisjoint(_LENGTH_UNITS if prefix else _UNITS)


def operation_words_error(text: str) -> CalculationError | None:
    """An error that names the operations or scales written in words ("5 squared", "3 thousand *
    2") with how to write them in symbols, or ``None`` when there are none. Words that are part of
    a unit ("300 square kilometres") and function calls ("sqrt(16)") are not operations in words."""
    stripped, _ = _units_dropped(text)
    words = dict.fromkeys(w for w in _WORD_NOT_CALLED.findall(stripped) if w.lower() in _OPERATION_WORDS)
    if not words:
        return None
    examples = dict.fromkeys(_OPERATION_WORDS[word.lower()] for word in words)
    return CalculationError(
        f"the calculator reads operations and scales as symbols, not words ({', '.join(map(repr, words))} "
        f"in {text!r}). Write them with symbols: {'; '.join(examples)}"
    )


_IRREGULAR_PLURALS = {
    "feet": "foot",
    "people": "person",
    "pence": "penny",
    "lbs": "lb",
    "hrs": "hr",
    "yrs": "yr",
}
_DATA_SIZES = frozenset({"kb", "mb", "gb", "tb", "pb"})
"""Data sizes, bytes as most write them ("GB", "gb", "kB"), bits with a capital and a small b ("Mb")."""


def _singular(unit: str, units: list[str]) -> str:
    """``unit`` in lower case, as its singular when that is also among ``units`` (years/year,
    inches/inch, centuries/century, feet/foot); a singular of at least three letters, so "ms" is not
    the plural of "m". "8 Mb + 1 MB" mixes megabits and megabytes; "10 gb + 5 GB" does not."""
    word, seen = unit.lower(), {u.lower() for u in units}
    if word in _DATA_SIZES:
        return f"{word} bits" if unit[0].isupper() and unit[-1] == "b" else word
    if _IRREGULAR_PLURALS.get(word) in seen:
        return _IRREGULAR_PLURALS[word]
    for suffix, ending in (("ies", "y"), ("es", ""), ("s", "")):
        stem = word.removesuffix(suffix)
        if stem != word and len(stem + ending) >= 3 and stem + ending in seen:
            return stem + ending
    return word


def words_error(text: str) -> CalculationError | None:
    """An error that says words stand where numbers belong ("Brisk Arm cost / Pellet cost",
    "90 minutes / 38 minutes", as small models write), or ``None`` when there are no such words."""
    words = list(dict.fromkeys(w for w in _WORD.findall(text) if w.lower() not in _KNOWN_NAMES))[:3]
    if not words:
        return None
    return CalculationError(
        f"the calculator takes numbers, not words or units ({', '.join(map(repr, words))} in {text!r}). "
        "Find each value first, with another tool if needed, then write the expression with the numbers alone"
    )


_OPERATOR_SIGNS = str.maketrans({"×": "*", "÷": "/", "−": "-", "·": "*", "⋅": "*", "²": "**2", "³": "**3"})
_TRAILING_EQUALS = re.compile(r"[ \t]*=[ \t]*\??[ \t]*\Z")
_TIMES_X = re.compile(r"(?P<hex>(?<![\w.])0[xX][0-9a-fA-F_]+)|(?<=[\d)])[ \t]*[xX][ \t]*(?=[\d(.])")


def with_operator_signs(text: str) -> str:
    """``3 × 4 − 1 =`` -> ``3 * 4 - 1``: the signs of arithmetic as people and models print them
    (×, ÷, the minus sign U+2212, a middle dot, ², ³, an x between two numbers) as Python's, and a
    closing ``=`` (or ``= ?``) dropped. Each was an "invalid character" or "invalid syntax" error
    that cost the model a step, though its meaning is not in doubt. ``0x1F`` stays a hex number."""
    text = _TRAILING_EQUALS.sub("", text.translate(_OPERATOR_SIGNS))
    return _TIMES_X.sub(lambda match: match["hex"] or "*", text)


def drop_surplus_closing_parentheses(text: str) -> str:
    """``(3 * 9400) * (1 - 0.08))`` -> ``(3 * 9400) * (1 - 0.08)``: only extra ``)`` at the very end.

    Small models often close one parenthesis too many (Qwen2.5 1.5B did in a quarter of the
    bench/eval questions); the meaning is not in doubt, so the slip should not cost a step.
    """
    surplus = text.count(")") - text.count("(")
    if surplus > 0 and text.endswith(")" * surplus):
        return text[:-surplus].rstrip()
    return text


_COMMA_TOKENS = re.compile(
    r"(?P<call>[A-Za-z_]\w*\s*\()|(?P<open>\()|(?P<close>\))"
    r"|(?P<grouped>(?<![\w.,])\d{1,3}(?:,\d{3})+(?!\w|,\d))"
)


def without_thousands_separators(text: str) -> str:
    """``1,595 + 663`` -> ``1595 + 663``: a number written with thousands separators (three digits
    after each comma), as tool results and models write them, except inside a function call's
    parentheses whose arguments are separated by bare commas (``max(1,595)`` stays two numbers).
    In a call whose arguments are separated by a comma and a space, a comma without one is a
    thousands separator: ``sum(1,595, 663)`` is 2258 (it was 1259, silently).

    Outside a call such a comma could only make a tuple, which the calculator refuses anyway, so no
    valid expression changes meaning.
    """
    calls: list[bool] = []  # for each open parenthesis: are its bare commas argument separators?
    pieces: list[str] = []
    position = 0
    for match in _COMMA_TOKENS.finditer(text):
        if match["call"] or match["open"]:
            calls.append(match["call"] is not None and not _spaced_arguments(text, match.end()))
        elif match["close"]:
            if calls:
                calls.pop()
        elif not (calls and calls[-1]):
            pieces += [text[position : match.start()], match[0].replace(",", "")]
            position = match.end()
    return "".join(pieces) + text[position:] if pieces else text


def _spaced_arguments(text: str, start: int) -> bool:
    """Whether the call whose arguments start at ``start`` separates them with a comma and a space."""
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                return False
            depth -= 1
        elif char == "," and depth == 0 and text[index + 1 : index + 2].isspace():
            return True
    return False
