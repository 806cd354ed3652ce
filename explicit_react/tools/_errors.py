"""How the built-in tools turn failures into observations that start with ``Error:``."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.tools import ToolException
from pydantic import AfterValidator

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


def _unicode(text: str, errors: str) -> str:
    try:
        text.encode("utf-8", errors)
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"position {exc.start} holds {exc.object[exc.start]!r}, a lone surrogate, which is not a "
            "character (a JSON escape such as \\ud800 gives one); write the text without it"
        ) from None
    return text


Text = Annotated[str, AfterValidator(lambda text: _unicode(text, "strict"))]
"""A tool argument that must be valid Unicode: a lone surrogate (which a JSON escape such as
``\\ud800`` in the model's Action Input gives) is refused as an ``Error:`` observation by the tool's
argument check, instead of a ``UnicodeEncodeError`` from deep inside the tool."""

FileText = Annotated[str, AfterValidator(lambda text: _unicode(text, "surrogateescape"))]
"""A path or file content: as ``Text``, except that the surrogates standing for bytes that are not
UTF-8 (``\\udc80``-``\\udcff``, as Python reads such a file name or file) are kept, to be written
back as those bytes."""
