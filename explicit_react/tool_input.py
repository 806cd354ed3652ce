"""The model's Action Input shaped for a tool: text for a text tool, a dict of arguments for a schema
tool (JSON read or repaired, positional values in order); and any value as the text a tool or the
model reads."""

from __future__ import annotations

import ast
import csv
import dataclasses
import json
import re
from collections.abc import Sequence
from typing import Any

import json_repair
from langchain_core.tools import BaseTool, Tool
from pydantic import BaseModel

from explicit_react.prompt import ToolSpec, schema_types
from explicit_react.scanners import call_arguments
from explicit_react.types import ToolInput

UNPARSED = "\x00unparsed"
"""The key of the one entry ``fit_input`` returns for text a schema tool cannot take as arguments."""


def takes_text(t: BaseTool) -> bool:
    """True for tools whose input is one string (``Tool`` and ``BaseTool`` subclasses with no schema)."""
    return isinstance(t, Tool) or t.args_schema is None


def fit_input(t: BaseTool, spec: ToolSpec, tool_input: ToolInput) -> str | dict[str, Any]:
    """The model's input shaped for tool ``t`` (whose prompt view is ``spec``): text for text tools,
    a dict of arguments otherwise.

    A dict with one value fits a text tool; text fits a one-argument schema tool; text that is
    JSON-like is parsed for a schema tool, and so are keywords that name its arguments
    (``query="x", max_results=5``: ``keyword_arguments``). Positional values (``multiply(6, 7)``
    gives a list, ``multiply[6, 7]`` the text ``6, 7``) fill a schema tool's arguments in order. What cannot
    fit is left for the schema to reject (text that is no arguments at all: ``{UNPARSED: text}``).

    As in langchain_core: a tool of no arguments runs with none, whatever the model wrote; text for
    a tool whose arguments are all optional goes to the first one. A one-key object whose value is
    not text reaches a text argument as its JSON (the classic ``json.loads`` recipe).
    """
    if takes_text(t):
        if isinstance(tool_input, dict) and len(tool_input) == 1:
            value = next(iter(tool_input.values()))
            return value if isinstance(value, str) else as_text(tool_input)
        return as_text(tool_input)
    arg_names = list(spec.args)
    if not arg_names:  # langchain_core calls such a tool with no arguments whatever its input
        return {}
    only_arg = (
        arg_names[0] if len(arg_names) == 1 else (spec.required[0] if len(spec.required) == 1 else None)
    )
    if isinstance(tool_input, str):
        if (keywords := keyword_arguments(tool_input, spec)) is not None:
            return keywords
        parsed = _json_object(tool_input)
        if parsed is not None and (only_arg is None or only_arg in parsed or len(arg_names) > 1):
            return parsed
        # The argument that takes the text whole: the only one, the only required one, or (none
        # required) a first one that takes text. Such text is never split on its commas.
        text_arg = only_arg or (
            arg_names[0] if not spec.required and _takes_text(spec.args[arg_names[0]]) else None
        )
        # "6, 7" fills the arguments in order only when no single argument takes the text whole
        if (
            parsed is None
            and text_arg is None
            and (in_order := _in_order(spec, _positional_values(tool_input)))
        ):
            return in_order
        if text_arg is not None:
            return {text_arg: tool_input}
        if not spec.required:  # langchain_core's rule: the first argument; its schema converts or refuses
            return {arg_names[0]: tool_input} if tool_input.strip() else {}
        return {UNPARSED: tool_input}
    if isinstance(tool_input, list):
        if in_order := _in_order(spec, tool_input):
            return in_order
        return {only_arg: tool_input} if only_arg else {UNPARSED: json.dumps(tool_input)}
    if len(arg_names) == 1 and arg_names[0] not in tool_input:
        # A JSON object for a tool with one argument: a text argument gets the JSON itself (the
        # classic recipe for several values, or one that is not text, for a tool that calls
        # json.loads), an object one the dict; one text value under another key is that value.
        kind = "string" if text_only(spec.args[arg_names[0]]) else spec.args[arg_names[0]].get("type")
        if len(tool_input) == 1:
            value = next(iter(tool_input.values()))
            if kind != "string" or isinstance(value, str):
                return {arg_names[0]: value}
        if kind in ("string", "object"):
            return {arg_names[0]: as_text(tool_input) if kind == "string" else dict(tool_input)}
    return dict(tool_input)


_FIRST_KEYWORD = re.compile(r"\s*+(?P<name>[A-Za-z_]\w*+)\s*+[:=]")


