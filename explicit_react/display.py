"""The coloured terminal trace: a run listener that prints each Thought / Action / Observation.

The agent loop never prints; pass ``verbose=True`` (or this listener) to see a run.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape as escape_markup

from explicit_react.scratchpad import format_tool_input, printable, truncate_middle
from explicit_react.types import SENT_BACK, Action, AgentResult, Step


def escape(text: str) -> str:
    """``text`` for ``Console.print``: printable, and its rich markup (``[bold]``) shown as written."""
    return escape_markup(printable(text))


class TracePrinter:
    """Prints each step as it completes, with turn counters (``Thought (turn 2/5)``), then the answer."""

    def __init__(self, console: Console | None = None, *, max_chars: int = 1200) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.max_chars = max_chars
        self._announced = False

    def _text(self, value: Any) -> str:
        return escape(truncate_middle(str(value).strip(), self.max_chars))

    def on_turn_start(self, turn: int, max_turns: int | None) -> None:
        """Nothing to print before the model answers (the CLI adds a spinner)."""

    def on_action(self, action: Action, turn: int, max_turns: int | None) -> None:
        """Print the Thought and the Action as the tool starts, so a long call shows what it is."""
        self._print_action(action.thought, action.tool, action.tool_input, turn, max_turns)
        self._announced = True

    def _print_action(
        self, thought: str, tool: str, tool_input: Any, turn: int, max_turns: int | None
    ) -> None:
        counter = f"(turn {turn}/{max_turns})" if max_turns is not None else f"(turn {turn})"
        if thought:
            self.console.print(f"[bold cyan]Thought {counter}:[/] {self._text(thought)}")
        self.console.print(f"[bold yellow]Action {counter}:[/] {escape(tool)}")
        self.console.print(f"[bold yellow]Action Input:[/] {self._text(format_tool_input(tool_input))}")

    def on_step(self, step: Step, turn: int, max_turns: int | None) -> None:
        """Print one step (only its Observation when ``on_action`` already printed the rest)."""
        counter = f"(turn {turn}/{max_turns})" if max_turns is not None else f"(turn {turn})"
        c = self.console
        announced, self._announced = self._announced, False
        if step.error in SENT_BACK:  # a Final Answer sent back: cut off, or failed check_answer=True
            c.print(f"[bold red]Final Answer sent back {counter}:[/] {self._text(step.log)}")
        elif step.action:
            if not announced:
                self._print_action(step.thought, step.action, step.action_input, turn, max_turns)
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
