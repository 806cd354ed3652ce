"""The values a run produces: parsed decisions, steps, results and stop reasons.

Plain frozen dataclasses with no LangChain imports, so the parser, the scratchpad
and the prompt can be used and tested without a model.
"""

from __future__ import annotations

import json
import math
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

ToolInput = str | dict[str, Any] | list[Any]


def call_signature(tool: str, tool_input: ToolInput) -> str:
    """The identity of a call (for loop detection and the findings at a limit): each text in the
    input normalised by ``_same_text``, case kept, dict keys sorted."""
    if isinstance(tool_input, str):
        normalized: Any = _same_text(tool_input)
    else:
        normalized = json.loads(json.dumps(tool_input, sort_keys=True, default=str))
        normalized = _collapse(normalized)
    return json.dumps([tool.strip(), normalized], sort_keys=True, ensure_ascii=False)


def _same_text(text: str) -> str:
    """``text`` as loop detection compares it.

    One line (a search query, an expression): runs of whitespace are one space, none at the ends,
    as a query means the same with a stray space. Several lines (code): kept exactly, indentation
    and the spaces inside a line too, apart from the whitespace at the end of each line, blank lines
    at the start and the end, and the kind of line break. Two programs that differ only in
    indentation are different programs: collapsed, a model's fix of an indentation bug was refused
    as a repeat, and the run ended with ``loop_detected``."""
    lines = text.splitlines()
    if len(lines) > 1:
        lines = [line.rstrip() for line in lines]
        written = [i for i, line in enumerate(lines) if line]
        if len(written) > 1:
            return "\n".join(lines[written[0] : written[-1] + 1])
    return " ".join(text.split())


def _collapse(value: Any) -> Any:
    if isinstance(value, str):
        return _same_text(value)
    if isinstance(value, dict):
        return {k: _collapse(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_collapse(v) for v in value]
    return value


class StopReason(str, Enum):
    """Why a run ended. Exactly one value per cause; ``SUCCESS`` and ``RETURN_DIRECT`` are the good ones."""

    SUCCESS = "success"
    """The model gave a final answer."""
    RETURN_DIRECT = "return_direct"
    """A tool marked ``return_direct`` answered; its output is the answer."""
    MAX_ITERATIONS = "max_iterations"
    """The model used every turn of ``max_iterations`` without a final answer."""
    MAX_TOOL_CALLS = "max_tool_calls"
    """The model asked for one tool call more than ``max_tool_calls`` allows."""
    MAX_SECONDS = "max_seconds"
    """The wall-clock budget ``max_seconds`` ran out."""
    MAX_TOKENS = "max_tokens"
    """The model reported more tokens in total than ``max_tokens`` allows."""
    LOOP_DETECTED = "loop_detected"
    """The model kept repeating a call after it was told the call was a repeat, or sent the same
    unreadable reply a third time."""
    TOOL_DENIED = "tool_denied"
    """The model asked again for a tool outside ``allowed_tools`` after it was told the tool is not allowed."""
    LLM_ERROR = "llm_error"
    """The model call failed (after retries) or timed out."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class TokenUsage:
    """Token counts reported by the model; zero when the model reports none."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        """The counts as a plain dict."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(frozen=True)
class Action:
    """The model asks to run ``tool`` with ``tool_input``."""

    tool: str
    tool_input: ToolInput
    thought: str = ""
    log: str = ""
    """The model text this action was parsed from (after the client-side cut)."""


@dataclass(frozen=True)
class FinalAnswer:
    """The model is done and answers."""

    answer: str
    thought: str = ""
    log: str = ""


Decision = Action | FinalAnswer


SENT_BACK = frozenset({"answer_check", "answer_cut"})
"""The ``Step.error`` values of a Final Answer sent back to the model: it failed a check
(``check_answer=True``), or it ran past ``max_reply_chars`` and was cut off."""


@dataclass(frozen=True)
class Step:
    """One turn that ended in an observation: a tool call, a parse error, a refused or repeated call.

    ``observation`` is always a string; one that reports a failure starts with ``Error:``.
    ``error`` names the kind of failure (``"parse_error"``, ``"unknown_tool"``, ``"invalid_input"``,
    ``"tool_error"``, ``"tool_timeout"``, ``"tool_denied"``, ``"repeated_call"``,
    ``"unsourced_numbers"``, ``"answer_check"``, ``"answer_cut"``) or is ``None``. The last two are
    a Final Answer sent back to the model (``SENT_BACK``).
    """

    thought: str
    action: str
    action_input: ToolInput
    observation: str
    log: str = ""
    error: str | None = None
    llm_seconds: float = 0.0
    tool_seconds: float = 0.0
    usage: TokenUsage = field(default_factory=TokenUsage)
    tool_output: Any = field(default=None, compare=False, repr=False)
    """The tool's raw return value (not serialised); ``None`` when no tool ran."""

    @property
    def duration(self) -> float:
        """Seconds spent in this step: the model call plus the tool call."""
        return self.llm_seconds + self.tool_seconds

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict with ``thought, action, action_input, observation`` and the details."""
        return {
            "thought": self.thought,
            "action": self.action,
            "action_input": _jsonable(self.action_input),
            "observation": self.observation,
            "log": self.log,
            "error": self.error,
            "llm_seconds": round(self.llm_seconds, 6),
            "tool_seconds": round(self.tool_seconds, 6),
            "duration": round(self.duration, 6),
            "usage": self.usage.to_dict(),
        }


@dataclass(frozen=True)
class AgentResult:
    """Everything a run produced: the answer, every step, and why it stopped."""

    answer: str
    steps: list[Step]
    stop_reason: StopReason
    error: str | None = None
    """``None`` on success; otherwise one sentence on why the run did not end with an answer."""
    question: str = ""
    usage: TokenUsage = field(default_factory=TokenUsage)
    elapsed_seconds: float = 0.0
    llm_calls: int = 0

    @property
    def success(self) -> bool:
        """True when the run ended with an answer the model (or a return_direct tool) gave on its own."""
        return self.stop_reason in (StopReason.SUCCESS, StopReason.RETURN_DIRECT)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of the whole result, steps included."""
        return {
            "question": self.question,
            "answer": self.answer,
            "success": self.success,
            "stop_reason": self.stop_reason.value,
            "error": self.error,
            "steps": [step.to_dict() for step in self.steps],
            "usage": self.usage.to_dict(),
            "elapsed_seconds": round(self.elapsed_seconds, 6),
            "llm_calls": self.llm_calls,
        }


def _jsonable(value: Any) -> Any:
    """``value`` as strict JSON can hold it: non-finite floats (the parser reads ``1e999`` and ``NaN``)
    become ``"inf"``, ``"-inf"`` or ``"nan"``; a value JSON cannot write at all becomes its ``str``."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError, RecursionError):
        pass
    try:
        finite = _finite(value)
        json.dumps(finite, allow_nan=False)
        return finite
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


current_run: ContextVar[str | None] = ContextVar("explicit_react_run", default=None)
"""The id of the run whose listeners are being called: the driver sets it around each listener call
(``drivers.Notify.run_id``, from ``RunState.run_id``) and resets it after, so it is right however the
run's steps are pulled (streams taking turns in one thread, each ``next()`` in a copied context) and
never left set in the caller's context. Runs at once in one process (``abatch``, ``aanswer_all``)
share their listeners, and a trace tells its lines apart by it. Read it inside the listener call."""
