"""Turns steps into the Thought / Action / Action Input / Observation text the model reads.

Long observations are cut (head and tail kept, with a marker saying how much was cut) and long
runs are compacted: the latest steps stay verbatim, older ones shrink to one line each, and past
a limit the oldest lines are dropped, so the prompt stops growing. ``render_findings`` gives the
tool-free call at a limit what the tools returned instead, within the same limits.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from explicit_react.parser import ACTION, ACTION_INPUT, OBSERVATION, THOUGHT
from explicit_react.types import Step, call_signature
from explicit_react.untrusted import mark_lines


@dataclass(frozen=True)
class ScratchpadLimits:
    """How much of the history the model sees.

    ``max_observation_chars``: longer observations keep their head and tail.
    ``keep_recent``: how many latest steps stay verbatim (``None``: all, no compaction).
    ``max_summary_lines``: how many older steps get a one-line summary; older ones are counted only.
    """

    max_observation_chars: int = 4000
    keep_recent: int | None = 6
    max_summary_lines: int = 12
    summary_chars: int = 160


def truncate_middle(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping head and tail, with a marker in the middle."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[len(text) - tail :]}"


def format_tool_input(tool_input: Any) -> str:
    """Action Input as the model wrote it: the text, or JSON for structured input (a value JSON has
    no form of, from a policy or a model's native tool call, as its ``str``)."""
    if isinstance(tool_input, str):
        return tool_input
    return json.dumps(tool_input, ensure_ascii=False, default=str)


def render_step(step: Step) -> str:
    """One step in the exact format the model is asked to write.

    A tool's output is outside text: its lines that start with a label of the format (a forged
    ``Final Answer:``) are marked (``untrusted.mark_lines``), every other line is kept as it is.
    The observation of a step with no action is the agent's own feedback, shown as written."""
    if not step.action:  # the reply could not be parsed: show it, then what was wrong
        return f"{step.log.strip()}\n{OBSERVATION}: {step.observation}"
    lines = [f"{THOUGHT}: {step.thought}"] if step.thought else []
    lines += [
        f"{ACTION}: {step.action}",
        f"{ACTION_INPUT}: {format_tool_input(step.action_input)}",
        f"{OBSERVATION}: {mark_lines(step.observation)}",
    ]
    return "\n".join(lines)


def summarize_step(number: int, step: Step, chars: int) -> str:
    """One line: what step ``number`` did and the start of what it saw."""
    observation = _cut(step.observation, chars)
    if not step.action:
        return f"- step {number}: (unreadable reply) -> {observation}"
    return f"- step {number}: {step.action}({_cut(format_tool_input(step.action_input), chars)}) -> {observation}"


def summarize_older(steps: Sequence[Step], limits: ScratchpadLimits | None = None) -> tuple[str, int]:
    """The summary of the steps older than the latest ``keep_recent`` (one line each, past
    ``max_summary_lines`` only counted; ``""`` when there are none), and how many steps it covers:
    ``steps[count:]`` are the ones to show in full."""
    limits = limits or ScratchpadLimits()
    keep = len(steps) if limits.keep_recent is None else limits.keep_recent
    older = steps[: max(0, len(steps) - keep)]
    if not older:
        return "", 0
    shown = older[-limits.max_summary_lines :] if limits.max_summary_lines > 0 else []
    dropped = len(older) - len(shown)
    lines = [f"Earlier steps, summarised ({len(older)} steps):"]
    if dropped:
        lines.append(f"- steps 1-{dropped}: omitted")
    first = dropped + 1
    lines += [summarize_step(first + i, s, limits.summary_chars) for i, s in enumerate(shown)]
    return "\n".join(lines), len(older)


def render(steps: Sequence[Step], limits: ScratchpadLimits | None = None) -> str:
    """The scratchpad for ``steps``: compacted older steps, then the latest verbatim."""
    summary, count = summarize_older(steps, limits)
    parts = [summary] if summary else []
    parts += [render_step(s) for s in steps[count:]]
    return "\n".join(parts)


NO_CALLS = "(no tool call was made)"
"""The findings of a run that made no tool call."""


def render_findings(steps: Sequence[Step], limits: ScratchpadLimits | None = None) -> str:
    """What the tool calls in ``steps`` returned, for the tool-free answer at a limit.

    Each distinct successful call once, as ``tool: input`` over its result, without the Thoughts and
    the refused repeats around it (a small model copied those instead of answering); then the calls
    that failed, one line each, so the answer can say what could not be found. As in ``render``, the
    latest ``keep_recent`` results are shown whole (each cut to ``max_observation_chars``, lines
    that start with a label of the format marked), older ones in one line each, and past
    ``max_summary_lines`` only counted.
    """
    limits = limits or ScratchpadLimits()
    worked: dict[str, Step] = {}
    failed: dict[str, Step] = {}
    for step in steps:
        if step.action and step.error != "repeated_call":
            calls = worked if step.error is None else failed
            calls.setdefault(call_signature(step.action, step.action_input), step)
    if not worked and not failed:
        return NO_CALLS
    found = list(worked.values())
    keep = len(found) if limits.keep_recent is None else limits.keep_recent
    older, recent = found[: max(0, len(found) - keep)], found[max(0, len(found) - keep) :]
    parts = []
    if older:
        parts.append(_one_line_each(f"Earlier results ({len(older)}):", older, limits))
    for step in recent:
        result = mark_lines(
            truncate_middle(step.observation.strip(), limits.max_observation_chars), first_line=True
        )
        parts.append(f"{_call(step, limits)}\n{result or '(empty result)'}")
    if failed:
        parts.append(_one_line_each("These calls failed:", list(failed.values()), limits))
    return "\n\n".join(parts)


def _call(step: Step, limits: ScratchpadLimits) -> str:
    tool_input = truncate_middle(format_tool_input(step.action_input).strip(), 2 * limits.summary_chars)
    return f"{step.action}: {tool_input}"


def _one_line_each(title: str, steps: Sequence[Step], limits: ScratchpadLimits) -> str:
    """``title``, then the last ``max_summary_lines`` of ``steps`` as ``- tool: input -> result``."""
    shown = steps[-limits.max_summary_lines :] if limits.max_summary_lines > 0 else []
    lines = [title]
    if len(steps) > len(shown):
        lines.append(f"- {len(steps) - len(shown)} omitted")
    for step in shown:
        tool_input = _cut(format_tool_input(step.action_input), limits.summary_chars)
        lines.append(f"- {step.action}: {tool_input} -> {_cut(step.observation, limits.summary_chars)}")
    return "\n".join(lines)


def _cut(text: str, chars: int) -> str:
    """``text`` on one line, cut to about ``chars`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= chars else text[:chars].rstrip() + "..."


# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with its control characters written as visible codes (``\\x1b``), for a terminal.

    A web page or a file can hold escape sequences that clear the screen, set the window title,
    hide a link's real address or make text invisible; printed as they are, a tool's output could
    rewrite what the user sees. Tabs and newlines stay."""
    return _CONTROL.sub(_code, text)


def _code(match: re.Match[str]) -> str:
    number = ord(match[0])
    return f"\\x{number:02x}" if number < 0x100 else f"\\u{number:04x}"
