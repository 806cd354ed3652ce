"""The coloured terminal trace: a run listener that prints each Thought / Action / Observation.

The agent loop never prints; pass ``verbose=True`` (or this listener) to see a run.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from explicit_react.scratchpad import format_tool_input, truncate_middle
from explicit_react.types import AgentResult, Step


class TracePrinter:
    """Prints each step as it completes, with turn counters (``Thought (turn 2/5)``), then the answer."""

    def __init__(self, console: Console | None = None, *, max_chars: int = 1200) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.max_chars = max_chars

    def _text(self, value: Any) -> str:
        return escape(truncate_middle(str(value).strip(), self.max_chars))

    def on_turn_start(self, turn: int, max_turns: int) -> None:
        """Nothing to print before the model answers (the CLI adds a spinner)."""

    def on_step(self, step: Step, turn: int, max_turns: int) -> None:
        """Print one step."""
        counter = f"(turn {turn}/{max_turns})"
        c = self.console
        if step.action:
            if step.thought:
                c.print(f"[bold cyan]Thought {counter}:[/] {self._text(step.thought)}")
            c.print(f"[bold yellow]Action {counter}:[/] {escape(step.action)}")
            c.print(f"[bold yellow]Action Input:[/] {self._text(format_tool_input(step.action_input))}")
        else:
            c.print(f"[bold red]Unreadable reply {counter}:[/] {self._text(step.log)}")
        style = "red" if step.error else "green"
        c.print(f"[bold {style}]Observation:[/] {self._text(step.observation)}")
        c.print()

    def on_result(self, result: AgentResult) -> None:
        """Print the answer, or why the run stopped."""
        if result.success:
            self.console.print(f"[bold green]Final Answer:[/] {escape(result.answer)}")
        else:
            self.console.print(
                f"[bold red]Stopped ({result.stop_reason.value}):[/] {escape(result.error or '')}"
            )
            self.console.print(f"[bold]Answer:[/] {escape(result.answer)}")
