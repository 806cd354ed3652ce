"""One question answered as a record: ``AgentResult.to_dict()`` for a run that ended, or a failure record.

A failure record has the result's keys, with ``stop_reason`` ``None``, ``error``
``"ExceptionType: message"`` and the steps the run had completed. A run that ended but whose
listener raised afterwards, in ``on_result``, keeps its result and adds one key, ``listener_error``.
A ``CancelledError`` that leaks out of one run while the batch itself is not being cancelled is
that question's failure. ``scale``'s ``aanswer_all`` and ``answer_on_ray`` give these records.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig

from explicit_react.agent import AgentInput, ExplicitReActAgent
from explicit_react.context import read_input
from explicit_react.redaction import error_message
from explicit_react.types import AgentResult, Step, TokenUsage


async def answer_one(
    agent: ExplicitReActAgent, question: AgentInput, config: RunnableConfig | None = None
) -> dict[str, Any]:
    """One question's record: the result as a dict, or a failure record that keeps the steps done
    (see the module docstring for ``listener_error`` and a leaked ``CancelledError``)."""
    steps: list[Step] = []
    began = time.perf_counter()
    ended = _ResultKeeper()
    error: BaseException
    try:
        async for item in _keeping_result(agent, ended).astream(question, config):  # to its end
            if isinstance(item, AgentResult):
                ended.result = item
            else:
                steps.append(item)
        if ended.result is None:
            raise RuntimeError("the agent's stream ended without a result")
        return ended.result.to_dict()
    except asyncio.CancelledError as exc:
        if _batch_cancelled():
            raise
        error = exc
    except Exception as exc:
        error = exc
    if ended.result is not None:  # the run ended; what raised came after, in a listener
        return {**ended.result.to_dict(), "listener_error": error_text(error)}
    return failure_record(question, error, steps, time.perf_counter() - began)


class _ResultKeeper:
    """A listener that keeps the run's result: put before the agent's own listeners, it has the
    result even when one of them raises in ``on_result``, before the stream could yield it."""

    def __init__(self) -> None:
        self.result: AgentResult | None = None

    def on_result(self, result: AgentResult) -> None:
        self.result = result


def _keeping_result(agent: ExplicitReActAgent, keeper: _ResultKeeper) -> ExplicitReActAgent:
    """``agent``, or a shallow copy of it whose listeners start with ``keeper`` when it has
    listeners (without any, no listener can raise once the result is made: no copy, no extra event)."""
    if not agent.listeners:
        return agent
    keeping = copy.copy(agent)
    keeping.listeners = [keeper, *agent.listeners]
    return keeping


def _batch_cancelled() -> bool:
    """Whether the task running this question is being cancelled (``Task.cancelling``, Python
    3.11+); on 3.10, which cannot tell, every ``CancelledError`` counts as a cancellation."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return cancelling is None or cancelling() > 0


def error_text(exc: BaseException) -> str:
    """``"ExceptionType: message"``, the message with secrets redacted (``redaction.error_message``)."""
    return f"{type(exc).__name__}: {error_message(exc)}"


def failure_record(
    question: Any, exc: BaseException, steps: Sequence[Step] = (), elapsed_seconds: float = 0.0
) -> dict[str, Any]:
    """A record with ``AgentResult.to_dict()``'s keys for a question whose run raised ``exc``.

    ``stop_reason`` is ``None`` (the run did not stop, it failed); usage and ``llm_calls`` count the
    kept steps only, so they are lower bounds."""
    usage = sum((step.usage for step in steps), TokenUsage())
    return {
        "question": _question_text(question),
        "answer": "",
        "success": False,
        "stop_reason": None,
        "error": error_text(exc),
        "steps": [step.to_dict() for step in steps],
        "usage": usage.to_dict(),
        "elapsed_seconds": round(elapsed_seconds, 6),
        "llm_calls": len(steps),
    }


def _question_text(question: Any) -> str:
    """The question as the success path reads it (``read_input``: the last human message of a
    message list or ``{"messages": [...]}`` state); for an input it refuses, its text or repr."""
    try:
        return read_input(question)[0]
    except Exception:
        pass
    if isinstance(question, Mapping):
        question = question.get("input", question.get("question", question))
    return question if isinstance(question, str) else repr(question)
