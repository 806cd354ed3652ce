"""mode="tool_calling": native function calling through bind_tools, with the same steps and stops."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from explicit_react import ConfigurationError, ExplicitReActAgent, StopReason
from explicit_react.testing import ScriptedChatModel
from tests.helpers import search, subtract


def call(name: str, args: dict[str, object], text: str = "", call_id: str = "x") -> AIMessage:
    return AIMessage(content=text, tool_calls=[{"name": name, "args": args, "id": call_id}])


def test_tool_calls_become_steps_and_plain_text_is_the_answer() -> None:
    model = ScriptedChatModel(
        [
            call("search", {"query": "population of France"}, "France first."),
            call("subtract", {"a": 68000000, "b": 2100000}),
            AIMessage(content="65,900,000 more."),
        ]
    )
    result = ExplicitReActAgent(model, [search, subtract], mode="tool_calling").run("France minus Paris?")
    assert result.stop_reason is StopReason.SUCCESS and result.answer == "65,900,000 more."
    assert [(s.action, s.action_input, s.observation) for s in result.steps] == [
        ("search", {"query": "population of France"}, "68000000"),
        ("subtract", {"a": 68000000, "b": 2100000}, "65900000"),
    ]
    assert result.steps[0].thought == "France first."
    assert [t.name for t in model.bound_tools] == ["search", "subtract"]
    assert model.calls[0].stop is None
    replayed = model.calls[2].messages
    assert isinstance(replayed[-1], ToolMessage) and replayed[-1].content == "65900000"
    assert isinstance(replayed[-2], AIMessage) and replayed[-2].tool_calls[0]["name"] == "subtract"
    assert replayed[-1].tool_call_id == replayed[-2].tool_calls[0]["id"]


def test_unknown_tool_and_bad_arguments_are_observations() -> None:
    bad = AIMessage(
        content="", invalid_tool_calls=[{"name": "subtract", "args": "{a: ", "id": "1", "error": "bad json"}]
    )
    model = ScriptedChatModel(
        [call("serch", {"query": "x"}), bad, call("subtract", {"a": 1}), AIMessage(content="gave up")]
    )
    result = ExplicitReActAgent(model, [search, subtract], mode="tool_calling").run("q")
    assert [s.error for s in result.steps] == ["unknown_tool", "parse_error", "invalid_input"]
    assert "Did you mean 'search'?" in result.steps[0].observation
    assert "not valid JSON" in result.steps[1].observation
    assert "'b'" in result.steps[2].observation
    assert result.success


def test_limits_and_forced_answer_work_the_same() -> None:
    model = ScriptedChatModel(
        [call("search", {"query": "population of France"}), AIMessage(content="About 68 million.")]
    )
    result = ExplicitReActAgent(model, [search], mode="tool_calling", max_iterations=1).run("q")
    assert result.stop_reason is StopReason.MAX_ITERATIONS and result.answer == "About 68 million."
    assert "cannot call any more tools" in model.calls[-1].prompt


def test_repeated_tool_calls_are_caught() -> None:
    model = ScriptedChatModel([call("search", {"query": "x"})] * 3 + [AIMessage(content="nothing")])
    result = ExplicitReActAgent(model, [search], mode="tool_calling").run("q")
    assert result.stop_reason is StopReason.LOOP_DETECTED


def test_a_model_without_tool_calling_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="mode='text'"):
        ExplicitReActAgent(lambda messages: "x", [search], mode="tool_calling")
    with pytest.raises(ConfigurationError, match="mode"):
        ExplicitReActAgent(ScriptedChatModel([]), [search], mode="json")  # type: ignore[arg-type]


def test_a_second_tool_call_in_one_reply_is_not_dropped_silently() -> None:
    two_calls = AIMessage(
        content="Both at once.",
        tool_calls=[
            {"name": "search", "args": {"query": "population of France"}, "id": "a"},
            {"name": "search", "args": {"query": "population of Paris"}, "id": "b"},
        ],
    )
    model = ScriptedChatModel([two_calls, AIMessage(content="Done.")])
    result = ExplicitReActAgent(model, [search], mode="tool_calling").run("France and Paris?")
    observation = result.steps[0].observation
    assert observation.startswith("68000000")
    assert (
        "2 tool calls" in observation
        and "only the first" in observation
        and "population of Paris" in observation
    )
    assert "only the first" in str(model.calls[1].messages[-1].content)  # the model is told
