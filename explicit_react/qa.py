"""GeneralQAAgent: question + context documents or chat turns in, answer + detailed steps out, for services."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool

from explicit_react.agent import ExplicitReActAgent
from explicit_react.scratchpad import format_tool_input, truncate_middle
from explicit_react.types import AgentResult, Step

MAX_INLINE_DOCUMENTS = 8
"""With more context documents than this, they go into a ``knowledge_search`` tool instead of the prompt."""
MAX_INLINE_CHARS = 12_000
"""Same, when the documents together are longer than this."""


def _content(item: Mapping[str, Any]) -> str:
    return str(item.get("content", item.get("page_content", "")) or "")


def _is_chat_turn(item: Mapping[str, Any]) -> bool:
    return "role" in item and "content" in item


def format_context(context: Sequence[Mapping[str, Any]] | Mapping[str, Any] | str) -> str:
    """Context dicts as prompt text: numbered documents with their source, then the conversation."""
    if isinstance(context, str):
        return context
    if isinstance(context, Mapping):
        context = [context]
    documents, turns = [], []
    for item in context:
        if not isinstance(item, Mapping):
            documents.append(str(getattr(item, "page_content", item)))
        elif _is_chat_turn(item):
            turns.append(f"{str(item['role']).capitalize()}: {_content(item).strip()}")
        else:
            source = item.get("source") or (item.get("metadata") or {}).get("source")
            label = f"(source: {source}) " if source else ""
            documents.append(f"{label}{_content(item).strip()}")
    parts = []
    if documents:
        parts.append("Documents:\n" + "\n".join(f"[{i}] {d}" for i, d in enumerate(documents, 1)))
    if turns:
        parts.append("Conversation so far:\n" + "\n".join(turns))
    return "\n\n".join(parts)


def describe_step(number: int, step: Step) -> str:
    """A step as one readable line for the ``steps`` list of ``answer()``."""
    observation = truncate_middle(" ".join(step.observation.split()), 300)
    if not step.action:
        return f"Step {number}: the reply could not be read -> {observation}"
    thought = f"Thought: {step.thought} | " if step.thought else ""
    return f"Step {number}: {thought}Action: {step.action}({format_tool_input(step.action_input)}) -> {observation}"


class GeneralQAAgent:
    """Answers a query with an ``ExplicitReActAgent``; returns a plain dict with the detailed steps.

    ``agent_kwargs`` go to ``ExplicitReActAgent`` (limits, allowlist, ``verbose``...). When the context
    holds many or long documents they are searched through a ``knowledge_search`` tool instead of
    being pasted into the prompt.
    """

    def __init__(
        self, llm: Any, tools: Sequence[BaseTool | Callable[..., Any]] | None = None, **agent_kwargs: Any
    ) -> None:
        self.llm = llm
        self.agent_kwargs = agent_kwargs
        self.react_agent = ExplicitReActAgent(llm, tools, **agent_kwargs)

    def _agent_for(self, documents: list[Mapping[str, Any]]) -> ExplicitReActAgent:
        from explicit_react.tools import KnowledgeBaseTool

        knowledge = KnowledgeBaseTool.from_documents(documents)
        tools = [*self.react_agent.tools, knowledge]
        allowed = self.react_agent.allowed_tools
        # The search over the caller's own documents is always allowed, even by an empty allowlist.
        kwargs = {
            **self.agent_kwargs,
            "allowed_tools": None if allowed is None else {*allowed, knowledge.name},
        }
        return ExplicitReActAgent(self.llm, tools, **kwargs)

    def answer(self, query: str, context: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """Answer ``query``: ``{"answer", "steps", "success", "detailed_steps", "stop_reason", ...}``."""
        context = list(context or [])
        documents = [c for c in context if isinstance(c, Mapping) and not _is_chat_turn(c)]
        too_many = (
            len(documents) > MAX_INLINE_DOCUMENTS
            or sum(len(_content(d)) for d in documents) > MAX_INLINE_CHARS
        )
        agent = self.react_agent
        if too_many:
            agent = self._agent_for(documents)
            context = [c for c in context if not (isinstance(c, Mapping) and not _is_chat_turn(c))]
            context.append(
                {
                    "role": "system",
                    "content": f"{len(documents)} documents are searchable with knowledge_search.",
                }
            )
        result = agent.run(query, format_context(context) if context else "")
        return self.to_response(result)

    @staticmethod
    def to_response(result: AgentResult) -> dict[str, Any]:
        """The service response for a result."""
        return {
            "answer": result.answer,
            "steps": [describe_step(i, s) for i, s in enumerate(result.steps, 1)],
            "success": result.success,
            "detailed_steps": [s.to_dict() for s in result.steps],
            "stop_reason": result.stop_reason.value,
            "error": result.error,
            "usage": result.usage.to_dict(),
            "elapsed_seconds": result.elapsed_seconds,
        }
