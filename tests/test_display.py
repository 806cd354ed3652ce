"""The coloured terminal trace (``TracePrinter``): how each kind of step is labelled."""

from __future__ import annotations

import io

from rich.console import Console

from explicit_react import ExplicitReActAgent
from explicit_react.display import TracePrinter
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import calculator
from tests.helpers import final

QUESTION = "How old will Flir Prallthom turn in 2039?"


def _printed(replies: list[object], **options: object) -> str:
    buffer = io.StringIO()
    printer = TracePrinter(Console(file=buffer, width=200, color_system=None))
    agent = ExplicitReActAgent(ScriptedChatModel(replies), [calculator], listeners=[printer], **options)  # type: ignore[arg-type]
    agent.run(QUESTION)
    return buffer.getvalue()


def test_a_sent_back_final_answer_is_not_shown_as_an_unreadable_reply() -> None:
    text = _printed([final("995"), final("995")], check_answer=True, max_iterations=5)
    assert "Unreadable reply" not in text
    assert "Final Answer sent back (turn 1/5): Thought: I now know the final answer." in text
    assert "Observation: Error: 995 in your Final Answer is not in the question" in text


def test_an_unreadable_reply_is_still_labelled_so() -> None:
    text = _printed(["what now?", final("95")], max_iterations=5)
    assert "Unreadable reply (turn 1/5): what now?" in text
    assert "Final Answer sent back" not in text
