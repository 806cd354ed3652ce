"""The audit trail: one JSON line per step and one for the result, written as the run goes."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from explicit_react.types import AgentResult, Step

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names look secret (long enough to be worth hiding)."""
    env = os.environ if environ is None else environ
    return sorted(
        {v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= 8}, key=len, reverse=True
    )


def redact(value: Any, secrets: list[str]) -> Any:
    """``value`` with every secret string replaced by ``[redacted]`` (dicts and lists walked)."""
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "[redacted]")
        return value
    if isinstance(value, dict):
        return {k: redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    return value


class JsonlTrace:
    """A run listener that appends JSON lines to ``path``, flushed after each one so a crash loses nothing.

    Each line has ``event`` (``"step"`` or ``"result"``) and a timestamp; secret-looking environment
    values are redacted, and no environment values are written.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._secrets = secret_values()

    def _write(self, record: dict[str, Any]) -> None:
        record = redact(record, self._secrets)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            f.flush()

    def on_step(self, step: Step, turn: int, max_turns: int | None) -> None:
        """Write one step."""
        self._write(
            {"event": "step", "time": time.time(), "turn": turn, "max_turns": max_turns, **step.to_dict()}
        )

    def on_result(self, result: AgentResult) -> None:
        """Write the result (its steps were written already)."""
        data = result.to_dict()
        data["steps"] = len(result.steps)
        self._write({"event": "result", "time": time.time(), **data})
