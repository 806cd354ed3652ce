"""Defects a review of the answer check and ``think`` found, each with the input that showed it.

1. Ordinary answers were sent back: "When does the shop open?" counted as asking for a year, a
   decade or "years ago" was no answer to "when was ...", and any trailing "in <lowercase words>"
   ("in healthcare?", "in New York now?") was a unit the answer had to name.
2. A calculation ending a sentence ("... is 9400 - 4850.") was not seen as left undone.
3. A question ending "in s?" raised ``IndexError`` out of ``run()``.
4. Whether an answer's numbers are stated was read by comparing each with every stated number and
   each of its unit conversions: 15 s for a 0.59 MB context of numbers, the event loop blocked.
   Now each is a few bisections of the sorted numbers; the answers are the same (checked here
   against the old comparison).
5. ``think()`` raised ``AttributeError`` for a context of ``None`` or a list, which ``run()`` takes.
"""

from __future__ import annotations

import math
import random

import pytest

from explicit_react import ConfigurationError, ExplicitReActAgent, StopReason
from explicit_react.answer_check import (
    _UNIT_FACTORS,
    asked_unit,
    find_problem,
    leftover_arithmetic,
    unsourced_answer_numbers,
)
from explicit_react.policy import COMMON_NUMBERS, sourced_numbers
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import calculator
from explicit_react.types import FinalAnswer
from tests.helpers import action, final


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("When does the shop open?", "At 9 am."),
        ("When is the meeting?", "On Tuesday."),
        ("When was the Eiffel Tower built?", "In the late 1880s."),
        ("When did the dinosaurs die out?", "About 66 million years ago."),
        ("When was the abbey founded?", "In the twelfth century."),
        ("How many people work in healthcare?", "About 22 million people."),
        ("How many people live in New York now?", "About 8 million."),
    ],
)
def test_ordinary_answers_pass(question: str, answer: str) -> None:
    sources = f"{question} 22 million 8 million 66 million 9"
    assert find_problem(question, answer, sources) is None


@pytest.mark.parametrize(
    ("question", "answer", "check"),
    [
        ("When was Acme founded?", "Acme Corp, by its founder.", "year"),
        ("In which year did it start?", "In the 1990s.", "year"),  # the year itself was asked
        ("What is the price of the K6 in Clostclal marks?", "4425 dollars", "unit"),
        ("How much does it cost in Swiss francs?", "12 dollars", "unit"),
        ("How long is the flight in hours?", "It takes 90 minutes.", "unit"),
        ("How long is it, in days?", "3 weeks", "unit"),
    ],
)
def test_answers_of_the_wrong_kind_are_still_sent_back(question: str, answer: str, check: str) -> None:
    problem = find_problem(question, answer, f"{question} 4425 12 90 3 dollars")
    assert problem is not None and problem.check == check


def test_a_unit_is_one_it_knows_or_a_plural_a_name_qualifies() -> None:
    assert asked_unit("How heavy is it, in grams?") == "grams"
    assert asked_unit("What is the price of the Fuquou K6 in Clostclal marks?") == "Clostclal marks"
    assert asked_unit("How many people work in healthcare?") is None
    assert asked_unit("How many people live in New York now?") is None
    assert asked_unit("How many beds are there in hospitals?") is None


@pytest.mark.parametrize(
    ("answer", "expression"),
    [
        ("The difference is 9400 - 4850.", "9400 - 4850"),
        ("9400 - 4850!", "9400 - 4850"),
        ("It is 10985 / 10855 * 100%.", "10985 / 10855 * 100%"),
        ("Version 1.2 + 3.4.5 of it", None),  # a version number is no calculation
    ],
)
def test_a_calculation_that_ends_a_sentence_is_seen(answer: str, expression: str | None) -> None:
    assert leftover_arithmetic(answer) == expression


