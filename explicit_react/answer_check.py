"""The answer check: a Final Answer read against the question and what the run was told, before it
is returned (``ExplicitReActAgent(check_answer=True)``).

Four deterministic checks, no model call; the first that fails sends the answer back to the model
with feedback (``prompts/answer_check.txt``) instead of ending the run:

1. ``number`` / ``year``: the question's wording asks for a quantity ("how many", "how old", "what is
   the price of ...") or a year ("in which year", "when was ... born"; for "when", a decade, a
   century or "years ago" will do), and the answer holds none;
2. ``unit``: the question ends "in <unit>?" ("in Drouxcai florins?", ", in kg?"; a unit it knows,
   or a plural a capitalised word qualifies) and the answer does not name that unit (singular or
   plural, or a usual symbol: kg, %, $);
3. ``arithmetic``: the answer holds a calculation left undone ("10985 / 10855 * 100%"), and the
   run has a calculator to do it;
4. ``unsourced``: the answer holds a number that neither the question, the context nor a tool result
   states (rounded forms of them count), as a guessed value would.

An answer that says the fact could not be found passes: the question may have no answer. Each check
sends back at most one answer per run, and an answer sent again unchanged is accepted, so the check
can delay a run by a few steps at most and never loop (the loop also accepts, unchecked, an answer
given on the last turn its budget allows). Small models are what it is for: Qwen2.5 1.5B
answered the intermediate company for "how many employees ...", dollars for florins, an unevaluated
ratio, and a made-up age (bench/results/generated_local_qwen_*.json).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

from explicit_react.policy import COMMON_NUMBERS, NUMBER_END, SCALES, numbers_in, sourced_numbers
from explicit_react.prompt import load_template, render

Expected = Literal["number", "year"]

# The wording of a question that asks for a year, then of one that asks for a quantity.
_ASKS_YEAR = re.compile(r"\b(?:what|which)\s+year\b", re.IGNORECASE)
_ASKS_WHEN = re.compile(r"^\s*when\s+(?:was|were|did)\b", re.IGNORECASE)
# How an answer to "when was/did ..." can place a past event without a year of digits: a decade
# (1880s), a century, "66 million years ago". ("When does the shop open?" asks for a time, not a
# year, and is not checked; "In which year ...?" asks for the year itself.)
_PLACES_IN_TIME = re.compile(
    r"\b\d{3,4}'?s\b|\b(?:century|centuries|millennium|millennia|decade|ago|BCE?|AD|CE)\b", re.IGNORECASE
)
_ASKS_NUMBER = re.compile(
    r"\bhow\s+(?:many|much|old|long|far|tall|high|heavy|big|large|wide|deep|often)\b"
    r"|\b(?:what|which)\s+(?:percentage|percent|fraction|share|proportion)\b"
    r"|\bby\s+(?:what|how\s+much)\b"
    r"|^\s*what\s+(?:is|was|are|were|will\s+be)\s+the\s+(?:\w+\s+)?(?:price|cost|population|area|weight"
    r"|mass|number|height|length|width|depth|distance|age|total|sum|difference|ratio|percentage|amount"
    r"|speed|temperature|size|count|revenue|salary|duration)\s+(?:of|in)\b"
    r"|^\s*what\s+(?:do|does|did|would|will)\b.*\bcost\b",
    re.IGNORECASE,
)

# A trailing "in <unit>?": one to three words, the last a lowercase word or "%" (a capitalised last
# word is a place: "How many people live in Wusstelholm?"). It is a unit when its last word names a
# unit ``_UNIT_NAMES`` knows, or when a capitalised word qualifies a plural ("Drouxcai florins",
# "Swiss francs"): "in healthcare?" and "in New York now?" end with a place or a field, not a unit.
_ASKS_UNIT = re.compile(r"(?:,\s*|\s)in\s+((?:[A-Za-z][\w-]*\s+){0,2}(?:[a-z][\w-]*|%))\s*[?.!]*\s*$")
_NOT_UNITS = frozenset(
    [
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "its",
        "his",
        "her",
        "their",
        "our",
        "your",
        "my",
        "which",
        "what",
        "total",
        "all",
        "general",
        "order",
        "each",
        "every",
        "it",
        "them",
        "so",
    ]
)
_UNIT_NAMES = (  # spellings of the same unit; plurals are added by _forms
    ("percent", "percentage", "per cent", "pct", "%"),
    ("kilogram", "kilo", "kg"),
    ("gram", "g"),
    ("tonne", "ton", "t"),
    ("pound", "lb", "lbs", "£", "gbp"),
    ("kilometre", "kilometer", "km", "km²", "km2"),
    ("metre", "meter", "m"),
    ("centimetre", "centimeter", "cm"),
    ("millimetre", "millimeter", "mm"),
    ("mile", "mi"),
    ("foot", "feet", "ft"),
    ("litre", "liter"),
    ("dollar", "usd", "$"),
    ("euro", "eur", "€"),
    ("cent", "¢"),
    ("hour", "hr", "h"),
    ("minute", "min"),
    ("second", "sec"),
    ("day",),
    ("week", "wk"),
    ("month",),
    ("year", "yr"),
    ("inch",),  # not "in": every answer holds the word
    ("yard", "yd"),
    ("acre",),
    ("hectare", "ha"),
    ("gallon", "gal"),
    ("ounce", "oz"),
    ("calorie", "kcal", "cal"),
    ("watt", "w"),
    ("kilowatt", "kw"),
    ("byte", "b"),
    ("kilobyte", "kb"),
    ("megabyte", "mb"),
    ("gigabyte", "gb"),
    ("degree", "°"),
    ("celsius", "°c"),
    ("fahrenheit", "°f"),
    ("knot", "kn"),
    ("yen", "¥"),
    ("yuan", "cny", "rmb"),
    ("rupee", "inr", "₹"),
    ("franc", "chf"),
    ("peso",),
)
_KNOWN_UNITS = frozenset(name for group in _UNIT_NAMES for name in group)
_NAMED_PLURAL = re.compile(r"[A-Z][\w-]*\s+(?:[A-Za-z][\w-]*\s+)?[a-z][\w-]*s")

# How an answer says that the fact is not there ("The files do not say.", "I could not find it").
_NOT_FOUND = re.compile(
    r"\bnot\s+(?:\w+ly\s+)?(?:in|found|mentioned|stated|given|available|provided|listed|specified|known|recorded)\b"
    r"|\bno\s+(?:information|data|mention|record|details?)\b"
    r"|\b(?:does|do|did)\s*(?:not|n't)\s+(?:say|mention|state|contain|include|give|list|specify|exist)\b"
    r"|\b(?:cannot|can't|can\s+not|could\s+not|couldn't|unable\s+to)\s+(?:be\s+)?(?:find|found|determine"
    r"|determined|answer|tell|locate)\b"
    r"|\bunknown\b|\b(?:not\s+enough|insufficient)\s+information\b",
    re.IGNORECASE,
)

# Two or more numbers joined by + - * / × ÷ x ^ (a minus and an "x" need spaces around them:
# "1990-2000" is a range, "2x" a factor), not followed by "=" (then the result is there too).
# Linear in the answer's length: a number starts only where a run of digits and commas starts (each
# digit after a comma was a start of its own: 6 s on "1,1,1,..."; so "x1,2 + 3" no longer gives
# "2 + 3"), and white space is read once, by the number's "%" or by the operator (two \s* in a row
# split a run of spaces every way: 3 s on 20,000 spaces).
_NUM = r"\$?(?<!\d,)\d[\d,]*(?:\.\d+)?(?:\s*+%)?"
_OPERATOR = r"(?:\s*+[+*×÷/^]\s*+|\s++[-x]\s++)"
_EXPRESSION = re.compile(rf"(?<![\w.]){_NUM}(?:{_OPERATOR}{_NUM})+(?!\s*=)(?!\w|\.\d)")
_DATE = re.compile(r"^\d{1,4}/\d{1,2}(?:/\d{1,4})?$")

_WRITTEN = re.compile(
    rf"(?<![\w.])(\d+(?:,\d{{3}}(?!\d))*(?:\.(\d+))?){NUMBER_END}(\s*(?:{'|'.join(SCALES)})\b)?"
)
_UNIT_FACTORS = (1000.0, 100.0, 60.0, 24.0, 3600.0, 12.0, 7.0, 52.0, 365.0)
"""One multiplication or division by these converts a unit (kilo, cents, minutes, days, dozens, weeks)."""


def expected_answer(question: str) -> Expected | None:
    """What the question's wording asks for: a ``"year"``, a ``"number"``, or ``None`` when unsure."""
    if _ASKS_YEAR.search(question) or _ASKS_WHEN.search(question):
        return "year"
    if _ASKS_NUMBER.search(question):
        return "number"
    return None


