"""Reads what a LangChain user passes in (the input and its context, in any of their shapes) as a
question and the context's prompt text or search documents.

The input (``read_input``): a question string, ``{"input"|"question": ..., "context"?: ...}``, a
prompt value (``ChatPromptTemplate`` output), a list of messages, or a LangGraph ``MessagesState``
dict (``{"messages": [...]}``). With messages, the last human message is the question and the
others are the conversation so far.

The context (``read_context``), alone or mixed in a list: a string (kept whole), LangChain
``Document``s (their ``page_content`` and ``metadata["source"]``), ``BaseMessage`` history
(``HumanMessage``, ``AIMessage``...: conversation turns), dicts (documents
``{"content"|"page_content", "source"?}`` or chat turns ``{"role", "content"}``), ``(role,
content)`` pairs (tuples, or two-item lists as JSON has them, inside the context list), and
strings in a list (one document each). A turn's role is a non-empty string; anything else, and a
context of any other type, is a ``ConfigurationError`` that names what it got.

Documents and turns are outside text: in the prompt, their lines that could pass for the agent's
own (a ``Thought:``, ``Final Answer:``, ``User:`` or ``[2]`` line) are marked with ``> `` in
front (``untrusted.mark_lines``). The free text is the caller's own and is kept as written.

The output (``result_to_output``): the Runnable's output dict for a run's result, with the answer
as an ``AIMessage`` too when the input was a ``MessagesState``, so a graph can append it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompt_values import PromptValue

from explicit_react.errors import ConfigurationError
from explicit_react.types import AgentResult
from explicit_react.untrusted import INVISIBLE, PROTOCOL_LABELS, mark_lines

_ROLES = {
    "human": "User",
    "user": "User",
    "ai": "Assistant",
    "assistant": "Assistant",
    "system": "System",
    "tool": "Tool",
    "function": "Tool",
}
"""Message types and chat roles, as the conversation in the prompt names them."""
_SECTIONS = ("Context", "Documents", "Conversation so far")
"""The headings the prompt's context is written under."""
_NOT_SPEAKERS = (*PROTOCOL_LABELS, *_SECTIONS)
"""What a turn's role may not read as: shown as ``Final Answer: ...`` a client's turn forged a step."""
_SHOWS_NOTHING = re.compile(f"[{INVISIBLE}]")


@dataclass(frozen=True)
class ContextDocument:
    """One document of the context: its text and where it came from (``""`` when unknown)."""

    content: str
    source: str = ""

    def to_dict(self) -> dict[str, str]:
        """The document as ``{"content", "source"}`` (the shape ``KnowledgeBaseTool`` indexes)."""
        return {"content": self.content, "source": self.source} if self.source else {"content": self.content}


@dataclass(frozen=True)
class Context:
    """A context sorted into free text, documents and conversation turns (``(speaker, text)``)."""

    text: str = ""
    documents: tuple[ContextDocument, ...] = ()
    turns: tuple[tuple[str, str], ...] = ()

    def render(self, *, with_documents: bool = True) -> str:
        """The prompt text: the free text, the numbered documents with their sources, then the
        conversation; without the documents when ``with_documents`` is false (they are searched).

        In a document or a turn, a line that starts with a label of the ReAct format, a speaker,
        a heading of this context or a ``[n]`` document marker is marked (module docstring)."""
        parts = [self.text.strip()] if self.text.strip() else []
        labels = (*PROTOCOL_LABELS, *_SECTIONS, *_ROLES, *_ROLES.values(), *(who for who, _ in self.turns))

        def outside(text: str) -> str:
            return mark_lines(text, labels, document_markers=True)

        if self.documents and with_documents:
            lines = (
                f"[{i}] {f'(source: {d.source}) ' if d.source else ''}{outside(d.content.strip())}"
                for i, d in enumerate(self.documents, 1)
            )
            parts.append("Documents:\n" + "\n".join(lines))
        if self.turns:
            said = "\n".join(f"{who}: {outside(text)}" for who, text in self.turns)
            parts.append(f"Conversation so far:\n{said}")
        return "\n\n".join(parts)