def keyword_arguments(text: str, spec: ToolSpec) -> dict[str, Any] | None:
    """``query="x", max_results=5``, ``query: "x"`` or ``query=capital of France`` as arguments, when
    every key is one of the tool's arguments; else ``None``, and the text is the input as written
    (``x=5`` for a calculator, ``Note: ...`` prose).

    Models write keywords on the Action Input line as on the Action line, and they are read as call
    syntax reads them for a real tool (``calculator(expression=2 + 3)``): literals as values, never
    run, other values as their text; a value for an argument that takes only text is its text
    (``query: 2024``). Python code is left whole: ``code = 5; print(code)`` for a tool whose
    argument is ``code`` is a program, not a keyword.
    """
    first = _FIRST_KEYWORD.match(text)
    if first is None or first["name"] not in spec.args:
        return None
    source = f"{first['name']}={text[first.end() :]}"  # "query: x" read as "query=x"
    arguments = call_arguments(source, expressions=True)
    if not isinstance(arguments, dict) or not set(arguments) <= set(spec.args) or _is_program(text):
        return None
    return {
        name: as_text(value) if text_only(spec.args[name]) else value for name, value in arguments.items()
    }


def _is_program(text: str) -> bool:
    """Whether ``text`` parses as Python (it is never run) other than one ``name = value`` or
    ``name: value``, which as a program would do nothing."""
    try:
        statements = ast.parse(text.strip()).body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return not (len(statements) == 1 and isinstance(statements[0], (ast.Assign, ast.AnnAssign)))


def agent_tool_input(tool_input: ToolInput) -> str | dict[str, Any]:
    """An action input as LangChain's ``AgentAction`` takes it: a JSON list becomes its JSON text."""
    return json.dumps(tool_input, ensure_ascii=False) if isinstance(tool_input, list) else tool_input


def as_text(value: Any) -> str:
    """``value`` as text: a string as it is; otherwise JSON, with pydantic models and dataclasses as
    their fields; else ``str(value)``; a value nested too deeply for either says so."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=_jsonable)
    except RecursionError:  # str() would recurse as deep
        return too_deep_text(value)
    except Exception:  # not JSON, or something in it whose str() fails: str() alone may still work
        pass
    try:
        return str(value)
    except RecursionError:
        return too_deep_text(value)
    except Exception as exc:  # an object whose __str__ raises
        return (
            f"(a {type(value).__name__} that cannot be shown as text: its str() raised {type(exc).__name__})"
        )


def too_deep_text(value: Any) -> str:
    """What stands for a tool output nested too deeply for ``json.dumps`` or ``str()``."""
    return f"(a {type(value).__name__} nested too deeply to show as text)"


MAX_REPAIRED_BRACKETS = 64
"""Broken JSON with more opening brackets than this is not repaired (it is read as text): a tool's
arguments hold a few, and json_repair's time on many is quadratic, spent before any tool timeout."""


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def _json_object(text: str) -> dict[str, Any] | None:
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        if stripped.count("{") + stripped.count("[") > MAX_REPAIRED_BRACKETS:
            return None  # json_repair's time grows with the square of these: 19 KB of '{"' took 9 s
        value = json_repair.loads(stripped)
    return value if isinstance(value, dict) else None


def _takes_text(schema: Any) -> bool:
    """True when an argument accepts a string: typed as one (alone or among others), or untyped."""
    types = schema_types(schema)
    return types is None or "string" in types


def text_only(schema: Any) -> bool:
    """True when an argument takes a string and no other value (``null`` aside)."""
    return [t for t in schema_types(schema) or [None] if t != "null"] == ["string"]


def _in_order(spec: ToolSpec, values: Sequence[Any]) -> dict[str, Any] | None:
    """Positional ``values`` as the tool's arguments, in order, when they fit: a tool of several
    arguments, at least its required ones given, no more than it has, and a first argument that does
    not itself take a list. ``None`` otherwise."""
    names = list(spec.args)
    if not (len(names) > 1 and len(values) > 1 and len(spec.required) <= len(values) <= len(names)):
        return None
    if spec.args[names[0]].get("type") == "array":
        return None
    return dict(zip(names, values, strict=False))


def _positional_values(text: str) -> list[Any]:
    """``6, 7`` or ``"a, b", 3`` as a list of values: comma-separated, quotes respected, each a
    Python/JSON literal when it is one (only literals are read, never code), else its text."""
    if "," not in text or "\n" in text.strip() or len(text) > 10_000:
        return []
    values = []
    for piece in next(csv.reader([text.strip()], skipinitialspace=True), []):
        try:
            value = ast.literal_eval(piece.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            value = piece.strip()
        values.append(value if isinstance(value, (str, int, float, bool)) else piece.strip())
    return values
