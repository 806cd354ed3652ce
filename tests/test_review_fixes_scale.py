"""Defects a review of the scale-out code found, each with the case that showed it.

1. ``aanswer_all``: a callback handler with ``raise_error=True`` that refused one question's run
   raised out of the whole batch, and every other question's answer was lost.
2. Ctrl-C on a sync ``batch`` gave up its runs, but not a time-limited call inside one: the call's
   own ``abandoned()`` event was new and unlinked, so ``python_repl`` ran its process to its end.
3. ``batch_as_completed``: Ctrl-C while the caller handled a result closed the generator, which
   waited for every run in progress (8 s) before the ``KeyboardInterrupt`` reached the caller.
4. ``answer_on_ray``: once every started worker had died, each chunk left waited a whole grace
   period for a worker that never came up, one after the other.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import tool

from explicit_react import ExplicitReActAgent, GeneralQAAgent
from explicit_react.deadline import abandoned
from explicit_react.scale import aanswer_all, answer_on_ray
from explicit_react.testing import ScriptedChatModel
from tests.helpers import action, final
from tests.test_scale import FakeRay, answer_echo, answers, fake_ray  # noqa: F401 - the fixture


class Veto(BaseCallbackHandler):
    raise_error = True

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        if "forbidden" in str(inputs):
            raise PermissionError("question refused by policy")


def echo_model(messages: list[Any]) -> str:
    question = messages[-1]["content"].rsplit("Question:", 1)[-1].split("\n")[0].strip()
    return final(f"echo {question}")


@pytest.mark.parametrize("kind", ["agent", "qa"])
def test_a_handler_refusing_one_question_costs_only_that_answer(kind: str) -> None:
    agent: Any = ExplicitReActAgent(echo_model, []) if kind == "agent" else GeneralQAAgent(echo_model, [])
    questions = ["q0", "forbidden topic", "q2"]
    records = asyncio.run(aanswer_all(agent, questions, config={"callbacks": [Veto()]}))
    assert [r["answer"] for r in records] == ["echo q0", "", "echo q2"]
    assert [r["success"] for r in records] == [True, False, True]
    assert records[1]["error"] == "PermissionError: question refused by policy"
    assert records[1]["stop_reason"] is None
    if kind == "agent":
        assert records[1]["question"] == "forbidden topic"


def test_ctrl_c_on_a_batch_gives_up_a_time_limited_call_inside_a_run() -> None:
    seen: list[str] = []

    @tool
    def slow(query: str) -> str:
        """Wait for the caller."""
        given_up = abandoned()
        seen.append("given up" if given_up is not None and given_up.wait(6) else "ran to the end")
        return "done"

    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        ExplicitReActAgent(ScriptedChatModel([action("slow", "x")] * 2), [slow], tool_timeout=60).batch(
            ["a", "b"]
        )
    assert time.monotonic() - began < 3
    while len(seen) < 2 and time.monotonic() - began < 5:
        time.sleep(0.01)
    assert seen == ["given up", "given up"]


def test_ctrl_c_while_handling_a_result_of_batch_as_completed_does_not_wait_for_the_others() -> None:
    def model(messages: list[Any]) -> str:
        if "fast" not in messages[-1]["content"]:
            time.sleep(4)
        return final("done")

    agent = ExplicitReActAgent(model, [])
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        for _ in agent.batch_as_completed(["fast", "slow1", "slow2"]):
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
            time.sleep(2)
    assert time.monotonic() - began < 3.5  # before: 4 s, the slow runs waited for


def test_a_break_from_batch_as_completed_gives_up_the_runs_in_progress() -> None:
    def model(messages: list[Any]) -> str:
        if "fast" not in messages[-1]["content"]:
            time.sleep(3)
        return final("done")

    began = time.monotonic()
    for _ in ExplicitReActAgent(model, []).batch_as_completed(["fast", "slow"]):
        break
    assert time.monotonic() - began < 2


def test_when_every_worker_died_the_chunks_left_fail_after_one_grace(
    fake_ray: Callable[..., FakeRay],  # noqa: F811 - the fixture
) -> None:
    ray = fake_ray(cpus=1, first_dies_after=0, room_frees=False)  # the second actor never gets room
    waits: list[float | None] = []
    wait = ray.wait

    def counted(refs: list[Any], *, num_returns: int = 1, timeout: float | None = None) -> Any:
        done, rest = wait(refs, num_returns=num_returns, timeout=timeout)
        if timeout is not None and not done:
            waits.append(timeout)
        return done, rest

    ray.wait = counted  # type: ignore[method-assign]
    with pytest.warns(RuntimeWarning, match="workers=2"):
        records = list(answer_on_ray([f"q{i}" for i in range(10)], answer_echo, workers=2, chunk_size=1))
    assert len(waits) == 1  # before: 8, one per chunk left
    assert answers(records)[2:] == ["RuntimeError: no Ray worker left to answer this question"] * 8
