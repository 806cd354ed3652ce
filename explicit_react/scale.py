"""Many questions: ``aanswer_all`` answers them with ``abatch`` in one process, ``answer_on_ray`` on a Ray cluster.

Both give one record per question, in input order: ``AgentResult.to_dict()`` for a run that ended
(whatever its stop reason), or a failure record of the same keys when the run raised, with
``stop_reason`` ``None``, ``error`` ``"ExceptionType: message"`` and the steps it had completed.
A run that ended but whose listener raised afterwards, in ``on_result``, keeps its result and
adds one key, ``listener_error``: ``"ExceptionType: message"``. A
``CancelledError`` that leaks out of one run (an async tool's inner cancellation) while the batch
itself is not being cancelled is that question's failure; cancelling the batch still cancels it.
One question's failure never costs the others their answers.

A ``GeneralQAAgent`` answers too: then a question is a string or ``{"input", "context"?}`` (``query``
and ``question`` are accepted for ``input``), and a record is its ``answer()`` dict, the same
large-context handling included, or a failure record of those keys (``records.answer_one_qa``).
Anything else is a ``ConfigurationError`` before any question runs.

On Ray each worker is an actor that calls ``agent_factory()`` once, so the model and the tools are
created on the worker (a factory is pickled by reference, a model instance would be pickled whole),
and answers its share of the questions ``concurrency`` at a time through ``abatch``. Ray is an
optional extra (``pip install explicit-react[ray]``), imported only when ``answer_on_ray`` is called.

The records are made in ``records``; here the Ray workers are created and killed, and in ``ray_workers``
they are counted, waited for and sent their chunks.
"""

from __future__ import annotations

import reprlib
import warnings
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from types import ModuleType
from typing import Any

from langchain_core.runnables import RunnableConfig, RunnableLambda

from explicit_react import options, ray_workers
from explicit_react.agent import AgentInput, ExplicitReActAgent
from explicit_react.errors import ConfigurationError
from explicit_react.qa import GeneralQAAgent
from explicit_react.ray_workers import RaySendError
from explicit_react.records import answer_one, answer_one_qa, failure_record, qa_failure

__all__ = [
    "AgentFactory",
    "AgentWorker",
    "RaySendError",
    "aanswer_all",
    "answer_on_ray",
    "answer_one",
    "failure_record",
]

AgentFactory = Callable[[], ExplicitReActAgent | GeneralQAAgent]
"""A picklable callable (a module-level function, a class, a ``functools.partial``) that builds the agent."""


async def aanswer_all(
    agent: ExplicitReActAgent | GeneralQAAgent,
    questions: Sequence[AgentInput],
    *,
    concurrency: int = 8,
    config: RunnableConfig | None = None,
) -> list[dict[str, Any]]:
    """Answer ``questions`` (strings or ``{"input", "context"}`` dicts), ``concurrency`` at a time,
    through ``abatch``; one record per question, in order (see the module docstring)."""
    answer_with = _answerer(agent)
    questions = _question_list(questions)
    options.count("concurrency", concurrency, minimum=1)

    async def answer(question: AgentInput, config: RunnableConfig) -> dict[str, Any]:
        return await answer_with(question, config)

    batch_config: RunnableConfig = {**(config or {}), "max_concurrency": concurrency}
    # An exception here came from outside the run (a callback handler with raise_error=True that
    # refused the question's chain run): it costs that question its answer, not the others theirs.
    answers = await RunnableLambda(answer, name="answer_one").abatch(
        questions, batch_config, return_exceptions=True
    )
    return [
        _failed(agent, question, answer) if isinstance(answer, BaseException) else answer
        for question, answer in zip(questions, answers, strict=True)
    ]


def _failed(agent: Any, question: AgentInput, exc: BaseException) -> dict[str, Any]:
    """The record of a question whose answering raised ``exc`` before its run could keep it."""
    return qa_failure(exc) if isinstance(agent, GeneralQAAgent) else failure_record(question, exc)


def _answerer(agent: Any) -> Callable[[Any, RunnableConfig], Awaitable[dict[str, Any]]]:
    """How ``agent`` answers one question as a record; anything but the two agents is refused."""
    if isinstance(agent, GeneralQAAgent):
        return partial(answer_one_qa, agent)
    if isinstance(agent, ExplicitReActAgent):
        return partial(answer_one, agent)
    raise ConfigurationError(
        "the scale helpers answer with an ExplicitReActAgent (records: AgentResult.to_dict()) or a"
        f" GeneralQAAgent (records: its answer() dicts); got {type(agent).__name__}. For another"
        " Runnable, use its abatch()"
    )


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


