"""aanswer_all: many questions through abatch in one process, one record per question, failures as data."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest
from langchain_core.tools import tool

from explicit_react import AgentResult, ConfigurationError, ExplicitReActAgent, StopReason
from explicit_react.scale import aanswer_all, failure_record
from explicit_react.testing import ScriptedChatModel
from tests.helpers import DiskFull, action, final, search

RESULT_KEYS = set(AgentResult("", [], StopReason.SUCCESS).to_dict())


def test_every_question_gets_its_result_in_order() -> None:
    questions = ["population of France", "population of Paris"]
    # concurrency=1: the scripted replies are used in question order
    model = ScriptedChatModel(
        [action("search", questions[0]), final("68 million"), action("search", questions[1]), final("2.1M")]
    )
    agent = ExplicitReActAgent(model, [search])
    records = asyncio.run(aanswer_all(agent, questions, concurrency=1))
    assert [r["question"] for r in records] == questions
    assert [r["answer"] for r in records] == ["68 million", "2.1M"]
    assert all(set(r) == RESULT_KEYS and r["stop_reason"] == "success" for r in records)
    assert [r["steps"][0]["observation"] for r in records] == ["68000000", "2100000"]
    model.assert_all_used()


def test_runs_overlap_up_to_the_concurrency_and_no_further() -> None:
    in_flight = 0
    peak = 0
    three_at_once = asyncio.Event()

    @tool(return_direct=True)
    async def wait_for_company(item: str) -> str:
        """Wait until three runs are in this tool at the same time."""
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == 3:
            three_at_once.set()
        await asyncio.wait_for(three_at_once.wait(), timeout=10)
        in_flight -= 1
        return f"done {item}"

    model = ScriptedChatModel([action("wait_for_company", "x")] * 7)
    agent = ExplicitReActAgent(model, [wait_for_company])
    records = asyncio.run(aanswer_all(agent, [f"q{i}" for i in range(7)], concurrency=3))
    assert peak == 3
    assert [r["stop_reason"] for r in records] == ["return_direct"] * 7
    assert [r["question"] for r in records] == [f"q{i}" for i in range(7)]


def test_a_question_that_raises_is_a_record_and_the_others_are_answered() -> None:
    model = ScriptedChatModel([final("one"), final("three")])
    agent = ExplicitReActAgent(model, [search])
    questions: list[Any] = ["first", {"input": 2}, "third"]
    records = asyncio.run(aanswer_all(agent, questions, concurrency=1))
    assert [r["answer"] for r in records] == ["one", "", "three"]
    bad = records[1]
    assert set(bad) == RESULT_KEYS
    assert bad["stop_reason"] is None and bad["success"] is False
    assert bad["error"].startswith("ConfigurationError: the question must be a string")
    assert bad["question"] == "2"


def test_a_run_that_raises_midway_keeps_its_steps() -> None:
    model = ScriptedChatModel(
        [action("search", "population of France"), action("search", "population of Paris")]
    )
    agent = ExplicitReActAgent(model, [search], listeners=[DiskFull()])
    [record] = asyncio.run(aanswer_all(agent, ["Paris vs France?"]))
    assert record["error"] == "OSError: No space left on device"
    assert [s["observation"] for s in record["steps"]] == ["68000000"]
    assert record["usage"]["total_tokens"] == record["steps"][0]["usage"]["total_tokens"] > 0
    assert record["llm_calls"] == 1


@pytest.mark.parametrize("concurrency", [0, -1, 1.5, True])
def test_a_concurrency_below_one_is_refused_before_any_question_runs(concurrency: Any) -> None:
    model = ScriptedChatModel([final("ok")])
    agent = ExplicitReActAgent(model, [search])
    with pytest.raises(ConfigurationError, match="concurrency must be a whole number of at least 1"):
        # a semaphore of 0 permits would wait forever: the timeout makes that a failure, not a hang
        asyncio.run(asyncio.wait_for(aanswer_all(agent, ["q"], concurrency=concurrency), timeout=5))
    assert model.calls == []


@pytest.mark.parametrize("questions", ["Why is the sky blue?", b"Why?", {"input": "Why?"}])
def test_one_question_instead_of_a_list_is_refused(questions: Any) -> None:
    model = ScriptedChatModel([final("ok")] * 30)
    agent = ExplicitReActAgent(model, [search])
    with pytest.raises(ConfigurationError, match=r"questions must be a list of questions.*write \["):
        asyncio.run(aanswer_all(agent, questions))
    assert model.calls == []


@pytest.mark.parametrize("questions", [5, None])
def test_questions_that_are_not_a_list_at_all_are_refused(questions: Any) -> None:
    agent = ExplicitReActAgent(ScriptedChatModel([]), [search])
    with pytest.raises(ConfigurationError, match="questions must be a list of questions"):  # TypeError before
        asyncio.run(aanswer_all(agent, questions))


def test_failure_record_names_the_question_of_a_dict() -> None:
    record = failure_record({"input": "What?", "context": "c"}, TimeoutError("slow"))
    assert record["question"] == "What?"
    assert record["error"] == "TimeoutError: slow"
    assert record["steps"] == []


def test_importing_the_module_does_not_import_ray() -> None:
    code = "import sys, explicit_react.scale; print('ray' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
