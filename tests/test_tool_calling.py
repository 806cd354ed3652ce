"""mode="tool_calling": native function calling through bind_tools, with the same steps and stops."""

from __future__ import annotations

from itertools import pairwise

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

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
    assert "could not be run: bad json" in result.steps[1].observation  # the client's reason
    assert "JSON object" in result.steps[1].observation
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


@tool
def fetch(page: str) -> str:
    """Fetch a long page."""
    return f"Page {page}: " + "lorem ipsum dolor sit amet " * 150  # about 4,000 characters


def fetch_run(keep_recent_steps: int | None, steps: int = 7, **options: object) -> ScriptedChatModel:
    replies = [call("fetch", {"page": str(i)}, call_id=f"id{i}") for i in range(steps)]
    model = ScriptedChatModel([*replies, AIMessage(content="done")])
    agent = ExplicitReActAgent(
        model,
        [fetch],
        mode="tool_calling",
        keep_recent_steps=keep_recent_steps,
        **{"max_iterations": steps + 1, **options},  # type: ignore[arg-type]
    )
    assert agent.run("Read every page.").answer == "done"
    return model


def assert_paired(messages: list[BaseMessage]) -> None:
    """Every assistant tool call is answered right after it, and every tool result answers one."""
    for i, message in enumerate(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            answers = [m.tool_call_id for m in messages[i + 1 : i + 1 + len(message.tool_calls)]]
            assert answers == [c["id"] for c in message.tool_calls]
        if isinstance(message, ToolMessage):
            before = messages[i - 1]
            assert isinstance(before, AIMessage) and message.tool_call_id in [
                c["id"] for c in before.tool_calls
            ]


def test_keep_recent_steps_bounds_the_tool_calling_prompt() -> None:
    model = fetch_run(keep_recent_steps=1)
    sizes = [len(c.prompt) for c in model.calls]
    # From the third call on, only one observation is in full; the older steps are one line each.
    growth = [b - a for a, b in pairwise(sizes[2:])]
    assert all(0 <= g < 400 for g in growth), sizes
    assert max(sizes) < sizes[1] + 2000, sizes
    for c in model.calls:
        assert_paired(c.messages)
    last = model.calls[-1].messages
    assert [type(m) for m in last[1:]] == [HumanMessage, AIMessage, ToolMessage]
    summary = str(last[1].content)
    assert summary.startswith("Read every page.")  # the question, then the summary in one message
    assert "Earlier steps, summarised (6 steps):" in summary
    assert '- step 1: fetch({"page": "0"}) -> Page 0: lorem ipsum' in summary
    assert "- step 6: fetch" in summary and "step 7" not in summary
    assert isinstance(last[-2], AIMessage) and last[-2].tool_calls[0]["args"] == {"page": "6"}
    assert str(last[-1].content).startswith("Page 6: ")


def test_keep_recent_steps_none_replays_every_step_in_full() -> None:
    model = fetch_run(keep_recent_steps=None)
    sizes = [len(c.prompt) for c in model.calls]
    assert all(b - a > 4000 for a, b in pairwise(sizes)), sizes
    last = model.calls[-1].messages
    assert_paired(last)
    assert str(last[1].content) == "Read every page."
    tool_results = [m for m in last if isinstance(m, ToolMessage)]
    assert [str(m.content)[:7] for m in tool_results] == [f"Page {i}:" for i in range(7)]
    assert "summarised" not in model.calls[-1].prompt


def test_the_answer_at_a_limit_is_compacted_too_and_tool_results_are_cut() -> None:
    model = fetch_run(keep_recent_steps=2, steps=5, max_iterations=5, max_observation_chars=1000)
    last = model.calls[-1].messages  # the tool-free call at the limit
    assert "cannot call any more tools" in str(last[-1].content)
    assert_paired(last)
    assert sum(isinstance(m, ToolMessage) for m in last) == 2
    assert "Earlier steps, summarised (3 steps):" in str(last[1].content)
    for m in last:
        if isinstance(m, ToolMessage):
            assert len(str(m.content)) < 1100 and "characters cut" in str(m.content)
