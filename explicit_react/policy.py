"""Budgets, the tool allowlist, loop detection and number sourcing: what the model may do next,
and when a run stops.

The model proposes; the policy decides. ``Budget`` holds the limits, ``RunGuard`` tracks one run
against them and answers two questions: may the run take another turn, and may this action run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from explicit_react.deadline import Deadline
from explicit_react.prompt import load_template, render
from explicit_react.scratchpad import truncate_middle
from explicit_react.types import StopReason, ToolInput, call_signature


@dataclass(frozen=True)
class Budget:
    """The limits of one run; ``None`` means no limit."""

    max_iterations: int | None = 5
    max_tool_calls: int | None = None
    max_seconds: float | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_iterations is not None and self.max_iterations < 1:
            raise ValueError("max_iterations must be at least 1, or None for no limit")
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

SOURCED_NUMBERS = "numbers_must_be_sourced"
"""A tool ``metadata`` key. When it is true (``CalculatorTool`` sets it), a call whose input holds a
number found nowhere in the question, the context or an earlier tool result is refused once: small
models start a calculation with made-up values (Qwen2.5 1.5B computed ``100 - 50`` for a price
difference it had not looked up). The same call sent again runs."""

# Numbers that need no source: 0-2 and the usual unit conversions (dozen, days, hours, percent, kilo).
COMMON_NUMBERS = frozenset({0.0, 1.0, 2.0, 7.0, 10.0, 12.0, 24.0, 52.0, 60.0, 100.0, 365.0, 1000.0, 3600.0})
COMPACT_UNITS = (
    "h", "hr", "hrs", "min", "mins", "sec", "secs", "ms", "m", "km", "cm", "mm", "mi", "ft", "kg", "g",
    "mg", "lb", "lbs", "oz", "ml", "mph", "kph", "kmh", "KB", "kB", "MB", "GB", "TB", "kW", "kWh",
)  # fmt: skip
"""Unit symbols a number may be written against ("2h 30m", "5kg", "10km"): the number counts as
written. Left out: letters that read as something else after a number ("s": the 1990s; "d": 3D;
"k": 5k is 5000), and ordinals (2nd), so that such a word is no number, as before."""
NUMBER_END = rf"(?=(?:{'|'.join(COMPACT_UNITS)})?(?!\w))"
"""What may follow a number's last digit: no letter or digit, or one of ``COMPACT_UNITS`` and then none."""
_NUMBER = re.compile(rf"(?<![\w.])\d+(?:\.\d+)?{NUMBER_END}")
_WRITTEN_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3}(?!\d))*(?:\.\d+)?(?!\w)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
"""Number words that scale the number before them ("4.2 million")."""
# Starts only where a digit run starts, and gives nothing back: tried at each digit of a long run,
# it took 10 s on 20,000 digits. Backtracking could not have found another match (see the tests).
_SCALED = re.compile(rf"(?<!\d)(\d++(?:\.\d++)?+)\s*+({'|'.join(SCALES)})\b", re.IGNORECASE)
_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "hundred": 100, "thousand": 1000, "million": 1e6, "dozen": 12,
    "half": 0.5, "quarter": 0.25, "twice": 2, "double": 2, "triple": 3,
}  # fmt: skip
_WORD = re.compile(rf"\b({'|'.join(_WORDS)})\b", re.IGNORECASE)


def numbers_in(text: str) -> list[float]:
    """The numbers written in ``text`` with digits (``68,000,000`` is one number; signs are dropped)."""
    return [float(n) for n in _NUMBER.findall(_THOUSANDS.sub("", text))]


def written_numbers(text: str) -> list[tuple[str, float]]:
    """The numbers written in ``text`` with digits, each as written (``1,234,567``) and as a value."""
    return [(m[0], float(m[0].replace(",", ""))) for m in _WRITTEN_NUMBER.finditer(text)]


def sourced_numbers(sources: str) -> set[float]:
    """Every number ``sources`` states, as digits, as a word (``three``, ``dozen``) or scaled
    (``4.2 million``), with each one's percent forms (``20`` gives 0.2, 0.8 and 1.2)."""
    text = _THOUSANDS.sub("", sources)
    found = {float(n) for n in _NUMBER.findall(text)}
    found |= {_WORDS[word.lower()] for word in _WORD.findall(text)}
    found |= {float(n) * SCALES[scale.lower()] for n, scale in _SCALED.findall(text)}
    return found | {form for n in found for form in (n / 100, 1 - n / 100, 1 + n / 100)}


def unsourced_numbers(tool_input: ToolInput, sources: str | set[float]) -> list[str]:
    """The numbers in ``tool_input`` that ``sources`` does not state (see ``sourced_numbers``) and
    that are not in ``COMMON_NUMBERS``, each once, as written. ``sources``: the text, or the numbers
    ``sourced_numbers`` found in it (a run keeps them, so each observation is read once)."""
    if isinstance(tool_input, str):
        text = tool_input
    else:
        text = " ".join(map(str, tool_input.values() if isinstance(tool_input, Mapping) else tool_input))
    wanted = [(written, n) for written, n in written_numbers(text) if n not in COMMON_NUMBERS]
    if not wanted:  # nothing to look for: the sources need not be read
        return []
    known = sourced_numbers(sources) if isinstance(sources, str) else sources
    missing = (
        w for w, n in wanted if n not in known and not any(math.isclose(n, k, rel_tol=1e-9) for k in known)
    )
    return list(dict.fromkeys(missing))


def _kept(observation: str) -> str:
    """What loop detection keeps of an observation: enough for the 300-character quote in the repeat
    warning, so a tool's huge output costs no memory or time in the guard."""
    return truncate_middle(observation, 1200)


