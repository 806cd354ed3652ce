"""One question answered as a record: ``AgentResult.to_dict()`` for a run that ended, or a failure record.

A failure record has the result's keys, with ``stop_reason`` ``None``, ``error``
``"ExceptionType: message"`` and the steps the run had completed. A run that ended but whose
listener raised afterwards, in ``on_result``, keeps its result and adds one key, ``listener_error``.
A ``CancelledError`` that leaks out of one run while the batch itself is not being cancelled is
that question's failure. ``scale``'s ``aanswer_all`` and ``answer_on_ray`` give these records.

For a ``GeneralQAAgent`` (``answer_one_qa``) a record is its ``answer()`` dict, and a failure record
has that dict's keys, with ``success`` false, ``stop_reason`` ``None`` and ``error`` as above.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig

from explicit_react.agent import AgentInput, ExplicitReActAgent
from explicit_react.context import read_input
from explicit_react.errors import ConfigurationError
from explicit_react.qa import GeneralQAAgent, response
from explicit_react.redaction import error_message
from explicit_react.types import AgentResult, Step, TokenUsage


async def answer_one(
    agent: ExplicitReActAgent, question: AgentInput, config: RunnableConfig | None = None
) -> dict[str, Any]:
    """One question's record: the result as a dict, or a failure record that keeps the steps done
    (see the module docstring for ``listener_error`` and a leaked ``CancelledError``)."""
    run = await run_one(agent, question, config)
    if run.result is not None:
        return _with_listener_error(run.result.to_dict(), run.error)
    return failure_record(question, run.error or RuntimeError("no result"), run.steps, run.elapsed_seconds)


async def answer_one_qa(
    qa: GeneralQAAgent, question: Any, config: RunnableConfig | None = None
) -> dict[str, Any]:
    """One question's record for a ``GeneralQAAgent``: its ``answer()`` dict, or a failure record of
    the same keys. ``question`` is a string or ``{"input"|"query"|"question": ..., "context"?: ...}``."""
    began = time.perf_counter()
    try:
        query, context = qa_question(question)
        agent, text = qa.prepare(context)
    except Exception as exc:
        return qa_failure(exc, (), time.perf_counter() - began)
    run = await run_one(agent, {"input": query, "context": text}, config)
    if run.result is not None:
        return _with_listener_error(qa.to_response(run.result), run.error)
    return qa_failure(run.error or RuntimeError("no result"), run.steps, run.elapsed_seconds)


def qa_question(question: Any) -> tuple[Any, Any]:
    """The query and the context of one question for a ``GeneralQAAgent``."""
    if isinstance(question, str):
        return question, None
    if isinstance(question, Mapping):
        for key in ("input", "query", "question"):
            if key in question:
                return question[key], question.get("context")
    raise ConfigurationError(
        "a question for a GeneralQAAgent is a string or a dict with its text under 'input' (or"
        f" 'query', 'question') and an optional 'context'; got {type(question).__name__}"
    )


@dataclass
class Run:
    """How one run went: its result (``None`` when it raised first), the steps it completed, what
    raised (in a listener after the result, when both are set) and how long it took."""

    result: AgentResult | None = None
    steps: list[Step] = field(default_factory=list)
    error: BaseException | None = None
    elapsed_seconds: float = 0.0


async def run_one(
    agent: ExplicitReActAgent, question: AgentInput, config: RunnableConfig | None = None
) -> Run:
    """Run ``agent`` on ``question`` to its end, keeping the steps and the result; an exception is
    kept, not raised, except the ``CancelledError`` of a batch being cancelled."""
    run = Run()
    began = time.perf_counter()
    ended = _ResultKeeper()
    try:
        async for item in _keeping_result(agent, ended).astream(question, config):  # to its end
            if isinstance(item, AgentResult):
                ended.result = item
            else:
                run.steps.append(item)
        if ended.result is None:
            raise RuntimeError("the agent's stream ended without a result")
    except asyncio.CancelledError as exc:
        if _batch_cancelled():
            raise
        run.error = exc
    except Exception as exc:
        run.error = exc
    run.result = ended.result  # set, with an error: the run ended; what raised came after, in a listener
    run.elapsed_seconds = time.perf_counter() - began
    return run


def _with_listener_error(record: dict[str, Any], error: BaseException | None) -> dict[str, Any]:
    return record if error is None else {**record, "listener_error": error_text(error)}


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


def qa_failure(
    exc: BaseException, steps: Sequence[Step] = (), elapsed_seconds: float = 0.0
) -> dict[str, Any]:
    """A record with ``GeneralQAAgent.answer()``'s keys for a question whose run raised ``exc``:
    the steps it completed, ``success`` false, ``stop_reason`` ``None``, ``error``."""
    return response(
        "",
        steps,
        success=False,
        stop_reason=None,
        error=error_text(exc),
        usage=sum((step.usage for step in steps), TokenUsage()),
        elapsed_seconds=round(elapsed_seconds, 6),
    )


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
