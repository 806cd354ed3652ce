"""Native function calling for ``ChatLlama``: the tools in the prompt, one call held to valid JSON by
a grammar, and the reply read back as ``AIMessage.tool_calls``.

The format is the one Qwen2.5 was trained on (Hermes style): the tools as JSON lines inside
``<tools></tools>`` in the system message, a call as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``,
a result as ``<tool_response>...</tool_response>`` in a user turn. When the model's own chat template
renders tools (Qwen2.5's does), llama.cpp renders the tools and the calls through it; otherwise
(Gemma 3's template knows no tools) the same text is written into the messages here
(``prompts/llama_tools.txt``).

The grammar lets a reply be exactly one call, whose name is a bound tool's and whose arguments
follow that tool's JSON schema, or (with ``tool_choice="auto"``) plain text that holds no
``<tool_call>``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall, invalid_tool_call, tool_call

from explicit_react.errors import ConfigurationError
from explicit_react.llm import message_text
from explicit_react.prompt import load_template, render

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)
_NAME = re.compile(r'^\s*\{\s*"name"\s*:\s*"([^"\\]+)"')  # the name of a call cut off later
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}

# With tool_choice="auto" a reply is text, a call, or text and then a call (the text is the
# message's content). The text holds no "<", so a call cannot hide in it, and does not start with
# "{", "[" or white space, so a call cannot be written as bare JSON (Qwen2.5 1.5B copied its
# template's example call without the tags, and wrote "<calculator .../>"). The call's JSON rule is
# appended below.
_REPLY_RULES = r"""call-block ::= "<tool_call>" [ \n]* call-json [ \n]* "</tool_call>"
prose ::= [^<{[ \t\n] [^<]*
"""


@dataclass(frozen=True)
class ToolRequest:
    """The tools bound to one call (in OpenAI's format) and what the reply may be: ``"auto"`` (a call
    or plain text), ``"required"`` (a call to any of them) or one tool's name (a call to it)."""

    tools: tuple[Mapping[str, Any], ...]
    choice: str

    @classmethod
    def pop(cls, kwargs: dict[str, Any]) -> ToolRequest | None:
        """Take ``tools`` and ``tool_choice`` out of a call's keyword arguments; ``None`` when no tool
        may be called (no tools, or ``tool_choice="none"``)."""
        tools, choice = kwargs.pop("tools", None), kwargs.pop("tool_choice", None)
        if not tools:
            return None
        names = [t["function"]["name"] for t in tools]
        if isinstance(choice, dict):  # {"type": "function", "function": {"name": ...}}
            choice = choice.get("function", {}).get("name")
        if choice in (None, "auto"):
            choice = "auto"
        elif choice in ("any", "required", True):
            choice = "required"
        elif choice in ("none", False):
            return None
        elif choice not in names:
            raise ValueError(f"tool_choice {choice!r} is not a bound tool; the tools are {names}")
        return cls(tuple(tools), str(choice))

    @property
    def callable(self) -> list[Mapping[str, Any]]:
        """The tools the reply may call."""
        if self.choice in ("auto", "required"):
            return list(self.tools)
        return [t for t in self.tools if t["function"]["name"] == self.choice]

    def grammar(self) -> str:
        """The GBNF grammar a reply is held to (see the module docstring).

        Raises ``ConfigurationError`` naming the tools when llama-cpp-python cannot turn their JSON
        schemas into a grammar (``ChatLlama.bind_tools`` builds it, so this happens there)."""
        alternatives: list[dict[str, Any]] = []
        definitions: dict[str, Any] = {}
        for index, spec in enumerate(self.callable):
            function = spec["function"]
            parameters = function.get("parameters") or {"type": "object", "properties": {}}
            alternatives.append(
                {
                    "type": "object",
                    "properties": {
                        "name": {"const": function["name"]},
                        "arguments": _arguments_schema(
                            function["name"], parameters, f"tool{index}", definitions
                        ),
                    },
                    "required": ["name", "arguments"],
                }
            )
        schema = {"oneOf": alternatives, **({"$defs": definitions} if definitions else {})}
        try:
            rules = _call_json_rules(json.dumps(schema))
        except (AssertionError, AttributeError, KeyError, TypeError, ValueError) as error:
            names = ", ".join(t["function"]["name"] for t in self.callable)
            raise ConfigurationError(
                f"llama.cpp cannot hold a call to the tools {names} to their JSON schema "
                f"({type(error).__name__}: {error}); simplify the arguments' schema"
            ) from error
        root = "prose call-block? | call-block" if self.choice == "auto" else "call-block"
        return f"root ::= {root}\n{_REPLY_RULES}{rules}"


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


def _arguments_schema(
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


@lru_cache(maxsize=64)
def _call_json_rules(schema: str) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    rules = json_schema_to_gbnf(schema, prop_order=["name", "arguments"])
    return re.sub(r"^root ::=", "call-json ::=", rules, flags=re.M)


@lru_cache(maxsize=64)
def compiled_grammar(gbnf: str) -> Any:
    """``gbnf`` as a ``llama_cpp.LlamaGrammar``, parsed once per distinct text."""
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_string(gbnf, verbose=False)


def template_renders_tools(client: Any) -> bool:
    """True when ``client`` (a ``llama_cpp.Llama``) formats chats with the GGUF file's own template and
    that template renders tools and tool calls (Qwen2.5's does; Gemma 3's and llama.cpp's named
    formats do not)."""
    if getattr(client, "chat_handler", None) is not None:
        return False
    if getattr(client, "chat_format", None) != "chat_template.default":
        return False
    template = str((getattr(client, "metadata", None) or {}).get("tokenizer.chat_template", ""))
    return "tools" in template and "tool_call" in template


def llama_messages(messages: Sequence[BaseMessage], native: bool) -> list[dict[str, Any]]:
    """``messages`` for ``create_chat_completion``. ``native``: assistant tool calls and tool results
    as structured fields for a template that renders them; otherwise written out as text."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role, text = _ROLES.get(m.type, "user"), message_text(m.content)
        calls = m.tool_calls if isinstance(m, AIMessage) else []
        if native:
            entry: dict[str, Any] = {"role": role, "content": text}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.get("id"),
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["args"]},
                    }
                    for c in calls
                ]
            if isinstance(m, ToolMessage):
                entry["tool_call_id"] = m.tool_call_id
            out.append(entry)
        elif isinstance(m, ToolMessage):
            response = f"<tool_response>\n{text}\n</tool_response>"
            if out and out[-1].get(
                "tool_results"
            ):  # results of one turn share a user turn, as in Qwen's template
                out[-1]["content"] += f"\n{response}"
            else:
                out.append({"role": "user", "content": response, "tool_results": True})
        elif calls:
            written = [text.strip()] if text.strip() else []
            written += [f"{CALL_OPEN}\n{_call_json(c['name'], c['args'])}\n{CALL_CLOSE}" for c in calls]
            out.append({"role": role, "content": "\n".join(written)})
        else:
            out.append({"role": role, "content": text})
    for entry in out:
        entry.pop("tool_results", None)
    return out


def with_tools_text(messages: list[dict[str, Any]], request: ToolRequest) -> list[dict[str, Any]]:
    """``messages`` with the tools described in the system message (after its own text, as
    Qwen2.5's template does), for a template that does not render tools."""
    listing = "\n".join(json.dumps(t, ensure_ascii=False) for t in request.tools)
    section = render(load_template("llama_tools"), tools=listing).strip()
    if messages and messages[0]["role"] == "system":
        first = messages[0]
        return [{**first, "content": f"{first['content']}\n\n{section}"}, *messages[1:]]
    return [{"role": "system", "content": section}, *messages]


def read_reply(text: str) -> tuple[str, list[ToolCall], list[InvalidToolCall]]:
    """The text outside ``<tool_call>`` blocks, the well-formed calls, and the malformed ones (not
    JSON, no name, arguments that are not an object, or a block cut off at the length limit).

    A malformed call's ``args`` is its block as the model wrote it, from ``<tool_call>`` on. That
    text cannot be read as JSON, even by LangChain's partial-JSON parser, which closes what a cut-off
    text left open: joining streamed chunks re-reads every call from its text, and would turn a call
    cut off at ``max_tokens`` into a valid call with partial arguments (see ``ChatLlama._stream``)."""
    calls: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for index, match in enumerate(_CALL.finditer(text)):
        raw, written = match.group(1).strip(), match.group(0).strip()
        call_id = "call_" + hashlib.sha1(f"{index}:{raw}".encode()).hexdigest()[:16]
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            name = named.group(1) if (named := _NAME.match(raw)) else None
            invalid.append(invalid_tool_call(name=name, args=written, id=call_id, error="not a JSON call"))
        elif not isinstance(data.get("arguments", {}), dict):
            error = "arguments are not a JSON object"
            invalid.append(invalid_tool_call(name=data["name"], args=written, id=call_id, error=error))
        else:
            calls.append(tool_call(name=data["name"], args=data.get("arguments", {}), id=call_id))
    return _CALL.sub("", text).strip(), calls, invalid


def _call_json(name: str, args: Mapping[str, Any]) -> str:
    return json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
