"""Async callback handlers of calls the async driver runs in a worker thread (a sync-only tool, a
sync-only model): their coroutines run on the caller's event loop, as under a native async call,
and a call given up fires no late event but ends its open runs with the error that gave it up."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, tool

from explicit_react import AgentExecutor, ExplicitReActAgent, create_react_agent
from explicit_react.testing import ScriptedChatModel
from tests.helpers import action, final

ACT, ANSWER = action("search", "Paris"), final("done")
GUARD = 30.0
"""Seconds before a run that hangs (the defect) fails its test instead of hanging the suite."""


@tool
def search(query: str) -> str:
    """Look up a fact."""
    return f"found {query}"


class SyncOnlyModel(ScriptedChatModel):
    """A scripted chat model with no async implementation of its own (the async driver runs it in a
    worker thread)."""

    _agenerate = BaseChatModel._agenerate  # type: ignore[assignment]
    _astream = BaseChatModel._astream  # type: ignore[assignment]


class WhereHandler(AsyncCallbackHandler):
    """Records each tool and model event with whether it ran on ``loop`` (set by the test)."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.events: list[tuple[str, bool]] = []

    def _seen(self, name: str) -> None:
        self.events.append((name, asyncio.get_running_loop() is self.loop))

    async def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        self._seen("tool_start")

    async def on_tool_end(self, *args: Any, **kwargs: Any) -> None:
        self._seen("tool_end")

    async def on_llm_start(self, *args: Any, **kwargs: Any) -> None:  # no on_chat_model_start: the fallback
        self._seen("llm_start")

    async def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
        self._seen("llm_end")


Run = Callable[[list[Any]], Awaitable[Any]]
"""One run with these callback handlers."""


def compat(llm: Any, tools: list[BaseTool] | None = None, **options: Any) -> Run:
    tools = tools or [search]
    executor = AgentExecutor(agent=create_react_agent(llm, tools), tools=tools, **options)
    return lambda callbacks: executor.ainvoke({"input": "q"}, {"callbacks": callbacks})


def agent(llm: Any, tools: list[BaseTool] | None = None, **options: Any) -> Run:
    react = ExplicitReActAgent(llm, tools or [search], **options)
    return lambda callbacks: react.ainvoke("q", {"callbacks": callbacks})


async def with_loop(handler: WhereHandler, run: Run) -> None:
    handler.loop = asyncio.get_running_loop()
    await asyncio.wait_for(run([handler]), GUARD)


@pytest.mark.parametrize("build", [compat, agent])
def test_an_async_handler_of_a_sync_tool_runs_on_the_callers_loop(build: Callable[..., Run]) -> None:
    handler = WhereHandler()
    asyncio.run(with_loop(handler, build(ScriptedChatModel([ACT, ANSWER]))))
    tool_events = [e for e in handler.events if e[0].startswith("tool")]
    assert tool_events == [("tool_start", True), ("tool_end", True)]


@pytest.mark.parametrize(
    "build", [lambda llm: compat(llm, max_execution_time=GUARD), lambda llm: agent(llm, llm_timeout=GUARD)]
)
def test_an_async_handler_of_a_sync_model_runs_on_the_callers_loop(build: Callable[..., Run]) -> None:
    handler = WhereHandler()
    asyncio.run(with_loop(handler, build(SyncOnlyModel([ACT, ANSWER]))))
    model_events = [e for e in handler.events if e[0].startswith("llm")]
    assert model_events == [("llm_start", True), ("llm_end", True)] * 2


class LockedSender(AsyncCallbackHandler):
    """Sends each tool output under the application's lock (as a websocket sender shares one)."""

    raise_error = True

    def __init__(self, lock: asyncio.Lock) -> None:
        self.lock = lock
        self.sent: list[str] = []

    async def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        async with self.lock:
            self.sent.append(str(output))


@pytest.mark.parametrize("build", [compat, agent])
def test_a_handler_awaiting_an_object_of_the_callers_loop_does_not_hang(build: Callable[..., Run]) -> None:
    """Another task holds the lock until the tool has run, so the handler has to wait for it."""
    ran = threading.Event()

    @tool("search")
    def marked_search(query: str) -> str:
        """Look up a fact."""
        ran.set()
        return f"found {query}"

    run = build(ScriptedChatModel([ACT, ANSWER]), [marked_search])

    async def main() -> list[str]:
        lock = asyncio.Lock()
        sender = LockedSender(lock)
        await lock.acquire()

        async def release_after_the_tool() -> None:
            while not ran.is_set():
                await asyncio.sleep(0.001)
            lock.release()

        releasing = asyncio.create_task(release_after_the_tool())
        await asyncio.wait_for(run([sender]), GUARD)
        await releasing
        return sender.sent

    assert asyncio.run(main()) == ["found Paris"]


class Recorder(BaseCallbackHandler):
    """Tool and chain ends and errors, in order (a sync handler)."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        self.events.append("tool_start")

    def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        self.events.append("tool_end")

    def on_tool_error(self, error: BaseException, **kwargs: Any) -> None:
        self.events.append(f"tool_error({type(error).__name__})")

    def on_chain_error(self, error: BaseException, **kwargs: Any) -> None:
        if kwargs.get("parent_run_id") is None:
            self.events.append(f"chain_error({type(error).__name__})")


class AsyncRecorder(AsyncCallbackHandler):
    """``Recorder``'s tool events, as an async handler."""

    def __init__(self) -> None:
        self.events: list[str] = []

    async def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        self.events.append("tool_end")

    async def on_tool_error(self, error: BaseException, **kwargs: Any) -> None:
        self.events.append(f"tool_error({type(error).__name__})")