def read_context(context: Any) -> Context:
    """Sort any accepted context shape (see the module docstring) into a ``Context``."""
    if context is None:
        return Context()
    if isinstance(context, str):
        return Context(text=context)
    if isinstance(context, (Mapping, BaseMessage, Document)) or (
        isinstance(context, tuple) and _is_pair(context)
    ):
        context = [context]
    if not isinstance(context, Iterable) or isinstance(context, (bytes, bytearray)):
        raise ConfigurationError(_unsupported(context))
    documents: list[ContextDocument] = []
    turns: list[tuple[str, str]] = []
    for item in context:
        if isinstance(item, BaseMessage):
            calls = getattr(item, "tool_calls", None)
            turns.append((_speaker(item.type), item.text.strip() or _called(calls)))
        elif _is_pair(item):
            turns.append((_speaker(item[0]), _text(item[1]).strip()))
        elif isinstance(item, Mapping) and _is_turn(item):
            said = _text(item.get("content")).strip() or _called(item.get("tool_calls"))
            turns.append((_speaker(item["role"] if "role" in item else item["type"]), said))
        elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
            raise ConfigurationError(
                f"a (role, content) pair in the context needs one of the roles {', '.join(_ROLES)}; got {item[0]!r}"
            )
        elif isinstance(item, str):
            documents.append(ContextDocument(item))
        else:
            documents.append(_document(item))
    return Context(documents=tuple(documents), turns=tuple(turns))


def format_context(context: Any) -> str:
    """Any accepted context shape as prompt text (``Context.render``)."""
    return read_context(context).render()


def _is_turn(item: Mapping[str, Any]) -> bool:
    """Whether a dict is a chat turn: OpenAI's ``{"role", "content"}`` (an assistant turn that only
    called tools may leave ``content`` out), or LangChain's ``{"type": "human", "content"}``, which
    ``convert_to_messages`` reads: read as a document, its speaker was lost."""
    if "role" in item:
        return "content" in item or "tool_calls" in item
    kind = item.get("type")
    return (
        isinstance(kind, str) and kind.lower() in _ROLES and "content" in item and "page_content" not in item
    )


def _document(item: Any) -> ContextDocument:
    if isinstance(item, Mapping):
        content = item.get("content")
        if not content and item.get("page_content"):  # {"content": None or "", "page_content": "..."}
            content = item.get("page_content")
        metadata = _metadata(item.get("metadata"))
        source = item.get("source")
        if source is None:
            source = metadata.get("source")
    elif isinstance(getattr(item, "page_content", None), str):  # a Document, or one from another library
        content, metadata = item.page_content, _metadata(getattr(item, "metadata", None))
        source = metadata.get("source")
    else:
        raise ConfigurationError(_unsupported(item))
    if content is None:
        raise ConfigurationError(
            "a context dict needs a 'content' or 'page_content' that is not None, or 'role' and 'content':"
            f" got keys {sorted(map(str, item))}"
        )
    # On one line: the source is shown in the document's first line, "[1] (source: ...)".
    return ContextDocument(_text(content), "" if source is None else " ".join(str(source).split()))


def _metadata(metadata: Any) -> Mapping[str, Any]:
    """A document's metadata: a dict (or any mapping), or ``None`` for none."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise ConfigurationError(
            f"context document metadata of type {type(metadata).__name__} is not supported: pass a dict"
            " (its 'source' is shown with the document) or None"
        )
    return metadata


def _speaker(role: Any) -> str:
    """The name a turn's ``role`` has in the prompt: ``User``, ``Assistant``... or the role itself,
    capitalised and on one line. A role that is not a non-empty string is refused, not guessed: a
    turn given to the wrong speaker would put words in someone's mouth."""
    if not isinstance(role, str) or not role.strip():
        raise ConfigurationError(
            f"a chat turn's role must be a non-empty string such as 'user' or 'assistant'; got {role!r}"
        )
    role = " ".join(_SHOWS_NOTHING.sub("", role).split())  # "user\u200b" is User, not a look-alike
    shown = _ROLES.get(role.lower(), role.capitalize())
    # A role the marking reads as a label ("Final Answer", "Observation 2", "**Question**", "- Thought").
    if mark_lines(f"{shown}: x", _NOT_SPEAKERS, first_line=True) != f"{shown}: x":
        raise ConfigurationError(
            f"a chat turn's role may not be a label of the prompt ({role!r}): shown as a speaker, it would "
            "read as a step of the run or a heading"
        )
    return shown


