"""Think → Act → Observe: the decisions of one run, written once as a step machine, free of I/O.

    render the prompt → the model completes it → read the reply
    → a Final Answer ends the run; an Action runs through the policy and the tool executor
    → the observation becomes a step → check the budgets → repeat

``ReActLoop.steps`` yields a request whenever it needs the outside world (a model call, a tool call,
a callback or listener event) and receives the result; ``drivers.drive`` and ``drivers.adrive``
carry the requests out, so ``run`` and ``arun`` behave alike. Bad model output and tool failures
become observations the model can recover from; normal stops are data, never exceptions.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Sequence
from functools import cache
from typing import Any, Literal, Protocol

from langchain_core.agents import AgentAction

from explicit_react.answer_check import AnswerCheck
from explicit_react.deadline import DeadlineExceeded
from explicit_react.drivers import Machine, Notify, heard
from explicit_react.errors import ModelCallError
from explicit_react.executor import ToolExecutor, ToolOutcome
from explicit_react.llm import Completion, ModelAdapter, usage_of
from explicit_react.parser import plain_text
from explicit_react.policy import SOURCED_NUMBERS, Budget, RunGuard
from explicit_react.prompt import Message, ToolSpec, load_template
from explicit_react.run_state import Acted, RunState
from explicit_react.scratchpad import ScratchpadLimits, truncate_middle
from explicit_react.tool_input import agent_tool_input
from explicit_react.transport import Transport, Turn
from explicit_react.types import Action, AgentResult, FinalAnswer, Step, StopReason, TokenUsage


class RunListener(Protocol):
    """Receives a run's progress; ``display.TracePrinter`` and ``trace.JsonlTrace`` are listeners."""

    def on_turn_start(self, turn: int, max_turns: int | None) -> None:
        """The model is about to be asked for turn ``turn`` (1-based)."""

    def on_action(self, action: Action, turn: int, max_turns: int | None) -> None:
        """The policy let ``action`` run; its tool starts now (the step follows when it returns)."""

    def on_step(self, step: Step, turn: int, max_turns: int | None) -> None:
        """A step completed (its observation is in)."""

    def on_result(self, result: AgentResult) -> None:
        """The run ended."""


