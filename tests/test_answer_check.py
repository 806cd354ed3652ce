"""check_answer=True: a Final Answer is read against the question and the tool results before the run
ends; a failing one goes back to the model once per check (answer_check.py)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from explicit_react import ConfigurationError, ExplicitReActAgent, Step, StopReason
from explicit_react.answer_check import (
    asked_unit,
    expected_answer,
    find_problem,
    leftover_arithmetic,
    mentions_unit,
    says_not_found,
    unsourced_answer_numbers,
)
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import calculator
from tests.helpers import action, final

FACTS = {
    "maker of Randcoth H5": "The Randcoth H5 is made by Vionlio Optics.",
    "employees of Vionlio Optics": "Vionlio Optics has 1721 employees.",
    "price of Derpiol V6": "The Derpiol V6 costs 13730 dollars.",
    "Drouxcai florin": "One Drouxcai florin is worth 0.85 dollars.",
    "Flir Prallthom": "Flir Prallthom was born in 1944.",
}


@tool
def knowledge_search(query: str) -> str:
    """Search the knowledge files."""
    return FACTS.get(query.strip(), "No passages found.")


def agent(replies: list[object], **options: object) -> tuple[ExplicitReActAgent, ScriptedChatModel]:
    model = ScriptedChatModel(replies)
    options = {"check_answer": True, "max_iterations": 8, **options}
    return ExplicitReActAgent(model, [knowledge_search, calculator], **options), model  # type: ignore[arg-type]


# The checks on their own ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How many employees does the company that makes the Randcoth H5 have?", "number"),
        ("How old will Flir Prallthom turn in 2039?", "number"),
        ("What is the price of the Derpiol V6 in Drouxcai florins?", "number"),
        ("By what percentage is the price of A higher than the price of B?", "number"),
        ("What do 3 Douthbuth M6 units cost in dollars?", "number"),
        ("By 2035, how many years will Steall Flearkbar have been with Vionlio Optics?", "number"),
        ("In which year was Kabu Robotics founded?", "year"),
        ("When was Girk Quolte born?", "year"),
        ("Which costs more, the Maxlur M7 or the Pellten X7?", None),
        ("Who founded the company that makes the Hirron M8?", None),
        ("Where does Girk Quolte live?", None),
    ],
)
def test_the_kind_of_answer_comes_from_the_wording(question: str, expected: str | None) -> None:
    assert expected_answer(question) == expected


@pytest.mark.parametrize(
    ("question", "unit"),
    [
        ("What is the price of the Derpiol V6 in Drouxcai florins?", "Drouxcai florins"),
        ("How much does the Hirron H5 weigh, in kg?", "kg"),
        ("What is the area of Naguxdale, in square kilometres?", "square kilometres"),
        ("How much higher is the price of A than B, in percent?", "percent"),
        ("How many people live in Wusstelholm?", None),  # a place, not a unit
        ("How many people live in the city?", None),
        ("How old will Flir Prallthom turn in 2039?", None),
        ("Which company is based in florins?", None),  # not a quantity question
    ],
)
def test_the_unit_asked_is_a_trailing_in_phrase(question: str, unit: str | None) -> None:
    assert asked_unit(question) == unit


@pytest.mark.parametrize(
    ("answer", "unit", "mentioned"),
    [
        ("11670.5 Drouxcai florins", "Drouxcai florins", True),
        ("about 1 florin", "Drouxcai florins", True),
        ("13730 dollars", "Drouxcai florins", False),
        ("37.2 kilograms", "kg", True),
        ("37.2 kg", "kilograms", True),
        ("29.54%", "percent", True),
        ("$3,770", "dollars", True),
        ("388 km²", "square kilometres", True),
        ("388 square kilometers", "square kilometres", True),
        ("3770", "dollars", False),
    ],
)
def test_a_unit_is_named_singular_plural_or_as_a_symbol(answer: str, unit: str, mentioned: bool) -> None:
    assert mentions_unit(answer, unit) is mentioned


@pytest.mark.parametrize(
    ("answer", "expression"),
    [
        ("10,985 dollars is 10,985 / 10855 * 100% higher than 10855 dollars.", "10,985 / 10855 * 100%"),
        ("It is 9400 - 4850 dollars.", "9400 - 4850"),
        ("3 × 1200", "3 × 1200"),
        ("9400 - 4850 = 4550 dollars", None),  # the result is there
        ("4,550 dollars (9400 - 4850)", None),
        ("1.2% (10,985 / 10855 * 100% - 100)", None),
        ("about 101.2% (10985 / 10855)", None),  # as a percentage
        ("4551 dollars (9400 - 4850)", "9400 - 4850"),  # not its result
        ("It ran from 1990-2000.", None),  # a range
        ("Born on 25/11/1990.", None),  # a date
        ("4550 dollars", None),
    ],
)
def test_a_calculation_left_in_the_answer_is_found(answer: str, expression: str | None) -> None:
    assert leftover_arithmetic(answer) == expression


def test_an_answer_number_is_sourced_when_a_source_rounds_to_it() -> None:
    sources = "The ratio is 0.2954009. The calculator says 1478.4313725. Born in 1944."
    assert unsourced_answer_numbers("29.54% and 1478.43 and 1478 and 1,944", sources) == []
    assert unsourced_answer_numbers("995 years and 29.6%", sources) == ["995", "29.6"]
    assert unsourced_answer_numbers("2 dozen, 100%", "") == []  # common numbers need no source
    assert unsourced_answer_numbers("4.2 million", "a population of 4,200,000") == []
    # one unit conversion of a stated number, exact (or to two decimals and more)
    assert unsourced_answer_numbers("7000 grams, 1.5 hours, 1.58 hours", "7 kg; 90 and 95 minutes") == []
    assert unsourced_answer_numbers("1.6 hours", "95 minutes") == ["1.6"]  # 1.5833 rounds to 1.6 only


@pytest.mark.parametrize(
    "answer",
    [
        "The files do not say.",
        "The top speed of the Galquom K9 is not explicitly mentioned in the provided information.",
        "I could not find the weight of the Douthbuth M6.",
        "There is no information about it.",
    ],
)
def test_an_answer_that_says_the_fact_is_not_there_passes_every_check(answer: str) -> None:
    assert says_not_found(answer)
    assert find_problem("What is the weight of the Douthbuth M6, in kilograms?", answer, "") is None


def test_only_the_first_failing_check_is_reported_and_skipped_checks_are_passed_over() -> None:
    question = "What is the price of the Derpiol V6 in Drouxcai florins?"
    problem = find_problem(question, "13730 / 0.85 dollars", "13730 0.85", calculator="calculator")
    assert problem is not None and problem.check == "unit"
    problem = find_problem(
        question, "13730 / 0.85 dollars", "13730 0.85", calculator="calculator", skip={"unit"}
    )
    assert problem is not None and problem.check == "arithmetic"
    assert "Send it to the calculator tool" in problem.feedback
    # without a calculator there is nothing to send it to: that check is left out
    assert find_problem(question, "13730 / 0.85 dollars", "13730 0.85", skip={"unit"}) is None


# In a run -----------------------------------------------------------------------------------------


def test_an_intermediate_entity_given_for_a_number_is_sent_back() -> None:
    # Qwen2.5 1.5B answered the company, not its employees (bench/results/generated_local_qwen_*).
    question = "How many employees does the company that makes the Randcoth H5 have?"
    run_agent, model = agent(
        [
            action("knowledge_search", "maker of Randcoth H5"),
            final("Vionlio Optics"),
            action("knowledge_search", "employees of Vionlio Optics"),
            final("1721"),
        ]
    )
    result = run_agent.run(question)
    assert result.stop_reason is StopReason.SUCCESS and result.answer == "1721"
    sent_back = result.steps[1]
    assert sent_back.error == "answer_check" and sent_back.action == ""
    assert sent_back.observation.startswith(
        'Error: the question asks for a number, but your Final Answer "Vionlio Optics"'
    )
    assert "Final Answer: Vionlio Optics" in sent_back.log
    # the model reads its answer and the feedback in the next prompt
    assert (
        "Final Answer: Vionlio Optics\nObservation: Error: the question asks for a number"
        in model.calls[2].prompt
    )
    assert len(result.steps) == 3


def test_the_wrong_unit_is_sent_back_and_the_model_converts() -> None:
    question = "What is the price of the Derpiol V6 in Drouxcai florins?"
    run_agent, _ = agent(
        [
            action("knowledge_search", "price of Derpiol V6"),
            final("13730 dollars"),
            action("knowledge_search", "Drouxcai florin"),
            action("calculator", "13730 / 0.85"),
            final("16152.94 Drouxcai florins"),
        ]
    )
    result = run_agent.run(question)
    assert [s.error for s in result.steps] == [None, "answer_check", None, None]
    assert "in Drouxcai florins" in result.steps[1].observation
    assert result.answer == "16152.94 Drouxcai florins" and result.success


def test_a_calculation_left_undone_is_sent_to_the_calculator() -> None:
    question = "By what percentage is the price of the Derpiol V6 higher than 10000 dollars?"
    run_agent, _ = agent(
        [
            action("knowledge_search", "price of Derpiol V6"),
            final("(13730 - 10000) / 10000 * 100%"),
            action("calculator", "(13730 - 10000) / 10000 * 100"),
            final("37.3%"),
        ]
    )
    result = run_agent.run(question)
    assert result.steps[1].error == "answer_check"
    assert "Send it to the calculator tool" in result.steps[1].observation
    assert result.answer == "37.3%"


def test_a_made_up_number_is_sent_back_once_and_the_same_answer_again_is_accepted() -> None:
    question = "How old will Flir Prallthom turn in 2039?"
    run_agent, _ = agent([action("knowledge_search", "Flir Prallthom"), final("995"), final("995")])
    result = run_agent.run(question)
    assert [s.error for s in result.steps] == [None, "answer_check"]
    assert result.steps[1].observation.startswith("Error: 995 in your Final Answer is not in the question")
    assert result.answer == "995" and result.stop_reason is StopReason.SUCCESS


def test_each_check_sends_back_at_most_one_answer_so_the_run_cannot_loop() -> None:
    question = "How many employees does the company that makes the Randcoth H5 have?"
    run_agent, _ = agent(
        [
            final("Vionlio Optics"),
            final("Vionlio Optics, I think"),
            final("it is 4 * 5"),
            final("it is 3 * 5"),
        ]
    )
    result = run_agent.run(question)
    # number (once), then the same check passes over the second wordless answer
    assert [s.error for s in result.steps] == ["answer_check"]
    assert result.answer == "Vionlio Optics, I think"
    run_agent, _ = agent([final("it is 4 * 5"), final("it is 3 * 5"), final("it is 3 * 6")])
    result = run_agent.run(question)
    # arithmetic once, then unsourced once (3 is sourced by nothing, 5 neither), then accepted
    assert [s.error for s in result.steps] == ["answer_check", "answer_check"]
    assert result.answer == "it is 3 * 6"


def test_a_right_answer_is_not_sent_back_and_the_option_is_off_by_default() -> None:
    question = "How many employees does the company that makes the Randcoth H5 have?"
    replies = [
        action("knowledge_search", "maker of Randcoth H5"),
        action("knowledge_search", "employees of Vionlio Optics"),
        final("Vionlio Optics has 1,721 employees."),
    ]
    result = agent(list(replies))[0].run(question)
    assert [s.error for s in result.steps] == [None, None] and result.success
    model = ScriptedChatModel([final("Vionlio Optics")])
    result = ExplicitReActAgent(model, [knowledge_search, calculator]).run(question)
    assert result.answer == "Vionlio Optics" and result.steps == []


def test_the_sent_back_answer_counts_as_a_step() -> None:
    question = "How old will Flir Prallthom turn in 2039?"
    run_agent, model = agent([final("995"), final("95")], max_iterations=2)
    result = run_agent.run(question)
    assert [s.error for s in result.steps] == ["answer_check"]
    assert result.stop_reason is StopReason.SUCCESS and result.answer == "95"
    assert len(model.calls) == 2


@pytest.mark.parametrize("on_limit", ["force", "generate"])
def test_an_answer_on_the_last_turn_is_not_sent_back(on_limit: str) -> None:
    """Sent back on the last turn the budget allows, an answer was lost: "force" gave "I could not
    find an answer", "generate" asked again and called the run a failure (MAX_ITERATIONS)."""
    question = "How old will Flir Prallthom turn in 2039?"
    replies = [action("knowledge_search", "Flir Prallthom"), final("995"), final("95")]
    run_agent, model = agent(replies, max_iterations=2, on_limit=on_limit)
    result = run_agent.run(question)
    assert result.stop_reason is StopReason.SUCCESS and result.answer == "995"
    assert [s.error for s in result.steps] == [None] and len(model.calls) == 2