class AgentWorker:
    """The Ray actor behind ``answer_on_ray``: builds its agent once, then answers chunks of questions."""

    def __init__(self, agent_factory: AgentFactory) -> None:
        self.agent = agent_factory()
        _answerer(self.agent)  # a factory that builds something else fails here, before any question

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

    ``workers`` actors (default: as many as the cluster's live nodes hold) each build an agent with
    ``agent_factory()`` and answer chunks of ``chunk_size`` questions (default ``4 * concurrency``),
    ``concurrency`` at a time. ``actor_options`` go to ``.options()`` of every actor (default
    ``{"num_cpus": 1, "max_concurrency": 1}``: one chunk at a time per actor; add
    ``max_restarts``/``max_task_retries`` to survive lost nodes, or ``runtime_env``).

    ``agent_factory()`` may build an ``ExplicitReActAgent`` or a ``GeneralQAAgent`` (records as in
    ``aanswer_all``). ``questions``, ``workers``, ``concurrency`` and ``chunk_size`` are checked
    here, at the call, and so are that Ray is installed and that ``agent_factory`` is a callable
    rather than an agent (``ConfigurationError``); nothing else starts until the first record is
    asked for (no question: no record, and Ray is not started), and the actors end with the
    iteration. Answering starts once the workers the cluster has room for are
    up (more than it holds: a ``RuntimeWarning``, and the others join if room frees up). A factory
    that fails on them raises, before any question is sent; a chunk lost to a crashed worker, or a
    question Ray cannot pickle, gives failure records, and the rest go on.
    """
    ray = _import_ray()
    if isinstance(agent_factory, (ExplicitReActAgent, GeneralQAAgent)) or not callable(agent_factory):
        raise ConfigurationError(
            "agent_factory must be a function (or class) that builds the agent on each worker, not"
            f" {type(agent_factory).__name__}: a model built here would be pickled whole, if it can be"
        )
    questions = _question_list(questions)
    options.count("concurrency", concurrency, minimum=1)
    options.count("workers", workers, minimum=1, none_means="as many as the cluster holds")
    size = options.count("chunk_size", chunk_size, minimum=1, none_means="4 * concurrency")
    size = size or 4 * concurrency
    chunks = [questions[i : i + size] for i in range(0, len(questions), size)]
    per_actor = {"num_cpus": 1, "max_concurrency": 1, **(actor_options or {})}
    return _answer_on_ray(ray, chunks, agent_factory, workers, concurrency, per_actor)


def _import_ray() -> ModuleType:
    """The ``ray`` module, or a ``ConfigurationError`` that says how to install it."""
    try:
        import ray
    except ModuleNotFoundError as exc:
        if exc.name != "ray":  # Ray is there but one of its own imports failed: that error says more
            raise
        raise ConfigurationError(
            "answer_on_ray needs Ray, which is not installed: pip install 'explicit-react[ray]'"
        ) from exc
    return ray


def _answer_on_ray(
    ray: Any,
    chunks: list[list[AgentInput]],
    agent_factory: AgentFactory,
    workers: int | None,
    concurrency: int,
    per_actor: dict[str, Any],
) -> Iterator[dict[str, Any]]:
    if not chunks:
        return
    if not ray.is_initialized():
        ray.init()
    room = ray_workers.cluster_room(ray, per_actor)
    if workers is None:
        workers = max(1, room if room is not None else int(ray.cluster_resources().get("CPU", 1)))
    count = min(workers, len(chunks))
    if room is not None and count > room:
        warnings.warn(ray_workers.room_warning(count, room, per_actor), RuntimeWarning, stacklevel=2)
    actor_class: Any = ray.remote(AgentWorker).options(**per_actor)
    actors: list[Any] = [actor_class.remote(agent_factory) for _ in range(count)]
    try:
        waiting = {actor.ready.remote(): actor for actor in actors}
        started, grace = ray_workers.start(ray, waiting, min(count, room or 1))
        yield from ray_workers.schedule(ray, chunks, started, waiting, concurrency, grace)
    finally:
        for actor in actors:
            ray.kill(actor)