def test_the_agent_sends_back_a_calculation_that_ends_a_sentence() -> None:
    question = "A costs 9400 dollars and B costs 4850 dollars. How much more does A cost?"
    replies = [final("9400 - 4850."), action("calculator", "9400 - 4850"), final("4550 dollars")]
    agent = ExplicitReActAgent(ScriptedChatModel(replies), [calculator], check_answer=True)
    result = agent.run(question)
    assert [s.error for s in result.steps] == ["answer_check", None]
    assert result.answer == "4550 dollars" and result.stop_reason is StopReason.SUCCESS


@pytest.mark.parametrize("unit", ["s", "es"])
def test_a_one_letter_unit_does_not_crash_the_run(unit: str) -> None:
    question = f"How long did the 100 m world record take, in {unit}?"
    agent = ExplicitReActAgent(ScriptedChatModel(["Thought: x\nFinal Answer: 9.58"]), [], check_answer=True)
    result = agent.run(question, "The record is 9.58 seconds.")
    assert result.answer == "9.58" and result.stop_reason is StopReason.SUCCESS


def _stated_before(answer: str, sources: str) -> list[str]:
    """The comparison the check made before (every stated number and unit conversion, one by one)."""
    from explicit_react.answer_check import _written

    known = sourced_numbers(sources)
    converted = {k * f for k in known for f in _UNIT_FACTORS} | {k / f for k in known for f in _UNIT_FACTORS}

    def stated(value: float, decimals: int) -> bool:
        return any(
            math.isclose(value, k, rel_tol=1e-9)
            or math.isclose(round(k, decimals), value, rel_tol=1e-9)
            or math.isclose(round(k * 100, decimals), value, rel_tol=1e-9)
            for k in known
        ) or any(
            math.isclose(value, k, rel_tol=1e-9)
            or (decimals >= 2 and math.isclose(round(k, decimals), value, rel_tol=1e-9))
            for k in converted
        )

    wanted = [w for w in _written(answer) if w[1] not in COMMON_NUMBERS]
    return list(dict.fromkeys(written for written, value, decimals in wanted if not stated(value, decimals)))


def test_the_stated_numbers_are_read_as_the_old_comparison_read_them() -> None:
    rng = random.Random(7)
    for _ in range(300):
        stated = [
            rng.choice([rng.randint(1, 5000), round(rng.uniform(0, 100), rng.randint(1, 4))])
            for _ in range(6)
        ]
        sources = " ".join(str(n) for n in stated)
        candidates = [
            *stated,
            *(round(n * rng.choice(_UNIT_FACTORS), 2) for n in stated),
            *(round(n / rng.choice(_UNIT_FACTORS), 3) for n in stated),
            *(round(n, 1) for n in stated),
            *(round(n * 100, 2) for n in stated),
            *(rng.randint(1, 99999) for _ in range(4)),
        ]
        answer = ", ".join(str(c) for c in rng.sample(candidates, 8))
        assert unsourced_answer_numbers(answer, sources) == _stated_before(answer, sources), answer


def test_a_context_of_many_numbers_is_read_as_before() -> None:
    context = " ".join(f"{n}.{n % 97}" for n in range(3_000))
    answer = ", ".join(str(n) for n in [*range(100_001, 100_041), 1999.58, 25.25, 2500, 17.1])
    found = unsourced_answer_numbers(answer, context)
    assert found == _stated_before(answer, context) and "100001" in found and "25.25" not in found


@pytest.mark.parametrize("context", [None, ["doc one", "doc two"], {"content": "a doc", "source": "x.md"}])
def test_think_reads_any_context_run_takes(context: object) -> None:
    agent = ExplicitReActAgent(ScriptedChatModel(["Thought: ok\nFinal Answer: 1"]), [])
    turn = agent.think("q", context=context)  # type: ignore[arg-type]
    assert turn.decision == FinalAnswer("1", "ok", "Thought: ok\nFinal Answer: 1")


def test_think_refuses_a_question_that_is_not_text() -> None:
    agent = ExplicitReActAgent(ScriptedChatModel(["Thought: ok\nFinal Answer: 1"]), [])
    with pytest.raises(ConfigurationError, match="must be a string"):
        agent.think(None)  # type: ignore[arg-type]