def test_stream_and_async_runs_check_the_answer_too() -> None:
    question = "How old will Flir Prallthom turn in 2039?"
    replies = [
        final("995"),
        action("knowledge_search", "Flir Prallthom"),
        action("calculator", "2039 - 1944"),
        final("95"),
    ]
    streamed = list(agent(list(replies))[0].stream(question))
    assert [s.error for s in streamed if isinstance(s, Step)] == ["answer_check", None, None]
    assert streamed[-1].answer == "95"  # type: ignore[union-attr]
    result = asyncio.run(agent(list(replies))[0].arun(question))
    assert [s.error for s in result.steps] == ["answer_check", None, None] and result.answer == "95"


def test_native_tool_calling_answers_are_checked() -> None:
    question = "How old will Flir Prallthom turn in 2039?"
    model = ScriptedChatModel(
        [
            AIMessage(content="He will be 995."),
            AIMessage(
                content="",
                tool_calls=[{"name": "knowledge_search", "args": {"query": "Flir Prallthom"}, "id": "1"}],
            ),
            AIMessage(
                content="",
                tool_calls=[{"name": "calculator", "args": {"expression": "2039 - 1944"}, "id": "2"}],
            ),
            AIMessage(content="He will turn 95."),
        ]
    )
    agent_ = ExplicitReActAgent(model, [knowledge_search, calculator], mode="tool_calling", check_answer=True)
    result = agent_.run(question)
    assert [s.error for s in result.steps] == ["answer_check", None, None]
    assert result.answer == "He will turn 95."
    assert model.calls[1].messages[-1].content.startswith("Error: 995 in your Final Answer")


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_check_answer_must_be_a_flag(value: object) -> None:
    with pytest.raises(ConfigurationError, match="check_answer must be True or False"):
        ExplicitReActAgent(ScriptedChatModel([]), [calculator], check_answer=value)  # type: ignore[arg-type]


def test_two_phase_answers_are_checked() -> None:
    # each turn: a Thought call, then an act call; an act reply with no tool call is the answer
    model = ScriptedChatModel(
        [
            "I think he was born long ago.",
            "He will be 995.",
            "I should look him up.",
            AIMessage(
                content="",
                tool_calls=[{"name": "knowledge_search", "args": {"query": "Flir Prallthom"}, "id": "1"}],
            ),
            "Born in 1944, so 2039 - 1944 = 95.",
            "He will turn 95.",
        ]
    )
    agent_ = ExplicitReActAgent(model, [knowledge_search], mode="two_phase", check_answer=True)
    result = agent_.run("How old will Flir Prallthom turn in 2039?")
    assert [s.error for s in result.steps] == ["answer_check", None]
    assert result.steps[0].observation.startswith("Error: 995 in your Final Answer")
    assert result.answer == "He will turn 95." and result.success
