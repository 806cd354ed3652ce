"""The state one run keeps between its turns, and what its Act phase hands to Observe.

``RunState`` holds the question, the context, the steps so far, the guard and the counters, and
reads what the run has been told (its sources, and the numbers they state). ``Acted`` is what
``ReActLoop.acting`` did with a turn. Both are plain values: no model, tool or listener is called here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from explicit_react.answer_check import AnswerCheck
from explicit_react.executor import ToolOutcome
from explicit_react.policy import RunGuard, sourced_numbers
from explicit_react.types import AgentResult, Step, StopReason, TokenUsage


@dataclass(frozen=True)
class Acted:
    """What the Act phase did: the outcome to observe (``None`` when nothing ran), and a stop if any."""

    outcome: ToolOutcome | None
    tool: str = ""
    stop: StopReason | None = None


@dataclass
class RunState:
    """The state of one run: the question, the steps so far, the guard, the counters."""

    question: str
    context: str
    guard: RunGuard
    manager: Any = None
    """The run's LangChain chain-run manager (sync or async, as the driver is), or ``None`` when the
    run has no chain run (``think``/``act`` on their own, or a run nobody could hear)."""
    callbacks: Any = None
    """The callback manager the run's model and tool calls report to (a child of ``manager``), or
    ``None``."""
    steps: list[Step] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)
    llm_calls: int = 0
    result: AgentResult | None = None
    final_log: str = ""
    answer_check: AnswerCheck | None = None
    """Reviews each Final Answer before it ends the run (``check_answer=True``), or ``None``."""
    run_id: str | None = None
    """The run's id, which its listeners read as ``types.current_run`` (``None``: no listeners)."""
    config: Any = None
    """The run's LangChain ``RunnableConfig``, whose configurable values, tags and metadata every
    model call sees (``llm.call_config``), or ``None`` (``think``/``act`` on their own)."""

    _known: set[float] = field(default_factory=set)
    _read: int = -1
    """How many steps ``_known`` holds the numbers of; -1 before the question and context are read."""

    def sources(self) -> str:
        """What the run has been told: the question, the context, and each tool result that worked."""
        return "\n".join(
            [self.question, self.context, *(s.observation for s in self.steps if s.error is None)]
        )

    def known_numbers(self) -> set[float]:
        """The numbers ``sources()`` states (``policy.sourced_numbers``), each text read once: read
        whole at each calculator call, a run of 400 steps took 34 s, 1 MB of context 0.2 s a call."""
        if self._read < 0:
            self._known |= sourced_numbers(f"{self.question}\n{self.context}")
            self._read = 0
        for step in self.steps[self._read :]:
            if step.error is None:
                self._known |= sourced_numbers(step.observation)
        self._read = len(self.steps)
        return self._known

    def count(self, usage: TokenUsage) -> None:
        self.usage += usage
        self.llm_calls += 1
        self.guard.record_tokens(usage.total_tokens)

    def finish(self, answer: str, stop: StopReason, error: str | None = None, log: str = "") -> AgentResult:
        self.final_log = log or answer
        self.result = AgentResult(
            answer=answer,
            steps=list(self.steps),
            stop_reason=stop,
            error=error,
            question=self.question,
            usage=self.usage,
            elapsed_seconds=self.guard.deadline.elapsed(),
            llm_calls=self.llm_calls,
        )
        return self.result
