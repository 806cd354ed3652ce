"""A Final Answer that runs past ``max_reply_chars`` is sent back once instead of returned as cut.

Before, the answer was the reply's first ``max_reply_chars`` characters and the run reported
success: an answer cut mid-sentence, with nothing to say so. Now a reply whose cut falls inside its
Final Answer becomes a step (``error="answer_cut"``) telling the model how much was read, once per
run and never on the last turn the budget allows (sent back there, the answer would be lost to the
limit); a second cut answer, or one on the last turn, is the answer as cut.
"""

from __future__ import annotations

import asyncio
import io

import pytest
from langchain_core.tools import tool
from rich.console import Console

from explicit_react import ExplicitReActAgent, GeneralQAAgent, StopReason
from explicit_react.display import TracePrinter
from explicit_react.testing import ScriptedChatModel
from tests.helpers import action, final

LONG = "word " * 40  # 200 characters
LIMIT = 120


@tool
def lookup(query: str) -> str:
    """Look a fact up."""
    return "Paris has 2.1 million people."


def agent(replies: list[str], **kwargs: object) -> tuple[ExplicitReActAgent, ScriptedChatModel]:
    model = ScriptedChatModel(replies)
    return ExplicitReActAgent(model, [lookup], max_reply_chars=LIMIT, **kwargs), model


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_cut_final_answer_is_sent_back_once_and_the_short_one_is_the_answer(driver: str) -> None:
    ag, model = agent([final(LONG), final("Paris.")])
    result = ag.run("q") if driver == "run" else asyncio.run(ag.arun("q"))
    assert (result.stop_reason, result.answer) == (StopReason.SUCCESS, "Paris.")
    [sent_back] = result.steps
    assert sent_back.error == "answer_cut" and sent_back.action == ""
    assert sent_back.observation.startswith("Error: your reply was")
    assert f"only its first {LIMIT} were read" in sent_back.observation
    assert sent_back.log == final(LONG)[:LIMIT]  # the reply as it was read
    assert "Final Answer was cut off" in model.calls[1].messages[-1].content  # the model was told


def test_a_second_cut_answer_is_the_answer_as_cut() -> None:
    ag, _ = agent([final(LONG), final(LONG + "again")])
    result = ag.run("q")
    assert result.stop_reason is StopReason.SUCCESS
    assert [s.error for s in result.steps] == ["answer_cut"]  # sent back once per run, not twice
    assert LONG.startswith(result.answer) and len(result.answer) < LIMIT


def test_on_the_last_turn_the_cut_answer_is_kept() -> None:
    ag, _ = agent([action("lookup", "Paris"), final(LONG)], max_iterations=2)
    result = ag.run("q")
    assert result.stop_reason is StopReason.SUCCESS and len(result.steps) == 1
    assert LONG.startswith(result.answer)


def test_a_whole_answer_before_the_cut_is_not_sent_back() -> None:
    # The cut falls in a turn the model invented after its answer, which the parser drops anyway.
    reply = final("Paris.") + "\nQuestion: and Rome?\nThought: " + LONG
    ag, _ = agent([reply])
    result = ag.run("q")
    assert (result.stop_reason, result.answer, result.steps) == (StopReason.SUCCESS, "Paris.", [])


def test_a_reply_under_the_limit_is_never_sent_back() -> None:
    reply = final("x" * 40)
    assert len(reply) < LIMIT
    ag, _ = agent([reply])
    assert ag.run("q").steps == []


def test_no_limit_no_send_back() -> None:
    model = ScriptedChatModel([final(LONG * 200)])
    result = ExplicitReActAgent(model, [lookup], max_reply_chars=None).run("q")
    assert result.answer == (LONG * 200).strip() and result.steps == []


def test_the_send_back_reads_as_such_in_the_qa_steps_and_the_terminal() -> None:
    qa = GeneralQAAgent(ScriptedChatModel([final(LONG), final("Paris.")]), [lookup], max_reply_chars=LIMIT)
    response = qa.answer("q")
    assert response["steps"][0].startswith("Step 1: the Final Answer was sent back -> Error: your reply")
    out = io.StringIO()
    printer = TracePrinter(Console(file=out, width=200, color_system=None))
    ag, _ = agent([final(LONG), final("Paris.")], listeners=[printer])
    ag.run("q")
    assert "Final Answer sent back" in out.getvalue() and "Unreadable reply" not in out.getvalue()


def test_two_phase_a_long_answer_is_sent_back_and_a_long_thought_is_not() -> None:
    # The two-phase reply is the answer, then the thought: a cut in the thought leaves the answer.
    thought = "I know it: the search said Paris. " * 10  # 340 characters
    model = ScriptedChatModel([thought, LONG, "I should be brief.", "Paris."])
    result = ExplicitReActAgent(model, [lookup], mode="two_phase", max_reply_chars=LIMIT).run("q")
    assert (result.stop_reason, result.answer) == (StopReason.SUCCESS, "Paris.")
    assert [s.error for s in result.steps] == ["answer_cut"]


def test_a_cut_of_white_space_alone_is_no_cut_answer() -> None:
    for reply in (final("Paris.") + "\n" * 300, final("Paris.").ljust(LIMIT) + "\n"):
        ag, _ = agent([reply])
        result = ag.run("q")
        assert (result.stop_reason, result.answer, result.steps) == (StopReason.SUCCESS, "Paris.", [])


def test_a_cut_answer_with_windows_line_ends_is_sent_back() -> None:
    long_lines = "word\n" * 60
    ag, _ = agent([final(long_lines).replace("\n", "\r\n"), final("Paris.")])
    result = ag.run("q")
    assert [s.error for s in result.steps] == ["answer_cut"] and result.answer == "Paris."
