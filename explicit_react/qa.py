"""GeneralQAAgent: question + context documents or chat turns in, answer + detailed steps out, for services."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.tools import BaseTool

from explicit_react.agent import ExplicitReActAgent
from explicit_react.context import ContextDocument, read_context
from explicit_react.context import format_context as format_context  # its old home; kept importable
from explicit_react.errors import ConfigurationError
from explicit_react.scratchpad import format_tool_input, truncate_middle
from explicit_react.types import SENT_BACK, AgentResult, Step, TokenUsage

MAX_INLINE_DOCUMENTS = 8
"""With more context documents than this, they go into a ``knowledge_search`` tool instead of the prompt."""
MAX_INLINE_CHARS = 12_000
"""Same, when the documents together are longer than this."""
CONTEXT_SEARCH = "knowledge_search"
"""The name of that tool, which no tool given to ``GeneralQAAgent`` may have."""


def describe_step(number: int, step: Step) -> str:
    """A step as one readable line for the ``steps`` list of ``answer()``: the thought, the call and
    its result each with their white space runs (line breaks too) made one space, the result cut
    to about 300 characters in the middle."""
    observation = _one_line(truncate_middle(_one_line(step.observation), 300))
    if step.error in SENT_BACK:  # a Final Answer sent back (cut off, or by check_answer=True), with why
        return f"Step {number}: the Final Answer was sent back -> {observation}"
    if not step.action:
        return f"Step {number}: the reply could not be read -> {observation}"
    thought = f"Thought: {_one_line(step.thought)} | " if step.thought.strip() else ""
    call = f"{_one_line(step.action)}({_one_line(format_tool_input(step.action_input))})"
    return f"Step {number}: {thought}Action: {call} -> {observation}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


class GeneralQAAgent:
    """Answers a query with an ``ExplicitReActAgent``; returns a plain dict with the detailed steps.

    ``agent_kwargs`` go to ``ExplicitReActAgent`` (limits, allowlist, ``verbose``...). When the context
    holds many or long documents they are searched through a ``knowledge_search`` tool instead of
    being pasted into the prompt; so no tool given here may be named ``knowledge_search``.
    """

    def __init__(
        self, llm: Any, tools: Sequence[BaseTool | Callable[..., Any]] | None = None, **agent_kwargs: Any
    ) -> None:
        self.llm = llm
        self.agent_kwargs = agent_kwargs
        self.react_agent = ExplicitReActAgent(llm, tools, **agent_kwargs)
        # Checked now, not when a large context first needs the search (a clash would fail only then).
        if CONTEXT_SEARCH in self.react_agent.executor.tools:
            raise ConfigurationError(
                f"GeneralQAAgent keeps the tool name {CONTEXT_SEARCH!r} for its search over many or long"
                " context documents, and a given tool has that name: rename it (tool.name = 'my_search')"
            )

    def _agent_for(self, documents: Sequence[ContextDocument]) -> ExplicitReActAgent:
        from explicit_react.tools import KnowledgeBaseTool

        knowledge = KnowledgeBaseTool.from_documents([d.to_dict() for d in documents], name=CONTEXT_SEARCH)
        tools = [*self.react_agent.tools, knowledge]
        allowed = self.react_agent.allowed_tools
        # The search over the caller's own documents is always allowed, even by an empty allowlist.
        kwargs = {
            **self.agent_kwargs,
            "allowed_tools": None if allowed is None else {*allowed, knowledge.name},
        }
        return ExplicitReActAgent(self.llm, tools, **kwargs)

    def answer(self, query: str, context: Any = None) -> dict[str, Any]:
        """Answer ``query``: ``{"answer", "steps", "success", "detailed_steps", "stop_reason", ...}``.

        ``context``: a string, LangChain ``Document``s (a retriever's output), messages, dicts, or a
        list mixing them (see ``explicit_react.context``). Many or long documents are searched through
        a ``knowledge_search`` tool instead of being pasted into the prompt."""
        agent, text = self.prepare(context)
        return self.to_response(agent.run(query, text))

    async def aanswer(self, query: str, context: Any = None) -> dict[str, Any]:
        """``answer()`` for an event loop: the same context handling and the same dict, with the
        model and tools called asynchronously (``arun``), so the loop goes on serving others."""
        agent, text = self.prepare(context)
        return self.to_response(await agent.arun(query, text))

    def prepare(self, context: Any = None) -> tuple[ExplicitReActAgent, str]:
        """The agent to run and the context's prompt text, as ``answer()`` uses them: the latest
        turns that fit, and many or long documents (or a long string) in a ``knowledge_search``
        tool of that agent instead of the prompt. Raises ``ConfigurationError`` for a bad context."""
        parts = read_context(context)
        if len(parts.text) > MAX_INLINE_CHARS:  # a long string is searched like a long document
            parts = dataclasses.replace(
                parts, text="", documents=(*parts.documents, ContextDocument(parts.text))
            )
        parts = dataclasses.replace(parts, turns=latest_turns(parts.turns, MAX_INLINE_CHARS))
        documents = parts.documents
        too_many = (
            len(documents) > MAX_INLINE_DOCUMENTS or sum(len(d.content) for d in documents) > MAX_INLINE_CHARS
        )
        agent = self.react_agent
        if too_many:
            agent = self._agent_for(documents)
            note = ("System", f"{len(documents)} documents are searchable with {CONTEXT_SEARCH}.")
            parts = dataclasses.replace(parts, documents=(), turns=(*parts.turns, note))
        return agent, parts.render()

    @staticmethod
    def to_response(result: AgentResult) -> dict[str, Any]:
        """The service response for a result."""
        return response(
            result.answer,
            result.steps,
            success=result.success,
            stop_reason=result.stop_reason.value,
            error=result.error,
            usage=result.usage,
            elapsed_seconds=result.elapsed_seconds,
        )


def response(
    answer: str,
    steps: Sequence[Step],
    *,
    success: bool,
    stop_reason: str | None,
    error: str | None,
    usage: TokenUsage,
    elapsed_seconds: float,
) -> dict[str, Any]:
    """The service response's keys: for a result (``to_response``) and for a run that raised
    (``records.qa_failure``, ``stop_reason`` ``None``)."""
    return {
        "answer": answer,
        "steps": [describe_step(i, s) for i, s in enumerate(steps, 1)],
        "success": success,
        "detailed_steps": [s.to_dict() for s in steps],
        "stop_reason": stop_reason,
        "error": error,
        "usage": usage.to_dict(),
        "elapsed_seconds": elapsed_seconds,
    }


def latest_turns(turns: tuple[tuple[str, str], ...], max_chars: int) -> tuple[tuple[str, str], ...]:
    """The latest conversation turns that fit in ``max_chars`` (the last one always, cut in the
    middle if it alone is longer), after a note of how many earlier ones are left out: a service's
    chat history grows without end, and every turn in the prompt is read again at every step."""
    kept: list[tuple[str, str]] = []
    used = 0
    for who, said in reversed(turns):
        used += len(who) + len(said) + 3
        if kept and used > max_chars:
            break
        kept.append((who, said if kept else truncate_middle(said, max_chars)))
    left_out = len(turns) - len(kept)
    note = [("System", f"{left_out} earlier turns of the conversation are left out.")] if left_out else []
    return (*note, *reversed(kept))
