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


def checked_query(query: str, max_chars: int, what: str) -> str:
    """``query`` stripped, or an ``Error:`` ToolException when it is empty or longer than
    ``max_chars`` (a search query is a few words; a megabyte of it only costs time)."""
    query = query.strip()
    if not query:
        raise tool_error(f"empty query; say what to {what}")
    if len(query) > max_chars:
        raise tool_error(
            f"query too long ({len(query):,} characters, at most {max_chars:,}); search for a few key words"
        )
    return query
