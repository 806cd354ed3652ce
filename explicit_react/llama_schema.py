"""A tool's JSON schema as the GBNF grammar of a call's JSON, written so that llama.cpp accepts it
and a call that follows it means what the schema says.

Two parts:

- ``arguments_schema``: a tool's ``parameters`` made readable by llama-cpp-python's converter, which
  reads the schemas of all the bound tools as one document: each ``$ref`` renamed into that
  document's root ``$defs``, and an untyped part made any JSON value.
- ``call_json_rules``: the grammar rules of a call, written by that converter with what made it
  write grammars llama.cpp rejects (which crashed the process at the first token) or that force
  text meaning something else, done here instead:

  - a literal (a tool's or an argument's name, an enum or const value) escapes ``\\`` as well as
    ``"``: ``"C:\\temp"`` was written so that the model had to send ``C:<tab>emp``;
  - a ``pattern`` is translated by ``explicit_react.llama_regex``, or (one it cannot write) any
    string;
  - a length or item-count bound is GBNF's ``{m,n}``, not ``n`` nested optional groups (llama.cpp
    rejects a nesting past about 1000);
  - a string's characters exclude raw control characters, which ``json.loads`` refuses;
  - an integer's ``minimum`` and ``maximum`` (the converter drops them) are digit ranges
    (``explicit_react.llama_int_range``).

  What the grammar does not hold a call to (a pattern it could not write, a bound past
  ``MAX_COUNT``, a ``number``'s bounds) is checked when the call is read (``explicit_react.llama_call_check``).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from llama_cpp.llama_grammar import PRIMITIVE_RULES, STRING_FORMAT_RULES, BuiltinRule, SchemaConverter

from explicit_react.errors import ConfigurationError
from explicit_react.llama_int_range import integer_bounds, range_grammar
from explicit_react.llama_regex import MAX_COUNT, pattern_grammar

__all__ = ["arguments_schema", "call_json_rules"]

_ANY_VALUE = {"type": ["string", "number", "boolean", "null", "object", "array"]}
_DEFINITIONS = ("$defs", "definitions")
_SAYS_WHAT_A_VALUE_IS = frozenset(
    {"type", "$ref", "const", "enum", "pattern", "format", "oneOf", "anyOf", "allOf"}
    | {"properties", "additionalProperties", "items", "prefixItems"}
)
"""Keywords that say what a value may be; a schema with none of them (only a description) is any value."""


Place = tuple[str, ...]
"""Where a part of a tool's schema is: the keys from its root, as the segments of a JSON pointer."""
_NOWHERE = object()
"""What ``_part`` gives for a place that is not in the schema."""


def arguments_schema(
    tool: str, parameters: Mapping[str, Any], prefix: str, definitions: dict[str, Any]
) -> Any:
    """A tool's ``parameters`` schema as llama-cpp-python's grammar converter reads it.

    The converter reads the schemas of all the tools as one document, so a ``$ref`` cannot stay a
    pointer into its tool's own schema: each part of the schema that a ``$ref`` points to (a root or
    a nested ``$defs`` entry, or any other part) moves into ``definitions``, the root ``$defs`` of
    that document, named with ``prefix`` so that two tools' parts cannot clash, and the ``$ref``
    names it there. An untyped schema (``{}``, ``true``, only a description: a list of anything, a
    pydantic ``Any``) means any JSON value; the converter failed on some of them and read others as
    an object."""
    refs = _SchemaRefs(tool, parameters, prefix)
    arguments = refs.rewritten(parameters, ())
    definitions.update(refs.pointed_to())
    return arguments


