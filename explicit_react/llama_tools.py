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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall, invalid_tool_call, tool_call

from explicit_react.errors import ConfigurationError
from explicit_react.llama_call_check import schema_problem
from explicit_react.llama_grammar_check import checked_grammar
from explicit_react.llama_grammar_check import compiled_grammar as compiled_grammar
from explicit_react.llama_schema import arguments_schema, call_json_rules
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
        kwargs_choice = choice
        if not tools:
            return None
        names = [t["function"]["name"] for t in tools]
        if isinstance(choice, dict):  # OpenAI's {"type": "function", "function": {"name": ...}}, its
            # Responses API's {"type": "function", "name": ...}, Anthropic's {"type": "tool", "name": ...}
            # and {"type": "any"}, or {"type": "auto"}
            function = choice.get("function")
            named = function.get("name") if isinstance(function, dict) else choice.get("name")
            choice = named if named is not None else choice.get("type")
            if choice in ("function", "tool"):
                raise ValueError(f"tool_choice {kwargs_choice!r} names no tool; the tools are {names}")
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
        arguments, definitions = self._schemas
        alternatives = [
            {
                "type": "object",
                "properties": {"name": {"const": name}, "arguments": schema},
                "required": ["name", "arguments"],
            }
            for name, schema in arguments
        ]
        schema = {"oneOf": alternatives, **({"$defs": definitions} if definitions else {})}
        try:
            rules = call_json_rules(schema)
        except (AssertionError, AttributeError, KeyError, TypeError, ValueError) as error:
            names = ", ".join(t["function"]["name"] for t in self.callable)
            raise ConfigurationError(
                f"llama.cpp cannot hold a call to the tools {names} to their JSON schema "
                f"({type(error).__name__}: {error}); simplify the arguments' schema"
            ) from error
        root = "prose call-block? | call-block" if self.choice == "auto" else "call-block"
        return f"root ::= {root}\n{_REPLY_RULES}{rules}"

    def check_grammar(self, vocab: Any = None) -> None:
        """Raise ``ConfigurationError`` when llama.cpp rejects the grammar, naming the first tool whose
        own call grammar it rejects (``vocab``: the model's, see ``llama_grammar_check``)."""
        try:
            checked_grammar(self.grammar(), "the tools' call grammar", vocab)
        except ConfigurationError:
            for spec in self.callable:
                name = spec["function"]["name"]
                checked_grammar(
                    ToolRequest(self.tools, name).grammar(), f"the call grammar of the tool {name!r}", vocab
                )
            raise

    def argument_problem(self, name: str, arguments: Any) -> str | None:
        """Why ``arguments`` break the JSON schema of the tool ``name``; ``None`` when they follow it,
        or when ``name`` is no tool the reply may call (the executor reports an unknown tool)."""
        try:
            schemas, definitions = self._schemas
        except ConfigurationError:  # a schema no grammar was built from (the model has its own grammar)
            return None
        schema = dict(schemas).get(name)
        return None if schema is None else schema_problem(arguments, schema, definitions)

    @cached_property
    def _schemas(self) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
        """Each callable tool's name and arguments schema (``llama_schema.arguments_schema``), and the
        definitions their ``$ref``s name."""
        arguments: list[tuple[str, Any]] = []
        definitions: dict[str, Any] = {}
        for index, spec in enumerate(self.callable):
            function = spec["function"]
            parameters = function.get("parameters") or {"type": "object", "properties": {}}
            schema = arguments_schema(function["name"], parameters, f"tool{index}", definitions)
            arguments.append((function["name"], schema))
        return arguments, definitions


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


def read_reply(
    text: str, check: Callable[[str, Any], str | None] | None = None
) -> tuple[str, list[ToolCall], list[InvalidToolCall]]:
    """The text outside ``<tool_call>`` blocks, the well-formed calls, and the malformed ones (not
    JSON, no name, arguments that are not an object, or a block cut off at the length limit), and
    with ``check`` (``ToolRequest.argument_problem``) the calls whose arguments break their schema.

    A malformed call's ``args`` is its block as the model wrote it, from ``<tool_call>`` on. That
    text cannot be read as JSON, even by LangChain's partial-JSON parser, which closes what a cut-off
    text left open: joining streamed chunks re-reads every call from its text, and would turn a call
    cut off at ``max_tokens`` into a valid call with partial arguments (see ``ChatLlama._stream``)."""
    calls: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    blocks = _call_blocks(text)
    for index, (start, end, inside) in enumerate(blocks):
        raw, written = inside.strip(), text[start:end].strip()
        call_id = "call_" + hashlib.sha1(f"{index}:{raw}".encode()).hexdigest()[:16]
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            name = named.group(1) if (named := _NAME.match(raw)) else None
            cut = not written.endswith(CALL_CLOSE)  # the reply ended inside the block: max_tokens
            error = f"the call was cut off before its {CALL_CLOSE}" if cut else "not a JSON call"
            invalid.append(invalid_tool_call(name=name, args=written, id=call_id, error=error))
        elif not isinstance(data.get("arguments", {}), dict):
            error = "arguments are not a JSON object"
            invalid.append(invalid_tool_call(name=data["name"], args=written, id=call_id, error=error))
        elif check is not None and (problem := check(data["name"], data.get("arguments", {}))):
            error = f"the arguments do not follow the tool's schema ({problem})"
            invalid.append(invalid_tool_call(name=data["name"], args=written, id=call_id, error=error))
        else:
            calls.append(tool_call(name=data["name"], args=data.get("arguments", {}), id=call_id))
    outside, last = [], 0
    for start, end, _ in blocks:
        outside.append(text[last:start])
        last = end
    return "".join([*outside, text[last:]]).strip(), calls, invalid


_DECODER = json.JSONDecoder()
_CLOSE_AFTER = re.compile(r"\s*+(?:</tool_call>|\Z)")


def _call_blocks(text: str) -> list[tuple[int, int, str]]:
    """Each ``<tool_call>`` block: where it starts and ends, and the text inside it. A block ends at
    the ``</tool_call>`` after the JSON value it holds, so one written inside a string of the call
    ("wrap it in </tool_call>") is the argument's; a block that holds no JSON value ends at the
    first ``</tool_call>`` (or the end of the text: a call cut off at the length limit)."""
    blocks: list[tuple[int, int, str]] = []
    for match in _CALL.finditer(text):  # the non-greedy reading; a JSON value may reach past it
        if blocks and match.start() < blocks[-1][1]:
            continue  # inside the previous block's JSON value
        body = match.start(1)
        value_start = len(text) - len(text[body:].lstrip())
        try:
            _, value_end = _DECODER.raw_decode(text, value_start)
        except ValueError:
            blocks.append((match.start(), match.end(), match.group(1)))
            continue
        close = _CLOSE_AFTER.match(text, value_end)
        if close is None:  # more text after the value: the block is as the non-greedy reading has it
            blocks.append((match.start(), match.end(), match.group(1)))
        else:
            blocks.append((match.start(), close.end(), text[body:value_end]))
    return blocks


def _call_json(name: str, args: Mapping[str, Any]) -> str:
    return json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
