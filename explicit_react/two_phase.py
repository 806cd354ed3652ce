"""The two-phase turn (seed 000): a free-text Thought call, then a function-calling call for the Action.

Each turn makes two model calls. The first sees the tools described as text and the conversation
as a transcript, and may only think. The second sees the conversation as native tool calls plus
that thought, and either calls one tool or answers in plain text. The loop sees one model: the two
calls are one runnable (``TwoPhaseModel``), so steps, budgets, stop reasons, retries and the answer
at a limit are those of ``mode="tool_calling"``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.ai import add_usage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool

from explicit_react.executor import tool_spec
from explicit_react.llm import Completion, message_text
from explicit_react.parser import ACTION, ACTION_INPUT, FINAL_ANSWER, OBSERVATION, THOUGHT
from explicit_react.prompt import load_template, render
from explicit_react.transport import NativeToolCalling, Turn
from explicit_react.types import FinalAnswer

_ANSWER_MARK = "\n\x1e"
"""Joins the thought and a plain-text answer in the combined reply; models do not write \\x1e."""
_NOTHING_DONE = (
    "Error: after your thought you neither called a tool nor answered. "
    "Call one of the tools, or reply with your final answer."
)


class TwoPhaseModel(Runnable[Sequence[BaseMessage], AIMessage]):
    """One turn as two calls: ``thinker`` (no tools) for the thought, ``actor`` (tools bound) for the act.

    The reply is an ``AIMessage`` whose content is the thought, with the actor's tool calls; when the
    actor called no tool, its text (the answer, maybe empty) follows the thought after ``_ANSWER_MARK``. Its usage
    is both calls' together.
    """

    def __init__(self, thinker: Any, actor: Any, tools_text: str) -> None:
        self.thinker = thinker
        self.actor = actor
        self.tools_text = tools_text

    def _thought_prompt(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        conversation = transcript(messages)
        prompt = render(load_template("two_phase_thought"), tools=self.tools_text, conversation=conversation)
        return [HumanMessage(prompt.strip())]

    @staticmethod
    def _act_prompt(messages: Sequence[BaseMessage], thought: str) -> list[BaseMessage]:
        nudge = render(load_template("two_phase_act"), thought=thought).strip()
        return [*messages, HumanMessage(nudge)]

    @staticmethod
    def _combine(thought_reply: Any, act_reply: Any) -> AIMessage:
        thought = _clean(message_text(getattr(thought_reply, "content", thought_reply)))
        answer = _clean(message_text(getattr(act_reply, "content", act_reply)))
        calls = list(getattr(act_reply, "tool_calls", None) or [])
        invalid = list(getattr(act_reply, "invalid_tool_calls", None) or [])
        content = thought if calls or invalid else f"{thought}{_ANSWER_MARK}{answer}"
        usage = [u for r in (thought_reply, act_reply) if (u := getattr(r, "usage_metadata", None))]
        total = add_usage(*usage[:2]) if len(usage) == 2 else (usage[0] if usage else None)
        return AIMessage(content=content, tool_calls=calls, invalid_tool_calls=invalid, usage_metadata=total)

    def invoke(
        self, input: Sequence[BaseMessage], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AIMessage:
        """Think, then act; both calls report to ``config``'s callbacks."""
        thought_reply = self.thinker.invoke(self._thought_prompt(input), config)
        thought = _clean(message_text(thought_reply.content))
        return self._combine(thought_reply, self.actor.invoke(self._act_prompt(input, thought), config))

    async def ainvoke(
        self, input: Sequence[BaseMessage], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AIMessage:
        """Async ``invoke``."""
        thought_reply = await self.thinker.ainvoke(self._thought_prompt(input), config)
        thought = _clean(message_text(thought_reply.content))
        act_reply = await self.actor.ainvoke(self._act_prompt(input, thought), config)
        return self._combine(thought_reply, act_reply)


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
        thought, mark, answer = completion.text.partition(_ANSWER_MARK)
        if not mark:
            return super().read(completion)
        thought, answer = thought.strip(), answer.strip()
        if not answer:  # the thought is private: it is no answer
            return Turn(thought, None, _NOTHING_DONE, completion.usage, completion.seconds)
        log = f"{THOUGHT}: {thought}\n{FINAL_ANSWER}: {answer}" if thought else answer
        decision = FinalAnswer(answer, thought, log)
        return Turn(log, decision, None, completion.usage, completion.seconds)


def transcript(messages: Sequence[BaseMessage]) -> str:
    """The conversation as ReAct text: the question, then each call as Thought / Action / Action
    Input and its result as an Observation (the system message is left out: it is the actor's)."""
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
            lines.append(f"{OBSERVATION}: {text}")
        else:
            lines.append(text)
    return "\n".join(lines)


def _clean(text: str) -> str:
    return text.replace("\x1e", "").strip()
