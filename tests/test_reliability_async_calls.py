"""Async calls under the sync entry points: an ``async def`` model is awaited, and an async call that
runs past its timeout (or the run's ``max_seconds``) is cancelled, as it is under ``arun``."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from langchain_core.tools import tool

from explicit_react import ExplicitReActAgent, StopReason
from explicit_react.errors import ModelCallError
from explicit_react.llm import ModelAdapter
from explicit_react.testing import ScriptedChatModel
from tests.helpers import action, final, search


async def async_model(messages: list[dict[str, str]]) -> str:
    await asyncio.sleep(0)
    return final("async answer") if "Observation" in messages[-1]["content"] else action("search", "x")


@pytest.mark.parametrize("llm_timeout", [None, 5.0])
def test_an_async_callable_model_is_awaited_by_every_sync_entry_point(llm_timeout: float | None) -> None:
    agent = ExplicitReActAgent(async_model, [search], llm_timeout=llm_timeout)
    result = agent.run("q")
    assert result.stop_reason is StopReason.SUCCESS and result.answer == "async answer"
    assert [step.error for step in result.steps] == [None]
    *steps, last = list(agent.stream("q"))
    assert len(steps) == 1 and last.answer == "async answer"  # type: ignore[union-attr]
    assert agent.invoke("q")["output"] == "async answer"
    assert [output["output"] for output in agent.batch(["q", "q"])] == ["async answer"] * 2
    assert agent.think("q").text == action("search", "x")
    assert asyncio.run(agent.arun("q")).answer == "async answer"


def test_an_async_callable_model_that_returns_through_a_sync_wrapper_is_awaited_too() -> None:
    """A plain callable that returns a coroutine (not itself ``async def``) is awaited both ways."""

    def wrapped(messages: list[dict[str, str]]) -> Any:
        return async_model(messages)

    for llm_timeout in (None, 5.0):
        agent = ExplicitReActAgent(wrapped, [search], llm_timeout=llm_timeout)
        assert agent.run("q").answer == "async answer"
        assert asyncio.run(agent.arun("q")).answer == "async answer"


class _Slow:
    """An async call that sleeps ``seconds`` then has a side effect; records how it ended, and the
    event loop it ran on."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.effects: list[str] = []
        self.ended: list[str] = []
        self.loops: list[asyncio.AbstractEventLoop] = []
        self.finished = threading.Event()

    async def __call__(self, effect: str) -> str:
        self.loops.append(asyncio.get_running_loop())
        try:
            await asyncio.sleep(self.seconds)
            self.effects.append(effect)
            self.ended.append("returned")
            return effect
        except asyncio.CancelledError:
            self.ended.append("cancelled")
            raise
        finally:
            self.finished.set()

    def check_cancelled(self) -> None:
        """The call was cancelled, never had its side effect, and its thread's event loop closed (the
        thread is done with it)."""
        assert self.finished.wait(2), "the call was never cancelled"
        assert self.ended == ["cancelled"]
        time.sleep(self.seconds + 0.3)  # past the call's own sleep
        assert self.effects == []
        assert len(self.loops) == 1
        ends = time.monotonic() + 2
        while not self.loops[0].is_closed() and time.monotonic() < ends:
            time.sleep(0.01)
        assert self.loops[0].is_closed(), "the call's thread is still running its event loop"


@pytest.mark.parametrize("limit", ["llm_timeout", "max_seconds"])
def test_an_async_callable_model_that_times_out_under_run_is_cancelled(limit: str) -> None:
    slow = _Slow(1.5)

    async def model(messages: list[dict[str, str]]) -> str:
        return await slow(final("late"))

    agent = ExplicitReActAgent(model, [search], max_retries=0, **{limit: 0.2})  # type: ignore[arg-type]
    began = time.monotonic()
    result = agent.run("q")
    assert time.monotonic() - began < 1.2
    expected = StopReason.LLM_ERROR if limit == "llm_timeout" else StopReason.MAX_SECONDS
    assert result.stop_reason is expected and not result.success
    slow.check_cancelled()


def test_an_async_callable_models_timeout_covers_awaiting_its_reply() -> None:
    slow = _Slow(1.5)
    adapter = ModelAdapter(lambda messages: slow(final("late")), timeout=0.2, max_retries=0)
    began = time.monotonic()
    with pytest.raises(ModelCallError, match="timed out"):
        adapter.complete([{"role": "user", "content": "q"}])
    assert time.monotonic() - began < 1.2
    slow.check_cancelled()


@pytest.mark.parametrize("limit", ["tool_timeout", "max_seconds"])
def test_an_async_tool_that_runs_past_its_time_under_run_is_cancelled(limit: str) -> None:
    slow = _Slow(1.5)

    @tool
    async def send_later(to: str) -> str:
        """Send an email after a slow lookup."""
        return await slow(to)

    model = ScriptedChatModel([action("send_later", "bob"), final("gave up")])
    agent = ExplicitReActAgent(model, [send_later], **{limit: 0.3})  # type: ignore[arg-type]
    began = time.monotonic()
    result = agent.run("q")
    assert time.monotonic() - began < 1.2
    assert result.steps[0].error == "tool_timeout"
    slow.check_cancelled()
