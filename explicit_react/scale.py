"""Many questions: ``aanswer_all`` answers them with ``abatch`` in one process, ``answer_on_ray`` on a Ray cluster.

Both give one record per question, in input order: ``AgentResult.to_dict()`` for a run that ended
(whatever its stop reason), or a failure record of the same keys when the run raised, with
``stop_reason`` ``None``, ``error`` ``"ExceptionType: message"`` and the steps it had completed.
One question's failure never costs the others their answers.

On Ray each worker is an actor that calls ``agent_factory()`` once, so the model and the tools are
created on the worker (a factory is pickled by reference, a model instance would be pickled whole),
and answers its share of the questions ``concurrency`` at a time through ``abatch``. Ray is an
optional extra (``pip install explicit-react[ray]``), imported only when ``answer_on_ray`` runs.
"""

from __future__ import annotations

import reprlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig, RunnableLambda

from explicit_react import options
from explicit_react.agent import AgentInput, ExplicitReActAgent
from explicit_react.errors import ConfigurationError
from explicit_react.redaction import error_message
from explicit_react.types import AgentResult, Step, TokenUsage

AgentFactory = Callable[[], ExplicitReActAgent]
"""A picklable callable (a module-level function, a class, a ``functools.partial``) that builds the agent."""


async def aanswer_all(
    agent: ExplicitReActAgent,
    questions: Sequence[AgentInput],
    *,
    concurrency: int = 8,
    config: RunnableConfig | None = None,
) -> list[dict[str, Any]]:
    """Answer ``questions`` (strings or ``{"input", "context"}`` dicts), ``concurrency`` at a time,
    through ``abatch``; one record per question, in order (see the module docstring)."""
    questions = _question_list(questions)
    options.count("concurrency", concurrency, minimum=1)

    async def answer(question: AgentInput, config: RunnableConfig) -> dict[str, Any]:
        return await answer_one(agent, question, config)

    batch_config: RunnableConfig = {**(config or {}), "max_concurrency": concurrency}
    return await RunnableLambda(answer, name="answer_one").abatch(questions, batch_config)


def _question_list(questions: Any) -> list[AgentInput]:
    """``questions`` as a list; one question alone is refused, since a string would be read as its
    characters and a dict as its keys."""
    if isinstance(questions, (str, bytes, Mapping)):
        one = reprlib.repr(questions)
        raise ConfigurationError(
            f"questions must be a list of questions; got one {type(questions).__name__}, {one}:"
            f" write [{one}] to answer one question"
        )
    if not isinstance(questions, Iterable):
        raise ConfigurationError(f"questions must be a list of questions; got {reprlib.repr(questions)}")
    return list(questions)


async def answer_one(
    agent: ExplicitReActAgent, question: AgentInput, config: RunnableConfig | None = None
) -> dict[str, Any]:
    """One question's record: the result as a dict, or a failure record that keeps the steps done."""
    steps: list[Step] = []
    began = time.perf_counter()
    result: AgentResult | None = None
    try:
        async for item in agent.astream(question, config):  # to its end, which ends the chain run
            if isinstance(item, AgentResult):
                result = item
            else:
                steps.append(item)
        if result is None:
            raise RuntimeError("the agent's stream ended without a result")
        return result.to_dict()
    except Exception as exc:
        return failure_record(question, exc, steps, time.perf_counter() - began)


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
        "error": f"{type(exc).__name__}: {error_message(exc)}",
        "steps": [step.to_dict() for step in steps],
        "usage": usage.to_dict(),
        "elapsed_seconds": round(elapsed_seconds, 6),
        "llm_calls": len(steps),
    }


def _question_text(question: Any) -> str:
    if isinstance(question, Mapping):
        question = question.get("input", question.get("question", question))
    return question if isinstance(question, str) else repr(question)