class ReActLoop:
    """The decisions of a run. ``ExplicitReActAgent`` builds the parts below from its options."""

    budget: Budget
    allowed_tools: frozenset[str] | None
    executor: ToolExecutor
    transport: Transport
    model: ModelAdapter
    final_model: ModelAdapter
    limits: ScratchpadLimits
    tool_timeout: float | None
    on_limit: Literal["generate", "force"]
    on_llm_error: Literal["stop", "raise"]
    max_reply_chars: int | None
    keep_tool_output: bool
    listeners: list[Any]
    check_answer: bool = False

    @property
    def max_iterations(self) -> int | None:
        """The iteration budget (``None``: no limit)."""
        return self.budget.max_iterations

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """The tools the model is shown: all of them, or the allowed ones."""
        return [
            spec
            for name, spec in self.executor.specs.items()
            if self.allowed_tools is None or name in self.allowed_tools
        ]

    def messages(
        self, question: str, steps: Sequence[Step] = (), context: str = "", steps_left: int | None = None
    ) -> list[Message]:
        """The prompt for the next turn, as role/content messages."""
        return self.transport.messages(question, self.tool_specs, steps, context, steps_left)

    def new_run(
        self, question: str, context: str, manager: Any = None, callbacks: Any = None, config: Any = None
    ) -> RunState:
        """The state of a run that has not started (with an id for its listeners, when it has any);
        ``config``: the run's, for its model calls."""
        run = RunState(question, context, RunGuard(self.budget, self.allowed_tools), manager, callbacks)
        run.config = config
        run.run_id = uuid.uuid4().hex[:12] if self.listeners else None
        if self.check_answer:
            run.answer_check = AnswerCheck(self.calculator_name)
        return run

    @property
    def calculator_name(self) -> str | None:
        """The shown tool that calculates (``SOURCED_NUMBERS`` in its metadata, or "calc" in its
        name), for the answer check's advice on a calculation left undone; ``None`` when none does."""
        shown = [
            t
            for t in self.executor.tools.values()
            if self.allowed_tools is None or t.name in self.allowed_tools
        ]
        marked = [t.name for t in shown if (t.metadata or {}).get(SOURCED_NUMBERS)]
        named = [t.name for t in shown if "calc" in t.name.lower()]
        return next(iter(marked or named), None)

    # The loop -----------------------------------------------------------------------------
    def steps(self, run: RunState) -> Machine[None]:
        """Think → Act → Observe until a final answer or a stop; yields each step as it completes,
        and leaves the result in ``run.result``."""
        guard = run.guard
        while (stop := guard.stop_before_turn(len(run.steps))) is None:
            if self.listeners:
                yield self._tell(run, "on_turn_start", len(run.steps) + 1, self.max_iterations)
            try:
                turn = yield from self.thinking(run)
                if isinstance(turn.decision, FinalAnswer):
                    if (sent_back := self.reviewed(turn, run)) is None:
                        yield from self._finish(run, turn.decision.answer, StopReason.SUCCESS, turn.text)
                        return
                    acted = sent_back
                else:
                    acted = yield from self.acting(turn, run)
            except ModelCallError as exc:
                paid = usage_of(exc)  # a failed turn may have paid for a call (two_phase's thought)
                run.usage += paid
                run.guard.record_tokens(paid.total_tokens)
                if self.on_llm_error == "raise":  # for with_retry / with_fallbacks around the agent
                    raise
                yield from self._finish(
                    run, STOPPED_ANSWERS[StopReason.LLM_ERROR], StopReason.LLM_ERROR, error=str(exc)
                )
                return
            except DeadlineExceeded:
                stop = StopReason.MAX_SECONDS
                break
            if acted.outcome is not None:
                step = self.observe(turn, acted)
                run.steps.append(step)
                if self.listeners:
                    yield self._tell(run, "on_step", step, len(run.steps), self.max_iterations)
                yield step
            if acted.stop is StopReason.RETURN_DIRECT and acted.outcome is not None:
                # The tool's own text is the answer, not the step's observation: that one is cut to
                # max_observation_chars and may carry notes for the model (a cut reply, calls not run).
                yield from self._finish(run, acted.outcome.observation, StopReason.RETURN_DIRECT)
                return
            if acted.stop is not None:
                stop = acted.stop
                break
        yield from self._stop_at_limit(run, stop)

    # Think, Act, Observe --------------------------------------------------------------------
    def thinking(self, run: RunState, steps_left: int | None = None) -> Machine[Turn]:
        """THINK: ask the model for its next thought and action (or answer), and read the reply.

        A reply over ``max_reply_chars`` is cut before it is read; the deadline covers the reading."""
        steps_left = run.guard.steps_left(len(run.steps)) if steps_left is None else steps_left
        model = (
            self.model if (llm := self.transport.turn_model(run.steps)) is None else self.model.with_llm(llm)
        )
        messages = self.messages(run.question, run.steps, run.context, steps_left)
        completion = yield from model.calls(messages, run.callbacks, run.guard.deadline, run.config)
        run.count(completion.usage)
        whole = completion.text
        completion, cut = _cut_reply(completion, self.max_reply_chars)
        turn = self.transport.read(completion)
        if run.guard.deadline.expired():
            raise DeadlineExceeded("time ran out while the reply was read")
        if isinstance(turn.decision, FinalAnswer):
            if cut and whole[-cut:].strip() and _runs_to_the_end(turn.decision, completion.text):
                turn = dataclasses.replace(turn, cut=cut)
        elif cut:
            note = "\n".join(filter(None, (turn.note, _cut_note(cut, self.max_reply_chars))))
            turn = dataclasses.replace(turn, note=note, cut=cut)
        return turn

    def _permit(self, turn: Turn, run: RunState, *, in_run: bool = True) -> Acted | None:
        """The policy's answer to a turn: an ``Acted`` when the tool must not run, ``None`` to run it.
        Outside a run (``in_run=False``) there are no sources to check a call's numbers against."""
        if not isinstance(turn.decision, Action):
            feedback = turn.feedback or "Your reply could not be read."
            error = feedback if feedback.startswith("Error") else f"Error: {feedback}"
            stop = run.guard.check_unreadable(len(run.steps) + 1, turn.text)
            return Acted(ToolOutcome(error, error="parse_error"), stop=stop)
        action = turn.decision
        tool = self.executor.resolve(action.tool)
        if tool is None:
            unknown = self.executor.unknown_tool_observation(action.tool)
            verdict = run.guard.check_unknown(len(run.steps) + 1, action.tool, action.tool_input, unknown)
            return Acted(ToolOutcome(verdict.observation, error=verdict.error), action.tool, verdict.stop)
        verdict = run.guard.check(tool, action.tool_input)
        if verdict.error == "tool_denied":  # the same answer as a made-up name: a refusal reveals nothing
            verdict = dataclasses.replace(
                verdict, observation=self.executor.unknown_tool_observation(action.tool)
            )
        if verdict.run and in_run and (self.executor.tools[tool].metadata or {}).get(SOURCED_NUMBERS):
            verdict = run.guard.check_sources(tool, action.tool_input, run.known_numbers()) or verdict
        if verdict.run:
            return None
        if not verdict.observation:  # over the tool-call budget: nothing to observe, the run ends
            return Acted(None, tool, verdict.stop)
        return Acted(ToolOutcome(verdict.observation, error=verdict.error), tool, verdict.stop)

    def acting(self, turn: Turn, run: RunState, *, in_run: bool = True) -> Machine[Acted]:
        """ACT: run the action the model chose, if the policy allows it."""
        if isinstance(turn.decision, FinalAnswer):  # only act() can get here: a run ends at the answer
            raise ValueError(
                "act() was given a turn that holds a Final Answer: there is nothing to act on "
                "(the answer is turn.decision.answer)"
            )
        if (refused := self._permit(turn, run, in_run=in_run)) is not None:
            return refused
        action = turn.decision
        assert isinstance(action, Action)
        tool = self.executor.resolve(action.tool) or action.tool
        if heard(run.manager):
            agent_action = AgentAction(tool, agent_tool_input(action.tool_input), turn.text)
            yield Notify((run.manager,), "on_agent_action", (agent_action,))
        if in_run and self.listeners:
            yield self._tell(run, "on_action", action, len(run.steps) + 1, self.max_iterations)
        started = time.monotonic()
        try:
            outcome = yield from self.executor.calls(
                action.tool,
                action.tool_input,
                callbacks=run.callbacks,
                timeout=self.tool_timeout,
                deadline=run.guard.deadline,
            )
        except DeadlineExceeded as exc:  # kept as a step, so the call that hung is visible
            observation = (
                f"Error: the run's max_seconds={self.budget.max_seconds} ran out while tool {tool!r} "
                f"was running ({exc})."
            )
            cut = ToolOutcome(observation, error="tool_timeout", seconds=time.monotonic() - started)
            return Acted(cut, tool, StopReason.MAX_SECONDS)
        run.guard.record_call(
            len(run.steps) + 1, tool, action.tool_input, outcome.observation, outcome.ran, outcome.retryable
        )
        return Acted(outcome, tool, StopReason.RETURN_DIRECT if outcome.return_direct else None)

    def reviewed(self, turn: Turn, run: RunState) -> Acted | None:
        """``None`` to accept a Final Answer, or the feedback that sends it back to the model as a
        step: once per run when the answer ran on past ``max_reply_chars`` and was cut, and with
        ``check_answer=True`` when it fails a check (``answer_check.py``). On the last turn the
        iteration budget allows, the answer is accepted: sent back, it would be lost to the limit
        it could no longer be fixed within."""
        if run.guard.steps_left(len(run.steps)) == 1:
            return None
        if turn.cut and not any(step.error == "answer_cut" for step in run.steps):
            return Acted(
                ToolOutcome(_answer_cut_feedback(turn.cut, self.max_reply_chars), error="answer_cut")
            )
        if run.answer_check is None or not isinstance(turn.decision, FinalAnswer):
            return None
        feedback = run.answer_check.review(run.question, turn.decision.answer, run.sources())
        return None if feedback is None else Acted(ToolOutcome(feedback, error="answer_check"))

    def observe(self, turn: Turn, acted: Acted) -> Step:
        """OBSERVE: record the turn and what it produced as a step."""
        outcome = acted.outcome or ToolOutcome("")
        action = turn.decision if isinstance(turn.decision, Action) else None
        observation = truncate_middle(outcome.observation, self.limits.max_observation_chars)
        return Step(
            thought=action.thought if action else "",
            action=(acted.tool or action.tool) if action else "",
            action_input=action.tool_input if action else "",
            observation=f"{observation}\n{turn.note}" if turn.note else observation,
            log=turn.text,
            error=outcome.error,
            llm_seconds=turn.seconds,
            tool_seconds=outcome.seconds,
            usage=turn.usage,
            tool_output=outcome.output if self.keep_tool_output else None,
        )

    def _tell(self, run: RunState, method: str, *args: Any) -> Notify:
        """The listeners' event: the driver sets ``types.current_run`` to the run's id while it
        calls them, wherever the machine is resumed from (a stream's steps may be pulled from
        other contexts, between another run's steps)."""
        return Notify(self.listeners, method, args, run_id=run.run_id)

    # Stopping -----------------------------------------------------------------------------
    def _stop_at_limit(self, run: RunState, stop: StopReason) -> Machine[None]:
        """End a run that hit a limit: one tool-free call for an answer (``on_limit="generate"``), or none."""
        answer = STOPPED_ANSWERS[stop]
        if self.on_limit == "generate" and stop in _ANSWER_AT_LIMIT:
            messages = self.transport.final_messages(run.question, self.tool_specs, run.steps, run.context)
            try:
                completion = yield from self.final_model.calls(
                    messages, run.callbacks, run.guard.deadline, run.config
                )
                run.count(completion.usage)  # whatever it says (nothing, a tool call): the call was made
            except (ModelCallError, DeadlineExceeded):
                completion = _NO_COMPLETION
            completion, _ = _cut_reply(completion, self.max_reply_chars)
            answer = _answer_at_limit(self.transport.read(completion), answer)
        yield from self._finish(run, answer, stop, error=self._limit_sentence(stop))

    def _limit_sentence(self, stop: StopReason) -> str:
        b = self.budget
        return {
            StopReason.MAX_ITERATIONS: f"the run reached max_iterations={b.max_iterations} without a final answer",
            StopReason.MAX_TOOL_CALLS: f"the model asked for more than max_tool_calls={b.max_tool_calls} tool calls",
            StopReason.MAX_SECONDS: f"the run used its max_seconds={b.max_seconds} before an answer",
            StopReason.MAX_TOKENS: f"the model used more than max_tokens={b.max_tokens} tokens",
            StopReason.LOOP_DETECTED: "the model kept repeating a call it had already made, or a reply that could not be read",
            StopReason.TOOL_DENIED: "the model kept asking for a tool that is not allowed",
        }.get(stop, str(stop))

    def _finish(
        self, run: RunState, answer: str, stop: StopReason, log: str = "", error: str | None = None
    ) -> Machine[None]:
        result = run.finish(answer.strip(), stop, error, log)
        if self.listeners:
            yield self._tell(run, "on_result", result)


