"""examples/http_service.py: invoke and step streaming over HTTP, budgets capped, tools allowlisted.

Runs the FastAPI app in-process through its TestClient (httpx) with a scripted model; skipped when
FastAPI is not installed (``pip install explicit-react[serve]``; the ``dev`` extra has it).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="FastAPI is not installed: pip install explicit-react[serve]")
pytest.importorskip("httpx_sse", reason="the test reads the event stream with httpx-sse")

from fastapi.testclient import TestClient
from httpx_sse import connect_sse

from explicit_react import Step
from explicit_react.testing import ScriptedChatModel
from tests.helpers import DiskFull, action, final, search, subtract

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "http_service.py"
_spec = importlib.util.spec_from_file_location("http_service", EXAMPLE)
assert _spec is not None and _spec.loader is not None
http_service = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(http_service)


def client_for(model: ScriptedChatModel, **caps: Any) -> TestClient:
    return TestClient(http_service.create_app(model, [search, subtract], **caps))


def events(client: TestClient, body: dict[str, Any]) -> list[tuple[str, Any]]:
    with connect_sse(client, "POST", "/stream", json=body) as source:
        assert source.response.headers["content-type"].startswith("text/event-stream")
        return [(event.event, event.json()) for event in source.iter_sse()]


def test_invoke_returns_the_result_with_its_steps() -> None:
    model = ScriptedChatModel([action("search", "population of Paris"), final("2.1 million")])
    reply = client_for(model).post("/invoke", json={"input": "How many live in Paris?"})
    assert reply.status_code == 200
    result = reply.json()
    assert result["answer"] == "2.1 million" and result["stop_reason"] == "success"
    assert [s["observation"] for s in result["steps"]] == ["2100000"]
    assert result["question"] == "How many live in Paris?"
    model.assert_all_used()


def test_stream_sends_each_step_then_the_result() -> None:
    model = ScriptedChatModel(
        [
            action("search", "population of France"),
            action("subtract", '{"a": 68000000, "b": 2100000}'),
            final("65.9 million"),
        ]
    )
    received = events(client_for(model), {"input": "France without Paris?", "context": "2024 figures"})
    assert [kind for kind, _ in received] == ["step", "step", "result"]
    steps = [data for kind, data in received if kind == "step"]
    assert [s["observation"] for s in steps] == ["68000000", "65900000"]
    assert set(Step("t", "a", "i", "o").to_dict()) == set(steps[0])
    result = received[-1][1]
    assert result["answer"] == "65.9 million" and result["steps"] == steps
    assert "2024 figures" in model.calls[0].prompt


def test_a_budget_above_the_cap_is_cut_to_the_cap() -> None:
    keeps_searching = [action("search", f"query {i}") for i in range(2)] + [final("what I have")]
    result = (
        client_for(ScriptedChatModel(keeps_searching), max_iterations=2)
        .post("/invoke", json={"input": "q", "max_iterations": 50})
        .json()
    )
    assert result["stop_reason"] == "max_iterations"
    assert len(result["steps"]) == 2


def test_a_smaller_budget_is_honoured() -> None:
    model = ScriptedChatModel([action("search", "query"), final("what I have")])
    result = (
        client_for(model, max_iterations=5).post("/invoke", json={"input": "q", "max_iterations": 1}).json()
    )
    assert result["stop_reason"] == "max_iterations" and len(result["steps"]) == 1


def test_the_time_cap_holds_whatever_the_request_asks() -> None:
    slow = ScriptedChatModel([final("too late")], delay=5.0)
    result = client_for(slow, max_seconds=0.1).post("/invoke", json={"input": "q", "max_seconds": 100}).json()
    assert result["stop_reason"] == "max_seconds"


def test_a_tool_outside_the_request_allowlist_is_denied() -> None:
    model = ScriptedChatModel([action("subtract", '{"a": 2, "b": 1}')] * 2 + [final("cannot")])
    result = client_for(model).post("/invoke", json={"input": "2 - 1?", "allowed_tools": ["search"]}).json()
    assert result["stop_reason"] == "tool_denied"
    assert result["steps"][0]["error"] == "tool_denied"
    assert "subtract" not in model.calls[0].prompt.split("Question:")[0]  # not offered to the model


@pytest.mark.parametrize(
    "body",
    [
        {"input": "q", "allowed_tools": ["shell"]},
        {"input": "q", "max_iterations": 0},
        {"question": "q"},
        {"input": "   "},
        {"input": "q" * 20_001},
    ],
    ids=["unknown tool", "zero budget", "no input", "blank input", "input too long"],
)
def test_a_bad_request_is_a_422_and_runs_nothing(body: dict[str, Any]) -> None:
    model = ScriptedChatModel([])
    client = client_for(model)
    assert client.post("/invoke", json=body).status_code == 422
    assert client.post("/stream", json=body).status_code == 422
    assert model.calls == []


def test_a_run_that_raises_midstream_ends_with_an_error_event() -> None:
    model = ScriptedChatModel(
        [action("search", "population of France"), action("search", "population of Paris")]
    )
    client = TestClient(http_service.create_app(model, [search], listeners=[DiskFull()]))
    received = events(client, {"input": "q"})
    assert [kind for kind, _ in received] == ["step", "error"]
    assert received[-1][1] == {"error": "OSError: No space left on device"}


def test_the_error_event_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", "sk-service-canary-123456")

    class LeakyListener:
        def on_step(self, step: Step, turn: int, max_turns: int) -> None:
            raise OSError("upload to https://logs.example/?token=sk-service-canary-123456 failed")

    model = ScriptedChatModel([action("search", "population of France"), final("x")])
    client = TestClient(http_service.create_app(model, [search], listeners=[LeakyListener()]))
    assert events(client, {"input": "q"})[-1] == (
        "error",
        {"error": "OSError: upload to https://logs.example/?token=[redacted] failed"},
    )


def test_a_model_failure_raised_by_the_agent_is_a_502_with_a_redacted_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With on_llm_error="raise" the run raises ModelCallError: before, /invoke answered a bare 500."""
    monkeypatch.setenv("SERVICE_API_KEY", "sk-service-canary-123456")
    model = ScriptedChatModel([ConnectionError("upstream refused key sk-service-canary-123456")])
    app = http_service.create_app(model, [search], on_llm_error="raise", max_retries=0)
    reply = TestClient(app).post("/invoke", json={"input": "q"})
    assert reply.status_code == 502
    assert reply.json() == {
        "detail": "the model call failed: ConnectionError: upstream refused key [redacted]"
    }
