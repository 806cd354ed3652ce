"""How a turn is put to the model and read back: the ReAct text protocol, or native tool calling.

Both transports give the loop the same thing, a ``Turn`` holding an ``Action``, a ``FinalAnswer``
or feedback for an unreadable reply, so budgets, steps and stop reasons do not depend on them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.tools import BaseTool

from explicit_react import scratchpad
from explicit_react.errors import ConfigurationError, ParseError
from explicit_react.grammar import final_answer_grammar, react_grammar, takes_grammar, with_grammar
from explicit_react.llm import STOP_SEQUENCE, Completion
from explicit_react.parser import ACTION, ACTION_INPUT, FINAL_ANSWER, parse
from explicit_react.policy import call_signature
from explicit_react.prompt import Message, ReActPrompt, ToolSpec, load_template, render
from explicit_react.scratchpad import ScratchpadLimits, truncate_middle
from explicit_react.types import Action, FinalAnswer, Step, TokenUsage


@dataclass(frozen=True)
class Turn:
    """What one Think phase produced: the model's text and its reading (or the feedback)."""

    text: str
    decision: Action | FinalAnswer | None
    feedback: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    seconds: float = 0.0
    note: str = ""
    """A line for the model added after the observation (a reply that was cut before it was read)."""
    cut: int = 0
    """How many characters of the reply were cut (``max_reply_chars``) before it was read; for a
    Final Answer, counted only when the cut fell inside the answer."""


MAX_INPUT_DEPTH = 32
"""An Action Input nested deeper than this is refused as unreadable (deep nesting exhausts the
recursion of every JSON tool on the way: loop detection, the step's dict, the tool's schema)."""


def checked(decision: Action | FinalAnswer) -> str | None:
    """Feedback for a decision that parsed but cannot be used, else ``None``: an empty Final Answer
    (an empty answer is never a success), or an Action Input nested too deeply."""
    if isinstance(decision, FinalAnswer):
        if decision.answer.strip():
            return None
        return f'Error: your Final Answer is empty. Write the answer after "{FINAL_ANSWER}:".'
    if nesting_depth(decision.tool_input, MAX_INPUT_DEPTH) > MAX_INPUT_DEPTH:
        return (
            f"Error: your {ACTION_INPUT} is nested more than {MAX_INPUT_DEPTH} levels deep. "
            "Send plain text or a flat JSON object."
        )
    return None


def nesting_depth(value: Any, limit: int) -> int:
    """How many levels of lists and dicts nest in ``value`` (text is 0), counted without recursion;
    counting stops past ``limit``."""
    depth, level = 0, [value] if isinstance(value, (list, dict)) else []
    while level and depth <= limit:
        depth += 1
        children = (c.values() if isinstance(c, dict) else c for c in level)
        level = [item for items in children for item in items if isinstance(item, (list, dict))]
    return depth


class Transport(Protocol):
    """Renders the conversation for the model and reads its reply."""

    stop: tuple[str, ...]

    def bind(self, llm: Any, tools: Sequence[BaseTool]) -> Any:
        """The model to call for turns (with tools bound, where the transport needs it)."""

    def bind_final(self, llm: Any) -> Any:
        """The model to call for the last, tool-free answer at a limit."""

    def turn_model(self, steps: Sequence[Step]) -> Any | None:
        """The model for the next turn when it differs from the one ``bind`` gave, else ``None``."""

    def messages(
        self,
        question: str,
        tools: Sequence[ToolSpec],
        steps: Sequence[Step],
        context: str,
        steps_left: int | None,
    ) -> list[Message]:
        """The messages for the next turn."""

    def final_messages(
        self, question: str, tools: Sequence[ToolSpec], steps: Sequence[Step], context: str
    ) -> list[Message]:
        """The messages for the last, tool-free call at a limit."""

    def read(self, completion: Completion) -> Turn:
        """The model's reply as a ``Turn``."""


