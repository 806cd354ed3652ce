"""Gemini as ``load_model`` builds it, over the real client class with only the HTTP transport
replaced: one HTTP request per agent attempt, and no retry at all when the server cannot be reached."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest

from explicit_react import ExplicitReActAgent, StopReason
from explicit_react.models import load_model
from tests.helpers import search

API_KEY = "AIza-fake-key-for-tests-0123456789"
QUOTA = {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}


class Transport:
    """Answers every request with ``reply(request)`` and counts them."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.requests = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        return self.reply(request)  # type: ignore[no-any-return]


def gemini(transport: Transport, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Any:
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)
    return load_model(
        "gemini-2.5-flash", client_args={"transport": httpx.MockTransport(transport)}, **options
    )


def test_the_agent_alone_retries_a_rate_limited_gemini_call(monkeypatch: pytest.MonkeyPatch) -> None:
    transport = Transport(lambda request: httpx.Response(429, json=QUOTA))
    agent = ExplicitReActAgent(gemini(transport, monkeypatch), [search], max_retries=1, retry_backoff=0)
    result = agent.run("2+2?")
    assert result.stop_reason is StopReason.LLM_ERROR
    assert transport.requests == 2  # the agent's two attempts, one request each
    assert "after 2 attempts" in str(result.error)


def test_a_max_retries_given_to_load_model_is_the_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    model = gemini(Transport(lambda request: httpx.Response(500)), monkeypatch, max_retries=3)
    assert model.max_retries == 3
    assert gemini(Transport(lambda request: httpx.Response(500)), monkeypatch).max_retries == 1


def _no_network(request: httpx.Request) -> httpx.Response:
    try:
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    except socket.gaierror as lookup:
        raise httpx.ConnectError("[Errno -3] Temporary failure in name resolution") from lookup


def test_gemini_with_no_network_fails_at_once_saying_so(monkeypatch: pytest.MonkeyPatch) -> None:
    transport = Transport(_no_network)
    result = ExplicitReActAgent(gemini(transport, monkeypatch), [search], max_retries=2).run("2+2?")
    assert result.stop_reason is StopReason.LLM_ERROR
    assert transport.requests == 1  # not retried: a lookup that failed fails again a second later
    assert "cannot reach the model's server (no network?): ConnectError" in str(result.error)
    assert API_KEY not in str(result.error)


def test_a_key_given_in_code_is_redacted_like_one_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key is in no variable, so redaction knew nothing of it: a server error that repeats the
    request's key reached the run's error as it was."""
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    key = "AIza-given-in-code-9876543210"

    def echo_key(request: httpx.Request) -> httpx.Response:
        message = f"API key not valid: {request.headers.get('x-goog-api-key')}"
        return httpx.Response(
            400, json={"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
        )

    transport = Transport(echo_key)
    model = load_model(
        "gemini-2.5-flash", google_api_key=key, client_args={"transport": httpx.MockTransport(transport)}
    )
    result = ExplicitReActAgent(model, [search], max_retries=0).run("2+2?")
    assert transport.requests == 1 and result.stop_reason is StopReason.LLM_ERROR
    assert "API key not valid: [redacted]" in str(result.error)
    assert key not in str(result.error)