def asked_unit(question: str) -> str | None:
    """The unit a quantity question asks for by a trailing "in <unit>?" ("Drouxcai florins"), or ``None``."""
    match = _ASKS_UNIT.search(question.strip())
    if match is None or expected_answer(question) != "number":
        return None
    unit = match.group(1)
    if unit.split()[0].lower() in _NOT_UNITS:
        return None
    last = unit.split()[-1].lower()
    known = _KNOWN_UNITS & {last, last[:-1], last[:-2]} or unit == "%"
    return unit if known or _NAMED_PLURAL.fullmatch(unit) else None


def says_not_found(answer: str) -> bool:
    """Whether the answer says the fact could not be found (such an answer is never sent back)."""
    return bool(_NOT_FOUND.search(answer.replace("\u2019", "'")))


@cache
def _forms(word: str) -> frozenset[str]:
    """The ways an answer may name the unit ``word``: singular, plural, and the usual symbols."""
    word = word.lower()
    singular = {word, word[:-1] if word.endswith("s") else word, word[:-2] if word.endswith("es") else word}
    names = {word} | singular
    for group in _UNIT_NAMES:
        if singular & set(group):
            names |= set(group)
    names = {name for name in names if name}  # "s" alone, or "es", is no unit's name
    return frozenset(names | {n + "s" for n in names if n[-1].isalpha() and len(n) > 1})


