"""What ``ChatLlama`` hands llama.cpp and LangChain around a reply: the call's arguments checked
against what llama.cpp takes, the usage record, and a whole reply as one stream chunk."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, cast

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.messages.ai import UsageMetadata

from explicit_react.errors import ConfigurationError

__all__ = ["as_chunk", "call_arguments", "usage_record"]


def call_arguments(method: Callable[..., Any], request: dict[str, Any]) -> dict[str, Any]:
    """``request`` for ``method`` (the client's ``create_chat_completion`` or ``create_completion``):
    an argument it does not take (bound to the model, or given to the call) is a
    ``ConfigurationError`` naming it, not a ``TypeError`` from inside llama-cpp-python."""
    parameters = inspect.signature(method).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return request
    unknown = sorted(set(request) - set(parameters))
    if unknown:
        raise ConfigurationError(
            f"llama.cpp's {method.__name__} takes no argument {', '.join(unknown)} (bound to the model or "
            f"given to this call); it takes {', '.join(sorted(set(parameters) - {'self'}))}"
        )
    return request


def as_chunk(reply: AIMessage) -> AIMessageChunk:
    """``reply`` as the one chunk of a streamed reply with tools bound.

    LangChain keeps only a chunk's ``tool_call_chunks`` when it joins chunks (``stream()`` joined by
    hand, ``streaming=True``, ``astream_events``' end event) and reads each back with a partial-JSON
    parser: a call whose text parses is a call, any other an invalid call (with no ``error``). So a
    malformed call's ``args`` is text no such parser reads (``read_reply``), and the joined message
    has the calls and invalid calls ``invoke`` gives."""
    return AIMessageChunk(
        content=reply.content,
        tool_calls=reply.tool_calls,
        invalid_tool_calls=reply.invalid_tool_calls,
        usage_metadata=reply.usage_metadata,
        response_metadata=reply.response_metadata,
    )


def usage_record(usage: dict[str, Any], cached: int = 0) -> UsageMetadata | None:
    """LangChain's usage record; ``input_token_details["cache_read"]`` counts the prompt tokens taken
    from the cache, so ``input_tokens - cache_read`` is what the model actually read."""
    if not usage:
        return None
    record: dict[str, Any] = {
        "input_tokens": int(usage.get("prompt_tokens", 0)),
        "output_tokens": int(usage.get("completion_tokens", 0)),
        "total_tokens": int(usage.get("total_tokens", 0)),
    }
    if cached:
        record["input_token_details"] = {"cache_read": cached}
    return cast(UsageMetadata, record)
