"""answer_on_ray on a local two-CPU Ray cluster: agents built on the workers, failures as data.

Skipped when ray is not installed (``pip install explicit-react[ray]``); the ``dev`` extra has it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed: pip install explicit-react[ray]")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from explicit_react import ExplicitReActAgent  # noqa: E402
from explicit_react.scale import answer_on_ray  # noqa: E402
from explicit_react.testing import ScriptedChatModel  # noqa: E402
from tests.helpers import action  # noqa: E402

QUESTIONS = 12


def build_agent(crash_marker: Path | None = None) -> ExplicitReActAgent:
    """The factory each worker calls: a scripted model and a tool that reports the worker's process.

    With ``crash_marker``, the first tool call on any worker creates that file and kills its process."""

    @tool(return_direct=True)
    def worker_process(ignored: str) -> str:
        """Name the process this tool runs in."""
        if crash_marker is not None:
            try:
                os.close(os.open(crash_marker, os.O_CREAT | os.O_EXCL))  # only one worker wins
            except FileExistsError:
                pass
            else:
                os._exit(1)
        return f"answered in process {os.getpid()}"

    # every question costs one reply, so the order in which concurrent runs take them does not matter
    model = ScriptedChatModel([action("worker_process", "now")] * QUESTIONS)
    return ExplicitReActAgent(model, [worker_process])


def broken_factory() -> ExplicitReActAgent:
    raise RuntimeError("no API key on this worker")


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[None]:
    saved = os.environ.get("RAY_USAGE_STATS_ENABLED")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # no usage report to the network
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        _node_ip_address="127.0.0.1",
    )
    yield
    ray.shutdown()
    if saved is None:
        os.environ.pop("RAY_USAGE_STATS_ENABLED", None)
    else:
        os.environ["RAY_USAGE_STATS_ENABLED"] = saved


def test_workers_build_their_agents_and_answer_every_question(local_cluster: None) -> None:
    questions: list[Any] = [f"question {i}" for i in range(QUESTIONS)]
    questions[5] = {"input": 5}  # a question the agent rejects
    questions[7] = {"input": "question 7", "context": [Document("x", metadata={"lock": threading.Lock()})]}
    # three workers on two CPUs: the two that fit answer, the third never gets room (this hung before)
    with pytest.warns(RuntimeWarning, match="workers=3: the cluster holds 2 of them"):
        records = list(answer_on_ray(questions, build_agent, workers=3, concurrency=2, chunk_size=3))

    assert [r["question"] for r in records] == [*(f"question {i}" for i in range(5)), "5"] + [
        f"question {i}" for i in range(6, QUESTIONS)
    ]
    unsent = records.pop(7)  # a question Ray cannot pickle fails alone: its chunk-mates are answered
    assert unsent["stop_reason"] is None
    assert unsent["error"].startswith("RaySendError: the question could not be sent to a Ray worker:")
    assert unsent["error"].endswith(": TypeError: cannot pickle '_thread.lock' object")  # Ray's cause
    failed = records.pop(5)
    assert failed["stop_reason"] is None and failed["error"].startswith("ConfigurationError:")
    assert [r["stop_reason"] for r in records] == ["return_direct"] * (QUESTIONS - 2)
    assert all(len(r["steps"]) == 1 and r["steps"][0]["action"] == "worker_process" for r in records)
    processes = {r["answer"] for r in records}
    assert f"answered in process {os.getpid()}" not in processes  # the tools ran on the workers
    assert len(processes) == 2  # one agent per worker that fits, both used


def test_a_factory_that_fails_raises_before_any_question_is_sent(local_cluster: None) -> None:
    with pytest.raises(ray.exceptions.RayActorError, match="no API key on this worker"):
        list(answer_on_ray(["q"] * 4, broken_factory, workers=1))


def test_a_worker_that_dies_costs_only_its_chunks(local_cluster: None, tmp_path: Path) -> None:
    questions = [f"question {i}" for i in range(QUESTIONS)]
    factory = partial(build_agent, tmp_path / "crashed")
    records = list(answer_on_ray(questions, factory, workers=2, concurrency=2, chunk_size=3))

    assert [r["question"] for r in records] == questions
    lost = [i for i, r in enumerate(records) if r["stop_reason"] is None]
    assert lost and len(lost) % 3 == 0 and len(lost) < QUESTIONS  # whole chunks, not everything
    assert all("ActorDiedError" in records[i]["error"] for i in lost)
    answered = [r for r in records if r["stop_reason"] is not None]
    assert {r["stop_reason"] for r in answered} == {"return_direct"}
    assert len({r["answer"] for r in answered}) == 1  # the surviving worker answered the rest