class Held(BaseTool):
    """A sync tool that waits for ``release``; ``returned`` is set once its ``run`` is over."""

    name: str = "search"
    description: str = "Look up a fact."
    started: threading.Event
    release: threading.Event
    returned: threading.Event

    def _run(self, query: str) -> str:
        self.started.set()
        self.release.wait(GUARD)
        return "late"

    def run(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().run(*args, **kwargs)
        finally:
            self.returned.set()


@pytest.mark.parametrize("kind", ["compat", "agent"])
def test_a_cancelled_run_ends_its_sync_tools_run_with_the_cancellation(kind: str) -> None:
    """As under a native async tool: ``on_tool_error(CancelledError)`` before the chain's error, and
    no ``on_tool_end`` once the tool returns after the run is over."""
    held = Held(started=threading.Event(), release=threading.Event(), returned=threading.Event())
    llm = ScriptedChatModel([ACT, ANSWER])
    if kind == "compat":
        runnable: Any = AgentExecutor(agent=create_react_agent(llm, [held]), tools=[held])
        call: Any = {"input": "q"}
    else:
        runnable, call = ExplicitReActAgent(llm, [held]), "q"
    recorder, async_recorder = Recorder(), AsyncRecorder()

    async def main() -> None:
        task = asyncio.create_task(runnable.ainvoke(call, {"callbacks": [recorder, async_recorder]}))
        while not held.started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        held.release.set()
        while not held.returned.is_set():  # the tool's late end, were it heard, comes before this
            await asyncio.sleep(0.001)

    asyncio.run(main())
    ended = [e for e in recorder.events if e != "tool_start"]
    assert recorder.events[0] == "tool_start"
    assert ended == ["tool_error(CancelledError)", "chain_error(CancelledError)"]
    assert async_recorder.events == ["tool_error(CancelledError)"]


def test_a_sync_run_hears_a_sync_tool_as_before() -> None:
    """The sync driver is unchanged: handlers run where the tool runs, an async one to completion."""
    recorder, async_recorder = Recorder(), AsyncRecorder()
    executor = AgentExecutor(
        agent=create_react_agent(ScriptedChatModel([ACT, ANSWER]), [search]), tools=[search]
    )
    assert executor.invoke({"input": "q"}, {"callbacks": [recorder, async_recorder]})["output"] == "done"
    assert recorder.events == ["tool_start", "tool_end"]
    assert async_recorder.events == ["tool_end"]


@pytest.mark.parametrize("kind", ["compat", "agent"])
def test_a_sync_tool_given_up_at_its_time_limit_ends_its_run_with_the_timeout(kind: str) -> None:
    """Under ``ainvoke``: ``on_tool_error`` with the timeout, and nothing from the tool once it returns."""
    held = Held(started=threading.Event(), release=threading.Event(), returned=threading.Event())
    llm = ScriptedChatModel([ACT, ANSWER])
    if kind == "compat":
        runnable: Any = AgentExecutor(
            agent=create_react_agent(llm, [held]), tools=[held], max_execution_time=0.5
        )
        call: Any = {"input": "q"}
    else:
        runnable, call = ExplicitReActAgent(llm, [held], tool_timeout=0.5), "q"
    recorder, async_recorder = Recorder(), AsyncRecorder()

    async def main() -> None:
        await asyncio.wait_for(runnable.ainvoke(call, {"callbacks": [recorder, async_recorder]}), GUARD)
        held.release.set()
        while not held.returned.is_set():
            await asyncio.sleep(0.001)

    asyncio.run(main())
    assert recorder.events == ["tool_start", "tool_error(CallTimedOut)"]
    assert async_recorder.events == ["tool_error(CallTimedOut)"]


def test_a_tool_given_up_while_an_async_handler_hears_its_end_ends_with_the_timeout() -> None:
    """The tool returned, but its time ran out while an async handler was still hearing its
    ``on_tool_end``: the handlers after it do not hear a late success; every handler hears the
    timeout (before, the sync one heard ``tool_end`` after the give-up and nobody heard the error)."""
    hearing, release = threading.Event(), asyncio.Event()

    class Stuck(AsyncCallbackHandler):
        def __init__(self) -> None:
            self.errors: list[str] = []

        async def on_tool_end(self, output: Any, **kwargs: Any) -> None:
            hearing.set()
            await release.wait()  # held until the run is over

        async def on_tool_error(self, error: BaseException, **kwargs: Any) -> None:
            self.errors.append(type(error).__name__)

    @tool
    def search(query: str) -> str:
        """Look up a fact."""
        return f"found {query}"

    recorder, stuck = Recorder(), Stuck()
    agent = ExplicitReActAgent(ScriptedChatModel([ACT, ANSWER]), [search], tool_timeout=0.5)

    async def main() -> dict[str, Any]:
        result = await asyncio.wait_for(agent.ainvoke("q", {"callbacks": [stuck, recorder]}), GUARD)
        release.set()
        return result

    result = asyncio.run(main())
    assert hearing.is_set() and "timed out" in result["steps"][0]["observation"]
    assert recorder.events == ["tool_start", "tool_error(CallTimedOut)"]
    assert stuck.errors == ["CallTimedOut"]