def mentions_unit(answer: str, unit: str) -> bool:
    """Whether ``answer`` names ``unit`` (its last word, singular or plural, or a symbol for it)."""
    text = answer.lower()
    for form in _forms(unit.split()[-1]):
        if form[0].isalpha():
            if re.search(rf"(?<![a-z]){re.escape(form)}(?![a-z])", text):
                return True
        elif form in text:
            return True
    return False


def leftover_arithmetic(answer: str) -> str | None:
    """A calculation written in the answer and not done ("10,985 / 10855 * 100%"), or ``None``. One
    whose result the answer also gives ("4550 dollars (9400 - 4850)") is done."""
    for match in _EXPRESSION.finditer(answer):
        expression = match[0].strip()
        if _DATE.match(expression):
            continue
        value = _value(expression)
        if value is not None and any(
            math.isclose(round(result, decimals), number, rel_tol=1e-9)
            for _, number, decimals in _written(answer)
            for result in (value, value * 100)
        ):
            continue
        return expression
    return None


def _value(expression: str) -> float | None:
    """What the calculator makes of ``expression`` as written in prose, or ``None`` when it cannot."""
    # Imported here: importing the agent does not load the tools package otherwise.
    from explicit_react.tools.calculator import CalculationError, evaluate

    text = re.sub(r"(?<=\d),(?=\d{3})", "", expression).replace("$", "").replace("%", "")
    text = text.replace("×", "*").replace("÷", "/").replace("^", "**").replace(" x ", " * ")
    try:
        return float(evaluate(text))
    except (CalculationError, TypeError, ValueError):
        return None


def _written(text: str) -> list[tuple[str, float, int]]:
    """The numbers written in ``text``: as written, the value ("4.2 million" is 4.2e6), the decimals."""
    return [
        (
            m[0].strip(),
            float(m[1].replace(",", "")) * SCALES.get((m[3] or "").strip().lower(), 1.0),
            len(m[2] or ""),
        )
        for m in _WRITTEN.finditer(text)
    ]


