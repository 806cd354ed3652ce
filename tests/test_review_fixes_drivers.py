"""Defects a review of the drivers, deadlines and callbacks found, each with the run that showed it.

1. A sync tool (or model) that raised ``StopIteration`` (a bare ``next()`` on an empty iterator)
   hung ``ainvoke`` for ever: an asyncio future refuses that exception, and was never settled.
2. A native async call cut by a timeout, or by the run's cancellation, reported its error to its
   callbacks after the run had moved on (inside the next model call, or after the chain's end).
3. A sync ``batch`` stopped by Ctrl-C raised at once, but its runs went on calling the model and
   the tools in their threads (the given-up call was the only one that stopped).
4. The compat ``AgentExecutor.astream(...).aclose()`` returned before the chain run's error event.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import tool

from explicit_react import AgentExecutor, ExplicitReActAgent, create_react_agent
from explicit_react.deadline import DaemonExecutor, GivenUpRun
from explicit_react.testing import ScriptedChatModel
from tests.test_callback_bridge import LockedSender

ACT = "Thought: t\nAction: {}\nAction Input: {}"
FIN = "Thought: t\nFinal Answer: done"


class Events(BaseCallbackHandler):
    """The tool, model and top-level chain events, in order."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
        if kwargs.get("parent_run_id") is None:
            self.seen.append("chain_end")

    def on_chain_error(self, error: BaseException, **kwargs: Any) -> None:
        if kwargs.get("parent_run_id") is None:
            self.seen.append(f"chain_error({type(error).__name__})")

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.seen.append("llm_start")

    def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
        self.seen.append("llm_end")

    def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        self.seen.append("tool_start")

    def on_tool_end(self, *args: Any, **kwargs: Any) -> None:
        self.seen.append("tool_end")

    def on_tool_error(self, error: BaseException, **kwargs: Any) -> None:
        self.seen.append(f"tool_error({type(error).__name__})")


@tool
def first_match(query: str) -> str:
    """The first record that holds the query."""
    return next(r for r in ["apple"] if query in r)


def test_a_tool_that_raises_stop_iteration_is_a_tool_error_in_async_runs_too() -> None:
    def agent() -> ExplicitReActAgent:
        return ExplicitReActAgent(ScriptedChatModel([ACT.format("first_match", "x"), FIN]), [first_match])

    sync = agent().invoke("q")
    assert sync["steps"][0]["error"] == "tool_error" and "StopIteration" in sync["steps"][0]["observation"]
    result = asyncio.run(asyncio.wait_for(agent().ainvoke("q"), 30))  # hung before
    assert result["output"] == "done" and result["steps"][0]["error"] == "tool_error"
    assert "StopIteration" in result["steps"][0]["observation"]


def test_a_compat_executor_with_such_a_tool_ends_in_async_runs() -> None:
    model = ScriptedChatModel([ACT.format("first_match", "x"), FIN])
    executor = AgentExecutor(agent=create_react_agent(model, [first_match]), tools=[first_match])
    result = asyncio.run(asyncio.wait_for(executor.ainvoke({"input": "q"}), 30))
    assert result["output"] == "done"


@tool
async def slow(query: str) -> str:
    """Answers after a long while."""
    await asyncio.sleep(30)
    return "late"


def test_a_timed_out_async_tool_reports_its_error_before_the_next_model_call() -> None:
    events = Events()
    agent = ExplicitReActAgent(ScriptedChatModel([ACT.format("slow", "x"), FIN]), [slow], tool_timeout=0.2)
    result = asyncio.run(agent.ainvoke("q", {"callbacks": [events]}))
    assert result["steps"][0]["error"] == "tool_timeout"
    assert events.seen == [
        "llm_start",
        "llm_end",
        "tool_start",
        "tool_error(CancelledError)",
        "llm_start",
        "llm_end",
        "chain_end",
    ]


def test_a_cancelled_run_reports_its_tools_error_before_its_own() -> None:
    events = Events()
    agent = ExplicitReActAgent(ScriptedChatModel([ACT.format("slow", "x"), FIN]), [slow], max_seconds=60)

    async def main() -> None:
        task = asyncio.create_task(agent.ainvoke("q", {"callbacks": [events]}))
        while "tool_start" not in events.seen:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert events.seen[-2:] == ["tool_error(CancelledError)", "chain_error(CancelledError)"]


def test_a_given_up_sync_run_calls_nothing_more() -> None:
    entered, release = threading.Event(), threading.Event()
    sent: list[str] = []

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        entered.set()
        release.wait(30)
        return "sent"

    replies = [ACT.format("send_email", to) for to in "abc"] + [FIN]
    model = ScriptedChatModel(replies)
    agent = ExplicitReActAgent(model, [send_email], max_iterations=4)
    executor = DaemonExecutor(2)
    future = executor.submit(agent.invoke, "q")
    assert entered.wait(30)
    executor.abandon()  # what a sync batch does at Ctrl-C
    release.set()
    assert isinstance(future.exception(30), GivenUpRun)
    assert sent == ["a"] and len(model.calls) == 1  # before: b and c were sent too