class TextProtocol:
    """The ReAct text protocol: the prompt files, the scratchpad and the parser. Works with any model."""

    stop: tuple[str, ...] = (STOP_SEQUENCE,)

    def __init__(self, prompt: ReActPrompt, limits: ScratchpadLimits, *, constrain: bool = True) -> None:
        self.prompt = prompt
        self.limits = limits
        self.constrain = constrain
        self._llm: Any = None
        self._tool_names: tuple[str, ...] = ()
        self.names: tuple[str, ...] = ()
        """The names of the tools the model is shown (set by ``bind``)."""
        self.continued = False
        """The model continues the assistant's reply so far (set by ``bind``)."""
        self._without: dict[str, Any] = {}

    def _constrains(self, llm: Any) -> bool:
        """A llama.cpp model, unless ``constrain`` is off or the model already has a grammar of its own."""
        return self.constrain and takes_grammar(llm) and getattr(llm, "grammar", None) is None

    def bind(self, llm: Any, tools: Sequence[BaseTool]) -> Any:
        """The model as it is (the tools are described in the prompt); a llama.cpp model, unless
        ``constrain`` is off or it has a grammar set, is held to the ReAct format and the names of
        ``tools`` by a grammar (with no tools, to a Final Answer). The parser reads the replies
        knowing these names (a real tool called ``finish`` is called, not taken for a final answer)."""
        self.names = tuple(t.name for t in tools)
        self.continued = bool(getattr(llm, "continues_replies", False))
        if self._constrains(llm):
            self._llm, self._tool_names = llm, tuple(t.name for t in tools)
            return with_grammar(llm, react_grammar(self._tool_names), self.stop)
        return llm

    def turn_model(self, steps: Sequence[Step]) -> Any | None:
        """The model for the next turn when it differs from ``bind``'s, else ``None``.

        Under the grammar, when the model has just repeated a call that failed (a ``repeated_call``
        step whose first run was an error), that tool is left out of the next turn: the model must
        take another tool or answer. At temperature 0 a small model otherwise repeats the failed call
        until loop detection stops the run (Qwen2.5 1.5B sent words to the calculator, three times).
        A repeated call that had succeeded is left alone: the model usually has what it needs, and
        forcing another tool made it compute nonsense (docs/benchmarks.md)."""
        if self._llm is None or not steps or steps[-1].error != "repeated_call":
            return None
        last = steps[-1]
        repeated, signature = last.action, call_signature(last.action, last.action_input)
        failed_before = any(
            step.error not in (None, "repeated_call")
            and call_signature(step.action, step.action_input) == signature
            for step in steps[:-1]
        )
        if repeated not in self._tool_names or not failed_before:
            return None
        if repeated not in self._without:
            rest = [name for name in self._tool_names if name != repeated]
            self._without[repeated] = with_grammar(self._llm, react_grammar(rest), self.stop)
        return self._without[repeated]

    def bind_final(self, llm: Any) -> Any:
        """The model as it is; a llama.cpp model (as in ``bind``) is held to a Final Answer."""
        if self._constrains(llm):
            return with_grammar(llm, final_answer_grammar(), self.stop)
        return llm

    def messages(
        self,
        question: str,
        tools: Sequence[ToolSpec],
        steps: Sequence[Step],
        context: str,
        steps_left: int | None,
    ) -> list[Message]:
        """System prompt with tools and format; the question, context and scratchpad as the user
        message, or, for a model that continues a reply (``continues_replies``), the scratchpad as
        the assistant's reply so far."""
        return self.prompt.messages(
            question,
            tools,
            scratchpad.render(steps, self.limits),
            context,
            steps_left,
            continued=self.continued,
        )

    def final_messages(
        self, question: str, tools: Sequence[ToolSpec], steps: Sequence[Step], context: str
    ) -> list[Message]:
        """The question and what the tool calls returned, asking for a Final Answer now."""
        return self.prompt.final_answer_messages(
            question, tools, scratchpad.render_findings(steps, self.limits), context
        )

    def read(self, completion: Completion) -> Turn:
        """Parse the reply; an unreadable one (or one ``checked`` refuses) gives feedback."""
        try:
            decision = parse(completion.text, tools=self.names)
        except ParseError as exc:
            return Turn(completion.text, None, exc.feedback, completion.usage, completion.seconds)
        except RecursionError:  # nesting too deep for the parser's JSON reading
            feedback = (
                f"Error: your {ACTION_INPUT} is nested too deeply. Send plain text or a flat JSON object."
            )
            return Turn(completion.text, None, feedback, completion.usage, completion.seconds)
        if (problem := checked(decision)) is not None:
            return Turn(completion.text, None, problem, completion.usage, completion.seconds)
        return Turn(completion.text, decision, None, completion.usage, completion.seconds)


