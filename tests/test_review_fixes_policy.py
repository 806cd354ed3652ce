"""A tool call that failed in a way that may pass could never be tried again: the repeat check
refused the same call ("you already called fetch with this input"), and a second try stopped the
run as a loop. Now a call whose tool raised a passing failure (``network.is_transient``: a dropped
connection, a timeout of its own, a rate limit, a 5xx) may be made once more."""

from __future__ import annotations

from langchain_core.tools import tool

from explicit_react import ExplicitReActAgent, StopReason
from explicit_react.testing import ScriptedChatModel

CALL = "Thought: t\nAction: fetch\nAction Input: http://x"
DONE = "Thought: t\nFinal Answer: ok"


def fetcher(*failures: Exception) -> tuple[object, list[int]]:
    calls: list[int] = []

    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        calls.append(1)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return "page text"

    return fetch, calls


def test_a_passing_failure_may_be_tried_once_more() -> None:
    fetch, calls = fetcher(ConnectionError("connection reset by peer"))
    result = ExplicitReActAgent(ScriptedChatModel([CALL, CALL, DONE]), [fetch]).run("q")
    assert [s.error for s in result.steps] == ["tool_error", None]
    assert "may be tried once more" in result.steps[0].observation
    assert result.steps[1].observation == "page text" and len(calls) == 2
    assert result.stop_reason is StopReason.SUCCESS


def test_only_once() -> None:
    fetch, calls = fetcher(TimeoutError("read timed out"), TimeoutError("read timed out"))
    result = ExplicitReActAgent(ScriptedChatModel([CALL, CALL, CALL, DONE]), [fetch]).run("q")
    assert [s.error for s in result.steps] == ["tool_error", "tool_error", "repeated_call"]
    assert len(calls) == 2


def test_a_failure_that_will_not_pass_is_still_no_reason_to_repeat() -> None:
    fetch, calls = fetcher(ValueError("no such page"))
    result = ExplicitReActAgent(ScriptedChatModel([CALL, CALL, DONE]), [fetch]).run("q")
    assert [s.error for s in result.steps] == ["tool_error", "repeated_call"]
    assert "once more" not in result.steps[0].observation and len(calls) == 1