def unsourced_answer_numbers(answer: str, sources: str) -> list[str]:
    """The numbers in ``answer`` that ``sources`` does not state, each as written.

    A number counts as stated when a stated one rounds to it (``29.54`` from ``29.540094``), also as
    a percentage (``29.54%`` from ``0.2954``), or when one unit conversion of a stated one gives it
    exactly, or to the decimals written when there are two or more (``7000`` grams from ``7`` kg,
    ``1.5`` hours from ``90`` minutes): a small model checks nothing there, and a strong one does
    that in its head. The numbers of ``policy.COMMON_NUMBERS`` need no source."""
    wanted = [
        (written, value, decimals)
        for written, value, decimals in _written(answer)
        if value not in COMMON_NUMBERS
    ]
    if not wanted:
        return []
    known = sorted(sourced_numbers(sources))

    def stated(value: float, decimals: int) -> bool:
        # Each form is a range of stated values to look up (a bisection of ``known``, sorted): the
        # value itself, what rounds to it, as a percentage, and through one unit factor.
        half = 0.5 * 10.0**-decimals
        ranges = [_close(value), (value - half, value + half), ((value - half) / 100, (value + half) / 100)]
        for factor in _UNIT_FACTORS:
            ranges += [_close(value / factor), _close(value * factor)]
            if decimals >= 2:
                ranges += [((value - half) / factor, (value + half) / factor)]
                ranges += [((value - half) * factor, (value + half) * factor)]
        return any(_holds(known, low, high) for low, high in ranges)

    return list(dict.fromkeys(written for written, value, decimals in wanted if not stated(value, decimals)))


def _close(value: float) -> tuple[float, float]:
    """The values ``math.isclose(value, x, rel_tol=1e-9)`` holds for (near enough)."""
    margin = abs(value) * 1e-9
    return value - margin, value + margin


def _holds(ordered: list[float], low: float, high: float) -> bool:
    """Whether ``ordered`` (sorted) holds a value from ``low`` to ``high``."""
    index = bisect_left(ordered, min(low, high))
    return index < len(ordered) and ordered[index] <= max(low, high)


@dataclass(frozen=True)
class Problem:
    """A check that failed: its name and the feedback for the model."""

    check: str
    feedback: str


@cache
def _feedback() -> dict[str, str]:
    lines = load_template("answer_check").splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip())


def _problem(check: str, **values: str) -> Problem:
    text = _feedback()
    return Problem(check, f"{render(text[check], **values)} {text['again']}")


def find_problem(
    question: str, answer: str, sources: str, *, calculator: str | None = None, skip: Collection[str] = ()
) -> Problem | None:
    """The first check (of those not in ``skip``) that ``answer`` fails, or ``None``.

    ``sources``: the question, the context and the successful tool results, as one text.
    ``calculator``: the name of the run's calculator tool; without one, check 3 is skipped."""
    if says_not_found(answer):
        return None
    shown = answer if len(answer) <= 200 else answer[:200] + "..."
    expected = expected_answer(question)
    if expected == "number" and "number" not in skip and not sourced_numbers(answer):
        return _problem("number", answer=shown)
    if (
        expected == "year"
        and "year" not in skip
        and not any(100 <= n <= 9999 for n in numbers_in(answer))
        and not (_ASKS_WHEN.search(question) and _PLACES_IN_TIME.search(answer))
    ):
        return _problem("year", answer=shown)
    unit = asked_unit(question)
    if unit is not None and "unit" not in skip and not mentions_unit(answer, unit):
        return _problem("unit", answer=shown, unit=unit)
    if calculator is not None and "arithmetic" not in skip and (expression := leftover_arithmetic(answer)):
        return _problem("arithmetic", expression=expression, calculator=calculator)
    if "unsourced" not in skip and (missing := unsourced_answer_numbers(answer, sources)):
        return _problem("unsourced", numbers=" and ".join(missing), verb="is" if len(missing) == 1 else "are")
    return None


@dataclass
class AnswerCheck:
    """One run's answer check: which checks have sent an answer back, and the answers sent back."""

    calculator: str | None = None
    """The name of the run's calculator tool (``None``: no arithmetic check)."""
    fired: set[str] = field(default_factory=set)
    sent_back: set[str] = field(default_factory=set)

    def review(self, question: str, answer: str, sources: str) -> str | None:
        """Feedback that sends ``answer`` back to the model, or ``None`` to accept it. A check sends
        back at most one answer per run; an answer sent back once is accepted when it comes again."""
        if answer.strip() in self.sent_back:
            return None
        problem = find_problem(question, answer, sources, calculator=self.calculator, skip=self.fired)
        if problem is None:
            return None
        self.fired.add(problem.check)
        self.sent_back.add(answer.strip())
        return problem.feedback
