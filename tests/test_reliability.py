"""Nothing a model writes escapes as an exception, an empty answer is never a success, the deadline
covers reading a reply, and a tool's huge output costs no more than what the observation keeps."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import tracemalloc
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import tool

from explicit_react import AgentExecutor, ExplicitReActAgent, StopReason, create_react_agent
from explicit_react.testing import ScriptedChatModel
from tests.helpers import ChainEvents, action, final, search, subtract

NASTY_REPLIES = {
    "JSON list as input": 'Thought: t\nAction: search\nAction Input: ["a", "b"]',
    "empty JSON list": "Action: search\nAction Input: []",
    "list to a two-argument tool": "Action: subtract\nAction Input: [1, [2]]",
    "deep nesting": "Action: search\nAction Input: " + "[" * 900 + "]" * 900,
    "deep object": 'Action: subtract\nAction Input: {"a": ' + '{"a": ' * 700 + "1" + "}" * 701,
    "run of open braces": "Action: subtract\nAction Input: " + "{" * 5000,
    "braces to a text tool": "Action: search\nAction Input: " + "{" * 5000,
    "Final Answer as the action, no input": "Thought: t\nAction: Final Answer\nAction Input: ",
    "empty Final Answer": "Thought: t\nFinal Answer:   ",
    "NUL bytes": "Action: search\x00\nAction Input: \x00\x00",
}
"""Replies that once raised out of a run (or ended it as a success with no answer)."""


def agent_for(reply: str, **kwargs: Any) -> ExplicitReActAgent:
    script = [reply, final("done")]
    return ExplicitReActAgent(ScriptedChatModel(script), [search, subtract], **kwargs)


def check(result_dict: dict[str, Any]) -> None:
    assert result_dict["stop_reason"] == "success"
    assert result_dict["output"] == "done"  # the bad turn became a step and the run went on
    assert len(result_dict["steps"]) == 1


@pytest.mark.parametrize("reply", NASTY_REPLIES.values(), ids=list(NASTY_REPLIES))
def test_no_reply_escapes_any_entry_point(reply: str) -> None:
    check(agent_for(reply).invoke("q"))
    check(asyncio.run(agent_for(reply).ainvoke("q")))
    check(agent_for(reply).batch(["q"])[0])
    result = agent_for(reply).run("q")
    assert result.success and result.answer == "done"
    *steps, last = list(agent_for(reply).stream("q"))
    assert len(steps) == 1 and last.answer == "done"  # type: ignore[union-attr]

    async def astream() -> list[Any]:
        return [item async for item in agent_for(reply).astream("q")]

    assert asyncio.run(astream())[-1].answer == "done"
    agent = agent_for(reply)
    turn = agent.think("q")
    observation = agent.observe(turn, agent.act(turn)).observation
    assert isinstance(observation, str) and observation


@pytest.mark.parametrize("reply", NASTY_REPLIES.values(), ids=list(NASTY_REPLIES))
def test_no_reply_escapes_the_compat_executor(reply: str) -> None:
    def executor() -> AgentExecutor:
        llm = ScriptedChatModel([reply, final("done")])
        return AgentExecutor(
            agent=create_react_agent(llm, [search, subtract]),
            tools=[search, subtract],
            handle_parsing_errors=True,
        )

    assert executor().invoke({"input": "q"})["output"] == "done"
    assert asyncio.run(executor().ainvoke({"input": "q"}))["output"] == "done"
    assert list(executor().stream({"input": "q"}))[-1]["output"] == "done"
    assert list(executor().iter({"input": "q"}))[-1]["output"] == "done"


@pytest.mark.parametrize(
    "reply", [NASTY_REPLIES["Final Answer as the action, no input"], NASTY_REPLIES["empty Final Answer"]]
)
def test_an_empty_final_answer_is_never_a_success(reply: str) -> None:
    agent = ExplicitReActAgent(ScriptedChatModel([reply]), [search], max_iterations=1, on_limit="force")
    result = agent.run("q")
    assert not result.success and result.stop_reason is StopReason.MAX_ITERATIONS
    assert result.steps[0].error == "parse_error" and "Final Answer is empty" in result.steps[0].observation


def test_a_reply_over_the_cap_is_cut_before_it_is_read_and_the_model_is_told() -> None:
    long_reply = "Action: search\nAction Input: population of Paris\nThought: " + "x" * 5000
    model = ScriptedChatModel([long_reply, final("done")])
    result = ExplicitReActAgent(model, [search], max_reply_chars=100).run("q")
    assert result.success
    step = result.steps[0]
    assert step.observation.startswith("2100000")
    assert "only its first 100 were read" in step.observation
    assert len(step.log) == 100
    assert "only its first 100 were read" in model.calls[1].prompt


def test_the_deadline_covers_reading_the_reply() -> None:
    agent = ExplicitReActAgent(ScriptedChatModel([final("done")]), [search], max_seconds=0.2)
    read = agent.transport.read

    def slow_read(completion: Any) -> Any:  # stands for a reply that takes long to parse
        time.sleep(0.3)
        return read(completion)

    agent.transport.read = slow_read  # type: ignore[method-assign]
    result = agent.run("q")
    assert result.stop_reason is StopReason.MAX_SECONDS and not result.success


def test_a_huge_tool_output_costs_no_more_than_it_takes_to_make() -> None:
    size = 2_000_000

    @tool
    def dump(query: str) -> str:
        """Returns a lot of text."""
        return "ab " * (size // 3)

    calls = [f"Action: dump\nAction Input: x{i % 2}" for i in range(4)]  # two repeats among four calls
    model = ScriptedChatModel([*calls, final("done")], report_usage=False)
    agent = ExplicitReActAgent(model, [dump], keep_tool_output=False, max_iterations=6)
    tracemalloc.start()
    result = agent.run("q")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [s.error for s in result.steps] == [None, None, "repeated_call", "repeated_call"]
    assert all(len(s.observation) < 5000 and s.tool_output is None for s in result.steps)
    assert peak < 4 * size  # the output and LangChain's copies, not its split words (before: 23x)


def test_a_reply_with_a_lone_surrogate_ends_the_compat_run_normally() -> None:
    from explicit_react import AgentExecutor, create_react_agent
    from explicit_react.tools import calculator

    model = ScriptedChatModel(["Thought: \ud800\nFinal Answer: x"])
    executor = AgentExecutor(
        agent=create_react_agent(model, [calculator]), tools=[calculator], handle_parsing_errors=True
    )
    assert executor.invoke({"input": "q"})["output"] == "x"


def test_a_tool_output_nested_too_deeply_becomes_a_readable_observation() -> None:
    model = ScriptedChatModel(["Action: deep_list\nAction Input: x", "Final Answer: done"])
    result = ExplicitReActAgent(model, [deep_list]).run("q")
    assert result.answer == "done"
    assert "nested too deeply" in result.steps[0].observation


def test_a_tool_output_nested_too_deeply_does_not_break_the_compat_scratchpad() -> None:
    model = ScriptedChatModel(["Action: deep_list\nAction Input: x", "Final Answer: done"])
    executor = AgentExecutor(
        agent=create_react_agent(model, [deep_list]), tools=[deep_list], handle_parsing_errors=True
    )
    assert executor.invoke({"input": "q"})["output"] == "done"
    assert "nested too deeply" in model.calls[-1].prompt


@tool
def deep_list(query: str) -> Any:
    """Returns a list nested 5,000 deep: too deep for json.dumps or str()."""
    value: Any = []
    for _ in range(5000):
        value = [value]
    return value


def test_a_tool_output_nested_too_deeply_does_not_break_the_compat_stream() -> None:
    model = ScriptedChatModel(["Action: deep_list\nAction Input: x", "Final Answer: done"])
    executor = AgentExecutor(agent=create_react_agent(model, [deep_list]), tools=[deep_list])
    chunks = list(executor.stream({"input": "q"}))
    step_messages = next(chunk["messages"] for chunk in chunks if "steps" in chunk)
    assert "nested too deeply" in step_messages[0].content
    assert chunks[-1]["output"] == "done"


A_FETCH = "Thought: I will fetch it.\nAction: fetch\nAction Input: http://example.com"


# Timeouts: whose TimeoutError it is, and calls that ignore being cancelled -------------------------
def test_a_tools_own_timeout_error_is_a_failed_call_not_the_runs_deadline() -> None:
    @tool
    def fetch(url: str) -> str:
        """Fetches a page."""
        raise TimeoutError("read timed out")  # as a socket or an HTTP client raises it

    for use_async in (False, True):
        agent = ExplicitReActAgent(ScriptedChatModel([A_FETCH, final("42")]), [fetch], max_seconds=60)
        result = asyncio.run(agent.arun("q")) if use_async else agent.run("q")
        assert result.stop_reason is StopReason.SUCCESS and result.answer == "42"
        assert (
            result.steps[0].error == "tool_error"
            and "TimeoutError: read timed out" in result.steps[0].observation
        )


def test_a_models_own_timeout_error_is_retried_not_the_runs_deadline() -> None:
    model = ScriptedChatModel([TimeoutError("read timed out"), final("42")])
    result = ExplicitReActAgent(model, [search], max_seconds=60, retry_backoff=0).run("q")
    assert result.stop_reason is StopReason.SUCCESS and result.llm_calls == 1 and len(model.calls) == 2


async def _deaf_sleep(seconds: float) -> None:
    """Sleeps ``seconds`` and ignores cancellation, as a client that shields its request does."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(left)


