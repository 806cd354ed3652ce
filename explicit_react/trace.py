"""The audit trail: one JSON line per step and one for the result, written as the run goes."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from explicit_react.redaction import redact, redact_cut, secret_values
from explicit_react.types import AgentResult, Step, current_run

__all__ = ["JsonlTrace", "redact", "secret_values"]

_CUT = re.compile(r"\n\[\.\.\. \d+ characters cut \.\.\.\]\n")
"""Where ``scratchpad.truncate_middle`` cut an observation."""


_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})
"""Characters ``str.splitlines`` breaks a line at, which JSON leaves as they are: escaped, so each
record is one line however it is read."""


class JsonlTrace:
    """A run listener that appends JSON lines to ``path``, flushed after each one so a crash loses nothing.

    Each line has ``event`` (``"step"`` or ``"result"``), a timestamp and ``run``, the id of its run
    (``types.current_run``, which the driver sets while it calls the listener: runs at once share
    the file); secret-looking environment values are redacted, and no environment values are written.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.open(
            "a", encoding="utf-8"
        ).close()  # a path that cannot be written fails here, before the run

    def _write(self, record: dict[str, Any]) -> None:
        secrets = secret_values()  # read now: a key set after the agent was built (load_dotenv) counts
        record = redact(record, secrets)
        if isinstance(record.get("observation"), str):
            record["observation"] = redact_cut(record["observation"], secrets, _CUT)
        line = json.dumps(record, ensure_ascii=False).translate(_LINE_BREAKS)
        # A lone surrogate (a file read with surrogateescape) is written as its \\udcXX escape.
        with self.path.open("a", encoding="utf-8", errors="backslashreplace") as f:
            f.write(line + "\n")
            f.flush()

    def on_step(self, step: Step, turn: int, max_turns: int | None) -> None:
        """Write one step."""
        self._write(
            {
                "event": "step",
                "time": time.time(),
                "run": current_run.get(),
                "turn": turn,
                "max_turns": max_turns,
                **step.to_dict(),
            }
        )

    def on_result(self, result: AgentResult) -> None:
        """Write the result (its steps were written already)."""
        data = result.to_dict()
        data["steps"] = len(result.steps)
        self._write({"event": "result", "time": time.time(), "run": current_run.get(), **data})