def test_a_given_up_run_still_ends_its_chain_run() -> None:
    entered, release = threading.Event(), threading.Event()

    @tool
    def wait_here(query: str) -> str:
        """Waits."""
        entered.set()
        release.wait(30)
        return "r"

    events = Events()
    agent = ExplicitReActAgent(ScriptedChatModel([ACT.format("wait_here", "x"), FIN]), [wait_here])
    executor = DaemonExecutor(1)
    future = executor.submit(agent.invoke, "q", {"callbacks": [events]})
    assert entered.wait(30)
    executor.abandon()
    release.set()
    future.exception(30)
    assert events.seen[-1] == "chain_error(GivenUpRun)" and events.seen.count("llm_start") == 1


def test_closing_the_compat_astream_ends_its_chain_run_before_aclose_returns() -> None:
    @tool
    def search(query: str) -> str:
        """Look up."""
        return "r"

    events = Events()
    model = ScriptedChatModel([ACT.format("search", "x"), FIN])
    executor = AgentExecutor(agent=create_react_agent(model, [search]), tools=[search])

    async def main() -> list[str]:
        stream = executor.astream({"input": "q"}, {"callbacks": [events]})
        await stream.__anext__()
        await stream.aclose()  # type: ignore[attr-defined]
        return list(events.seen)

    assert asyncio.run(main())[-1] == "chain_error(GeneratorExit)"


def test_a_timed_out_sync_call_in_a_sync_run_ends_its_run_in_order_and_fires_nothing_later() -> None:
    """Before, the given-up tool's thread fired ``tool_end`` after the chain's end, as a success."""
    release, returned = threading.Event(), threading.Event()

    @tool
    def stuck(query: str) -> str:
        """Answers when released."""
        release.wait(30)
        returned.set()
        return "late"

    events = Events()
    agent = ExplicitReActAgent(ScriptedChatModel([ACT.format("stuck", "x"), FIN]), [stuck], tool_timeout=0.2)
    result = agent.invoke("q", {"callbacks": [events]})
    assert result["steps"][0]["error"] == "tool_timeout"
    expected = [
        "llm_start",
        "llm_end",
        "tool_start",
        "tool_error(CallTimedOut)",
        "llm_start",
        "llm_end",
        "chain_end",
    ]
    assert events.seen == expected
    release.set()
    assert returned.wait(30)
    threading.Event().wait(0.2)  # the thread's late on_tool_end would come now
    assert events.seen == expected


def test_the_sync_and_async_runs_hear_a_timed_out_sync_tool_alike() -> None:
    release = threading.Event()

    @tool
    def stuck(query: str) -> str:
        """Answers when released."""
        release.wait(30)
        return "late"

    def run(asynchronous: bool) -> list[str]:
        events = Events()
        agent = ExplicitReActAgent(
            ScriptedChatModel([ACT.format("stuck", "x"), FIN]), [stuck], tool_timeout=0.2
        )
        if asynchronous:
            asyncio.run(agent.ainvoke("q", {"callbacks": [events]}))
        else:
            agent.invoke("q", {"callbacks": [events]})
        return events.seen

    try:
        assert run(False) == run(True)
    finally:
        release.set()


def test_a_sync_tools_own_async_handler_runs_on_the_callers_loop() -> None:
    """Before, a handler given to the tool itself (``callbacks=``) ran on a loop of LangChain's own
    in the tool's thread, and one that awaited the application's lock hung the run."""

    @tool
    def search(query: str) -> str:
        """Look up."""
        return "found"

    async def main() -> tuple[str, list[str], Any]:
        lock = asyncio.Lock()
        sender = LockedSender(lock)
        search.callbacks = [sender]
        agent = ExplicitReActAgent(ScriptedChatModel([ACT.format("search", "x"), FIN]), [search])
        await lock.acquire()
        asyncio.get_running_loop().call_later(0.05, lock.release)
        result = await asyncio.wait_for(agent.ainvoke("q"), 30)
        return result["output"], sender.sent, search.callbacks

    output, sent, own = asyncio.run(main())
    assert output == "done" and sent == ["found"]
    assert isinstance(own, list) and isinstance(own[0], LockedSender)  # the tool itself is unchanged


def test_a_sync_tools_own_handler_hears_a_timed_out_call_end() -> None:
    release = threading.Event()
    events = Events()

    @tool
    def stuck(query: str) -> str:
        """Answers when released."""
        release.wait(30)
        return "late"

    stuck.callbacks = [events]
    replies = [ACT.format("stuck", "x"), FIN] * 2
    agent = ExplicitReActAgent(ScriptedChatModel(replies), [stuck], tool_timeout=0.2)
    try:
        for run in (agent.invoke, lambda q: asyncio.run(agent.ainvoke(q))):
            events.seen.clear()
            run("q")
            assert events.seen == ["tool_start", "tool_error(CallTimedOut)"]
    finally:
        release.set()


def test_a_tools_own_handlers_still_hear_its_runs_only() -> None:
    events = Events()

    @tool
    def search(query: str) -> str:
        """Look up."""
        return "found"

    search.callbacks = [events]
    agent = ExplicitReActAgent(ScriptedChatModel([ACT.format("search", "x"), FIN] * 2), [search])
    agent.invoke("q")
    assert events.seen == ["tool_start", "tool_end"]  # not the model's, not the chain's
    events.seen.clear()
    asyncio.run(agent.ainvoke("q"))
    assert events.seen == ["tool_start", "tool_end"]
