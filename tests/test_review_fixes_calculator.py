"""Defects a review of the calculator found, each with the expression that showed it.

1. ``%`` written as a percentage was read as the remainder: "200 * 15% + 5" is 200*15 % +5, which
   gave 0 without a word; "200 * 15%" got a bare "invalid syntax".
2. "12in * 3" was parsed inside ``warnings.catch_warnings()``, which swaps the process's warning
   filters: calculators in threads at once left SyntaxWarnings silenced for the whole program.
3. Irregular and "-ies" plurals counted as another unit: "1 foot + 2 feet", "2 centuries + 1 century".
4. Data sizes were compared without case: "8 Mb + 1 MB" (bits and bytes) gave 9.
5. "0 / -5" gave -0, and ``round`` rounded halves to even on the binary float: round(2.5) was 2,
   round(0.125, 2) 0.12.
6. A currency sign stopped the expression ("$1,500 * 3": invalid syntax, quoting "$1500", which the
   model never wrote); "3,50 * 2" got no word about the decimal comma.
"""

from __future__ import annotations

import threading
import warnings

import pytest

from explicit_react.tools.calculator import calculator


@pytest.mark.parametrize(
    "expression", ["200 * 15% + 5", "1000 * 5% + 1000", "100 - 20% - 5", "200 * 15%", "(15%)"]
)
def test_a_percent_sign_as_a_percentage_is_refused_with_how_to_write_it(expression: str) -> None:
    observation = calculator.invoke(expression)
    assert (
        observation.startswith("Error: % is the remainder of a division here")
        and repr(expression) in observation
    )
    assert "15/100*200" in observation


@pytest.mark.parametrize(
    ("expression", "result"),
    [("7 % 3", "1"), ("7 % (-3)", "-2"), ("(7 % 3) + 1", "2"), ("10 % -3", "-2"), ("7%(-2)", "-1")],
)
def test_the_remainder_still_works(expression: str, result: str) -> None:
    assert calculator.invoke(expression) == result


def test_the_warning_filters_are_left_alone_by_calculators_in_threads() -> None:
    before = list(warnings.filters)
    threads = [
        threading.Thread(target=lambda: [calculator.invoke("12in * 3 + 1") for _ in range(200)])
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert warnings.filters == before
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert calculator.invoke("12in * 3") == "36"
    assert caught == []  # and Python's warning about "12in" is not printed either


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("1 foot + 2 feet", "3"),
        ("2 centuries + 1 century", "3"),
        ("1 person + 2 people", "3"),
        ("1 penny + 2 pennies", "3"),
        ("3 years - 2 years", "1"),
        ("1 GB + 2 GB", "3"),
        ("10 gb + 5 GB", "15"),  # bytes, however written
        ("1 kB + 1 KB", "2"),
    ],
)
def test_a_unit_and_its_plural_are_one_unit(expression: str, result: str) -> None:
    assert calculator.invoke(expression) == result


@pytest.mark.parametrize("expression", ["8 Mb + 1 MB", "1 Gb * 8 + 1 GB"])
def test_bits_and_bytes_are_two_units(expression: str) -> None:
    assert calculator.invoke(expression).startswith("Error: the expression mixes units")


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("0 / -5", "0"),
        ("-0.0 * 3", "0"),
        ("round(2.5)", "3"),
        ("round(-2.5)", "-3"),
        ("round(0.125, 2)", "0.13"),
        ("round(2.675, 2)", "2.68"),  # 2.67499999... as a binary float
        ("round(1250, -2)", "1300"),
        ("round(3.14159, 3)", "3.142"),
        ("round(7)", "7"),
        ("round(1, -1300)", "0"),
        ("round(1e300, 2)", "1e+300"),
    ],
)
def test_rounding_as_a_calculator_rounds(expression: str, result: str) -> None:
    assert calculator.invoke(expression) == result


def test_round_of_a_huge_float_is_the_integer() -> None:
    assert calculator.invoke("round(1e308)") == str(10**308)


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("$1,500 * 3", "4500"),
        ("€20 * 3", "60"),
        ("-$5 * 2", "-10"),
        ("$5 + 3 dollars", "8"),
        ("£2.50 * 2", "5"),
        ("max($3, $5)", "5"),  # the comma between arguments is not the number's
        ("sum($140, $65, $38)", "243"),
        ("$1,200.50 + $300", "1500.5"),
    ],
)
def test_a_currency_sign_is_the_unit_of_its_number(expression: str, result: str) -> None:
    assert calculator.invoke(expression) == result


def test_two_currencies_are_two_units_and_errors_quote_what_was_written() -> None:
    assert calculator.invoke("$5 + €3") == (
        "Error: the expression mixes units (dollar, euro in '$5 + €3'). Convert every value to one unit "
        "first, then write the expression with the numbers alone"
    )
    assert calculator.invoke("$5k * 2") == "Error: invalid expression (invalid decimal literal): '$5k * 2'"


def test_a_decimal_comma_is_named() -> None:
    observation = calculator.invoke("3,50 * 2")
    assert observation.startswith("Error: a comma may only separate a function's arguments")
    assert "'3,50' in '3,50 * 2' reads as two values" in observation and "(3.50)" in observation
    assert calculator.invoke("max(3,50)") == "50"  # a call's arguments are still arguments
    assert calculator.invoke("1, 2").startswith("Error: a comma may only separate a function's arguments")
