"""The scale helpers with a GeneralQAAgent (its answer() dicts), with what they do not take, and without Ray."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from explicit_react import ExplicitReActAgent, GeneralQAAgent
from explicit_react.errors import ConfigurationError
from explicit_react.scale import aanswer_all, answer_on_ray
from explicit_react.testing import ScriptedChatModel
from tests.helpers import DiskFull, action, final, search
from tests.test_scale import FakeRay, answer_echo

QA_KEYS = {"answer", "steps", "success", "detailed_steps", "stop_reason", "error", "usage", "elapsed_seconds"}


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeRay]:
    def install(cpus: float) -> FakeRay:
        ray = FakeRay(cpus)
        monkeypatch.setitem(sys.modules, "ray", ray)
        monkeypatch.setitem(sys.modules, "ray.exceptions", ray.exceptions)
        return ray

    return install


def echo_model(messages: list[Any]) -> str:
    """Answers each question with its text, after one search when the prompt lists knowledge_search."""
    user = messages[-1]["content"]
    question = user.rsplit("Question:", 1)[-1].split("\n")[0].strip()
    if "- knowledge_search:" in messages[0]["content"] and "Observation:" not in user:
        return action("knowledge_search", "code word 7")
    return final(f"echo {question}")


def qa_echo() -> GeneralQAAgent:
    return GeneralQAAgent(echo_model, [search])


def test_aanswer_all_with_a_general_qa_agent_gives_its_answer_dicts() -> None:
    documents = [{"content": f"Fact {i}: the code word {i} is word{i}."} for i in range(12)]
    questions: list[Any] = [
        "q1",
        {"input": "q2", "context": [("user", "hi")]},
        {"query": "q3", "context": documents},  # many documents: searched, as answer() does
    ]
    records = asyncio.run(aanswer_all(qa_echo(), questions, concurrency=2))
    assert [r["answer"] for r in records] == ["echo q1", "echo q2", "echo q3"]
    assert all(set(r) == QA_KEYS and r["success"] for r in records)
    assert records[0]["steps"] == [] and records[2]["detailed_steps"][0]["action"] == "knowledge_search"
    assert "word7" in records[2]["detailed_steps"][0]["observation"]
    assert records[2]["steps"][0].startswith("Step 1: Thought: I need a tool. | Action: knowledge_search(")


def test_a_qa_question_that_fails_is_a_record_of_the_same_keys_with_its_steps() -> None:
    model = ScriptedChatModel(
        [action("search", "population of Paris"), action("search", "population of France")]
    )
    qa = GeneralQAAgent(model, [search], listeners=[DiskFull()])
    bad_context = {"input": "q", "context": [{"role": None, "content": "x"}]}
    failed, refused, unreadable = asyncio.run(aanswer_all(qa, ["q", bad_context, 5], concurrency=1))
    assert set(failed) == QA_KEYS and failed["success"] is False and failed["stop_reason"] is None
    assert failed["error"] == "OSError: No space left on device"
    assert len(failed["detailed_steps"]) == 1 and failed["steps"][0].startswith("Step 1: ")
    assert refused["error"].startswith("ConfigurationError: a chat turn's role must be")
    assert unreadable["error"].startswith("ConfigurationError: a question for a GeneralQAAgent is a string")


@pytest.mark.parametrize("agent", [object(), ScriptedChatModel([]), "agent"])
def test_aanswer_all_refuses_what_is_not_one_of_the_two_agents_up_front(agent: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"ExplicitReActAgent .* or a GeneralQAAgent"):
        asyncio.run(aanswer_all(agent, ["q1", "q2"]))


def test_answer_on_ray_with_a_qa_factory_gives_answer_dicts(fake_ray: Callable[..., FakeRay]) -> None:
    fake_ray(cpus=2)
    records = list(answer_on_ray(["q0", "q1", "q2"], qa_echo, concurrency=1, chunk_size=2))
    assert [r["answer"] for r in records] == ["echo q0", "echo q1", "echo q2"]
    assert all(set(r) == QA_KEYS for r in records)


def test_answer_on_ray_refuses_an_agent_given_as_the_factory(fake_ray: Callable[..., FakeRay]) -> None:
    ray = fake_ray(cpus=2)
    for agent in (answer_echo(), qa_echo()):
        with pytest.raises(ConfigurationError, match="agent_factory must be a function"):
            answer_on_ray(["q"], agent)  # type: ignore[arg-type]
    assert not ray.initialized


def test_a_factory_that_builds_something_else_raises_before_any_question(
    fake_ray: Callable[..., FakeRay],
) -> None:
    ray = fake_ray(cpus=2)
    with pytest.raises(Exception, match=r"ExplicitReActAgent .* or a GeneralQAAgent .*got ScriptedChatModel"):
        list(answer_on_ray(["q"] * 4, lambda: ScriptedChatModel([]), workers=2, chunk_size=1))  # type: ignore[arg-type, return-value]
    assert not any(actor.chunks for actor in ray.actors)


def test_without_ray_answer_on_ray_says_which_extra_to_install_when_called(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what an environment without Ray gives
    for questions in (["q1", "q2"], []):
        with pytest.raises(ConfigurationError, match=r"pip install 'explicit-react\[ray\]'"):
            answer_on_ray(questions, answer_echo)  # raised by the call, not by the first next()


def test_no_question_is_no_record_and_no_ray_start(fake_ray: Callable[..., FakeRay]) -> None:
    ray = fake_ray(cpus=2)
    records: Iterator[dict[str, Any]] = answer_on_ray([], answer_echo)
    assert list(records) == []
    assert not ray.initialized and ray.actors == []


def test_the_plain_agent_still_gives_result_records() -> None:
    [record] = asyncio.run(aanswer_all(answer_echo(), ["q1"]))
    assert record["answer"] == "echo q1" and "question" in record and "detailed_steps" not in record
    assert isinstance(answer_echo(), ExplicitReActAgent)