class NativeToolCalling:
    """The provider's function calling (``bind_tools``): tool calls come back structured, not as text.

    The history is replayed as assistant messages with one tool call each and tool messages with
    the observations (each cut to ``max_observation_chars``); steps older than the latest
    ``keep_recent`` are one line each after the question, as in the text scratchpad. A reply with no
    tool call is the final answer.
    """

    stop: tuple[str, ...] = ()

    def __init__(self, limits: ScratchpadLimits) -> None:
        self.limits = limits

    def bind(self, llm: Any, tools: Sequence[BaseTool]) -> Any:
        """``llm.bind_tools(tools)``; a model without function calling is a configuration error."""
        try:
            return llm.bind_tools(list(tools))
        except (AttributeError, NotImplementedError) as exc:
            raise ConfigurationError(
                f"{type(llm).__name__} does not support native tool calling; use mode='text'"
            ) from exc

    def bind_final(self, llm: Any) -> Any:
        """The model as it is, without tools: it can only answer."""
        return llm

    def turn_model(self, steps: Sequence[Step]) -> Any | None:
        """Always the bound model."""
        return None

    def _system(self, tools: Sequence[ToolSpec], steps_left: int | None) -> Message:
        note = "" if steps_left is None else f"\nYou have {steps_left} tool calls left."
        names = ", ".join(t.name for t in tools)
        return {"role": "system", "content": render(load_template("tool_calling"), tool_names=names) + note}

    def _history(self, question: str, steps: Sequence[Step], context: str) -> list[Message]:
        """The question, then the latest ``keep_recent`` steps as tool calls and results; the older
        steps are summarised one line each (as the text scratchpad does) after the question."""
        context = context.strip()
        user = f"Context:\n{context}\n\nQuestion: {question.strip()}" if context else question.strip()
        summary, count = scratchpad.summarize_older(steps, self.limits)
        if summary:  # in the question's message: no two user messages in a row, no call left unpaired
            user = f"{user}\n\n{summary}"
        messages: list[Message] = [{"role": "user", "content": user}]
        for number, step in enumerate(steps[count:], count + 1):
            observation = truncate_middle(step.observation, self.limits.max_observation_chars)
            if not step.action:
                messages += [
                    {"role": "assistant", "content": step.log},
                    {"role": "user", "content": observation},
                ]
                continue
            args = step.action_input if isinstance(step.action_input, dict) else {"input": step.action_input}
            call_id = f"call_{number}"
            messages.append(
                {
                    "role": "assistant",
                    "content": step.thought,
                    "tool_calls": [{"name": step.action, "args": args, "id": call_id, "type": "tool_call"}],
                }
            )
            messages.append({"role": "tool", "content": observation, "tool_call_id": call_id})
        return messages

    def messages(
        self,
        question: str,
        tools: Sequence[ToolSpec],
        steps: Sequence[Step],
        context: str,
        steps_left: int | None,
    ) -> list[Message]:
        """System note, the question, then each step as a tool call and its result."""
        return [self._system(tools, steps_left), *self._history(question, steps, context)]

    def final_messages(
        self, question: str, tools: Sequence[ToolSpec], steps: Sequence[Step], context: str
    ) -> list[Message]:
        """The history, then a request for the answer (the final call is made without tools)."""
        request = "You cannot call any more tools. Answer the question now from the tool results above."
        return [
            self._system(tools, None),
            *self._history(question, steps, context),
            {"role": "user", "content": request},
        ]

    def read(self, completion: Completion) -> Turn:
        """The first tool call is the action; a reply without one is the final answer."""
        thought = completion.text.strip()
        if completion.tool_calls:
            call = completion.tool_calls[0]
            if "error" in call:
                return Turn(thought, None, _invalid_call(call), completion.usage, completion.seconds)
            args = call.get("args") or {}
            log = (
                f"{thought}\n{ACTION}: {call['name']}\n{ACTION_INPUT}: {json.dumps(args, ensure_ascii=False)}"
            )
            action = Action(call["name"], args, thought, log.strip())
            problem = checked(action)
            return Turn(
                action.log,
                None if problem else action,
                problem,
                completion.usage,
                completion.seconds,
                _dropped(completion.tool_calls),
            )
        if thought:
            return Turn(thought, plain_answer(thought), None, completion.usage, completion.seconds)
        feedback = "Error: your reply was empty. Call one of the tools, or reply with your final answer."
        return Turn("", None, feedback, completion.usage, completion.seconds)


def _invalid_call(call: dict[str, Any]) -> str:
    """The feedback for a tool call the model's reply holds but that cannot be run: what was wrong
    with it, as the model's client said (LangChain's ``"invalid"``: its arguments were not JSON)."""
    name, error = call.get("name") or "", call.get("error") or "invalid"
    what = f"your call to {name!r}" if name else "your tool call"
    if error == "invalid":
        return f"Error: the arguments of {what} are not valid JSON. Call it again with a JSON object."
    return f"Error: {what} could not be run: {error}. Call it again with a JSON object of arguments that fit the tool."


def plain_answer(text: str) -> FinalAnswer:
    """A reply with no tool call, as the answer: the whole text, or, when the model wrote it in the
    text format ("Thought: ...\nFinal Answer: Paris", which a ReAct transcript invites), what its
    Final Answer says, with the Thought before it as the thought."""
    if FINAL_ANSWER.lower() in text.lower():
        with contextlib.suppress(ParseError):
            if isinstance(read := parse(text), FinalAnswer):
                return FinalAnswer(read.answer, read.thought, text)
    return FinalAnswer(text, "", text)


def _dropped(calls: Sequence[dict[str, Any]]) -> str:
    """The note for a reply with several tool calls: only the first runs, and the model is told which
    did not (one call per step keeps each step's thought, budget and loop check about one call)."""
    if len(calls) < 2:
        return ""
    rest = "; ".join(
        f"{c.get('name')}({json.dumps(c.get('args') or {}, ensure_ascii=False)})" for c in calls[1:]
    )
    return (
        f"Note: your reply had {len(calls)} tool calls; only the first ran. Not run: {rest}. "
        "Call one tool at a time."
    )
