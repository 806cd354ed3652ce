"""The two-phase turn (seed 000): a free-text Thought call, then a function-calling call for the Action.

Each turn makes two model calls. The first sees the tools described as text and the conversation
as a transcript, and may only think. The second sees the conversation as native tool calls plus
that thought, and either calls one tool or answers in plain text. The loop sees one model: the two
calls are one runnable (``TwoPhaseModel``), so steps, budgets, stop reasons, retries and the answer
at a limit are those of ``mode="tool_calling"``.

Two things differ because one reply stands for two calls. The loop cuts a reply at
``max_reply_chars`` (and the model adapter at a model-written ``Observation:`` line), so the act
part comes first in the joined reply and the thought after it: a cut can shorten the thought, never
remove the answer; and a thought is cut to ``MAX_THOUGHT_CHARS`` on its own, with a mark. A failed act
call leaves its thought for a retry of the same turn, which acts again without thinking again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata, add_usage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool

from explicit_react.executor import tool_spec
from explicit_react.llm import Completion, message_text
from explicit_react.parser import ACTION, ACTION_INPUT, FINAL_ANSWER, OBSERVATION, THOUGHT
from explicit_react.prompt import load_template, render
from explicit_react.scratchpad import truncate_middle
from explicit_react.transport import NativeToolCalling, Turn, plain_answer
from explicit_react.types import FinalAnswer
from explicit_react.untrusted import mark_lines

MAX_THOUGHT_CHARS = 4000
"""A longer thought keeps its head and tail with ``[... N characters cut ...]`` between them, before
the Act call sees it. The thought prompt asks for one short paragraph; a runaway one would fill the
Act call's prompt and the step's log."""
_ANSWER_MARK = "\n\x1e"
"""Joins a plain-text answer and the thought after it in the combined reply; models do not write \\x1e."""
_PENDING_TURNS = 32
"""How many thoughts whose act call failed are kept for a retry (the oldest is dropped)."""
_NOTHING_DONE = (
    "Error: after your thought you neither called a tool nor answered. "
    "Call one of the tools, or reply with your final answer."
)


@dataclass(frozen=True)
class _Thought:
    """A Thought call's text (clean, cut to ``MAX_THOUGHT_CHARS``) and the tokens it cost."""

    text: str
    usage: UsageMetadata | None


