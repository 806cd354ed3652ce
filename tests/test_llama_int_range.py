"""An integer argument's bounds are held by the local grammar, not only checked after the call.

llama-cpp-python's converter drops ``minimum``/``maximum``: a local model could send a count of 0
where the schema says at least 1, and learn of it only as an invalid call. ``llama_int_range`` writes
the integers between the bounds as digit ranges; here its language is compared with the bounds
number by number, and each grammar is given to llama.cpp's own sampler.
"""

from __future__ import annotations

import random
import re

import pytest

pytest.importorskip("llama_cpp")

from explicit_react.llama_int_range import MAX_DIGITS, integer_bounds, range_grammar, range_regex
from tests.test_llama_grammars import llama_accepts, one_argument, tool_grammar

BOUNDS = [None, -1234, -100, -10, -1, 0, 1, 9, 10, 99, 100, 123, 999, 1000, 4567, 98765]
PAIRS = [
    (low, high)
    for low in BOUNDS
    for high in BOUNDS
    if (low, high) != (None, None) and (low is None or high is None or low <= high)
]


def fits(n: int, low: int | None, high: int | None) -> bool:
    return (low is None or n >= low) and (high is None or n <= high) and len(str(abs(n))) <= MAX_DIGITS


@pytest.mark.parametrize(("low", "high"), PAIRS)
def test_the_digits_written_are_exactly_the_integers_in_bounds(low: int | None, high: int | None) -> None:
    rng = random.Random(f"{low},{high}")
    probes = [*range(-1500, 1500), 98764, 98765, 98766, 10**15, 10**16 - 1, 10**16, -(10**16)]
    probes += [rng.randint(-(10**17), 10**17) for _ in range(500)]
    language = re.compile(range_regex(low, high))
    wrong = [n for n in probes if (language.fullmatch(str(n)) is not None) != fits(n, low, high)]
    assert wrong == []
    assert not any(language.fullmatch(text) for text in ("01", "-0", "00", "+1", "1.0", "", "1e3"))


def test_random_wide_bounds() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        low = rng.randint(-(10**12), 10**12)
        high = rng.randint(low, 10**12)
        language = re.compile(range_regex(low, high))
        probes = [low - 1, low, low + 1, high - 1, high, high + 1, rng.randint(low, high)]
        assert [language.fullmatch(str(n)) is not None for n in probes] == [
            fits(n, low, high) for n in probes
        ]


@pytest.mark.parametrize(
    ("schema", "bounds"),
    [
        ({"minimum": 1, "maximum": 10}, (1, 10)),
        ({"exclusiveMinimum": 0}, (1, None)),
        ({"exclusiveMaximum": 10, "minimum": 0.5}, (1, 9)),
        ({"minimum": -2.5, "exclusiveMaximum": 2.5}, (-2, 2)),
        ({"minimum": 3, "exclusiveMinimum": 5}, (6, None)),  # the tighter of the two
        ({}, None),
        ({"minimum": True}, None),
        ({"minimum": "3"}, None),
        ({"minimum": float("inf")}, None),
        ({"minimum": 10**20}, None),  # past the digits a JSON integer may have here
        ({"minimum": 5, "maximum": 4}, None),  # nothing fits: the check when the call is read says so
    ],
)
def test_bounds_read_from_a_schema(
    schema: dict[str, object], bounds: tuple[int | None, int | None] | None
) -> None:
    assert integer_bounds({"type": "integer", **schema}) == bounds


@pytest.mark.parametrize(
    ("schema", "rule"),
    [
        ({"type": "integer", "minimum": 1, "maximum": 10}, '(([1-9]) | ("1" "0")) space'),
        ({"type": "integer", "minimum": -50, "maximum": -3}, '"-" ([3-9])'),
        ({"type": "integer", "exclusiveMinimum": 0}, "[1-9] [0-9] [0-9]{0,14}"),
        ({"anyOf": [{"type": "integer", "maximum": 7}, {"type": "null"}]}, "([0-7])"),
        ({"type": "integer", "minimum": 1, "maximum": 10, "enum": [1, 2]}, '"1" | "2"'),
        ({"type": "integer", "minimum": 5, "maximum": 4}, "integral-part"),  # left to the check
        (
            {"type": "number", "minimum": 1, "maximum": 10},
            "decimal-part",
        ),  # a number keeps the converter's rule
    ],
)
def test_the_tool_grammar_holds_the_bounds_and_llama_cpp_accepts_it(
    schema: dict[str, object], rule: str
) -> None:
    grammar = tool_grammar(one_argument(schema))
    assert rule in grammar and llama_accepts(grammar)


def test_from_123_to_456_in_five_runs_of_digit_ranges() -> None:
    assert range_grammar(123, 456) == (
        '(("1" "2" [3-9]) | ("1" [3-9] [0-9]) | ([2-3] [0-9]{2}) | ("4" [0-4] [0-9]) | ("4" "5" [0-6]))'
    )
