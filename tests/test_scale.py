"""aanswer_all: many questions through abatch in one process, one record per question, failures as data."""

from __future__ import annotations

import asyncio
import json
import pickle
import subprocess
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool

from explicit_react import AgentResult, ConfigurationError, ExplicitReActAgent, StopReason
from explicit_react.scale import aanswer_all, answer_on_ray, failure_record
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


def test_a_cancelled_error_leaking_from_one_question_is_its_record() -> None:
    # A tool's own CancelledError is its step's error (tests/test_review_loop_fixes.py); one that leaks
    # out of a run (here from the model, as a client that lets an inner task's cancellation out) fails
    # that question alone, though nobody cancelled the batch.
    replies = iter([final("one"), None, final("three")])

    async def model(messages: Any) -> str:
        reply = next(replies)
        if reply is None:
            raise asyncio.CancelledError()
        return reply

    agent = ExplicitReActAgent(RunnableLambda(model), [search])
    records = asyncio.run(aanswer_all(agent, ["first", "second", "third"], concurrency=1))
    assert [r["answer"] for r in records] == ["one", "", "three"]
    assert records[1]["stop_reason"] is None and records[1]["question"] == "second"
    assert records[1]["error"].startswith("CancelledError: ")


def test_cancelling_the_batch_still_cancels_it() -> None:
    entered = asyncio.Event()

    @tool
    async def waits(item: str) -> str:
        """Waits until cancelled."""
        entered.set()
        await asyncio.Event().wait()
        return "never"

    agent = ExplicitReActAgent(ScriptedChatModel([action("waits", "x")] * 2), [waits])

    async def cancel_midway() -> None:
        batch = asyncio.create_task(aanswer_all(agent, ["q1", "q2"], concurrency=2))
        await asyncio.wait_for(entered.wait(), timeout=10)
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch

    asyncio.run(cancel_midway())


class FailsOnResult:
    def __init__(self) -> None:
        self.results: list[AgentResult] = []

    def on_result(self, result: AgentResult) -> None:
        self.results.append(result)
        raise OSError("No space left on device")


def test_a_listener_that_fails_on_the_result_keeps_the_result() -> None:
    before, failing = FailsOnResult(), FailsOnResult()
    before.on_result = before.results.append  # type: ignore[method-assign]  # a listener that works
    listeners = [before, failing]
    agent = ExplicitReActAgent(ScriptedChatModel([final("4"), final("6")]), [search], listeners=listeners)
    records = asyncio.run(aanswer_all(agent, ["What is 2+2?", "What is 3+3?"], concurrency=1))
    assert [r["answer"] for r in records] == ["4", "6"]
    assert all(r["stop_reason"] == "success" and r["success"] and r["error"] is None for r in records)
    assert all(r["listener_error"] == "OSError: No space left on device" for r in records)
    assert set(records[0]) == RESULT_KEYS | {"listener_error"}
    assert [r.answer for r in before.results] == [r.answer for r in failing.results] == ["4", "6"]
    assert agent.listeners == listeners  # the agent itself is left as it was


def test_a_record_without_listener_trouble_has_no_listener_error() -> None:
    agent = ExplicitReActAgent(ScriptedChatModel([final("4")]), [search], listeners=[DiskFull()])
    [record] = asyncio.run(aanswer_all(agent, ["What is 2+2?"]))
    assert set(record) == RESULT_KEYS and record["answer"] == "4"


def test_a_failure_record_names_the_question_of_a_messages_input() -> None:
    question = "Paris vs France?"
    inputs: list[Any] = [
        {"messages": [HumanMessage(question)]},
        [HumanMessage("earlier"), AIMessage("reply"), HumanMessage(question)],
    ]
    steps = [action("search", "population of France"), action("search", "population of Paris")]
    agent = ExplicitReActAgent(ScriptedChatModel(steps * 2), [search], listeners=[DiskFull()])
    records = asyncio.run(aanswer_all(agent, inputs, concurrency=1))
    assert [r["question"] for r in records] == [question, question]
    assert all(r["error"] == "OSError: No space left on device" for r in records)
    json.dumps(records)
    assert failure_record(inputs[0], TimeoutError("slow"))["question"] == question


# answer_on_ray against a fake Ray: the scheduling logic without starting a cluster -------------


class WouldHang(AssertionError):
    """Raised by the fake Ray where the real one would wait forever."""


