"""Budgets, the tool allowlist and loop detection: what the model may do next, and when a run stops.

The model proposes; the policy decides. ``Budget`` holds the limits, ``RunGuard`` tracks one run
against them and answers two questions: may the run take another turn, and may this action run.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from explicit_react.deadline import Deadline
from explicit_react.prompt import load_template, render
from explicit_react.scratchpad import truncate_middle
from explicit_react.types import StopReason, ToolInput, call_signature


@dataclass(frozen=True)
class Budget:
    """The limits of one run; ``None`` means no limit."""

    max_iterations: int = 5
    max_tool_calls: int | None = None
    max_seconds: float | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        for name in ("max_tool_calls", "max_seconds", "max_tokens"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must not be negative")


@dataclass(frozen=True)
class Verdict:
    """The policy's decision on one proposed action.

    ``run`` is True when the tool may run. Otherwise ``observation`` tells the model why not, and
    ``stop`` is set when the run must end (the model persisted after being told).
    """

    run: bool
    observation: str = ""
    error: str | None = None
    stop: StopReason | None = None


ALLOW = Verdict(run=True)


@dataclass
class RunGuard:
    """One run's use of its budget, the calls it made, and the warnings it gave.

    A repeated call or a denied tool is not run: the model is told once, and a second offence
    ends the run (``LOOP_DETECTED`` / ``TOOL_DENIED``). An exact repeat of *any* earlier call counts,
    so an A-B-A-B cycle is caught at its third call.
    """

    budget: Budget
    allowed_tools: Collection[str] | None = None
    deadline: Deadline = field(init=False)
    tool_calls: int = 0
    tokens: int = 0
    _seen: dict[str, tuple[int, str]] = field(default_factory=dict)
    _repeat_warnings: int = 0
    _denied_warnings: int = 0

    def __post_init__(self) -> None:
        self.deadline = Deadline(self.budget.max_seconds)

    def stop_before_turn(self, turns_taken: int) -> StopReason | None:
        """Why the run may not take another turn, or ``None`` when it may."""
        if self.deadline.expired():
            return StopReason.MAX_SECONDS
        if self.budget.max_tokens is not None and self.tokens > self.budget.max_tokens:
            return StopReason.MAX_TOKENS
        if turns_taken >= self.budget.max_iterations:
            return StopReason.MAX_ITERATIONS
        return None

    def steps_left(self, turns_taken: int) -> int:
        """Turns left in the iteration budget, this one included."""
        return self.budget.max_iterations - turns_taken

    def check(self, tool: str, tool_input: ToolInput) -> Verdict:
        """May ``tool`` run with ``tool_input`` now? (``tool`` is the resolved, real tool name.)"""
        if self.allowed_tools is not None and tool not in self.allowed_tools:
            self._denied_warnings += 1
            allowed = ", ".join(sorted(self.allowed_tools)) or "none"
            return Verdict(
                run=False,
                observation=f"Error: the tool {tool!r} is not allowed here. Allowed tools: {allowed}.",
                error="tool_denied",
                stop=StopReason.TOOL_DENIED if self._denied_warnings > 1 else None,
            )
        if (repeat := self.check_repeat(tool, tool_input)) is not None:
            return repeat
        if self.budget.max_tool_calls is not None and self.tool_calls >= self.budget.max_tool_calls:
            return Verdict(run=False, error="max_tool_calls", stop=StopReason.MAX_TOOL_CALLS)
        return ALLOW

    def check_repeat(self, tool: str, tool_input: ToolInput) -> Verdict | None:
        """A repeat verdict when this call was made before (warn once, then stop), else ``None``.

        ``check_unknown`` uses it too: a model that keeps calling a made-up tool with the same
        input is looping just the same.
        """
        earlier = self._seen.get(call_signature(tool, tool_input))
        if earlier is None:
            return None
        self._repeat_warnings += 1
        step, observation = earlier
        return Verdict(
            run=False,
            observation=render(
                load_template("repeated_call"),
                tool=tool,
                step=str(step),
                observation=truncate_middle(" ".join(observation.split()), 300),
            ).strip(),
            error="repeated_call",
            stop=StopReason.LOOP_DETECTED if self._repeat_warnings > 1 else None,
        )

    def check_unknown(self, step_number: int, tool: str, tool_input: ToolInput, observation: str) -> Verdict:
        """The verdict for a call to a tool that does not exist: ``observation`` the first time, a
        repeat verdict (then a loop stop) when the model makes the same made-up call again."""
        if (repeat := self.check_repeat(tool, tool_input)) is not None:
            return repeat
        self._seen.setdefault(call_signature(tool, tool_input), (step_number, observation))
        return Verdict(run=False, observation=observation, error="unknown_tool")

    def record_call(self, step_number: int, tool: str, tool_input: ToolInput, observation: str) -> None:
        """Remember a call that ran, for the tool-call budget and loop detection."""
        self.tool_calls += 1
        self._seen.setdefault(call_signature(tool, tool_input), (step_number, observation))

    def record_tokens(self, total: int) -> None:
        """Add the tokens the model reported for one call."""
        self.tokens += total
