"""LangChain's ``Runnable.batch`` and ``batch_as_completed`` for the agent, on daemon threads.

LangChain runs a sync batch's ``invoke`` calls in a ``ThreadPoolExecutor``, which after Ctrl-C
waits for the runs in progress (a tool that never returns holds the process). These are the same
(LangChain 1.8's code: the outputs in order, the first failure raised unless ``return_exceptions``,
one input run on the caller's thread, at most ``max_concurrency`` at once, by default
``min(32, cpu + 4)``), with ``deadline.DaemonExecutor`` in place of the pool: one Ctrl-C stops the
batch at once, and the runs in progress are given up; so does leaving a ``batch_as_completed`` loop
early (a ``break``, or Ctrl-C in its body), where LangChain waits for every run to end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import get_config_list

from explicit_react.deadline import DaemonExecutor

In = TypeVar("In")
Out = TypeVar("Out")


def batch(
    invoke: Callable[[In, RunnableConfig], Out],
    inputs: Sequence[In],
    config: RunnableConfig | Sequence[RunnableConfig] | None,
    return_exceptions: bool,
) -> list[Any]:
    """``invoke`` on each input, in order (an exception in place of a failed output when
    ``return_exceptions``)."""
    if not inputs:
        return []
    configs = get_config_list(config, len(inputs))

    def one(input: In, config: RunnableConfig) -> Out | Exception:
        try:
            return invoke(input, config)
        except Exception as exc:
            if return_exceptions:
                return exc
            raise

    if len(inputs) == 1:  # on this thread, as LangChain does
        return [one(inputs[0], configs[0])]
    with DaemonExecutor(configs[0].get("max_concurrency")) as executor:
        return list(executor.map(one, inputs, configs))


def batch_as_completed(
    invoke: Callable[[In, RunnableConfig], Out],
    inputs: Sequence[In],
    config: RunnableConfig | Sequence[RunnableConfig] | None,
    return_exceptions: bool,
) -> Iterator[tuple[int, Any]]:
    """``(index, output)`` for each input as its run ends."""
    if not inputs:
        return
    configs = get_config_list(config, len(inputs))

    def one(i: int, input: In, config: RunnableConfig) -> tuple[int, Out | Exception]:
        try:
            return i, invoke(input, config)
        except Exception as exc:
            if return_exceptions:
                return i, exc
            raise

    if len(inputs) == 1:
        yield one(0, inputs[0], configs[0])
        return
    with DaemonExecutor(configs[0].get("max_concurrency")) as executor:
        futures = {executor.submit(one, i, *pair) for i, pair in enumerate(zip(inputs, configs, strict=True))}
        try:
            while futures:
                done, futures = wait(futures, return_when=FIRST_COMPLETED)
                while done:
                    yield done.pop().result()
        finally:  # the caller left its loop (GeneratorExit): the executor gives up the runs in progress
            for future in futures:
                future.cancel()
