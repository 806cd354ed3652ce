"""Many questions: ``aanswer_all`` answers them with ``abatch`` in one process, ``answer_on_ray`` on a Ray cluster.

Both give one record per question, in input order: ``AgentResult.to_dict()`` for a run that ended
(whatever its stop reason), or a failure record of the same keys when the run raised, with
``stop_reason`` ``None``, ``error`` ``"ExceptionType: message"`` and the steps it had completed.
A run that ended but whose listener raised afterwards, in ``on_result``, keeps its result and
adds one key, ``listener_error``: ``"ExceptionType: message"``. A
``CancelledError`` that leaks out of one run (an async tool's inner cancellation) while the batch
itself is not being cancelled is that question's failure; cancelling the batch still cancels it.
One question's failure never costs the others their answers.

On Ray each worker is an actor that calls ``agent_factory()`` once, so the model and the tools are
created on the worker (a factory is pickled by reference, a model instance would be pickled whole),
and answers its share of the questions ``concurrency`` at a time through ``abatch``. Ray is an
optional extra (``pip install explicit-react[ray]``), imported only when ``answer_on_ray`` runs.
"""

from __future__ import annotations

import asyncio
import copy
import reprlib
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig, RunnableLambda

from explicit_react import options
from explicit_react.agent import AgentInput, ExplicitReActAgent
from explicit_react.context import read_input
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
        return {**ended.result.to_dict(), "listener_error": _error_text(error)}
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