class FakeRayError(Exception):
    pass


class FakeActorError(FakeRayError):
    pass


def serialize(value: Any, what: str) -> None:
    """Pickle ``value`` as Ray does: its error prints the value and a long report, and its cause says why."""
    try:
        pickle.dumps(value)
    except TypeError as exc:
        raise TypeError(f"Could not serialize the {what} {value!r}:\n(a long report)") from exc


class FakeRef:
    def __init__(self, value: Any = None, error: BaseException | None = None, done: bool = True) -> None:
        self.value, self.error, self.done = value, error, done


class FakeMethod:
    def __init__(self, call: Callable[..., FakeRef]) -> None:
        self.remote = call


class FakeActor:
    """An actor on the fake cluster: placed at once if its CPU fits, else when another one ends."""

    def __init__(self, cluster: FakeRay, worker_class: type, factory: Any, num_cpus: float) -> None:
        self.cluster, self.worker_class, self.factory, self.num_cpus = (
            cluster,
            worker_class,
            factory,
            num_cpus,
        )
        self.worker: Any = None
        self.dead = False
        self.readiness = FakeRef(done=False)
        self.ready = FakeMethod(lambda: self.readiness)
        self.answer = FakeMethod(self._answer)
        self.chunks: list[list[Any]] = []

    def place(self) -> None:
        try:
            self.worker = self.worker_class(self.factory)
        except Exception as exc:
            self.readiness.error = FakeActorError(f"the actor died in its constructor: {exc}")
            self.die()
        self.readiness.done = True

    def die(self) -> None:
        if not self.dead:
            self.dead = True
            self.cluster.ended(self)

    def _answer(self, chunk: list[Any], concurrency: int) -> FakeRef:
        serialize(chunk, "argument")  # Ray pickles the arguments when the call is made
        if self.dead or (
            self is self.cluster.actors[0] and len(self.chunks) == self.cluster.first_dies_after
        ):
            self.die()
            return FakeRef(error=FakeActorError("ActorDiedError: the actor died"))
        self.chunks.append(chunk)
        return FakeRef(asyncio.run(self.worker.answer(chunk, concurrency)))


class FakeRay(types.ModuleType):
    """The part of Ray that ``answer_on_ray`` uses, on a one-node cluster of ``cpus`` CPUs.

    The first actor dies at its chunk number ``first_dies_after`` (0: its first); an actor that ends
    frees its CPU for one still waiting for room, unless ``room_frees`` is false."""

    def __init__(self, cpus: float, first_dies_after: int | None = None, room_frees: bool = True) -> None:
        super().__init__("ray")
        self.cpus, self.first_dies_after, self.room_frees = cpus, first_dies_after, room_frees
        self.actors: list[FakeActor] = []
        self.killed: list[FakeActor] = []
        self.initialized = False
        self.exceptions = types.ModuleType("ray.exceptions")
        self.exceptions.RayError = FakeRayError  # type: ignore[attr-defined]
        self.exceptions.RayActorError = FakeActorError  # type: ignore[attr-defined]

    def is_initialized(self) -> bool:
        return self.initialized

    def init(self, **ignored: Any) -> None:
        self.initialized = True

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": float(self.cpus)}

    def available_resources(self) -> dict[str, float]:
        return {"CPU": float(self.cpus - self.used())}

    def nodes(self) -> list[dict[str, Any]]:
        return [{"Alive": True, "Resources": {"CPU": float(self.cpus), "memory": 1e9}}]

    def used(self) -> float:
        return sum(
            a.num_cpus for a in self.actors if a.readiness.done and (not a.dead or not self.room_frees)
        )

    def remote(self, worker_class: type) -> Any:
        cluster = self

        class Options:
            def __init__(self, num_cpus: float = 1, **ignored: Any) -> None:
                self.num_cpus = num_cpus

            def remote(self, factory: Any) -> FakeActor:
                actor = FakeActor(cluster, worker_class, factory, self.num_cpus)
                cluster.actors.append(actor)
                cluster.place_waiting()
                return actor

        return types.SimpleNamespace(options=lambda **kw: Options(**kw))

    def place_waiting(self) -> None:
        for actor in self.actors:
            if not actor.readiness.done and self.used() + actor.num_cpus <= self.cpus:
                actor.place()

    def ended(self, actor: FakeActor) -> None:
        if self.room_frees:
            self.place_waiting()  # its CPU is free again

    def kill(self, actor: FakeActor) -> None:
        self.killed.append(actor)
        actor.die()

    def put(self, value: Any) -> FakeRef:
        serialize(value, "put value")
        return FakeRef(value)

    def get(self, ref: Any) -> Any:
        if isinstance(ref, list):
            return [self.get(r) for r in ref]
        if not ref.done:
            raise WouldHang("ray.get on an actor that never starts would wait forever")
        if ref.error is not None:
            raise ref.error
        return ref.value

    def wait(
        self, refs: list[FakeRef], *, num_returns: int = 1, timeout: float | None = None
    ) -> tuple[list[FakeRef], list[FakeRef]]:
        done = [r for r in refs if r.done][:num_returns]
        if len(done) < num_returns and timeout is None:
            raise WouldHang(
                f"ray.wait for {num_returns} of refs of which {len(done)} can end would wait forever"
            )
        return done, [r for r in refs if r not in done]


