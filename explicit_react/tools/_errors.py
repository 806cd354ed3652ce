"""How the built-in tools turn failures into observations that start with ``Error:``."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import ToolException

ERROR_PREFIX = "Error: "


def tool_error(message: str) -> ToolException:
    """A ToolException whose text is the observation the model sees (``Error: ...``)."""
    return ToolException(message if message.startswith(ERROR_PREFIX) else ERROR_PREFIX + message)


def validation_error_observation(error: Any) -> str:
    """Turn a pydantic ValidationError on a tool's arguments into a short ``Error:`` observation."""
    try:
        problems = [
            f"{'.'.join(str(part) for part in item['loc']) or 'input'}: {item['msg']}"
            for item in error.errors()
        ]
    except Exception:  # a pydantic v1 error or anything unexpected: fall back to its text
        problems = [str(error).splitlines()[0]]
    return f"{ERROR_PREFIX}invalid tool arguments ({'; '.join(problems)})"
