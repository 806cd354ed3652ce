"""The answer check reads long answers in linear time, reads the same as before on ordinary ones,
and reads numbers written against a compact unit ("2h 30m").

No wall-clock threshold, as in test_parser_linear.py: the CPU time of this thread at 20,000
characters is compared with the time at 2,000. Linear growth gives about 10x, quadratic 100x; the
old patterns took 100x and more on these inputs (a 20,000-digit answer: 10 s).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from explicit_react import policy
from explicit_react.answer_check import find_problem, leftover_arithmetic, unsourced_answer_numbers
from explicit_react.policy import numbers_in, sourced_numbers

SMALL, LARGE = 2_000, 20_000
MAX_GROWTH = 35.0
TRIES = 5

FAMILIES: dict[str, tuple[Callable[[int], str], Callable[[str], object]]] = {
    "a long run of digits, sourced": (lambda n: "9" * n, sourced_numbers),
    "pi to many digits, checked": (
        lambda n: "3." + "1415926535" * (n // 10),
        lambda a: find_problem("How many?", a, "12", calculator="calculator"),
    ),
    "digits and commas, arithmetic": (lambda n: "1," * (n // 2), leftover_arithmetic),
    "a number and many spaces, arithmetic": (lambda n: "1" + " " * n + "!", leftover_arithmetic),
    "a list of numbers, checked": (
        lambda n: ",".join(str(i % 1000) for i in range(n // 4)),
        lambda a: find_problem("How many items?", a, "12 items", calculator="calculator"),
    ),
}


def _cpu_seconds(check: Callable[[str], object], text: str) -> float:
    start = time.thread_time()
    check(text)
    return time.thread_time() - start


@pytest.mark.parametrize("family", FAMILIES)
def test_checking_time_grows_linearly(family: str) -> None:
    build, check = FAMILIES[family]
    small_text, large_text = build(SMALL), build(LARGE)
    check(small_text)  # warm the pattern caches and the calculator's import
    small = max(min(_cpu_seconds(check, small_text) for _ in range(TRIES)), 20e-6)
    ratios = []
    for _ in range(TRIES):
        ratios.append(_cpu_seconds(check, large_text) / small)
        if ratios[-1] <= MAX_GROWTH:
            return
    pytest.fail(f"{family}: 10x the text took {min(ratios):.0f}x the time (linear is about 10x)")


@pytest.mark.parametrize(
    ("answer", "expression"),
    [
        ("10985 / 10855 * 100%", "10985 / 10855 * 100%"),
        ("The rate is 10985 / 10855 * 100%.", "10985 / 10855 * 100%"),  # a full stop ends it as the end does
        ("4550 dollars (9400 - 4850)", None),
        ("2^10 = 1024", None),
        ("The total is 1,234 + 5,678 in all.", "1,234 + 5,678"),
        ("$1,200 + $300 in all", "$1,200 + $300"),
        ("12 x 7", "12 x 7"),
        ("From 1990-2000 it was 2x faster.", None),
        ("On 3/4/2021.", None),
        ("values 1,2,3 + 4", "1,2,3 + 4"),
        ("3 + 4,5=9", "3 + 4"),
        ("3 +  4   and more", "3 +  4"),
        ("Growth: 2 * 2%, then 5 %+3", "2 * 2%"),
    ],
)
def test_leftover_arithmetic_reads_ordinary_answers_as_before(answer: str, expression: str | None) -> None:
    assert leftover_arithmetic(answer) == expression


@pytest.mark.parametrize(
    ("text", "scaled"),
    [
        ("About 2.1 million people.", [("2.1", "million")]),
        ("4.2 billion and 3 Thousand", [("4.2", "billion"), ("3", "Thousand")]),
        ("1.5million", [("1.5", "million")]),
        ("1.2.3 million", [("2.3", "million")]),
        ("12 millions", []),
        ("x12 million", [("12", "million")]),
    ],
)
def test_scaled_numbers_read_as_before(text: str, scaled: list[tuple[str, str]]) -> None:
    assert policy._SCALED.findall(text) == scaled


# Numbers written against a compact unit ------------------------------------------------------------
def test_a_duration_in_compact_units_is_a_number() -> None:
    question, answer = "How long is the flight in hours?", "The flight takes 2h 30m."
    assert numbers_in(answer) == [2.0, 30.0]
    assert find_problem(question, answer, "2 h 30 min", calculator="calculator") is None


@pytest.mark.parametrize(
    "answer", ["It weighs 5kg.", "It is 15km away.", "The file is 3.2MB.", "About 45min"]
)
def test_numbers_against_compact_units_are_read(answer: str) -> None:
    assert len(numbers_in(answer)) == 1
    problem = find_problem("How much is it?", answer, "")
    assert problem is not None and problem.check == "unsourced"  # read, and no source states it


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("In which year did it start?", "In the 1990s."),  # a decade is no year
        ("How many versions are there?", "The 3D model and the 5G model."),
        ("How many items are there?", "It came 2nd."),
        ("How many items are there?", "Digest 9f86d081884c7d659a2feaa0c55ad015."),
        ("How many items are there?", "About 5k of them."),  # 5k is 5000, not 5
    ],
)
def test_words_that_only_start_with_digits_are_still_no_numbers(question: str, answer: str) -> None:
    problem = find_problem(question, answer, "", calculator="calculator")
    assert problem is not None and problem.check in ("number", "year")


def test_a_unit_glued_to_more_letters_is_no_number() -> None:
    assert numbers_in("3kgs 2hx 4mbit") == []
    assert unsourced_answer_numbers("2h 30m", "2 hours and 30 minutes") == []
