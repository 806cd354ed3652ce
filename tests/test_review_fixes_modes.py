"""Defects a review of the native modes found.

1. A custom ``prompt=`` was dropped without a word in ``mode="tool_calling"`` and ``"two_phase"``
   (their prompt is ``prompts/tool_calling.txt``): now a ``ConfigurationError`` at construction.
2. A plain-text reply written in the text format ("Thought: ...\\nFinal Answer: Paris"), which the
   two-phase transcript invites, was the answer word for word, labels and all.
"""

from __future__ import annotations

import pytest
from langchain_core.tools import tool

from explicit_react import ConfigurationError, ExplicitReActAgent, StopReason
from explicit_react.testing import ScriptedChatModel
from explicit_react.transport import plain_answer
from explicit_react.types import FinalAnswer


@tool
def search(query: str) -> str:
    """Look up a fact."""
    return "x"


PROMPT = "ALWAYS ANSWER IN FRENCH.\nTools:\n${tools}\n${format}"


@pytest.mark.parametrize("mode", ["tool_calling", "two_phase"])
def test_a_custom_prompt_in_a_native_mode_is_refused(mode: str) -> None:
    with pytest.raises(ConfigurationError, match="mode='text'"):
        ExplicitReActAgent(ScriptedChatModel(["oui"]), [search], mode=mode, prompt=PROMPT)  # type: ignore[arg-type]


def test_the_text_mode_still_takes_it() -> None:
    model = ScriptedChatModel(["Thought: ok\nFinal Answer: oui"])
    ExplicitReActAgent(model, [search], prompt=PROMPT).run("Capital of France?")
    assert "ALWAYS ANSWER IN FRENCH" in model.calls[0].prompt


@pytest.mark.parametrize(
    ("mode", "replies"),
    [
        ("tool_calling", ["Thought: I know it.\nFinal Answer: Paris"]),
        ("two_phase", ["I know the answer is Paris.", "Thought: I know it.\nFinal Answer: Paris"]),
    ],
)
def test_a_text_format_answer_in_a_native_mode_is_its_final_answer(mode: str, replies: list[str]) -> None:
    result = ExplicitReActAgent(ScriptedChatModel(replies), [], mode=mode).run("Capital of France?")  # type: ignore[arg-type]
    assert result.stop_reason is StopReason.SUCCESS and result.answer == "Paris"


@pytest.mark.parametrize(
    ("text", "answer", "thought"),
    [
        ("Paris", "Paris", ""),
        ("The final answer is Paris.", "The final answer is Paris.", ""),
        ("Thought: I know it.\nFinal Answer: Paris", "Paris", "I know it."),
        ("Final Answer:", "Final Answer:", ""),  # an empty one is no answer to take
    ],
)
def test_plain_answer(text: str, answer: str, thought: str) -> None:
    assert plain_answer(text) == FinalAnswer(answer, thought, text)