_ANSWER_AT_LIMIT = {
    StopReason.MAX_ITERATIONS,
    StopReason.MAX_TOOL_CALLS,
    StopReason.MAX_TOKENS,
    StopReason.LOOP_DETECTED,
    StopReason.TOOL_DENIED,
}

STOPPED_ANSWERS = {  # the answer of a run that stopped without one of its own
    StopReason.MAX_ITERATIONS: "I could not find an answer within the allowed number of steps.",
    StopReason.MAX_TOOL_CALLS: "I could not find an answer within the allowed number of tool calls.",
    StopReason.MAX_SECONDS: "I ran out of time before I could find an answer.",
    StopReason.MAX_TOKENS: "I could not find an answer within the allowed number of tokens.",
    StopReason.LOOP_DETECTED: "I stopped because I kept repeating the same action without getting closer to an answer.",
    StopReason.TOOL_DENIED: "I stopped because the tool I needed is not allowed here.",
    StopReason.LLM_ERROR: "I could not answer because the language model failed.",
}

_NO_COMPLETION = Completion("", TokenUsage(), 0.0)


def _cut_reply(completion: Completion, limit: int | None) -> tuple[Completion, int]:
    """The completion with its text cut to ``limit`` characters, and how many were cut."""
    if limit is None or len(completion.text) <= limit:
        return completion, 0
    return dataclasses.replace(completion, text=completion.text[:limit]), len(completion.text) - limit


