"""mode="two_phase" (seed 000): a free-text Thought call, then a native function-calling call."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage

from explicit_react import ConfigurationError, ExplicitReActAgent, StopReason
from explicit_react.models import load_model
from explicit_react.testing import ScriptedChatModel
from tests.helpers import search
from tests.test_gemini import API_KEY, FakeGemini


def call(name: str, **args: Any) -> AIMessage:
    """An act-phase reply with one tool call."""
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": f"c_{name}", "type": "tool_call"}]
    )


def test_each_turn_is_a_thought_call_then_an_act_call() -> None:
    model = ScriptedChatModel(
        [
            "I need the population of Paris; the search tool can look it up.",
            call("search", query="population of Paris"),
            "The search says 2100000, so I can answer now.",
            "About 2.1 million people live in Paris.",
        ]
    )
    result = ExplicitReActAgent(model, [search], mode="two_phase").run("How many people live in Paris?")
    assert result.stop_reason is StopReason.SUCCESS
    assert result.answer == "About 2.1 million people live in Paris."
    step = result.steps[0]
    assert step.thought == "I need the population of Paris; the search tool can look it up."
    assert (step.action, step.action_input, step.observation) == (
        "search",
        {"query": "population of Paris"},
        "2100000",
    )
    assert result.llm_calls == 2 and len(model.calls) == 4
    thought_prompt, act_prompt, second_thought, _ = (c.messages for c in model.calls)
    assert "- search: Look up a fact." in thought_prompt[0].content  # tools described to the thinker
    assert "How many people live in Paris?" in thought_prompt[0].content
    assert "Your thought about the next step: I need the population" in act_prompt[-1].content
    assert "Observation: 2100000" in second_thought[0].content  # the transcript so far
    model.assert_all_used()


def test_an_empty_act_is_feedback_not_the_thought_as_an_answer() -> None:
    model = ScriptedChatModel(
        [
            "I should look up the population of Paris with search.",
            "",  # the act call neither calls a tool nor answers
            "I still need the population; I will answer from what I know.",
            "About 2.1 million people.",
        ]
    )
    result = ExplicitReActAgent(model, [search], mode="two_phase").run("How many people live in Paris?")
    assert result.answer == "About 2.1 million people."
    (step,) = result.steps
    assert step.error == "parse_error" and step.observation.startswith(
        "Error: after your thought you neither"
    )
    assert step.log == "I should look up the population of Paris with search."
    assert "\x1e" not in model.calls[2].messages[0].content  # the next thought sees the clean transcript
    model.assert_all_used()


def test_the_answer_at_the_limit_is_one_tool_free_call() -> None:
    model = ScriptedChatModel(
        [
            "Search first.",
            call("search", query="population of France"),
            "Paris has about 68 million? No: France does.",
        ]
    )
    agent = ExplicitReActAgent(model, [search], mode="two_phase", max_iterations=1)
    result = agent.run("How many people live in France?")
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert result.answer == "Paris has about 68 million? No: France does."
    assert result.steps[0].observation == "68000000"
    assert len(model.calls) == 3  # thought, act, then the answer at the limit


def test_budgets_and_stop_reasons_are_the_loops() -> None:
    replies: list[Any] = []
    for _ in range(3):  # the same call three times: refused once, then the run stops
        replies += ["Search again.", call("search", query="population of Paris")]
    model = ScriptedChatModel([*replies, "Stop."])
    result = ExplicitReActAgent(model, [search], mode="two_phase", max_iterations=5).run("q")
    assert result.stop_reason is StopReason.LOOP_DETECTED
    assert [s.error for s in result.steps][:2] == [None, "repeated_call"]
    assert result.answer == "Stop."  # the answer at the limit
    model.assert_all_used()


def test_usage_counts_both_calls() -> None:
    model = ScriptedChatModel(["Thinking about it.", "Answer."], report_usage=True)
    result = ExplicitReActAgent(model, [search], mode="two_phase").run("q")
    assert result.answer == "Answer." and result.usage.total_tokens > 0
    assert result.usage.output_tokens == 3 + 1  # "Thinking about it." and "Answer."


def test_async_runs_the_same_two_calls() -> None:
    model = ScriptedChatModel(
        ["Look it up.", call("search", query="population of Paris"), "Done.", "2.1 million."]
    )
    result = asyncio.run(ExplicitReActAgent(model, [search], mode="two_phase").arun("Paris?"))
    assert result.answer == "2.1 million." and result.steps[0].observation == "2100000"


def test_a_model_without_function_calling_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="native tool calling"):
        ExplicitReActAgent(lambda messages: "x", [search], mode="two_phase")


def test_two_phase_over_the_real_gemini_client(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeGemini(
        [
            [{"text": "I should search for the population of Paris."}],
            [{"functionCall": {"name": "search", "args": {"query": "population of Paris"}}}],
            [{"text": "The search returned 2100000; I can answer."}],
            [{"text": "About 2.1 million people live in Paris."}],
        ]
    )
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)
    llm = load_model("gemini-2.5-flash", client_args={"transport": httpx.MockTransport(fake)}, max_retries=1)
    result = ExplicitReActAgent(llm, [search], mode="two_phase").run("How many people live in Paris?")
    assert result.stop_reason is StopReason.SUCCESS
    assert result.answer == "About 2.1 million people live in Paris."
    assert result.steps[0].thought == "I should search for the population of Paris."
    assert result.usage.total_tokens == 4 * 120
    thought_request, act_request, _, _ = fake.requests
    assert "tools" not in thought_request  # the thought call has no functions to call
    assert [d["name"] for d in act_request["tools"][0]["functionDeclarations"]] == ["search"]
    assert "I should search" in json.dumps(act_request["contents"])
    assert "Observation: 2100000" in json.dumps(fake.requests[2]["contents"])