def _all_of(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema``'s ``allOf`` as the converter can write it: it merges the parts as objects, and
    wrote ``{}`` for anything else (a described enum in pydantic v1, ``allOf: [{"$ref": ...}]``, was
    a rule that forced ``"unit": {}``). One part is unwrapped into the schema; parts that are not all
    objects are left out, any value is allowed, and the call is checked when it is read."""
    parts = schema["allOf"]
    rest = {key: value for key, value in schema.items() if key != "allOf"}
    if isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], dict):
        return {**parts[0], **rest}
    objects = isinstance(parts, list) and all(
        isinstance(part, dict) and ("properties" in part or "$ref" in part or part.get("type") == "object")
        for part in parts
    )
    return schema if objects else rest


class _SchemaRefs:
    """One tool's schema with the parts its ``$ref``s point to, each given a name in the root ``$defs``."""

    def __init__(self, tool: str, document: Mapping[str, Any], prefix: str) -> None:
        self.tool, self.document, self.prefix = tool, document, prefix
        self.names: dict[Place, str] = {}
        self.refs: dict[str, str] = {}  # a name -> the $ref that first pointed there, for messages
        self.pending: list[Place] = []  # named parts whose own $refs are still to be followed

    def rewritten(self, schema: Any, at: Place) -> Any:
        """``schema`` (found at ``at``) with its ``$ref``s renamed, its ``$defs`` left out and every
        untyped part made any JSON value."""
        if schema is True or schema == {}:
            return dict(_ANY_VALUE)
        if isinstance(schema, list):  # the old form of "items" (a tuple), or a oneOf/anyOf/allOf list
            return [self.rewritten(part, (*at, str(i))) for i, part in enumerate(schema)]
        if not isinstance(schema, dict):
            return schema
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "$ref":
                out[key] = self.renamed(value, at)
            elif key == "properties":
                out[key] = {name: self.rewritten(part, (*at, key, name)) for name, part in value.items()}
            elif key in ("items", "additionalProperties", "oneOf", "anyOf", "allOf", "prefixItems"):
                out[key] = self.rewritten(value, (*at, key))
            elif key not in _DEFINITIONS:  # what is used of them is named in the root $defs
                out[key] = value
        if "allOf" in out:
            out = _all_of(out)
        if not any(key in out for key in _SAYS_WHAT_A_VALUE_IS):
            out.update(_ANY_VALUE)
        return out

    def renamed(self, ref: Any, at: Place) -> str:
        """The ``$ref`` to the root ``$defs`` entry for the part ``ref`` (written at ``at``) points to."""
        place = self._resolved(ref, at)
        if place not in self.names:
            name = f"{self.prefix}-{_rule_name(place)}-{len(self.names)}"
            self.names[place], self.refs[name] = name, ref
            self.pending.append(place)
        return f"#/$defs/{self.names[place]}"

    def _resolved(self, ref: Any, at: Place) -> Place:
        """Where ``ref`` points: a JSON pointer into the tool's schema. One that finds nothing from the
        root is read from each part that holds ``at``, innermost first: a pydantic model's schema put
        inside a property keeps its own ``$defs`` and its ``#/$defs/...`` refs mean those."""
        pointer = _pointer(ref)
        if pointer is None:
            raise self._error(
                f"has the $ref {ref!r}; llama.cpp's grammar can follow only a $ref into the same "
                "schema (a JSON pointer: #/...)"
            )
        for base in ((), *(at[:end] for end in range(len(at), 0, -1))):
            if _part(self.document, (*base, *pointer)) is not _NOWHERE:
                return (*base, *pointer)
        raise self._error(f"has the $ref {ref!r}, which points to no part of it")

    def pointed_to(self) -> dict[str, Any]:
        """The parts the ``$ref``s point to, by their names, with their own ``$ref``s followed in turn.

        Raises ``ConfigurationError`` for a value defined only by itself (see ``_first_refs``)."""
        parts: dict[str, Any] = {}
        while self.pending:
            place = self.pending.pop(0)
            parts[self.names[place]] = self.rewritten(_part(self.document, place), place)
        cycle = _cycle({name: _first_refs(schema) for name, schema in parts.items()})
        if cycle:
            refs = " -> ".join(repr(self.refs[name]) for name in cycle)
            raise self._error(
                f"has a $ref that refers to itself with no object or array in between ({refs}): "
                "no JSON value matches it"
            )
        return parts

    def _error(self, problem: str) -> ConfigurationError:
        return ConfigurationError(f"The JSON schema of the tool {self.tool!r} {problem}")


def _pointer(ref: Any) -> Place | None:
    """The keys of ``ref``, a JSON pointer in a URI fragment (``"#/a~1b/0"``: ``("a/b", "0")``), or
    ``None`` for a ref to another document."""
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
        return None
    keys = ref[2:].split("/") if ref != "#" else []
    return tuple(unquote(key).replace("~1", "/").replace("~0", "~") for key in keys)


def _part(document: Any, place: Place) -> Any:
    """The part of ``document`` at ``place``, or ``_NOWHERE``."""
    for key in place:
        if isinstance(document, Mapping) and key in document:
            document = document[key]
        elif isinstance(document, list) and key.isdigit() and int(key) < len(document):
            document = document[int(key)]
        else:
            return _NOWHERE
    return document


def _rule_name(place: Place) -> str:
    """A readable grammar rule name for the part at ``place`` (its last key)."""
    if not place:
        return "root"
    return re.sub(r"[^A-Za-z0-9]+", "-", place[-1]).strip("-") or "part"


def _first_refs(schema: Any) -> set[str]:
    """The root ``$defs`` names a value of ``schema`` may begin with before any character is read: its
    ``$ref``, or those of its ``anyOf``/``oneOf`` alternatives (what llama-cpp-python's converter
    reads first). A cycle of them is a left-recursive grammar rule, which llama.cpp rejects only
    once sampling starts; a ``$ref`` inside an object's properties or an array's items follows a
    ``{`` or ``[``, so a recursive model (a tree) is fine."""
    if not isinstance(schema, dict):
        return set()
    if isinstance(schema.get("$ref"), str):
        return {schema["$ref"].removeprefix("#/$defs/")}
    alternatives = schema.get("anyOf") or schema.get("oneOf") or []
    return set().union(*(_first_refs(part) for part in alternatives))


def _cycle(graph: Mapping[str, set[str]]) -> list[str]:
    """The names along a cycle of ``graph`` (the first repeated at the end), or ``[]``."""
    finished: set[str] = set()

    def walk(name: str, path: list[str]) -> list[str]:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in finished:
            return []
        for following in sorted(graph.get(name, ())):
            if cycle := walk(following, [*path, name]):
                return cycle
        finished.add(name)
        return []

    for name in graph:
        if cycle := walk(name, []):
            return cycle
    return []


def call_json_rules(schema: Mapping[str, Any]) -> str:
    """The GBNF rules of a call's JSON, its rule named ``call-json``, following ``schema``.

    Raises what the converter raises on a schema it cannot read (``AssertionError``, ``KeyError``...);
    the caller names the tools."""
    return _call_json_rules(json.dumps(schema))


@lru_cache(maxsize=64)
def _call_json_rules(schema: str) -> str:
    converter = _Converter(
        prop_order={"name": 0, "arguments": 1}, allow_fetch=False, dotall=False, raw_pattern=False
    )
    converter.visit(converter.resolve_refs(json.loads(schema), "stdin"), "")
    return re.sub(r"^root ::=", "call-json ::=", converter.format_grammar(), flags=re.M)


_JSON_CHAR = BuiltinRule(r'[^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})', [])
"""One character of a JSON string: the converter's own rule let raw control characters through."""
_LITERAL_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BEFORE_LENGTH = frozenset({"$ref", "oneOf", "anyOf", "const", "enum", "pattern"})
"""Keywords the converter reads before a string's length bounds (a string with one is not only bounded),
besides a ``format`` it knows (``_known_format``)."""
_BEFORE_TYPE = frozenset({"$ref", "oneOf", "anyOf", "const", "enum"})
"""Keywords the converter reads before an integer's type (an integer with one is not only bounded)."""
_BEFORE_ITEMS = frozenset(
    {"$ref", "oneOf", "anyOf", "const", "enum", "properties", "additionalProperties", "allOf"}
)


class _Converter(SchemaConverter):
    """llama-cpp-python's converter with literals, patterns and bounds written as the module says."""

    def _format_literal(self, literal: str) -> str:
        with contextlib.suppress(ValueError):  # JSON text (a name, a value): non-ASCII as it is
            literal = json.dumps(json.loads(literal), ensure_ascii=False)
        escaped = "".join(_LITERAL_ESCAPES.get(c, c if c.isprintable() else _escaped(c)) for c in literal)
        return f'"{escaped}"'

    def _add_primitive(self, name: str, rule: Any) -> str:
        return str(super()._add_primitive(name, _JSON_CHAR if name == "char" else rule))

    def _visit_pattern(self, pattern: str, name: str) -> str:
        content = pattern_grammar(pattern, self._add_primitive("char", _JSON_CHAR))
        if content is None:  # any string; the pattern is checked when the call is read
            return str(self._add_rule(name, self._add_primitive("string", PRIMITIVE_RULES["string"])))
        return str(self._add_rule(name, f'"\\"" {content} "\\"" space'))

    def visit(self, schema: Any, name: str) -> str:
        kind = schema.get("type") if isinstance(schema, dict) else None
        rule_name = name or "root"
        length = kind == "string" and bool({"minLength", "maxLength"} & schema.keys())
        if length and not _BEFORE_LENGTH & schema.keys() and not _known_format(schema):
            char = self._add_primitive("char", _JSON_CHAR)
            count = _bounds(schema.get("minLength", 0), schema.get("maxLength"))
            return str(self._add_rule(rule_name, f'"\\"" {char}{count} "\\"" space'))
        bounds = integer_bounds(schema) if kind == "integer" and not _BEFORE_TYPE & schema.keys() else None
        if bounds is not None:
            return str(self._add_rule(rule_name, f"{range_grammar(*bounds)} space"))
        items = schema.get("items") if isinstance(schema, dict) else None
        counted = isinstance(items, dict) and bool({"minItems", "maxItems"} & schema.keys())
        if counted and kind in (None, "array") and not _BEFORE_ITEMS & schema.keys():
            item = self.visit(items, f"{name}{'-' if name else ''}item")
            listed = _separated(item, schema.get("minItems", 0), schema.get("maxItems"))
            return str(self._add_rule(rule_name, f'"[" space {listed} "]" space'))
        return str(super().visit(schema, name))


def _escaped(c: str) -> str:
    """A character GBNF must read escaped: ``\\x`` takes two hex digits, so a character above U+00FF
    needs ``\\u`` or ``\\U`` (``\\x202F`` was a space and the text "2F")."""
    code = ord(c)
    return f"\\x{code:02X}" if code < 0x100 else f"\\u{code:04X}" if code < 0x10000 else f"\\U{code:08X}"


def _known_format(schema: Mapping[str, Any]) -> bool:
    """Whether the converter writes ``schema``'s ``format`` (and so ignores its length bounds)."""
    known = str(schema.get("format", ""))
    return re.match(r"^uuid[1-5]?$", known) is not None or f"{known}-string" in STRING_FORMAT_RULES


def _bounds(low: int, high: int | None) -> str:
    """GBNF's repetition suffix for ``low`` to ``high`` times (``None``: no upper bound); a bound past
    ``MAX_COUNT`` is left to the check when the call is read."""
    low = low if low <= MAX_COUNT else 0
    high = high if high is None or high <= MAX_COUNT else None
    if high is None:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    return f"{{{low}}}" if low == high else f"{{{low},{max(low, high)}}}"


def _separated(item: str, low: int, high: int | None) -> str:
    """``item`` ``low`` to ``high`` times, separated by commas."""
    if high == 0:
        return ""
    more = (
        ""
        if high == 1
        else f' ("," space {item}){_bounds(max(low - 1, 0), None if high is None else high - 1)}'
    )
    return f"{item}{more}" if low > 0 else f"({item}{more})?"