class _PendingThoughts:
    """Thoughts whose act call failed, by the turn's input messages, each taken at most once.

    The model adapter retries a failed call with the same messages, so the retry finds the thought
    it already paid for and makes the act call alone. A turn is its whole input (the system
    message, the question, every step): another run at the very same point may take the thought
    instead, which is the thought the same prompt asked for, and its tokens are counted there."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[str, _Thought] = OrderedDict()

    @staticmethod
    def _key(messages: Sequence[BaseMessage]) -> str:
        parts = [
            (m.type, m.content, getattr(m, "tool_calls", None), getattr(m, "tool_call_id", None))
            for m in messages
        ]
        return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()

    def take(self, messages: Sequence[BaseMessage]) -> _Thought | None:
        if not self._items:  # the usual case: no act call has failed
            return None
        key = self._key(messages)
        with self._lock:
            return self._items.pop(key, None)

    def keep(self, messages: Sequence[BaseMessage], thought: _Thought) -> None:
        key = self._key(messages)
        with self._lock:
            self._items[key] = thought
            self._items.move_to_end(key)
            while len(self._items) > _PENDING_TURNS:
                self._items.popitem(last=False)


class TwoPhaseModel(Runnable[Sequence[BaseMessage], AIMessage]):
    """One turn as two calls: ``thinker`` (no tools) for the thought, ``actor`` (tools bound) for the act.

    The reply is an ``AIMessage`` with the actor's tool calls whose content is the thought; when the
    actor called no tool, its content is the actor's text (the answer, maybe empty), ``_ANSWER_MARK``,
    then the thought. Its usage is both calls' together.

    When the act call fails, its error goes to the caller as it was raised (a transient one is
    retried by the model adapter), with the thought call's usage as its ``usage_metadata`` (the
    tokens of a call that was paid for), and the thought is kept: a call with the same input acts
    on it instead of thinking again, and that reply's usage includes it.
    """

    def __init__(
        self, thinker: Any, actor: Any, tools_text: str, *, max_thought_chars: int = MAX_THOUGHT_CHARS
    ) -> None:
        self.thinker = thinker
        self.actor = actor
        self.tools_text = tools_text
        self.max_thought_chars = max_thought_chars
        self._pending = _PendingThoughts()

    @property
    def inner_models(self) -> tuple[Any, Any]:
        """The two models a turn calls: its async form is native only when both of theirs are
        (``model_kind.has_native_async``)."""
        return (self.thinker, self.actor)

    def _thought_prompt(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        conversation = transcript(messages)
        prompt = render(load_template("two_phase_thought"), tools=self.tools_text, conversation=conversation)
        return [HumanMessage(prompt.strip())]

    @staticmethod
    def _act_prompt(messages: Sequence[BaseMessage], thought: str) -> list[BaseMessage]:
        nudge = render(load_template("two_phase_act"), thought=thought).strip()
        return [*messages, HumanMessage(nudge)]

    def _thought(self, reply: Any) -> _Thought:
        text = _clean(message_text(getattr(reply, "content", reply)))
        return _Thought(truncate_middle(text, self.max_thought_chars), getattr(reply, "usage_metadata", None))

    def _act_failed(self, messages: Sequence[BaseMessage], thought: _Thought, exc: BaseException) -> None:
        self._pending.keep(messages, thought)
        if thought.usage is not None:
            with contextlib.suppress(AttributeError, TypeError):  # an exception that takes no attributes
                setattr(exc, "usage_metadata", thought.usage)  # noqa: B010

    @staticmethod
    def _combine(thought: _Thought, act_reply: Any) -> AIMessage:
        answer = _clean(message_text(getattr(act_reply, "content", act_reply)))
        calls = list(getattr(act_reply, "tool_calls", None) or [])
        invalid = list(getattr(act_reply, "invalid_tool_calls", None) or [])
        # The act part first: the loop's cut at max_reply_chars keeps a reply's beginning.
        content = thought.text if calls or invalid else f"{answer}{_ANSWER_MARK}{thought.text}"
        usage = [u for u in (thought.usage, getattr(act_reply, "usage_metadata", None)) if u]
        total = add_usage(*usage) if len(usage) == 2 else (usage[0] if usage else None)
        return AIMessage(content=content, tool_calls=calls, invalid_tool_calls=invalid, usage_metadata=total)

    def invoke(
        self, input: Sequence[BaseMessage], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AIMessage:
        """Think (unless a failed act call left this turn's thought), then act; both calls report
        to ``config``'s callbacks."""
        thought = self._pending.take(input)
        if thought is None:
            thought = self._thought(self.thinker.invoke(self._thought_prompt(input), config))
        try:
            act_reply = self.actor.invoke(self._act_prompt(input, thought.text), config)
        except BaseException as exc:
            self._act_failed(input, thought, exc)
            raise
        return self._combine(thought, act_reply)

    async def ainvoke(
        self, input: Sequence[BaseMessage], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AIMessage:
        """Async ``invoke``."""
        thought = self._pending.take(input)
        if thought is None:
            thought = self._thought(await self.thinker.ainvoke(self._thought_prompt(input), config))
        try:
            act_reply = await self.actor.ainvoke(self._act_prompt(input, thought.text), config)
        except BaseException as exc:
            self._act_failed(input, thought, exc)
            raise
        return self._combine(thought, act_reply)


class TwoPhase(NativeToolCalling):
    """``mode="two_phase"``: each turn a Thought call, then a native function-calling call.

    Needs a chat model with ``bind_tools``. The history, the answer at a limit (one tool-free call)
    and the reading of tool calls are ``NativeToolCalling``'s."""

    def bind(self, llm: Any, tools: Sequence[BaseTool]) -> Any:
        """A ``TwoPhaseModel`` over ``llm`` (thinking, no tools) and ``llm.bind_tools(tools)`` (acting)."""
        actor = super().bind(llm, tools)
        listing = "\n".join(tool_spec(t).describe() for t in tools) or "(no tools)"
        return TwoPhaseModel(llm, actor, listing)

    def read(self, completion: Completion) -> Turn:
        """A tool call is the action, its thought the first call's; a plain-text act is the answer."""
        answer, mark, thought = completion.text.partition(_ANSWER_MARK)
        if not mark:  # a tool call, or an answer so long that the loop's cut took the mark off
            return super().read(completion)
        thought, answer = thought.strip(), answer.strip()
        if not answer:  # the thought is private: it is no answer
            return Turn(thought, None, _NOTHING_DONE, completion.usage, completion.seconds)
        answer = plain_answer(answer).answer  # "Final Answer: Paris", copied from the transcript's format
        log = f"{THOUGHT}: {thought}\n{FINAL_ANSWER}: {answer}" if thought else answer
        decision = FinalAnswer(answer, thought, log)
        return Turn(log, decision, None, completion.usage, completion.seconds)


def transcript(messages: Sequence[BaseMessage]) -> str:
    """The conversation as ReAct text: the question, then each call as Thought / Action / Action
    Input and its result as an Observation (the system message is left out: it is the actor's). A
    tool's result is outside text: its lines that could pass for the format's are marked
    (``untrusted.mark_lines``), as in the text protocol's scratchpad."""
    lines: list[str] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            continue
        text = message_text(m.content).strip()
        if isinstance(m, AIMessage):
            if text:
                lines.append(f"{THOUGHT}: {text}")
            for call in m.tool_calls:
                lines.append(f"{ACTION}: {call['name']}")
                lines.append(f"{ACTION_INPUT}: {json.dumps(call['args'], ensure_ascii=False)}")
        elif isinstance(m, ToolMessage):
            lines.append(f"{OBSERVATION}: {mark_lines(text)}")
        else:
            lines.append(text)
    return "\n".join(lines)


def _clean(text: str) -> str:
    return text.replace("\x1e", "").strip()