def answer_echo() -> ExplicitReActAgent:
    """An agent that answers every question with its text (through a callable model)."""

    def model(messages: list[Any]) -> str:
        question = messages[-1]["content"].rsplit("Question:", 1)[-1].split("\n")[0].strip()
        return final(f"echo {question}")

    return ExplicitReActAgent(model, [search])


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeRay]:
    def install(cpus: float, first_dies_after: int | None = None, room_frees: bool = True) -> FakeRay:
        ray = FakeRay(cpus, first_dies_after, room_frees)
        monkeypatch.setitem(sys.modules, "ray", ray)
        monkeypatch.setitem(sys.modules, "ray.exceptions", ray.exceptions)
        return ray

    return install


def answers(records: list[dict[str, Any]]) -> list[str]:
    return [r["answer"] or r["error"] for r in records]


def test_the_fake_ray_answers_like_the_real_one(fake_ray: Callable[..., FakeRay]) -> None:
    ray = fake_ray(cpus=2)
    questions = [f"q{i}" for i in range(5)]
    records = list(answer_on_ray(questions, answer_echo, concurrency=1, chunk_size=2))
    assert answers(records) == [f"echo q{i}" for i in range(5)]
    assert len(ray.actors) == 2 and all(a.chunks for a in ray.actors)
    assert ray.killed == ray.actors


def test_more_workers_than_the_cluster_holds_answer_with_those_that_start(
    fake_ray: Callable[..., FakeRay],
) -> None:
    ray = fake_ray(cpus=2)
    questions = [f"q{i}" for i in range(6)]
    with pytest.warns(RuntimeWarning, match=r"workers=3: the cluster holds 2 of them"):
        records = list(answer_on_ray(questions, answer_echo, workers=3, chunk_size=1))
    assert answers(records) == [f"echo q{i}" for i in range(6)]
    started, waiting = ray.actors[:2], ray.actors[2]
    assert all(a.chunks for a in started) and waiting.chunks == []
    assert set(ray.killed) == set(ray.actors)  # the one still waiting for room too


def test_the_default_workers_are_as_many_as_the_cluster_holds(fake_ray: Callable[..., FakeRay]) -> None:
    ray = fake_ray(cpus=2)
    questions = [f"q{i}" for i in range(8)]
    records = list(answer_on_ray(questions, answer_echo, chunk_size=1, actor_options={"num_cpus": 0.5}))
    assert answers(records) == [f"echo {q}" for q in questions]
    assert len(ray.actors) == 4 and all(a.chunks for a in ray.actors)


def test_a_worker_no_node_has_room_for_is_waited_for_with_a_warning(fake_ray: Callable[..., FakeRay]) -> None:
    fake_ray(cpus=2)  # as Ray waits for an autoscaler to add a node that fits; the fake says it would hang
    room = "no node of the cluster has room for one .each asks for CPU 4"
    with pytest.warns(RuntimeWarning, match=room), pytest.raises(WouldHang):
        list(answer_on_ray(["q"], answer_echo, actor_options={"num_cpus": 4}))


