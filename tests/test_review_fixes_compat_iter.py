"""Defects a review of the drop-in AgentExecutor's iterator and options found, each with the case that showed it.

1. A subclass overriding the classic executor's private steps (``_perform_agent_action`` to ask a
   human to approve each call, ``_should_continue``) was silently ignored: the denied tool ran.
   Such a subclass is now refused when it is defined, naming what would be ignored.
2. An empty model reply put LangChain's troubleshooting text into the scratchpad as the model's turn.
3. ``iter()`` told the final output from stream chunks by its keys: an agent finishing with a
   ``steps`` key crashed (``TypeError: 'int' object is not iterable``), one with ``actions`` lost
   its final output.
4. ``AgentExecutorIterator.make_final_outputs`` was never called, so an override changed nothing;
   such a subclass is refused too.
5. A negative ``max_execution_time`` was accepted and every run then raised.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.agents import AgentAction, AgentFinish, AgentStep
from langchain_core.runnables import RunnableLambda

from explicit_react import AgentExecutor, create_react_agent
from explicit_react.classic_iterator import AgentExecutorIterator
from explicit_react.testing import ScriptedChatModel
from tests.helpers import final
from tests.test_compat_differences import PROMPT, TOOLS, search


@pytest.mark.parametrize(
    "method", ["_perform_agent_action", "_should_continue", "_take_next_step", "_aperform_agent_action"]
)
def test_a_subclass_overriding_a_step_the_run_never_calls_is_refused(method: str) -> None:
    with pytest.raises(
        TypeError, match=f"overrides {method}, which explicit_react's AgentExecutor never calls"
    ):
        type("Approving", (AgentExecutor,), {method: lambda self, *args, **kwargs: None})


def test_an_override_from_a_mixin_is_refused_too() -> None:
    class Approval:
        def _perform_agent_action(self, *args: Any, **kwargs: Any) -> Any:
            raise PermissionError("human said no")

    with pytest.raises(TypeError, match="overrides _perform_agent_action"):
        type("ViaMixin", (Approval, AgentExecutor), {})


def test_a_subclass_overriding_other_methods_is_fine() -> None:
    class Named(AgentExecutor):
        def get_name(self, *args: Any, **kwargs: Any) -> str:
            return "named"

    executor = Named(agent=create_react_agent(ScriptedChatModel([final("ok")]), TOOLS, PROMPT), tools=TOOLS)
    assert executor.invoke({"input": "q"})["output"] == "ok"


def test_an_empty_reply_is_logged_as_it_was() -> None:
    model = ScriptedChatModel(["", final("meow")])
    executor = AgentExecutor(
        agent=create_react_agent(model, TOOLS, PROMPT), tools=TOOLS, handle_parsing_errors=True,
        return_intermediate_steps=True,
    )  # fmt: skip
    result = executor.invoke({"input": "q"})
    [(step, _)] = result["intermediate_steps"]
    assert (step.tool, step.log) == ("_Exception", "")
    scratchpad = model.calls[1].messages[-1].content
    assert "troubleshooting" not in scratchpad and "Could not parse" not in scratchpad


def finishing_with(return_values: dict[str, Any]) -> AgentExecutor:
    def plan(inputs: dict[str, Any]) -> Any:
        if not inputs["intermediate_steps"]:
            return AgentAction("search", "x", "Action: search\nAction Input: x")
        return AgentFinish(return_values, "fin")

    return AgentExecutor(agent=RunnableLambda(plan), tools=[search])


@pytest.mark.parametrize("extra", [{"steps": 3}, {"actions": ["a"]}, {"intermediate_step": "mine"}])
def test_iter_gives_the_final_output_whatever_its_keys(extra: dict[str, Any]) -> None:
    values = {"output": "o", **extra}
    chunks = list(finishing_with(values).iter({"input": "q"}))
    assert [list(chunk) for chunk in chunks[:-1]] == [["intermediate_step"]]
    assert {k: chunks[-1][k] for k in values} == values

    async def collect() -> list[Any]:
        return [chunk async for chunk in finishing_with(values).iter({"input": "q"})]

    assert {k: asyncio.run(collect())[-1][k] for k in values} == values


def test_iter_counts_the_last_iteration_as_before() -> None:
    iterator = finishing_with({"output": "o"}).iter({"input": "q"})
    list(iterator)
    assert iterator.iterations == 2 and len(iterator.intermediate_steps) == 1
    assert isinstance(iterator.intermediate_steps[0][0], AgentAction) and not isinstance(
        iterator.intermediate_steps[0], AgentStep
    )


def test_an_iterator_subclass_overriding_make_final_outputs_is_refused() -> None:
    with pytest.raises(TypeError, match="overrides make_final_outputs"):
        type(
            "Counting",
            (AgentExecutorIterator,),
            {"make_final_outputs": lambda self, outputs, manager: outputs},
        )


@pytest.mark.parametrize("seconds", [-1, -0.5, "-3"])
def test_a_negative_time_limit_is_refused_at_construction(seconds: Any) -> None:
    with pytest.raises(ValueError, match="max_execution_time must not be negative"):
        AgentExecutor(
            agent=create_react_agent(ScriptedChatModel([]), TOOLS, PROMPT),
            tools=TOOLS,
            max_execution_time=seconds,
        )


def test_an_iterator_override_from_a_mixin_is_refused_too() -> None:
    class Mixin:
        def make_final_outputs(self, outputs: Any, run_manager: Any) -> Any:
            return outputs

    with pytest.raises(TypeError, match="overrides make_final_outputs"):
        type("ViaMixin", (Mixin, AgentExecutorIterator), {})
    type("Plain", (AgentExecutorIterator,), {"reset": AgentExecutorIterator.reset})  # others are fine