class AgentWorker:
    """The Ray actor behind ``answer_on_ray``: builds its agent once, then answers chunks of questions."""

    def __init__(self, agent_factory: AgentFactory) -> None:
        self.agent = agent_factory()

    def ready(self) -> bool:
        """Returns once the agent is built (a factory that raised makes this call raise)."""
        return True

    async def answer(self, questions: Sequence[AgentInput], concurrency: int) -> list[dict[str, Any]]:
        """``aanswer_all`` on this worker."""
        return await aanswer_all(self.agent, questions, concurrency=concurrency)


def answer_on_ray(
    questions: Sequence[AgentInput],
    agent_factory: AgentFactory,
    *,
    workers: int | None = None,
    concurrency: int = 8,
    chunk_size: int | None = None,
    actor_options: Mapping[str, Any] | None = None,
) -> Iterator[dict[str, Any]]:
    """Answer ``questions`` on the Ray cluster ``ray.init`` connected to; yields one record per
    question, in input order, as soon as its chunk (and every chunk before it) is done.

    ``workers`` actors (default: one per CPU of the cluster) each build an agent with
    ``agent_factory()`` and answer chunks of ``chunk_size`` questions (default ``4 * concurrency``),
    ``concurrency`` at a time. ``actor_options`` go to ``.options()`` of every actor (default
    ``{"num_cpus": 1, "max_concurrency": 1}``: one chunk at a time per actor; add ``max_restarts``/``max_task_retries`` to survive lost nodes, or
    ``runtime_env``). A factory that fails raises here, before any question is sent; a chunk lost to
    a crashed worker gives failure records for its questions, and the other chunks go on. Nothing
    starts until the first record is asked for; the actors end with the iteration.
    """
    import ray

    questions = _question_list(questions)
    options.count("concurrency", concurrency, minimum=1)
    size = chunk_size or 4 * concurrency
    chunks = [questions[i : i + size] for i in range(0, len(questions), size)]
    if not chunks:
        return
    if not ray.is_initialized():
        ray.init()
    count = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    per_actor = {"num_cpus": 1, "max_concurrency": 1, **(actor_options or {})}
    actor_class: Any = ray.remote(AgentWorker).options(**per_actor)
    actors: list[Any] = [actor_class.remote(agent_factory) for _ in range(min(count, len(chunks)))]
    try:
        ray.get([actor.ready.remote() for actor in actors])
        yield from _schedule(chunks, actors, concurrency)
    finally:
        for actor in actors:
            ray.kill(actor)


def _schedule(
    chunks: list[list[AgentInput]], actors: list[Any], concurrency: int
) -> Iterator[dict[str, Any]]:
    """Send the chunks to the actors as they free up; yield the records in input order."""
    import ray
    from ray.exceptions import RayActorError, RayError

    # Each actor holds up to two chunks (it answers one at a time), so it never waits for the driver.
    idle = [actor for _ in range(2) for actor in actors]
    running: dict[Any, tuple[int, Any]] = {}
    finished: dict[int, list[dict[str, Any]]] = {}
    next_chunk = next_out = 0
    while next_out < len(chunks):
        while idle and next_chunk < len(chunks):
            actor = idle.pop(0)
            running[actor.answer.remote(chunks[next_chunk], concurrency)] = (next_chunk, actor)
            next_chunk += 1
        if running:
            [ref], _ = ray.wait(list(running), num_returns=1)
            index, actor = running.pop(ref)
            try:
                finished[index] = ray.get(ref)
                idle.append(actor)
            except RayError as exc:
                finished[index] = [failure_record(q, exc) for q in chunks[index]]
                if not isinstance(exc, RayActorError):  # a dead or lost worker gets no more work
                    idle.append(actor)
        else:  # every worker died: the chunks no one can answer fail too
            lost = RuntimeError("no Ray worker left to answer this question")
            finished[next_chunk] = [failure_record(q, lost) for q in chunks[next_chunk]]
            next_chunk += 1
        while next_out in finished:
            yield from finished.pop(next_out)
            next_out += 1