def test_a_worker_waiting_for_room_joins_when_one_dies(fake_ray: Callable[..., FakeRay]) -> None:
    ray = fake_ray(cpus=1, first_dies_after=1)
    with pytest.warns(RuntimeWarning, match="workers=2: the cluster holds 1 of them"):
        records = list(answer_on_ray([f"q{i}" for i in range(4)], answer_echo, workers=2, chunk_size=1))
    # the first actor answers q0 and dies at q1 (q2 was queued behind it); the second gets its CPU
    died = "FakeActorError: ActorDiedError: the actor died"
    assert answers(records) == ["echo q0", died, died, "echo q3"]
    assert ray.actors[1].chunks == [["q3"]]


def test_when_every_started_worker_died_one_waiting_for_room_takes_over(
    fake_ray: Callable[..., FakeRay],
) -> None:
    ray = fake_ray(cpus=1, first_dies_after=0)
    with pytest.warns(RuntimeWarning, match="workers=2"):
        records = list(answer_on_ray([f"q{i}" for i in range(4)], answer_echo, workers=2, chunk_size=1))
    died = "FakeActorError: ActorDiedError: the actor died"
    assert answers(records) == [died, died, "echo q2", "echo q3"]
    assert ray.actors[1].chunks == [["q2"], ["q3"]]


def test_when_every_worker_died_and_none_can_start_the_rest_fail(fake_ray: Callable[..., FakeRay]) -> None:
    fake_ray(cpus=1, first_dies_after=0, room_frees=False)  # the second actor never gets room
    with pytest.warns(RuntimeWarning, match="workers=2"):
        records = list(answer_on_ray([f"q{i}" for i in range(4)], answer_echo, workers=2, chunk_size=1))
    assert [r["stop_reason"] for r in records] == [None] * 4
    assert [r["error"].split(":")[0] for r in records] == ["FakeActorError"] * 2 + ["RuntimeError"] * 2
    assert records[3]["error"] == "RuntimeError: no Ray worker left to answer this question"


def test_a_question_that_cannot_be_sent_to_ray_fails_alone(fake_ray: Callable[..., FakeRay]) -> None:
    fake_ray(cpus=2)
    locked = Document(page_content="x", metadata={"lock": threading.Lock()})
    bad = {"input": "q-bad", "context": [locked]}
    questions: list[Any] = ["a", "b", bad, "c", "d", "e"]
    records = list(answer_on_ray(questions, answer_echo, workers=2, chunk_size=2, concurrency=1))
    assert answers(records)[:2] + answers(records)[3:] == ["echo a", "echo b", "echo c", "echo d", "echo e"]
    assert records[2]["question"] == "q-bad" and records[2]["stop_reason"] is None
    assert records[2]["error"].startswith("RaySendError: the question could not be sent to a Ray worker: ")
    assert records[2]["error"].endswith(": TypeError: cannot pickle '_thread.lock' object")


def test_a_factory_that_fails_raises_before_any_question_is_sent_fake(
    fake_ray: Callable[..., FakeRay],
) -> None:
    def broken() -> ExplicitReActAgent:
        raise RuntimeError("no API key on this worker")

    ray = fake_ray(cpus=2)
    with pytest.raises(FakeActorError, match="no API key"):
        list(answer_on_ray(["q"] * 4, broken, workers=2, chunk_size=1))
    assert not any(a.chunks for a in ray.actors)
    assert set(ray.killed) == set(ray.actors)


@pytest.mark.parametrize(
    ("argument", "value", "message"),
    [
        ("workers", 0, "workers must be a whole number of at least 1, or None for"),
        ("workers", -1, "workers must be a whole number of at least 1"),
        ("workers", 2.5, "workers must be a whole number of at least 1"),
        ("workers", True, "workers must be a whole number of at least 1"),
        ("chunk_size", 0, "chunk_size must be a whole number of at least 1, or None for"),
        ("chunk_size", -1, "chunk_size must be a whole number of at least 1"),
        ("chunk_size", 2.5, "chunk_size must be a whole number of at least 1"),
        ("concurrency", 0, "concurrency must be a whole number of at least 1"),
    ],
)
def test_answer_on_ray_refuses_a_bad_count_when_called(
    fake_ray: Callable[..., FakeRay], argument: str, value: Any, message: str
) -> None:
    ray = fake_ray(cpus=2)
    with pytest.raises(ConfigurationError, match=message):
        answer_on_ray([f"q{i}" for i in range(10)], answer_echo, **{argument: value})  # not iterated
    assert not ray.initialized and ray.actors == []


def test_importing_the_module_does_not_import_ray() -> None:
    code = "import sys, explicit_react.scale; print('ray' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
