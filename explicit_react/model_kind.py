"""What a model is beneath LangChain's wrappers: does it take a stop sequence, a text prompt or
messages, a native async call, a sync call at all.

``.bind()``, ``.with_config()``, ``.with_retry()``, ``.with_fallbacks()``, ``configurable_fields``
and ``configurable_alternatives`` wrap a model in a Runnable that hands each call, with its keyword
arguments, on to the model inside; a chain (``model | parser``) hands them to its first step. The
model adapter asks its questions of the models inside, all in one place, so a wrapped model is
called as the bare one would be (a model that lost the stop sequence to ``.bind()`` wrote its own
observations; a ``BaseLLM`` wrapped in ``.bind()`` was sent chat messages).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, BaseLLM
from langchain_core.runnables import (
    Runnable,
    RunnableBinding,
    RunnableLambda,
    RunnableParallel,
    RunnableSequence,
    RunnableWithFallbacks,
)
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.configurable import DynamicRunnable, RunnableConfigurableAlternatives

_MAX_DEPTH = 64  # wrappers nest a few levels; a deeper structure is not walked further

INNER_MODELS = "inner_models"
"""The attribute in which a runnable of this package that calls models of its own (``TwoPhaseModel``)
names them, so that its async form is known to be native only when theirs are."""


def passed_on_to(llm: Any) -> list[Any]:
    """The runnables a call to ``llm`` goes on to with the same input and keyword arguments: the
    model inside a binding or a retry, every runnable of a fallback chain, a configurable model's
    default and alternatives, a chain's first step; ``[]`` for anything else."""
    if isinstance(llm, RunnableBindingBase):
        return [llm.bound]
    if isinstance(llm, RunnableWithFallbacks):
        return [llm.runnable, *llm.fallbacks]
    if isinstance(llm, DynamicRunnable):
        alternatives = llm.alternatives if isinstance(llm, RunnableConfigurableAlternatives) else {}
        # An alternative given as a factory is not known before the call: it counts as no model.
        return [llm.default, *alternatives.values()]
    if isinstance(llm, RunnableSequence):
        return [llm.first]
    return []


def _called_by(llm: Any) -> list[Any]:
    """Every runnable a call to ``llm`` may call: ``passed_on_to``, each step of a chain or of a
    parallel map, and the ``inner_models`` of a runnable that names them."""
    if isinstance(llm, RunnableSequence):
        return list(llm.steps)
    if isinstance(llm, RunnableParallel):
        return list(llm.steps__.values())
    if isinstance(inner := getattr(llm, INNER_MODELS, None), tuple):
        return list(inner)
    return passed_on_to(llm)


def _walk(llm: Any, children: Any, *, leaves: bool = False, depth: int = 0) -> Iterator[Any]:
    """``llm`` and what it calls (``children``), depth first; with ``leaves``, only the runnables
    that call nothing further (the models)."""
    parts = children(llm) if depth < _MAX_DEPTH else []
    if not (leaves and parts):
        yield llm
    for part in parts:
        yield from _walk(part, children, leaves=leaves, depth=depth + 1)


def models_inside(llm: Any) -> list[Any]:
    """What a call to ``llm`` reaches with its keyword arguments, beneath the wrappers: ``[llm]``
    for a bare model."""
    return list(_walk(llm, passed_on_to, leaves=True))


def takes_stop(llm: Any) -> bool:
    """Whether a ``stop`` keyword reaches a chat model or an LLM, whatever the call goes on to."""
    return all(isinstance(m, (BaseChatModel, BaseLLM)) for m in models_inside(llm))


def reads_text(llm: Any) -> bool:
    """Whether ``llm`` is a (wrapped) ``BaseLLM``, which reads one string; chat models read messages."""
    return all(isinstance(m, BaseLLM) for m in models_inside(llm))


def bound_stops(llm: Any) -> list[str]:
    """The stop sequences bound to ``llm`` on the way to its model (``model.bind(stop=[...])``): a
    ``stop`` given at call time replaces them, so the adapter sends them along with its own."""
    stops: list[str] = []
    for part in _walk(llm, passed_on_to):
        if isinstance(part, RunnableBinding) and (bound := part.kwargs.get("stop")):
            stops += [bound] if isinstance(bound, str) else list(bound)
    return stops


def with_bound_stops(stop: Sequence[str], llm: Any) -> list[str]:
    """``stop`` and then the stops bound to ``llm`` (``bound_stops``), each once."""
    return list(dict.fromkeys([*stop, *bound_stops(llm)]))


def has_native_async(llm: Any) -> bool:
    """True unless some model a call to ``llm`` may reach (through bindings, retries, fallbacks,
    chains, configurable alternatives, and ``TwoPhaseModel``'s two models) implements only the sync
    API: a chat model or LLM without an async method of its own, a sync-only ``RunnableLambda``, or
    a runnable that keeps ``Runnable.ainvoke``. LangChain runs those in the event loop's default
    executor, whose threads a hung call keeps alive at exit: ``asyncio.run`` waits for them."""
    return all(_native_async(part) for part in _walk(llm, _called_by, leaves=True))


def _native_async(llm: Any) -> bool:
    kind = type(llm)
    if isinstance(llm, BaseChatModel):
        # ``ainvoke`` reaches ``_astream`` only for a model set to stream (``streaming=True``, as
        # LangChain's ``_should_stream`` reads it); otherwise it runs the sync ``_generate`` in the
        # loop's default executor, which a timed-out call kept ``asyncio.run`` waiting for (6 s
        # for a 0.5 s ``llm_timeout``).
        streams = "streaming" in llm.model_fields_set and getattr(llm, "streaming", None) is True
        return kind._agenerate is not BaseChatModel._agenerate or (
            streams and kind._astream is not BaseChatModel._astream
        )
    if isinstance(llm, BaseLLM):
        from langchain_core.language_models.llms import LLM

        # ``ainvoke`` of an LLM never streams: only its own ``_agenerate`` or ``_acall`` is async.
        overrides = [kind._agenerate is not BaseLLM._agenerate and kind._agenerate is not LLM._agenerate]
        if issubclass(kind, LLM):
            overrides.append(kind._acall is not LLM._acall)
        return any(overrides)
    if isinstance(llm, RunnableLambda):
        return hasattr(llm, "afunc")
    if isinstance(llm, Runnable):
        return kind.ainvoke is not Runnable.ainvoke
    return True  # a factory of a configurable alternative: not known before the call


def async_only(llm: Any) -> bool:
    """Whether some part of ``llm`` can only be awaited: a ``RunnableLambda`` of an ``async def``,
    whose ``invoke`` raises. (An async-only chat model is known only when its sync call raises
    ``NotImplementedError``: the adapter then awaits it.)"""
    return any(
        isinstance(part, RunnableLambda) and not hasattr(part, "func")
        for part in _walk(llm, _called_by, leaves=True)
    )


def is_async_callable(fn: Any) -> bool:
    """Whether a plain callable model is an ``async def`` (or an object whose ``__call__`` is one)."""
    call = type(fn).__call__ if not inspect.isroutine(fn) else None
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)
