"""JSON written in a reply: strict objects found in linear time, nearly valid values repaired, action blobs.

A model writes JSON as a tool input (``{"query": "x"}``, often nearly valid: single quotes, Python
literals, a trailing comma, a missing bracket) and as a whole action (``{"action": "search",
"action_input": "x"}``). Nothing here decodes at every brace or backtracks: each character is looked
at a bounded number of times.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

# Text that starts like a JSON object or array (not `{temperature in SF}` or `[what is it?]`).
JSON_START = re.compile(
    r"""\A(?:\{\s*(?:["'}]|\Z)|\[\s*(?:["'{\[\]\d-]|true\b|false\b|null\b|True\b|False\b|None\b|\Z))"""
)
# Strict JSON, token by token (for _scan_json): whitespace, then a string, a scalar or punctuation.
_JSON_STRING = r"""(?:"(?:[^"\\\x00-\x1f]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+")"""
_JSON_TOKEN = re.compile(
    rf"""[ \t\n\r]*+(?:(?P<string>{_JSON_STRING})"""
    r"""|(?P<scalar>-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][-+]?[0-9]++)?+|true|false|null|NaN|-?Infinity)"""
    r"""|(?P<punct>[{}\[\]:,]))"""
)
_OBJECT_START = re.compile(rf"\{{[ \t\n\r]*+(?:\}}|{_JSON_STRING}[ \t\n\r]*+:)")  # how a valid object starts
_VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE, _COLON, _COMMA_OR_CLOSE = range(6)
MAX_JSON_DEPTH = 100
"""JSON nested deeper than this is read as text: deeper values would overflow the stack of every
recursive consumer downstream (``json.dumps``, validators, loop checks)."""
# Runs _tidy_json copies unchanged: inside a string, and outside one.
_TIDY_STRING_RUN = re.compile(r"[^\\\"'\x00-\x1f]+")
_TIDY_PLAIN_RUN = re.compile(r"[^\"'/,{}\[\]A-Za-z_]+")
_TIDY_OPENERS = re.compile(r"[{\[]+")
_CLOSER_OF = str.maketrans("{[", "}]")
_COMMA_BEFORE_CLOSER = re.compile(r",(?=\s*[}\]])")
_BARE_WORD = re.compile(r"[A-Za-z_]\w*")
_PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}
# JSON action blobs: (tool key, input key) pairs used by LangChain, smolagents, Dify, Llama 3.1.
_BLOB_KEYS = (("action", "action_input"), ("action", "input"), ("name", "arguments"), ("name", "parameters"))


def json_objects(text: str) -> list[tuple[int, Any]]:
    """Every top-level strictly valid JSON object in the text (at most ``MAX_JSON_DEPTH`` deep), with its position.

    Where each object ends is found by ``_scan_json`` (one pass that settles every object it opens),
    not by decoding at every ``{``: that rescans the same text from each brace of a deep nesting.
    """
    objects = []
    ends: dict[int, int] = {}  # object start -> its end, or -1 when no valid object starts there
    position = 0
    while start_match := _OBJECT_START.search(text, position):
        start = start_match.start()
        if start not in ends:
            _scan_json(text, start, ends)
        end = ends[start]
        try:
            value = json.loads(text[start:end]) if end > 0 else None
        except (ValueError, RecursionError):  # e.g. an integer longer than int_max_str_digits
            value = None
        if value is None:
            position = start + 1
            continue
        objects.append((start, value))
        position = end
    return objects


def _scan_json(text: str, start: int, ends: dict[int, int]) -> None:
    """Check strict JSON from the object at ``start`` and record in ``ends`` where each object it
    opens ends (-1 for one that is invalid or nested more than ``MAX_JSON_DEPTH`` deep).

    An object's validity depends on its own text only, so it is the same whether it is read on its
    own or nested in another: each object is checked once.
    """
    open_containers: list[tuple[str, int]] = []  # (closer, start) of each container not yet closed
    too_deep = 0  # open_containers[:too_deep] hold more than MAX_JSON_DEPTH levels: settled as invalid
    expect = _VALUE
    position = start
    while token := _JSON_TOKEN.match(text, position):
        position = token.end()
        kind = token.lastgroup
        char = text[position - 1]
        closes = False
        if expect in (_VALUE, _VALUE_OR_CLOSE):
            if kind == "scalar" and _int_too_long(token["scalar"]):
                break
            if kind in ("string", "scalar"):
                expect = _COMMA_OR_CLOSE
            elif char in "{[":
                open_containers.append(("}" if char == "{" else "]", position - 1))
                expect = _KEY_OR_CLOSE if char == "{" else _VALUE_OR_CLOSE
                if len(open_containers) - too_deep > MAX_JSON_DEPTH:
                    closer, opened = open_containers[too_deep]
                    if closer == "}":
                        ends[opened] = -1
                    too_deep += 1
                continue
            elif char == "]" and expect == _VALUE_OR_CLOSE:
                closes = True
            else:
                break
        elif expect in (_KEY, _KEY_OR_CLOSE):
            if kind == "string":
                expect = _COLON
                continue
            if char != "}" or expect != _KEY_OR_CLOSE:
                break
            closes = True
        elif expect == _COLON:
            if char != ":":
                break
            expect = _VALUE
            continue
        elif char == "," and kind == "punct":  # expect == _COMMA_OR_CLOSE
            expect = _KEY if open_containers[-1][0] == "}" else _VALUE
            continue
        elif char == open_containers[-1][0] and kind == "punct":
            closes = True
        else:
            break
        if closes:
            closer, opened = open_containers.pop()
            if closer == "}":
                ends[opened] = position
            if len(open_containers) == too_deep:  # the outermost object still being checked is done
                return
            expect = _COMMA_OR_CLOSE
    for closer, opened in open_containers[too_deep:]:
        if closer == "}":
            ends[opened] = -1


def _int_too_long(scalar: str) -> bool:
    """An integer ``json`` refuses to convert (Python's int_max_str_digits limit)."""
    limit = sys.get_int_max_str_digits()
    digits = len(scalar) - scalar.startswith("-")
    return bool(limit) and digits > limit and not any(mark in scalar for mark in ".eEIN")


def action_blobs(text: str) -> list[tuple[int, dict[str, Any]]]:
    """The top-level JSON objects in the text that are action blobs, with their positions.

    A blob's tool key is written ``"action"`` or ``"name"`` (or with a ``\\u`` escape): text with
    none of these holds no blob, and is not scanned.
    """
    tool_keys = {f'"{tool_key}"' for tool_key, _ in _BLOB_KEYS}
    if "\\u" not in text and not any(key in text for key in tool_keys):
        return []
    return [(start, blob) for start, blob in json_objects(text) if blob_parts(blob)]


def blob_parts(blob: dict[str, Any]) -> tuple[str, Any] | None:
    """The tool name and raw input of a JSON action blob, or ``None`` when it is not one."""
    for tool_key, input_key in _BLOB_KEYS:
        if isinstance(blob.get(tool_key), str) and input_key in blob:
            return blob[tool_key].strip(), blob[input_key]
    return None


def json_value(text: str) -> dict[str, Any] | list[Any] | None:
    """Parse JSON-like text, repairing only what models get nearly right; ``None`` when it is not JSON.

    Repairs: single quotes, Python ``True/False/None``, trailing commas, ``/* */`` and ``//`` comments,
    raw newlines and tabs inside strings, missing closing brackets. Text after the value is ignored.
    """
    if not JSON_START.match(text):
        return None
    decoder = json.JSONDecoder()
    try:
        return _container(decoder.raw_decode(text)[0])
    except RecursionError:  # tidying keeps the valid text that nests too deep
        return None
    except ValueError:
        pass
    tidy = _tidy_json(text)
    if tidy is None:
        return None
    tidied, closers = tidy
    for candidate in (tidied, tidied + closers):
        try:
            return _container(decoder.raw_decode(candidate)[0])
        except (ValueError, RecursionError):
            continue
    return None


def _container(value: Any) -> dict[str, Any] | list[Any] | None:
    """A dict or list nested at most ``MAX_JSON_DEPTH`` deep, else ``None``."""
    if not isinstance(value, (dict, list)):
        return None
    level = [value]
    for _ in range(MAX_JSON_DEPTH):
        level = [
            child
            for container in level
            for child in (container.values() if isinstance(container, dict) else container)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return value
    return None


def _tidy_json(text: str) -> tuple[str, str] | None:
    """Rewrite nearly valid JSON as JSON; also return the closers a truncated value is missing.

    Only the first value is rewritten (the decoder ignores what follows it), and ``None`` is
    returned as soon as it nests more than ``MAX_JSON_DEPTH`` deep: such a value is read as text.
    """
    out: list[str] = []
    closers: list[str] = []
    quote = ""  # the quote that opened the string we are in; "" outside strings
    index = 0
    while index < len(text):
        if plain := (_TIDY_STRING_RUN if quote else _TIDY_PLAIN_RUN).match(text, index):
            out.append(plain[0])  # copied as it is
            index = plain.end()
            continue
        char = text[index]
        if quote:
            if char == "\\" and index + 1 < len(text):
                escaped = text[index + 1]
                out.append("'" if escaped == "'" else char + escaped)
                index += 2
                continue
            if char == quote:
                out.append('"')
                quote = ""
            elif char == '"':
                out.append('\\"')
            else:
                out.append(json.dumps(char)[1:-1] if char < " " else char)
        elif char in "\"'":
            quote = char
            out.append('"')
        elif text.startswith("/*", index) or text.startswith("//", index):
            end = text.find("*/" if text[index + 1] == "*" else "\n", index + 2)
            index = len(text) if end < 0 else end + (2 if text[index + 1] == "*" else 0)
            continue
        elif char == "," and _COMMA_BEFORE_CLOSER.match(text, index):
            pass
        elif char in "{[":
            openers = _TIDY_OPENERS.match(text, index)[0]  # type: ignore[index]
            closers.extend(openers.translate(_CLOSER_OF))
            if len(closers) > MAX_JSON_DEPTH:
                return None
            out.append(openers)
            index += len(openers)
            continue
        elif char in "}]":
            if closers and closers[-1] == char:
                closers.pop()
                if not closers:  # the first value is complete
                    out.append(char)
                    break
            out.append(char)
        elif word := _BARE_WORD.match(text, index):
            out.append(_PYTHON_LITERALS.get(word[0], word[0]))
            index = word.end()
            continue
        else:
            out.append(char)
        index += 1
    return "".join(out), ('"' if quote else "") + "".join(reversed(closers))