def _error_text(exc: BaseException) -> str:
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
        "error": _error_text(exc),
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

    ``workers`` actors (default: as many as the cluster's live nodes hold) each build an agent with
    ``agent_factory()`` and answer chunks of ``chunk_size`` questions (default ``4 * concurrency``),
    ``concurrency`` at a time. ``actor_options`` go to ``.options()`` of every actor (default
    ``{"num_cpus": 1, "max_concurrency": 1}``: one chunk at a time per actor; add
    ``max_restarts``/``max_task_retries`` to survive lost nodes, or ``runtime_env``).

    ``questions``, ``workers``, ``concurrency`` and ``chunk_size`` are checked here, at the call
    (``ConfigurationError``); nothing else starts until the first record is asked for, and the
    actors end with the iteration. Answering starts once the workers the cluster has room for are
    up (more than it holds: a ``RuntimeWarning``, and the others join if room frees up). A factory
    that fails on them raises, before any question is sent; a chunk lost to a crashed worker, or a
    question Ray cannot pickle, gives failure records, and the rest go on.
    """
    questions = _question_list(questions)
    options.count("concurrency", concurrency, minimum=1)
    options.count("workers", workers, minimum=1, none_means="as many as the cluster holds")
    size = options.count("chunk_size", chunk_size, minimum=1, none_means="4 * concurrency")
    size = size or 4 * concurrency
    chunks = [questions[i : i + size] for i in range(0, len(questions), size)]
    per_actor = {"num_cpus": 1, "max_concurrency": 1, **(actor_options or {})}
    return _answer_on_ray(chunks, agent_factory, workers, concurrency, per_actor)


def _answer_on_ray(
    chunks: list[list[AgentInput]],
    agent_factory: AgentFactory,
    workers: int | None,
    concurrency: int,
    per_actor: dict[str, Any],
) -> Iterator[dict[str, Any]]:
    import ray

    if not chunks:
        return
    if not ray.is_initialized():
        ray.init()
    room = _room(ray, per_actor)
    if workers is None:
        workers = max(1, room if room is not None else int(ray.cluster_resources().get("CPU", 1)))
    count = min(workers, len(chunks))
    if room is not None and count > room:
        warnings.warn(_room_warning(count, room, per_actor), RuntimeWarning, stacklevel=2)
    actor_class: Any = ray.remote(AgentWorker).options(**per_actor)
    actors: list[Any] = [actor_class.remote(agent_factory) for _ in range(count)]
    try:
        waiting = {actor.ready.remote(): actor for actor in actors}
        started, grace = _start(ray, waiting, min(count, room or 1))
        yield from _schedule(ray, chunks, started, waiting, concurrency, grace)
    finally:
        for actor in actors:
            ray.kill(actor)


_UNKNOWN_ROOM = ("scheduling_strategy", "placement_group")
"""Actor options that pin actors to some nodes or bundles: how many fit cannot be read from the nodes."""


def _room(ray: Any, per_actor: Mapping[str, Any]) -> int | None:
    """How many actors asking for ``per_actor``'s resources the cluster's live nodes hold in all
    (busy or not); ``None`` when it cannot tell (the actors ask for no resource, or are pinned)."""
    if any(per_actor.get(key) is not None for key in _UNKNOWN_ROOM):
        return None
    demand = _demand(per_actor)
    if not demand:
        return None
    nodes = [node.get("Resources", {}) for node in ray.nodes() if node.get("Alive")]
    # 1e-9: Ray counts fractions of a resource in steps of 1e-4; 0.1 * 3 must hold 3 of 0.1
    return sum(
        min(int(node.get(name, 0) / amount + 1e-9) for name, amount in demand.items()) for node in nodes
    )


def _demand(per_actor: Mapping[str, Any]) -> dict[str, float]:
    """The resources one actor asks for, by Ray's names (``num_cpus`` is ``CPU``...)."""
    cpus = per_actor.get("num_cpus")
    asked = {
        "CPU": 1 if cpus is None else cpus,  # an actor needs one CPU to be placed unless told otherwise
        "GPU": per_actor.get("num_gpus") or 0,
        "memory": per_actor.get("memory") or 0,
        **(per_actor.get("resources") or {}),
    }
    return {name: float(amount) for name, amount in asked.items() if amount}


def _room_warning(count: int, room: int, per_actor: Mapping[str, Any]) -> str:
    asks = ", ".join(f"{name} {amount:g}" for name, amount in _demand(per_actor).items())
    if room == 0:
        return (
            f"workers={count}: no node of the cluster has room for one (each asks for {asks}); "
            "answer_on_ray waits until Ray can place one (an autoscaler adding a node)"
        )
    return (
        f"workers={count}: the cluster holds {room} of them (each asks for {asks}); answering with "
        "the workers that start, the others join if room frees up"
    )


def _start(ray: Any, waiting: dict[Any, Any], expected: int) -> tuple[list[Any], float]:
    """Wait for the first actor to be up (as long as it takes), then for up to ``expected`` in
    all for as long again (room the nodes have but other work holds may not free up); returns
    the actors that are up and that grace period. The ones still waiting stay in ``waiting``.
    A factory that failed raises here, before any question is sent."""
    began = time.monotonic()
    ready, _ = ray.wait(list(waiting), num_returns=1)
    grace = max(1.0, time.monotonic() - began)
    if expected > 1:
        others = [ref for ref in waiting if ref not in ready]
        more, _ = ray.wait(others, num_returns=min(expected - 1, len(others)), timeout=grace)
        ready += more
    started = []
    for ref in ready:
        ray.get(ref)
        started.append(waiting.pop(ref))
    return started, grace


class _Sent:
    """A chunk on its way: the call's ref (``None`` when no question could be sent) and the
    failure records, by position in the chunk, of the questions that could not be sent."""

    def __init__(self, index: int, actor: Any, ref: Any, unsent: dict[int, dict[str, Any]]) -> None:
        self.index, self.actor, self.ref, self.unsent = index, actor, ref, unsent

    def records(self, chunk: list[AgentInput], answered: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The chunk's records: the answered ones (in order) with the unsent ones in their places."""
        rest = iter(answered)
        return [self.unsent[i] if i in self.unsent else next(rest) for i in range(len(chunk))]


def _send(ray: Any, index: int, actor: Any, chunk: list[AgentInput], concurrency: int) -> _Sent:
    """Ask ``actor`` to answer ``chunk``. Ray pickles the arguments here, in the driver: when that
    fails, the questions that cannot be pickled (each tried alone) become failure records and the
    others are sent without them."""
    try:
        return _Sent(index, actor, actor.answer.remote(chunk, concurrency), {})
    except Exception as whole:
        unsent = {}
        for position, question in enumerate(chunk):
            try:
                ray.put(question)  # pickled as the call pickles it; the copy is dropped at once
            except Exception as exc:
                unsent[position] = failure_record(question, RaySendError(exc))
        if not unsent:  # no question alone is to blame: the whole chunk could not be sent
            unsent = {i: failure_record(q, RaySendError(whole)) for i, q in enumerate(chunk)}
        rest = [q for i, q in enumerate(chunk) if i not in unsent]
        if not rest:
            return _Sent(index, actor, None, unsent)
        try:
            return _Sent(index, actor, actor.answer.remote(rest, concurrency), unsent)
        except Exception as exc:
            failed = {i: failure_record(q, RaySendError(exc)) for i, q in enumerate(chunk)}
            return _Sent(index, actor, None, {**failed, **unsent})


class RaySendError(RuntimeError):
    """The ``error`` of a question Ray could not send to a worker: Ray pickles a call's arguments
    in the driver, and the question (its context, say) held something that cannot be pickled."""

    def __init__(self, error: BaseException) -> None:
        cause = error  # Ray's own message prints the whole question and a report; its cause says why
        for _ in range(8):
            if cause.__cause__ is None:
                break
            cause = cause.__cause__
        super().__init__(f"the question could not be sent to a Ray worker: {_error_text(cause)}")


def _schedule(
    ray: Any,
    chunks: list[list[AgentInput]],
    actors: list[Any],
    waiting: dict[Any, Any],
    concurrency: int,
    grace: float,
) -> Iterator[dict[str, Any]]:
    """Send the chunks to the actors as they free up, and to the ``waiting`` ones (readiness ref:
    actor) once they are up; yield the records in input order."""
    RayError, RayActorError = ray.exceptions.RayError, ray.exceptions.RayActorError

    # Each actor holds up to two chunks (it answers one at a time), so it never waits for the driver.
    idle = [actor for _ in range(2) for actor in actors]
    running: dict[Any, _Sent] = {}
    finished: dict[int, list[dict[str, Any]]] = {}
    next_chunk = next_out = 0

    def join(refs: list[Any]) -> None:
        for ref in refs:
            actor = waiting.pop(ref)
            try:
                ray.get(ref)
            except RayError as exc:  # answering has begun: the others go on without it
                warnings.warn(
                    f"a Ray worker that started late is left out: {_error_text(exc)}",
                    RuntimeWarning,
                    stacklevel=2,
                )
            else:
                idle.extend([actor, actor])

    while next_out < len(chunks):
        while idle and next_chunk < len(chunks):
            sent = _send(ray, next_chunk, idle.pop(0), chunks[next_chunk], concurrency)
            if sent.ref is None:
                finished[next_chunk] = sent.records(chunks[next_chunk], [])
                idle.append(sent.actor)
            else:
                running[sent.ref] = sent
            next_chunk += 1
        if running:
            [ref], _ = ray.wait([*running, *waiting], num_returns=1)
            if ref in waiting:
                join([ref])
                continue
            sent = running.pop(ref)
            chunk = chunks[sent.index]
            try:
                finished[sent.index] = sent.records(chunk, ray.get(ref))
                idle.append(sent.actor)
            except RayError as exc:
                answered = [failure_record(q, exc) for i, q in enumerate(chunk) if i not in sent.unsent]
                finished[sent.index] = sent.records(chunk, answered)
                if not isinstance(exc, RayActorError):  # a dead or lost worker gets no more work
                    idle.append(sent.actor)
        elif waiting and (up := ray.wait(list(waiting), num_returns=1, timeout=grace)[0]):
            join(up)  # every worker that started died: one that was waiting for room takes over
        else:  # every worker died: the chunks no one can answer fail too
            lost = RuntimeError("no Ray worker left to answer this question")
            finished[next_chunk] = [failure_record(q, lost) for q in chunks[next_chunk]]
            next_chunk += 1
        while next_out in finished:
            yield from finished.pop(next_out)
            next_out += 1