class DeafModel(ScriptedChatModel):
    async def _agenerate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        await _deaf_sleep(1.5)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


@pytest.mark.parametrize("limit", ["tool_timeout", "max_seconds", "llm_timeout"])
def test_an_async_call_that_ignores_cancellation_is_given_up_on_time(limit: str) -> None:
    @tool
    async def fetch(url: str) -> str:
        """Fetches a page."""
        await _deaf_sleep(1.5)
        return "late result"

    async def run() -> Any:
        if limit == "llm_timeout":
            agent = ExplicitReActAgent(DeafModel([final("x")]), [fetch], llm_timeout=0.3, max_retries=0)
        else:
            agent = ExplicitReActAgent(ScriptedChatModel([A_FETCH, final("ok")]), [fetch], **{limit: 0.3})
        began = time.monotonic()
        result = await agent.arun("q")
        return result, time.monotonic() - began

    result, seconds = asyncio.run(run())
    assert seconds < 1.2, f"the run waited {seconds:.1f} s for a call that ignored its cancellation"
    assert "late result" not in [step.observation for step in result.steps]
    expected = {"tool_timeout": "tool_timeout", "max_seconds": "tool_timeout", "llm_timeout": None}[limit]
    assert (result.steps[0].error if result.steps else None) == expected
    if limit == "llm_timeout":
        assert result.stop_reason is StopReason.LLM_ERROR and "timed out" in (result.error or "")


