"""The run's config reaches the model calls: configurable values, tags and metadata, in every mode."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import ConfigurableField, RunnableConfig, RunnableLambda

from explicit_react import ExplicitReActAgent
from explicit_react.testing import ScriptedChatModel
from tests.helpers import search

CONFIGURED = {"configurable": {"replies": ["Thought: done\nFinal Answer: from the configured model"]}}


@pytest.mark.parametrize("run_async", [False, True])
def test_a_configurable_model_is_configured_by_the_runs_config(run_async: bool) -> None:
    model = ScriptedChatModel(["Final Answer: from the default model"]).configurable_fields(
        replies=ConfigurableField(id="replies")
    )
    agent = ExplicitReActAgent(model, [search])
    call = agent.ainvoke({"input": "q"}, CONFIGURED) if run_async else None
    out = asyncio.run(call) if call is not None else agent.invoke({"input": "q"}, CONFIGURED)
    assert out["output"] == "from the configured model"
    assert agent.invoke({"input": "q"})["output"] == "from the default model"


def test_the_answer_at_a_limit_is_asked_of_the_configured_model() -> None:
    looping = "Thought: look\nAction: search\nAction Input: population of Paris"
    chosen = ScriptedChatModel([looping, "Final Answer: 2.1 million"])
    model = ScriptedChatModel([]).configurable_alternatives(ConfigurableField(id="model"), chosen=chosen)
    config: RunnableConfig = {"configurable": {"model": "chosen"}}
    result = ExplicitReActAgent(model, [search], max_iterations=1).invoke("q", config)
    chosen.assert_all_used()
    assert result["stop_reason"] == "max_iterations" and result["output"] == "2.1 million"


@pytest.mark.parametrize("mode", ["text", "tool_calling", "two_phase"])
def test_every_model_call_sees_the_runs_tags_metadata_and_configurable(mode: str) -> None:
    seen: list[RunnableConfig] = []

    def reply(messages: Any, config: RunnableConfig) -> AIMessage:
        seen.append(config)
        return AIMessage("Final Answer: ok" if mode == "text" else "ok")

    model = RunnableLambda(reply)
    model.bind_tools = lambda tools, **kw: model  # type: ignore[attr-defined]
    config: RunnableConfig = {"tags": ["t"], "metadata": {"user": "ada"}, "configurable": {"k": "v"}}
    ExplicitReActAgent(model, [search], mode=mode).invoke("q", config)  # type: ignore[arg-type]
    assert seen
    for got in seen:
        assert "t" in got["tags"] and got["metadata"]["user"] == "ada" and got["configurable"]["k"] == "v"