def _cut_note(cut: int, limit: int | None) -> str:
    return (
        f"Note: your reply was {cut + (limit or 0)} characters long; only its first {limit} were read. "
        "Keep each reply short: one Thought, then one Action or the Final Answer."
    )


_ANSWER_TAIL = 40
_LOOSE_END = " \t\r\n`'\"*_"  # what the parser may strip from an answer's end


def _runs_to_the_end(answer: FinalAnswer, text: str) -> bool:
    """Whether a Final Answer runs to the end of the reply's text as read (line ends as the parser
    reads them): then a cut of the reply that took more than white space fell inside it. (A
    two-phase reply puts its answer first: a cut in the thought after it leaves the answer whole.)"""
    tail = answer.answer.rstrip(_LOOSE_END)[-_ANSWER_TAIL:]
    return bool(tail) and text.replace("\r\n", "\n").rstrip(_LOOSE_END).endswith(tail)


def _answer_cut_feedback(cut: int, limit: int | None) -> str:
    return (
        f"Error: your reply was {cut + (limit or 0)} characters long and only its first {limit} were "
        f"read, so your Final Answer was cut off. Give the Final Answer again, in under {limit} characters."
    )


def _answer_at_limit(turn: Turn, fallback: str) -> str:
    """The answer in the tool-free call's reply: its Final Answer, or the reply itself when it is
    plain prose; a reply that still asks for a tool, is empty, or only repeats the prompt's own
    placeholder for the answer, gives ``fallback``."""
    if isinstance(turn.decision, FinalAnswer) and turn.decision.answer.strip():
        answer = turn.decision.answer
    else:
        answer = (plain_text(turn.text) if turn.decision is None else None) or ""
    return fallback if not answer.strip() or _is_placeholder(answer) else answer


def _is_placeholder(answer: str) -> bool:
    """Whether ``answer`` is the prompt's description of an answer ("the answer, in the units the
    question asks for"), which a small model at a limit wrote back as its answer."""
    return _words(answer) in _placeholders()


@cache
def _placeholders() -> frozenset[str]:
    """The Final Answer lines of the reply formats the prompts show (read when first needed)."""
    return frozenset(
        _words(line.split(":", 1)[1])
        for name in ("format", "final_answer")
        for line in load_template(name).splitlines()
        if line.startswith("Final Answer:")
    )


def _words(text: str) -> str:
    return " ".join(text.lower().strip(" .").split())