def test_ctrl_c_while_waiting_for_a_call_gives_the_call_up() -> None:
    import threading

    from explicit_react.deadline import abandoned, call_with_timeout

    seen: list[str] = []

    def tool_call() -> None:
        given_up = abandoned()
        assert given_up is not None
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()  # Ctrl-C, while the caller waits
        seen.append("given up" if given_up.wait(5) else "ran to the end")

    with pytest.raises(KeyboardInterrupt):
        call_with_timeout(tool_call, 10)
    deadline = time.monotonic() + 5
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == ["given up"]


def _two_step_script() -> list[str]:
    return [action("search", "a"), action("search", "b"), final("done")]


@pytest.mark.parametrize("which", ["agent", "compat"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stream_closed_early_ends_its_chain_run(which: str, mode: str) -> None:
    """A caller that stops reading leaves no chain run open: callbacks (a tracer) hear it ended."""
    if which == "agent":
        runnable: Any = ExplicitReActAgent(ScriptedChatModel(_two_step_script()), [search])
        inputs: Any = "q"
    else:
        model = ScriptedChatModel(_two_step_script())
        runnable = AgentExecutor(agent=create_react_agent(model, [search]), tools=[search])
        inputs = {"input": "q"}
    recorder = ChainEvents()
    config = {"callbacks": [recorder]}
    if mode == "sync":
        stream = runnable.stream(inputs, config)
        next(stream)
        stream.close()
    else:

        async def read_one() -> None:
            stream = runnable.astream(inputs, config)
            await anext(stream)
            await stream.aclose()

        asyncio.run(read_one())
    assert recorder.events == ["start", "error(GeneratorExit)"]


class _Unprintable(Exception):
    """A library's exception whose ``str()`` itself raises."""

    def __str__(self) -> str:
        raise RuntimeError("broken __str__")


def test_a_tool_error_whose_message_cannot_be_read_is_an_observation() -> None:
    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        raise _Unprintable()

    result = ExplicitReActAgent(ScriptedChatModel([action("lookup", "x"), final("no")]), [lookup]).run("q")
    assert result.stop_reason is StopReason.SUCCESS
    assert result.steps[0].observation == (
        "Error: tool 'lookup' failed: _Unprintable: (its message could not be read)"
    )


def test_a_model_error_whose_message_cannot_be_read_stops_the_run_with_a_reason() -> None:
    result = ExplicitReActAgent(ScriptedChatModel([_Unprintable()]), [], max_retries=0).run("q")
    assert result.stop_reason is StopReason.LLM_ERROR
    assert result.error == "the model call failed: _Unprintable: (its message could not be read)"


def test_a_batch_records_a_question_whose_error_cannot_be_read() -> None:
    from explicit_react.scale import failure_record

    assert failure_record("q", _Unprintable())["error"] == "_Unprintable: (its message could not be read)"


def test_an_async_only_tool_runs_under_sync_run_inside_a_running_event_loop() -> None:
    # A notebook cell, or sync code called from async code: asyncio.run() refuses there.
    @tool
    async def asearch(query: str) -> str:
        """Look something up, asynchronously."""
        return f"found {query}"

    async def sync_run_inside_a_loop() -> Any:
        agent = ExplicitReActAgent(ScriptedChatModel([action("asearch", "Paris"), final("ok")]), [asearch])
        return agent.run("q")

    result = asyncio.run(sync_run_inside_a_loop())
    assert result.steps[0].observation == "found Paris"
    assert result.stop_reason is StopReason.SUCCESS


class _Veto(BaseCallbackHandler):
    """A human-approval style handler: ``raise_error`` makes LangChain re-raise what it raises."""

    raise_error = True

    def __init__(self, event: str) -> None:
        self.event = event

    def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        if self.event == "tool":
            raise PermissionError("the reviewer rejected this tool call")

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        if self.event == "model":
            raise PermissionError("the reviewer rejected this model call")


@pytest.mark.parametrize("event", ["tool", "model"])
@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_raise_error_handler_stops_the_run_with_its_exception(event: str, asynchronous: bool) -> None:
    ran: list[str] = []

    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        ran.append(query)
        return "x"

    model = ScriptedChatModel([action("lookup", "a"), final("done")])
    agent = ExplicitReActAgent(model, [lookup], max_retries=2)
    config = {"callbacks": [_Veto(event)]}
    with pytest.raises(PermissionError, match="rejected"):  # a tool_error step or llm_error before
        if asynchronous:
            asyncio.run(agent.arun("q", config=config))
        else:
            agent.run("q", config=config)
    assert ran == []
    assert len(model.calls) == (0 if event == "model" else 1)  # no retry of a vetoed model call


def test_a_raise_error_handler_stops_the_compat_executor_as_it_stops_the_classic() -> None:
    from langchain_classic.agents import AgentExecutor as ClassicExecutor
    from langchain_classic.agents import create_react_agent as classic_create

    from tests.test_compat_classic_api import PROMPT

    for executor_class, create in ((AgentExecutor, create_react_agent), (ClassicExecutor, classic_create)):
        model = ScriptedChatModel(["Thought: t\nAction: search\nAction Input: x", "Final Answer: done"])
        agent = create(model, [search], PROMPT)
        executor = executor_class(agent=agent, tools=[search])
        with pytest.raises(PermissionError, match="rejected this tool call"):
            executor.invoke({"input": "q"}, config={"callbacks": [_Veto("tool")]})


def test_a_tool_output_whose_text_cannot_be_read_is_an_observation(tmp_path: Any) -> None:
    class Opaque:
        def __str__(self) -> str:
            raise RuntimeError("no text")

        __repr__ = __str__

    @tool
    def fetch(query: str) -> Any:
        """Fetch an object."""
        return Opaque()

    model = ScriptedChatModel([action("fetch", "x"), final("no")])
    result = ExplicitReActAgent(model, [fetch], trace_path=tmp_path / "t.jsonl").run("q")  # raised before
    assert result.stop_reason is StopReason.SUCCESS
    assert (
        result.steps[0].observation
        == "(a Opaque that cannot be shown as text: its str() raised RuntimeError)"
    )


def test_a_tools_own_strict_handler_is_an_observation_not_a_veto() -> None:
    class InnerGuard(BaseCallbackHandler):
        raise_error = True

        def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("inner budget exceeded")

    from langchain_core.runnables import RunnableLambda

    @tool
    def guarded(query: str) -> str:
        """Runs a chain of its own, with its own strict handler."""
        return RunnableLambda(lambda x: x).invoke(query, {"callbacks": [InnerGuard()]})

    result = ExplicitReActAgent(ScriptedChatModel([action("guarded", "x"), final("no")]), [guarded]).run("q")
    assert result.stop_reason is StopReason.SUCCESS  # the run raised RuntimeError before
    assert result.steps[0].observation == "Error: tool 'guarded' failed: RuntimeError: inner budget exceeded"


def test_ctrl_c_reaches_a_sync_run_inside_a_loop_while_an_async_only_tool_runs() -> None:
    # A notebook: its loop runs, and Ctrl-C raises KeyboardInterrupt in the main thread (SIGALRM here).
    done: list[bool] = []
    interrupted: list[bool] = []

    @tool
    async def slow(query: str) -> str:
        """Take a while."""
        await asyncio.sleep(3)
        done.append(True)
        return "late"

    def interrupt(*_: Any) -> None:
        raise KeyboardInterrupt

    async def sync_run_inside_a_loop() -> None:
        agent = ExplicitReActAgent(ScriptedChatModel([action("slow", "x"), final("ok")]), [slow])
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        try:
            agent.run("q")
        except KeyboardInterrupt:
            interrupted.append(not done)  # before, the interrupt waited for the tool's end

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        asyncio.run(sync_run_inside_a_loop())
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert interrupted == [True]
