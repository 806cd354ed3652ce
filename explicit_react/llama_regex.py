"""A JSON Schema ``pattern`` as a GBNF expression for the text between a JSON string's quotes.

llama-cpp-python's converter copies a pattern into the grammar almost as written: ``\\d`` became the
GBNF escape ``"\\d"``, which llama.cpp rejects (and a rejected grammar crashed the process), a
character the pattern allows but JSON must escape (``"``, ``\\``, a newline) was allowed raw, and a
pattern not written as ``^...$`` was refused although JSON Schema patterns match anywhere.

Here Python's own regex parser reads the pattern, and each part is written for the *JSON text* of
a matching string: a ``"`` the pattern allows is ``\\"``, a newline ``\\n``. A pattern not anchored at
a side may have any text on that side. What cannot be written (look-arounds, back-references,
case-insensitive flags, a pattern Python cannot parse) gives ``None``: the caller then allows any
string, and the pattern is checked when the call is read (``explicit_react.llama_call_check``).
The grammar may allow less than the pattern (``\\w`` is ASCII here, and some control characters
are left out), never a string the check then refuses for a reason the model could not see.
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

try:
    _sre: Any = importlib.import_module("re._parser")  # Python 3.11+
except ImportError:  # pragma: no cover - Python 3.10
    _sre = importlib.import_module("sre_parse")

__all__ = ["pattern_grammar"]

MAX_COUNT = 2000
"""The largest repetition count written as a bound (``{m,n}``); a larger one leaves the count to
the check when the call is read."""

_UNICODE_MAX = 0x10FFFF
_JSON_ESCAPED = {0x22: '\\"', 0x5C: "\\\\", 0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
"""The characters a JSON string holds only escaped, that the grammar offers (other control
characters are left out: a pattern rarely means them)."""
_NOT_RAW = [(0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]
"""What may not appear raw between a JSON string's quotes."""
_CATEGORIES = {
    "CATEGORY_DIGIT": [(0x30, 0x39)],
    "CATEGORY_WORD": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
    "CATEGORY_SPACE": [(0x09, 0x0D), (0x20, 0x20)],
}


class _Unsupported(Exception):
    """A part of the pattern this translation does not write."""


Ranges = list[tuple[int, int]]


def pattern_grammar(pattern: str, any_char: str) -> str | None:
    """The GBNF expression for the JSON text of the strings ``pattern`` matches (``re.search``), or
    ``None`` when it cannot be written. ``any_char`` is the grammar rule for any one character of a
    JSON string (used beside an unanchored side)."""
    try:
        parsed = _sre.parse(pattern)
        if parsed.state.flags & (re.IGNORECASE | re.MULTILINE):
            return None
        items = list(parsed)
        starts = bool(items) and _is_anchor(items[0], ("AT_BEGINNING", "AT_BEGINNING_STRING"))
        ends = len(items) > starts and _is_anchor(items[-1], ("AT_END", "AT_END_STRING"))
        body = _sequence(items[int(starts) : len(items) - int(ends)])
    except (_Unsupported, re.error, RecursionError, OverflowError):
        return None
    if body == '""' and not (starts and ends):
        return f"{any_char}*"
    parts = ([] if starts else [f"{any_char}*"]) + [body] + ([] if ends else [f"{any_char}*"])
    return " ".join(parts)


def _is_anchor(item: tuple[Any, Any], names: tuple[str, ...]) -> bool:
    op, value = item
    return str(op) == "AT" and str(value) in names


def _sequence(items: list[tuple[Any, Any]]) -> str:
    """A parsed sequence: runs of plain characters as one literal, each other item as its expression."""
    out: list[str] = []
    literal = ""
    for op, value in items:
        if str(op) == "LITERAL":
            literal += _json_text(value)
            continue
        if literal:
            out.append(_literal(literal))
            literal = ""
        out.append(_item(str(op), value))
    if literal:
        out.append(_literal(literal))
    return " ".join(out) if out else '""'


