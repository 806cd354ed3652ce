"""A Final Answer about the ReAct format itself quotes label lines; they are the answer's, not a turn.

Before, the answer ended at the first line that opened with a label, so "Each step has three
lines:" was the whole answer to "What format do you reply in?". A label line is the answer's when
the line right before it, inside the answer, ends with a colon or is quoted itself; a label line
after anything else is still the next turn the model invented, and is cut.
"""

from __future__ import annotations

import pytest

from explicit_react import ExplicitReActAgent
from explicit_react.parser import parse, parse_in_full
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import MockSearchTool
from explicit_react.types import Action, FinalAnswer

TOOLS = ["search", "calculator"]


@pytest.mark.parametrize(
    "answer",
    [
        "Each step has three lines:\nThought: why\nAction: which tool\nAction Input: its input",
        "Steps:\n1. Thought: think first\n2. Action: call a tool\n3. Observation: read what came back",
        "The log format is:\nObservation: what the tool returned\nThought: the reasoning",
        "I reply in this format:\nQuestion: the input question\nThought: think\nAction: search\n"
        "Action Input: x\nObservation: result\nFinal Answer: the answer",
        "It goes like this:\n**Thought:** why\n**Action:** search",
    ],
)
def test_a_final_answer_keeps_the_label_lines_it_introduces(answer: str) -> None:
    text = "Thought: The user asks about the format.\nFinal Answer: " + answer
    result = parse(text, tools=TOOLS)
    assert result == FinalAnswer(answer, "The user asks about the format.", text)
    assert result == parse_in_full(text, tools=TOOLS)


def test_the_quote_ends_at_a_blank_line_and_a_later_label_line_is_an_invented_turn() -> None:
    text = (
        "Thought: t\nFinal Answer: Two lines:\nThought: why\nAction: which tool\n\n"
        "Thought: I should search again.\nAction: search\nAction Input: more"
    )
    result = parse(text, tools=TOOLS)
    assert isinstance(result, FinalAnswer)
    assert result.answer == "Two lines:\nThought: why\nAction: which tool"


def test_prose_after_the_quote_stays_in_the_answer() -> None:
    text = "Thought: t\nFinal Answer: Like this:\nThought: why\n\nThat is the whole format."
    assert parse(text, tools=TOOLS).answer == "Like this:\nThought: why\n\nThat is the whole format."  # type: ignore[union-attr]


# A label line that nothing introduces still ends the answer: test_parser_review_fixes.py, part 4.


def test_an_empty_final_answer_line_does_not_introduce_a_quote() -> None:
    """ "Final Answer:" ends with a colon itself; what it introduces is the invented turn."""
    with pytest.raises(Exception, match="Final Answer is empty"):
        parse("Thought: t\nFinal Answer:\nThought: oops", tools=TOOLS)


def test_an_action_before_the_final_answer_is_read_as_before() -> None:
    text = "Thought: t\nAction: search\nAction Input: format:\nThought: invented"
    result = parse(text, tools=TOOLS)
    assert isinstance(result, Action) and (result.tool, result.tool_input) == ("search", "format:")


def test_the_agent_returns_the_whole_quoted_format() -> None:
    reply = "Thought: I know this.\nFinal Answer: Each step has two lines:\nThought: why\nAction: which tool"
    agent = ExplicitReActAgent(ScriptedChatModel(replies=[reply]), [MockSearchTool()])
    result = agent.run("What format do you reply in?")
    assert result.answer == "Each step has two lines:\nThought: why\nAction: which tool"
    assert result.stop_reason == "success"