@dataclass
class RunGuard:
    """One run's use of its budget, the calls it made, and the warnings it gave.

    A repeated call or a denied tool is not run: the model is told once, and a second offence
    ends the run (``LOOP_DETECTED`` / ``TOOL_DENIED``). An exact repeat of *any* earlier call counts,
    so an A-B-A-B cycle is caught at its third call. The same unreadable reply three times in a row
    ends the run too. A call with unsourced numbers (``check_sources``)
    is refused once and runs when the model sends it again.
    """

    budget: Budget
    allowed_tools: Collection[str] | None = None
    deadline: Deadline = field(init=False)
    tool_calls: int = 0
    tokens: int = 0
    _seen: dict[str, tuple[int, str]] = field(default_factory=dict)
    _repeat_warnings: int = 0
    _denied_warnings: int = 0
    _unsourced_warned: set[str] = field(default_factory=set)
    _retried: set[str] = field(default_factory=set)
    """The calls that failed once in a way that may pass: made again, they are remembered."""
    _last: tuple[str, ToolInput, str] | None = None
    """The last call whose signature was computed: checking a call and recording it need it once."""
    _unreadable: tuple[int, int, int] = (0, 0, 0)
    """The last unreadable reply: its step number, its hash (white space normalised), and how many
    times in a row it was sent."""

    def __post_init__(self) -> None:
        self.deadline = Deadline(self.budget.max_seconds)

    def stop_before_turn(self, turns_taken: int) -> StopReason | None:
        """Why the run may not take another turn, or ``None`` when it may."""
        if self.deadline.expired():
            return StopReason.MAX_SECONDS
        if self.budget.max_tokens is not None and self.tokens > self.budget.max_tokens:
            return StopReason.MAX_TOKENS
        if self.budget.max_iterations is not None and turns_taken >= self.budget.max_iterations:
            return StopReason.MAX_ITERATIONS
        return None

    def steps_left(self, turns_taken: int) -> int | None:
        """Turns left in the iteration budget, this one included; ``None`` when there is no limit."""
        if self.budget.max_iterations is None:
            return None
        return self.budget.max_iterations - turns_taken

    def check(self, tool: str, tool_input: ToolInput) -> Verdict:
        """May ``tool`` run with ``tool_input`` now? (``tool`` is the resolved, real tool name.)"""
        if self.allowed_tools is not None and tool not in self.allowed_tools:
            # Worded as for a tool that does not exist, so a refusal reveals nothing; the agent
            # replaces it with its unknown-tool observation for the name as the model wrote it.
            self._denied_warnings += 1
            return Verdict(
                run=False,
                observation=f"Error: there is no tool named {tool!r}.",
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
        earlier = self._seen.get(self._signature(tool, tool_input))
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

    def check_unreadable(self, step_number: int, reply: str) -> StopReason | None:
        """``LOOP_DETECTED`` when the model sends the same unreadable reply a third time in a row (step
        after step), else ``None``. Without it a model stuck on one unreadable reply ran on with
        ``max_iterations=None`` until another budget ended it; replies apart, or different, are no loop."""
        last_step, last_signature, times = self._unreadable
        signature = hash(" ".join(reply.split()))
        in_a_row = last_step == step_number - 1 and last_signature == signature
        times = times + 1 if in_a_row else 1
        self._unreadable = (step_number, signature, times)
        return StopReason.LOOP_DETECTED if times >= 3 else None

    def check_unknown(self, step_number: int, tool: str, tool_input: ToolInput, observation: str) -> Verdict:
        """The verdict for a call to a tool that does not exist: ``observation`` the first time, a
        repeat verdict (then a loop stop) when the model makes the same made-up call again."""
        if (repeat := self.check_repeat(tool, tool_input)) is not None:
            return repeat
        self._seen.setdefault(self._signature(tool, tool_input), (step_number, _kept(observation)))
        return Verdict(run=False, observation=observation, error="unknown_tool")

    def check_sources(self, tool: str, tool_input: ToolInput, sources: str | set[float]) -> Verdict | None:
        """A refusal when ``tool_input`` holds numbers that ``sources`` (the question, the context and
        the successful tool results so far) does not state, the first time this call is made; else
        ``None``. Sent again unchanged, the call runs: the model may know a value the sources lack."""
        signature = self._signature(tool, tool_input)
        if signature in self._unsourced_warned or not (missing := unsourced_numbers(tool_input, sources)):
            return None
        self._unsourced_warned.add(signature)
        return Verdict(
            run=False,
            observation=render(
                load_template("unsourced_numbers"),
                numbers=" and ".join(missing),
                verb="is" if len(missing) == 1 else "are",
            ).strip(),
            error="unsourced_numbers",
        )

    def record_call(
        self,
        step_number: int,
        tool: str,
        tool_input: ToolInput,
        observation: str,
        ran: bool = True,
        retryable: bool = False,
    ) -> None:
        """Remember a call for loop detection and, when its tool ran (``ran``), for the tool-call
        budget: a call whose input was refused before the tool's function was entered is no call.
        A call that failed in a way that may pass (``retryable``: a dropped connection, a rate
        limit) is not remembered the first time: the model may make it once more."""
        if ran:
            self.tool_calls += 1
        signature = self._signature(tool, tool_input)
        if retryable and signature not in self._retried:
            self._retried.add(signature)
            return
        self._seen.setdefault(signature, (step_number, _kept(observation)))

    def _signature(self, tool: str, tool_input: ToolInput) -> str:
        last = self._last
        if last is not None and last[0] == tool and last[1] is tool_input:
            return last[2]
        signature = call_signature(tool, tool_input)
        self._last = (tool, tool_input, signature)
        return signature

    def record_tokens(self, total: int) -> None:
        """Add the tokens the model reported for one call."""
        self.tokens += total
