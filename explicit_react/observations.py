"""A tool's return value as the text the model reads: never blank, never a value no encoder takes."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import BaseMessage

from explicit_react.tool_input import as_text

__all__ = ["NO_OUTPUT", "encodable", "observation_text"]

NO_OUTPUT = "(the tool returned no output)"
"""The observation for a tool that returned ``None`` or an empty string: never a blank, never ``null``."""


def observation_text(output: Any) -> str:
    """A tool's return value as the text the model reads: a string as it is, a pydantic model or a
    dataclass (also inside lists and dicts) as JSON of its fields, a message as its text, ``None``
    as ``NO_OUTPUT``; never with a lone surrogate (``encodable``)."""
    if isinstance(output, BaseMessage):
        output = output.text
    if isinstance(output, str):
        return encodable(output) if output and not output.isspace() else NO_OUTPUT
    if output is None:
        return NO_OUTPUT
    return encodable(as_text(output))


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` with no lone surrogate, which no UTF-8 encoder (a provider's request, a JSON trace)
    accepts: one that stands for a byte that is not UTF-8 (``\\udc80``-``\\udcff``, as Python
    reads a Latin-1 file or name with ``surrogateescape``) as the escape ``\\xNN`` of that byte,
    any other as ``\\uNNNN``. Text without one is returned as it is (no copy of a huge output)."""
    if text.isascii() or not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"