def _item(op: str, value: Any) -> str:
    if op == "ANY":
        return _class([(0x0A, 0x0A)], negated=True)
    if op == "NOT_LITERAL":
        return _class([(value, value)], negated=True)
    if op == "IN":
        negated = bool(value) and str(value[0][0]) == "NEGATE"
        return _class(_ranges(value[int(negated) :]), negated)
    if op == "CATEGORY":
        name = str(value)
        negated = "_NOT_" in name
        return _class(_category(name.replace("_NOT_", "_")), negated)
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        low, high, inner = value
        return _repeat(_grouped(list(inner)), low, None if high == _sre.MAXREPEAT else high)
    if op in ("SUBPATTERN", "ATOMIC_GROUP"):
        inner = value if op == "ATOMIC_GROUP" else value[-1]
        if op == "SUBPATTERN" and (value[1] or value[2]):  # (?i:...) and other inline flags
            raise _Unsupported(op)
        return _grouped(list(inner))
    if op == "BRANCH":
        return "(" + " | ".join(_sequence(list(part)) for part in value[1]) + ")"
    raise _Unsupported(op)  # anchors inside, look-arounds, back-references, conditionals


def _grouped(items: list[tuple[Any, Any]]) -> str:
    """``items`` as one GBNF term that a repetition can follow."""
    text = _sequence(items)
    ops = {str(op) for op, _ in items}
    single = len(items) == 1 and ops <= {"IN", "ANY", "CATEGORY", "NOT_LITERAL", "BRANCH", "SUBPATTERN"}
    return text if ops == {"LITERAL"} or single else f"({text})"


def _repeat(item: str, low: int, high: int | None) -> str:
    if low > MAX_COUNT or (high is not None and high > MAX_COUNT):
        raise _Unsupported("count")
    if high is None:
        return {0: f"{item}*", 1: f"{item}+"}.get(low, f"{item}{{{low},}}")
    if (low, high) == (0, 1):
        return f"{item}?"
    if high == 0:
        return '""'
    return f"{item}{{{low}}}" if low == high else f"{item}{{{low},{high}}}"


def _ranges(items: list[tuple[Any, Any]]) -> Ranges:
    ranges: Ranges = []
    for op, value in items:
        if str(op) == "LITERAL":
            ranges.append((value, value))
        elif str(op) == "RANGE":
            ranges.append(value)
        elif str(op) == "CATEGORY" and "_NOT_" not in str(value):
            ranges += _category(str(value))
        else:  # a negated category inside a class ([\D_]): rare, left to the check
            raise _Unsupported(str(op))
    return ranges


def _category(name: str) -> Ranges:
    for key, ranges in _CATEGORIES.items():
        if name.startswith(key):  # CATEGORY_DIGIT, CATEGORY_UNI_DIGIT ...
            return ranges
    raise _Unsupported(name)


def _class(ranges: Ranges, negated: bool) -> str:
    """A character class as JSON text: its characters that may stand raw in one GBNF class, and each
    character JSON escapes (``"``, ``\\``, tab, newline, carriage return) as its escape."""
    inside = sorted(ranges)
    if negated:
        raw = _complement(_union(inside + _NOT_RAW))
        escaped = [c for c in _JSON_ESCAPED if not _holds(inside, c)]
    else:
        raw = _complement(_union(_complement(_union(inside)) + _NOT_RAW))
        escaped = [c for c in _JSON_ESCAPED if _holds(inside, c)]
    options = ([_gbnf_class(raw)] if raw else []) + [_literal(_JSON_ESCAPED[c]) for c in escaped]
    if not options:
        raise _Unsupported("an empty class")
    return options[0] if len(options) == 1 else "(" + " | ".join(options) + ")"


def _holds(ranges: Ranges, char: int) -> bool:
    return any(low <= char <= high for low, high in ranges)


def _union(ranges: Ranges) -> Ranges:
    merged: Ranges = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def _complement(ranges: Ranges) -> Ranges:
    out: Ranges = []
    start = 0
    for low, high in _union(ranges):
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    if start <= _UNICODE_MAX:
        out.append((start, _UNICODE_MAX))
    return out


def _gbnf_class(ranges: Ranges) -> str:
    parts = [_char(low) if low == high else f"{_char(low)}-{_char(high)}" for low, high in ranges]
    return "[" + "".join(parts) + "]"


def _char(code: int, special: str = '\\"[]^-') -> str:
    """One character in a GBNF class (or, with ``special`` '\\"', in a literal): as it is when it is
    printable and means nothing there, else a hex escape."""
    char = chr(code)
    if char.isprintable() and char not in special:
        return char
    if code < 0x100:
        return f"\\x{code:02X}"
    return f"\\u{code:04X}" if code < 0x10000 else f"\\U{code:08X}"


def _json_text(code: int) -> str:
    """How a JSON string writes the character ``code``."""
    return json.dumps(chr(code), ensure_ascii=False)[1:-1]


def _literal(text: str) -> str:
    return '"' + "".join(_char(ord(c), '\\"') for c in text) + '"'
