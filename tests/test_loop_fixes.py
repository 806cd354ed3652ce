"""The loop's bookkeeping at its edges: the call at a limit, calls that never ran, run ids in the
trace, notes that meet, and ``act`` given a turn with nothing to act on."""

from __future__ import annotations

import asyncio
import contextvars
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from explicit_react import ExplicitReActAgent, StopReason
from explicit_react.testing import ScriptedChatModel
from explicit_react.types import current_run
from tests.helpers import action, final, search

ran: list[tuple[float, str]] = []


@tool
def convert(amount: float, currency: str) -> str:
    """Convert an amount of money into a currency."""
    ran.append((amount, currency))
    return f"{amount * 2} {currency}"


# 1. The call at a limit counts whenever the model answered -------------------------------------


@pytest.mark.parametrize("reply", ["", "   "])
def test_the_call_at_a_limit_counts_when_its_reply_is_empty(reply: str) -> None:
    model = ScriptedChatModel([action("search", "population of France"), reply])
    result = ExplicitReActAgent(model, [search], max_iterations=1).run("How many?")
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert len(model.calls) == 2
    assert result.llm_calls == 2
    assert result.usage.total_tokens > sum(s.usage.total_tokens for s in result.steps)


def test_the_call_at_a_limit_counts_when_it_only_asks_for_a_tool() -> None:
    call = {"name": "search", "args": {"query": "x"}, "id": "1"}
    usage = {"input_tokens": 100, "output_tokens": 7, "total_tokens": 107}
    model = ScriptedChatModel(
        [
            AIMessage(content="", tool_calls=[call]),
            AIMessage(content="", tool_calls=[{**call, "id": "2"}], usage_metadata=usage),  # type: ignore[typeddict-item]
        ]
    )
    agent = ExplicitReActAgent(model, [search], mode="tool_calling", max_iterations=1)
    result = agent.run("How many?")
    assert len(model.calls) == 2
    assert result.llm_calls == 2
    assert result.usage.total_tokens == sum(s.usage.total_tokens for s in result.steps) + 107


def test_the_call_at_a_limit_that_failed_is_not_counted() -> None:
    calls: list[int] = []

    def complete(messages: list[dict[str, str]]) -> str:
        calls.append(1)
        if len(calls) > 1:
            raise ValueError("the model failed")
        return action("search", "population of France")

    result = ExplicitReActAgent(complete, [search], max_iterations=1, max_retries=0).run("How many?")
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert len(calls) == 2
    assert result.llm_calls == 1


# 2. max_tool_calls counts only calls that ran ------------------------------------------------


@pytest.mark.parametrize(
    "bad_input",
    [
        "ten dollars to euro",  # not JSON: refused before the tool is called
        '{"amount": "ten", "currency": "EUR"}',  # the tool's schema rejects it before its function runs
    ],
)
def test_a_call_refused_for_its_input_does_not_use_the_tool_call_budget(bad_input: str) -> None:
    ran.clear()
    model = ScriptedChatModel(
        [
            action("convert", bad_input),
            action("convert", '{"amount": 10, "currency": "EUR"}'),
            final("20 EUR"),
        ]
    )
    result = ExplicitReActAgent(model, [convert], max_tool_calls=1).run("Convert 10 dollars to EUR?")
    assert [s.error for s in result.steps] == ["invalid_input", None]
    assert result.stop_reason is StopReason.SUCCESS
    assert ran == [(10.0, "EUR")]


def test_a_call_refused_for_its_input_is_still_caught_when_repeated() -> None:
    bad = action("convert", "ten dollars to euro")
    model = ScriptedChatModel([bad, bad, final("I cannot")])
    result = ExplicitReActAgent(model, [convert], max_tool_calls=1).run("Convert 10 dollars?")
    assert [s.error for s in result.steps] == ["invalid_input", "repeated_call"]


# 3. The trace's run id -----------------------------------------------------------------------


def _replies(messages: list[dict[str, str]]) -> str:
    looked = messages[-1]["content"].count("Observation:")
    return final("done") if looked >= 2 else action("search", f"q{looked}")


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _assert_each_run_has_its_own_id(records: list[dict[str, Any]], runs: int) -> None:
    results = [r for r in records if r["event"] == "result"]
    ids = {r["run"] for r in results}
    assert len(results) == runs and len(ids) == runs and None not in ids
    for run_id in ids:
        assert [r["event"] for r in records if r["run"] == run_id] == ["step", "step", "result"]


def test_interleaved_streams_in_one_thread_keep_their_run_ids(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    agent = ExplicitReActAgent(_replies, [search], trace_path=path)
    first, second = agent.stream("first?"), agent.stream("second?")
    for _ in zip(first, second, strict=True):
        pass
    _assert_each_run_has_its_own_id(_records(path), 2)
    assert current_run.get() is None  # nothing left set in the caller's context


def test_interleaved_async_streams_keep_their_run_ids(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    agent = ExplicitReActAgent(_replies, [search], trace_path=path)

    async def both() -> None:
        streams = [agent.astream("first?"), agent.astream("second?")]
        done: set[int] = set()
        while len(done) < 2:
            for i, stream in enumerate(streams):
                if i not in done:
                    try:
                        await stream.__anext__()
                    except StopAsyncIteration:
                        done.add(i)

    asyncio.run(both())
    _assert_each_run_has_its_own_id(_records(path), 2)


def test_a_stream_pulled_in_a_fresh_context_each_step_keeps_its_run_id(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    agent = ExplicitReActAgent(_replies, [search], trace_path=path)
    stream = agent.stream("first?")
    while True:  # as starlette and anyio iterate a sync generator: each next() in a copied context
        try:
            contextvars.copy_context().run(next, stream)
        except StopIteration:
            break
    _assert_each_run_has_its_own_id(_records(path), 1)


def test_an_async_listener_sees_its_run_id() -> None:
    seen: list[str | None] = []

    class Listener:
        async def on_step(self, step: Any, turn: int, max_turns: int | None) -> None:
            await asyncio.sleep(0)
            seen.append(current_run.get())

        async def on_result(self, result: Any) -> None:
            seen.append(current_run.get())

    agent = ExplicitReActAgent(_replies, [search], listeners=[Listener()])
    asyncio.run(agent.arun("q?"))
    assert len(seen) == 3 and len(set(seen)) == 1 and seen[0]


# 4. Notes that meet --------------------------------------------------------------------------


def test_a_cut_reply_keeps_the_note_on_the_calls_not_run() -> None:
    calls = [
        {"name": "search", "args": {"query": "x"}, "id": "1"},
        {"name": "search", "args": {"query": "y"}, "id": "2"},
    ]
    reply = AIMessage(content="I will look up both of these things now.", tool_calls=calls)
    model = ScriptedChatModel([reply, "done"])
    agent = ExplicitReActAgent(model, [search], mode="tool_calling", max_reply_chars=30)
    observation = agent.run("Q?").steps[0].observation
    assert "only the first ran. Not run: search" in observation
    assert "only its first 30 were read" in observation


# 5. act() on a Final Answer ------------------------------------------------------------------


def test_act_on_a_final_answer_says_there_is_nothing_to_act_on() -> None:
    agent = ExplicitReActAgent(ScriptedChatModel([final("1")]), [search])
    turn = agent.think("Q?")
    with pytest.raises(ValueError, match="Final Answer"):
        agent.act(turn)
    with pytest.raises(ValueError, match="Final Answer"):
        asyncio.run(agent.aact(turn))