def _text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    if content is None:  # OpenAI's format: an assistant turn that only called tools
        return ""
    if isinstance(content, list):
        return "".join(
            b if isinstance(b, str) else str(b.get("text", ""))
            for b in content
            if isinstance(b, (str, Mapping))
        )
    return str(content)


def _called(tool_calls: Any) -> str:
    """What a turn with no text did: the tools it called (LangChain's ``tool_calls`` or OpenAI's
    ``{"function": {"name": ...}}``), as ``(called search, calculator)``; "" for none."""
    if not isinstance(tool_calls, list):
        return ""
    names = [
        str(call.get("name") or (call.get("function") or {}).get("name") or "a tool")
        for call in tool_calls
        if isinstance(call, Mapping)
    ]
    return f"(called {', '.join(names)})" if names else ""


def _is_pair(item: Any) -> bool:
    """A ``(role, content)`` turn: a tuple, or a two-item list (JSON has no tuples), with a known role."""
    return (
        isinstance(item, (tuple, list))
        and len(item) == 2
        and isinstance(item[0], str)
        and item[0].strip().lower() in _ROLES
    )


def _unsupported(item: Any) -> str:
    return (
        f"context of type {type(item).__name__} is not supported: pass a string, LangChain Documents or "
        "messages, dicts ({'content', 'source'} documents or {'role', 'content'} turns), (role, content) pairs,"
        " or a list of these"
    )


def read_input(input: Any, context: Any = None) -> tuple[str, str]:
    """The question and the context's prompt text from any accepted input shape (module docstring).

    ``context`` is used when the input carries none. Raises ``ConfigurationError`` for an input of
    another type, a question that is not a string, or an empty question."""
    if isinstance(input, PromptValue):
        input = input.to_messages()
    if isinstance(input, Mapping):
        context = input.get("context", context)
        if "input" in input or "question" in input:
            input = input.get("input", input.get("question"))
        elif "messages" in input:
            input = input["messages"]
        else:
            raise ConfigurationError(
                f"the input dict needs the question under 'input' (or 'question'), or a list of messages "
                f"under 'messages'; it has {sorted(map(str, input))}"
            )
    if isinstance(input, Iterable) and not isinstance(input, str):
        items = list(input)
        if items and all(isinstance(m, BaseMessage) for m in items):
            return _from_messages(items, context)
    if not isinstance(input, str):
        raise ConfigurationError(
            f"the question must be a string (or a prompt value, or a list of messages), not {type(input).__name__}"
        )
    if not input.strip():
        raise ConfigurationError("the question is empty: pass the text the agent should answer")
    return input, format_context(context)


def _from_messages(messages: list[BaseMessage], context: Any) -> tuple[str, str]:
    last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=None)
    if last is None:
        raise ConfigurationError("the messages hold no human message: the last one is the question")
    question = messages[last].text.strip()
    if not question:
        raise ConfigurationError("the last human message is empty: it is the question")
    parts = read_context(context)
    history = read_context(messages[:last] + messages[last + 1 :])
    both = Context(parts.text, parts.documents, parts.turns + history.turns)
    return question, both.render()


def result_to_output(result: AgentResult, input: Any = None) -> dict[str, Any]:
    """The Runnable output dict for a result; for a ``{"messages": [...]}`` input (LangGraph's
    ``MessagesState``) it also holds ``messages``: the answer as an ``AIMessage`` to append."""
    output: dict[str, Any] = {
        "input": result.question,
        "output": result.answer,
        "stop_reason": result.stop_reason.value,
        "success": result.success,
        "error": result.error,
        "steps": [step.to_dict() for step in result.steps],
    }
    if isinstance(input, Mapping) and "messages" in input and not ("input" in input or "question" in input):
        output["messages"] = [AIMessage(content=result.answer)]
    return output


class StreamedInput:
    """A streamed input put back together as LangChain's own ``Runnable.transform`` does: each chunk
    added to the ones before with ``+`` (a parallel step's ``AddableDict`` pieces, text, message
    chunks), or, for chunks that cannot be added (plain dicts), the last one kept."""

    def __init__(self) -> None:
        self.seen = False
        self.value: Any = None

    def add(self, chunk: Any) -> None:
        if not self.seen:
            self.value, self.seen = chunk, True
            return
        try:
            self.value = self.value + chunk
        except TypeError:
            self.value = chunk
