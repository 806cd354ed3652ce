"""The Ray side of ``scale.answer_on_ray``: how many workers the cluster holds, waiting for them to
start, and sending them chunks of questions, with the records back in input order.

The functions that call Ray are handed the ``ray`` module, so importing this one does not import Ray. A chunk lost
to a crashed worker, or a question Ray cannot pickle (``RaySendError``), gives failure records, and
the rest go on.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from explicit_react.agent import AgentInput
from explicit_react.records import error_text, failure_record

_UNKNOWN_ROOM = ("scheduling_strategy", "placement_group")
"""Actor options that pin actors to some nodes or bundles: how many fit cannot be read from the nodes."""


def cluster_room(ray: Any, per_actor: Mapping[str, Any]) -> int | None:
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


def room_warning(count: int, room: int, per_actor: Mapping[str, Any]) -> str:
    """The ``RuntimeWarning`` for ``count`` workers when the cluster holds only ``room`` of them."""
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


def start(ray: Any, waiting: dict[Any, Any], expected: int) -> tuple[list[Any], float]:
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
        super().__init__(f"the question could not be sent to a Ray worker: {error_text(cause)}")


def schedule(
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
                    f"a Ray worker that started late is left out: {error_text(exc)}",
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
        else:  # every worker died, and none came up in the grace: the chunks left fail at once
            lost = RuntimeError("no Ray worker left to answer this question")
            for left in range(next_chunk, len(chunks)):  # one by one, each waited the grace again
                finished[left] = [failure_record(q, lost) for q in chunks[left]]
            next_chunk = len(chunks)
        while next_out in finished:
            yield from finished.pop(next_out)
            next_out += 1
