"""The model adapter: stop sequences, the client-side cut, content parts, usage, transient errors."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage

from explicit_react.errors import ConfigurationError, ModelCallError
from explicit_react.llm import ModelAdapter, cut_invented_observation, is_transient, message_text
from explicit_react.testing import ScriptedChatModel

MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello there"}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Action: a\nAction Input: b\nObservation: invented", "Action: a\nAction Input: b"),
        ("Action: a\nAction Input: b\n  observation 1: x", "Action: a\nAction Input: b"),
        ("Action: a\nAction Input: b\n**Observation:** x", "Action: a\nAction Input: b"),
        ("Final Answer: the Observation: line is quoted", "Final Answer: the Observation: line is quoted"),
        ("Observation: at the very start is kept", "Observation: at the very start is kept"),
    ],
)
def test_cut_invented_observation(text: str, expected: str) -> None:
    assert cut_invented_observation(text) == expected


def test_message_text_joins_text_parts_and_drops_thinking() -> None:
    parts = [{"type": "thinking", "thinking": "secret plan"}, {"type": "text", "text": "a"}, "b"]
    assert message_text(parts) == "ab"
    assert message_text(None) == ""


def test_usage_and_stop_are_passed_through() -> None:
    model = ScriptedChatModel(["Final Answer: x\nObservation: y"])
    completion = ModelAdapter(model).complete(MESSAGES)
    assert completion.text == "Final Answer: x"
    assert model.calls[0].stop == ["\nObservation:"]
    assert completion.usage.input_tokens == 3 and completion.usage.output_tokens == 3


def test_usage_metadata_from_the_provider_is_used() -> None:
    reply = AIMessage(
        content="Final Answer: x", usage_metadata={"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}
    )
    assert ModelAdapter(ScriptedChatModel([reply])).complete(MESSAGES).usage.total_tokens == 14


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (ConnectionError("x"), True),
        (TimeoutError("x"), True),
        (type("RateLimitError", (Exception,), {})("429"), True),
        (type("ResourceExhausted", (Exception,), {})("quota"), True),
        (type("HTTPError", (Exception,), {"status_code": 503})("x"), True),
        (type("HTTPError", (Exception,), {"status_code": 400})("x"), False),
        (ValueError("bad"), False),
    ],
)
def test_is_transient(exc: Exception, transient: bool) -> None:
    assert is_transient(exc) is transient


def test_errors_are_wrapped_once_retries_are_spent() -> None:
    adapter = ModelAdapter(ScriptedChatModel([ConnectionError("down")] * 2), max_retries=1, retry_backoff=0)
    with pytest.raises(ModelCallError, match="after 2 attempts: ConnectionError: down"):
        adapter.complete(MESSAGES)


def test_the_backoff_slept_is_the_one_checked_against_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    from explicit_react import llm
    from explicit_react.deadline import Deadline

    draws = iter([0.01, 50.0])  # a second draw would be far past the deadline
    slept: list[float] = []
    monkeypatch.setattr(ModelAdapter, "_delay", lambda self, attempt: next(draws))
    monkeypatch.setattr(llm.time, "sleep", slept.append)
    model = ScriptedChatModel([ConnectionError("blip"), AIMessage(content="Final Answer: ok")])
    completion = ModelAdapter(model, max_retries=1).complete(MESSAGES, deadline=Deadline(30))
    assert completion.text == "Final Answer: ok"
    assert slept == [0.01]


def test_async_callable_models_are_awaited() -> None:
    async def complete(messages: list[dict[str, str]]) -> str:
        return f"Final Answer: {len(messages)}"

    assert asyncio.run(ModelAdapter(complete).acomplete(MESSAGES)).text == "Final Answer: 2"


def test_not_a_model_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        ModelAdapter("gemini")
