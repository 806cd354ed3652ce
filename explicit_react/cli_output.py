"""What the ``explicit-react`` command shows: the answer on stdout (as text, or the whole result as
JSON), the live trace with a spinner on stderr, and streams that escape what they cannot encode
rather than fail. Like ``cli``, it imports rich and the agent's modules only once a command runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from explicit_react.types import AgentResult


@contextlib.contextmanager
def lenient_streams() -> Iterator[None]:
    """While the command runs, text the streams cannot carry is escaped or replaced, not a traceback.

    stdout and stderr write what their encoding lacks as backslash escapes (``\\xe9``, a lone
    surrogate as ``\\udce9``) where they would raise (errors ``strict``: ``PYTHONIOENCODING=ascii``,
    ``=utf-8``, a cp1252 console); stdin reads bytes its encoding cannot decode as U+FFFD. Only
    streams that can be reconfigured (``io.TextIOWrapper``) are changed, and they are put back after.
    """
    wanted = {"stdin": "replace", "stdout": "backslashreplace", "stderr": "backslashreplace"}
    changed: list[tuple[Any, str]] = []
    for name, errors in wanted.items():
        stream = getattr(sys, name)
        if isinstance(stream, io.TextIOWrapper) and (name == "stdin" or stream.errors == "strict"):
            before = stream.errors or "strict"
            with contextlib.suppress(ValueError, OSError):  # a closed stream
                stream.reconfigure(errors=errors)
                changed.append((stream, before))
    try:
        yield
    finally:
        for stream, before in changed:
            with contextlib.suppress(ValueError, OSError):
                stream.reconfigure(errors=before)


def print_result(result: AgentResult, as_json: bool, indent: int | None = 2) -> None:
    """The answer on stdout, or the whole result as JSON (``indent=None``: one line); on a
    terminal, control characters are shown, not obeyed."""
    from explicit_react.scratchpad import printable

    if as_json:  # ASCII escapes where stdout cannot encode the text (PYTHONIOENCODING=ascii), and on
        # a terminal, which would obey a C1 control or a bidirectional override written raw
        unicode_out = (sys.stdout.encoding or "").lower().replace("-", "") in ("utf8", "utf16", "utf32")
        ascii_only = not unicode_out or sys.stdout.isatty()
        text = json.dumps(result.to_dict(), ensure_ascii=ascii_only, indent=indent)
        # A lone surrogate (a file or a name read with surrogateescape) as its JSON escape, \udce9:
        # no encoding can write it, and raw (0xE9) it would not be UTF-8. JSON holds it only in strings.
        print(_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text))
    else:  # on a terminal, control characters from a web page or a file are shown, not obeyed
        print(printable(result.answer) if sys.stdout.isatty() else result.answer)
    sys.stdout.flush()


_SURROGATE = re.compile(r"[\ud800-\udfff]")
"""A lone surrogate: what ``surrogateescape`` makes of a byte that is not UTF-8."""


# --- the trace with a spinner --------------------------------------------------------------------


def _console() -> Console:
    """The trace's console on stderr; piped, it does not wrap lines at 80 columns (``soft_wrap``)."""
    from rich.console import Console

    console = Console(stderr=True, highlight=False)
    console.soft_wrap = not console.is_terminal
    return console


class LiveTrace:
    """The coloured trace (``display.TracePrinter``) plus a spinner while the model and tool work.

    The spinner only runs on a terminal; piped stderr gets the plain trace.
    """

    def __init__(self, console: Console | None = None) -> None:
        from explicit_react.display import TracePrinter

        self.console = console or _console()
        self.printer = TracePrinter(self.console)
        self._status: Any = None

    def on_turn_start(self, turn: int, max_turns: int | None) -> None:
        """Show a spinner until the step (or the run) is done."""
        self.stop_spinner()
        if self.console.is_terminal:
            counter = f"{turn}/{max_turns}" if max_turns is not None else str(turn)
            self._status = self.console.status(f"Thinking (turn {counter})...", spinner="dots")
            self._status.start()

    def on_action(self, action: Any, turn: int, max_turns: int | None) -> None:
        """Print the action as its tool starts; on a terminal, spin until the tool is done."""
        from explicit_react.display import escape

        self.stop_spinner()
        self.printer.on_action(action, turn, max_turns)
        if self.console.is_terminal:
            self._status = self.console.status(f"Running {escape(action.tool)}...", spinner="dots")
            self._status.start()

    def on_step(self, step: Any, turn: int, max_turns: int | None) -> None:
        """Stop the spinner, print the step."""
        self.stop_spinner()
        self.printer.on_step(step, turn, max_turns)

    def on_result(self, result: AgentResult) -> None:
        """Stop the spinner, print the answer or the stop reason."""
        self.stop_spinner()
        self.printer.on_result(result)

    def stop_spinner(self) -> None:
        """Stop the spinner if it runs (also called when a run is interrupted)."""
        if self._status is not None:
            self._status.stop()
            self._status = None
