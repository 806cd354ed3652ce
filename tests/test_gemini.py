"""The agent over the real ChatGoogleGenerativeAI class, with only the HTTP transport replaced.

Everything between the agent and the wire is the real client: request building, stop sequences,
thinking parts, usage metadata and function calls. The fake transport answers like the Gemini
REST API and records every request.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from explicit_react import ExplicitReActAgent, StopReason
from explicit_react.models import load_model
from tests.helpers import search

API_KEY = "AIza-fake-key-for-tests-0123456789"


class FakeGemini:
    """An httpx transport that replies to generateContent from a list of candidate parts."""

    def __init__(self, replies: list[list[dict[str, Any]]]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[httpx.Headers] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(json.loads(request.content))
        self.headers.append(request.headers)
        parts = self.replies.pop(0)
        body = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
        }
        return httpx.Response(200, json=body)


def gemini(fake: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)
    return load_model("gemini-2.5-flash", client_args={"transport": httpx.MockTransport(fake)}, max_retries=1)


def test_text_protocol_over_the_real_gemini_client(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeGemini(
        [
            [
                {"text": "Let me plan this carefully.", "thought": True},
                {"text": "Thought: I need Paris.\nAction: search\nAction Input: population of Paris"},
            ],
            [{"text": "Thought: I know it.\nFinal Answer: About 2.1 million people."}],
        ]
    )
    result = ExplicitReActAgent(gemini(fake, monkeypatch), [search]).run("How many people live in Paris?")
    assert result.stop_reason is StopReason.SUCCESS
    assert result.answer == "About 2.1 million people."
    assert result.steps[0].observation == "2100000"
    assert "Let me plan" not in result.steps[0].log  # the thinking part is not the reply
    assert result.usage.total_tokens == 240
    request = fake.requests[0]
    assert request["generationConfig"]["stopSequences"] == ["\nObservation:"]
    sent = json.dumps(fake.requests)
    assert API_KEY not in sent  # the key is a header, never in the prompt
    assert fake.headers[0]["x-goog-api-key"] == API_KEY
    assert "Observation: 2100000" in json.dumps(fake.requests[1])


def test_native_tool_calling_over_the_real_gemini_client(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeGemini(
        [
            [{"functionCall": {"name": "search", "args": {"query": "population of Paris"}}}],
            [{"text": "About 2.1 million people live in Paris."}],
        ]
    )
    agent = ExplicitReActAgent(gemini(fake, monkeypatch), [search], mode="tool_calling")
    result = agent.run("How many people live in Paris?")
    assert result.stop_reason is StopReason.SUCCESS
    assert result.answer == "About 2.1 million people live in Paris."
    assert (result.steps[0].action, result.steps[0].action_input) == (
        "search",
        {"query": "population of Paris"},
    )
    declarations = fake.requests[0]["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["search"]
    history = fake.requests[1]["contents"]
    assert any("functionResponse" in part for content in history for part in content["parts"])
