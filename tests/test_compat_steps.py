"""What the compat executor records and reports for a step: the steps a time limit cut short, the
log of a parse error whose exception carries no model text, a content_and_artifact tool's events."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_classic.agents import AgentExecutor as ClassicExecutor
from langchain_classic.agents import create_react_agent as classic_create_react_agent
from langchain_core.agents import AgentAction, AgentFinish
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool, tool

from explicit_react import AgentExecutor, StopReason, create_react_agent
from explicit_react.testing import ScriptedChatModel
from tests.helpers import action, final
from tests.test_compat import HUB_REACT_PROMPT

# --- a time limit that cuts a step of several actions keeps the finished ones -------------------


@tool
def fast(query: str) -> str:
    """Answer at once."""
    return f"fast:{query}"


@pytest.fixture
def hanging() -> Iterator[BaseTool]:
    """A tool that waits until the test is over (the time limit cuts it)."""
    released = threading.Event()

    @tool
    def hang(query: str) -> str:
        """Wait."""
        released.wait()
        return f"hang:{query}"

    yield hang
    released.set()


def two_actions(inputs: dict[str, Any]) -> list[AgentAction] | AgentFinish:
    if not inputs["intermediate_steps"]:
        return [AgentAction("fast", "a", "log a"), AgentAction("hang", "b", "log b")]
    return AgentFinish({"output": "done"}, "")


def run(executor: AgentExecutor, mode: str) -> tuple[dict[str, Any], list[Any]]:
    """The final output and the steps streamed (or iterated) on the way."""
    if mode == "invoke":
        return executor.invoke({"input": "q"}), []
    if mode == "ainvoke":
        return asyncio.run(executor.ainvoke({"input": "q"})), []
    chunks = list(executor.stream({"input": "q"}) if mode == "stream" else executor.iter({"input": "q"}))
    streamed = [step for chunk in chunks for step in chunk.get("steps", chunk.get("intermediate_step", []))]
    return chunks[-1], streamed


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "stream", "iter"])
def test_a_time_limit_keeps_the_actions_of_its_step_that_finished(mode: str, hanging: BaseTool) -> None:
    executor = AgentExecutor(
        agent=RunnableLambda(two_actions),
        tools=[fast, hanging],
        max_execution_time=1.0,
        return_intermediate_steps=True,
    )
    output, streamed = run(executor, mode)
    assert executor.last_stop_reason is StopReason.MAX_SECONDS
    steps = output["intermediate_steps"]
    assert [(a.tool, observation) for a, observation in steps] == [("fast", "fast:a")]
    if mode == "stream":
        assert [(s.action.tool, s.observation) for s in streamed] == [("fast", "fast:a")]
    if mode == "iter":
        assert [(a.tool, observation) for a, observation in streamed] == [("fast", "fast:a")]


# --- a parse error's log when the exception holds no model output --------------------------------


@tool
def search(query: str) -> str:
    """Look up a fact."""
    return f"found {query}"


BOTH = "I will search.\nAction: search\nAction Input: x\nFinal Answer: y"
"""A reply langchain_classic's own ReAct parser refuses with no ``llm_output`` in its exception."""


@pytest.mark.parametrize("handler", [True, "Reply with an action or a final answer."])
def test_a_parse_errors_log_is_the_exception_text_when_it_holds_no_model_output(handler: Any) -> None:
    results, prompts = [], []
    for executor_type in (ClassicExecutor, AgentExecutor):
        llm = ScriptedChatModel([BOTH, final("ok")], ignore_stop=True)
        agent = classic_create_react_agent(llm, [search], HUB_REACT_PROMPT)
        executor = executor_type(
            agent=agent, tools=[search], handle_parsing_errors=handler, return_intermediate_steps=True
        )
        results.append(executor.invoke({"input": "q"})["intermediate_steps"])
        prompts.append(llm.calls[1].prompt)
    (theirs,), (mine,) = results
    assert mine[0].tool == "_Exception" and BOTH in mine[0].log
    assert mine[0].log == theirs[0].log and mine[1] == theirs[1]
    assert prompts[0] == prompts[1]


# --- a content_and_artifact tool: callbacks and verbose output see its content --------------------


@tool(response_format="content_and_artifact")
def chart(query: str) -> tuple[str, dict[str, list[int]]]:
    """A chart and its data."""
    return f"content for {query}", {"rows": [1, 2, 3]}


class ToolEnds(BaseCallbackHandler):
    def __init__(self) -> None:
        self.outputs: list[Any] = []

    def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        self.outputs.append(output)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_content_and_artifact_tools_end_event_and_verbose_output_are_its_content(
    mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = []
    for executor_type, create in (
        (ClassicExecutor, classic_create_react_agent),
        (AgentExecutor, create_react_agent),
    ):
        llm = ScriptedChatModel([action("chart", "foo"), final("done")])
        executor = executor_type(
            agent=create(llm, [chart], HUB_REACT_PROMPT),
            tools=[chart],
            verbose=True,
            return_intermediate_steps=True,
        )
        ends = ToolEnds()
        config: Any = {"callbacks": [ends]}
        result = (
            executor.invoke({"input": "q"}, config)
            if mode == "sync"
            else asyncio.run(executor.ainvoke({"input": "q"}, config))
        )
        seen.append((ends.outputs, result["intermediate_steps"][0][1], capsys.readouterr().out))
    (their_ends, their_step, their_out), (my_ends, my_step, my_out) = seen
    assert my_ends == their_ends == ["content for foo"]
    assert my_step == their_step == "content for foo"
    assert "content for foo" in their_out
    assert "content for foo" in my_out and "tool_call_id" not in my_out and "artifact" not in my_out
