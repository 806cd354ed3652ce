"""Renders the ReAct prompt from the text files in ``prompts/``: tools, context, scratchpad, steps left."""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from string import Template
from typing import Any

from explicit_react.errors import ConfigurationError, PromptWarning
from explicit_react.scratchpad import NO_CALLS

Message = dict[str, Any]
"""A chat message as ``{"role": "system" | "user" | "assistant" | "tool", "content": ...}``.

Native tool calling adds ``tool_calls`` to assistant messages and ``tool_call_id`` to tool messages."""


@cache
def load_template(name: str) -> str:
    """The text of ``prompts/<name>.txt`` (read once)."""
    return (resources.files("explicit_react") / "prompts" / f"{name}.txt").read_text(encoding="utf-8")


def render(template: str, **values: str) -> str:
    """Fill ``${name}`` placeholders in one pass; unknown ``$`` signs are left alone (what
    ``string.Template.safe_substitute`` does, with the template split into its pieces once)."""
    return "".join(
        [
            piece if name is None or name not in values else str(values[name])
            for piece, name in _pieces(template)
        ]
    )


@lru_cache(maxsize=128)
def _pieces(template: str) -> tuple[tuple[str, str | None], ...]:
    """The template as (text, placeholder name) pieces: literal text has no name (``$$`` is already
    ``$``); a placeholder keeps its own text, written back when no value is given for it."""
    pieces: list[tuple[str, str | None]] = []
    position = 0
    for match in Template.pattern.finditer(template):
        pieces.append((template[position : match.start()], None))
        name = match["named"] or match["braced"]
        if match["escaped"] is not None:
            pieces.append((Template.delimiter, None))
        else:  # a placeholder, or a lone "$" (invalid), which stays as written
            pieces.append((match.group(), name))
        position = match.end()
    pieces.append((template[position:], None))
    return tuple(piece for piece in pieces if piece[0])


@dataclass(frozen=True)
class ToolSpec:
    """What the model needs to know about a tool: its name, description and arguments."""

    name: str
    description: str
    args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """JSON-schema properties of the arguments, by name."""
    required: tuple[str, ...] = ()

    @property
    def takes_json(self) -> bool:
        """True when the tool has several arguments, so its Action Input is a JSON object."""
        return len(self.args) > 1

    def describe(self) -> str:
        """One line (two for JSON tools) for the tool list in the prompt."""
        line = f"- {self.name}: {' '.join(self.description.split())}"
        if not self.takes_json:
            return line
        return f"{line}\n  Action Input: {{{', '.join(map(self.field, self.args))}}}"

    def field(self, name: str) -> str:
        """Argument ``name`` as the prompt shows it: ``"n": integer``, ``(optional)`` when not required."""
        return f'"{name}": {type_name(self.args[name])}{"" if name in self.required else " (optional)"}'


def type_name(schema: Mapping[str, Any]) -> str:
    """An argument's type as the prompt shows it: ``integer``, ``string|integer``, else ``value``."""
    return "|".join(str(t) for t in schema_types(schema) or [] if t not in (None, "null")) or "value"


def schema_types(schema: Mapping[str, Any]) -> list[Any] | None:
    """The JSON types an argument's schema allows (``anyOf`` options too); ``None`` when untyped."""
    if "type" in schema:
        kind = schema["type"]
        return list(kind) if isinstance(kind, list) else [kind]
    if "anyOf" in schema:
        return [t for option in schema["anyOf"] for t in (schema_types(option) or [None])]
    return None if not ({"$ref", "allOf", "oneOf", "enum", "const"} & set(schema)) else [None]


SYSTEM_PLACEHOLDERS = ("tools", "tool_names", "format")
"""What a custom system prompt may use: the tool list with descriptions, the tool names, the reply format."""
_LANGCHAIN_PLACEHOLDER = re.compile(r"(?<![{$])\{([A-Za-z_]\w*)\}(?!\})")
_BRACED = re.compile(r"(?<!\$)(?:\$\$)*\$\{([A-Za-z_]\w*)\}")
_FILLED_ELSEWHERE = {
    "input": "the question",
    "question": "the question",
    "agent_scratchpad": "the scratchpad",
    "chat_history": "the context",
    "context": "the context",
}


def check_system_template(template: str) -> str:
    """A custom system prompt made ready to render, or a ``ConfigurationError`` saying what is wrong.

    LangChain's ``{tools}`` style is accepted for the three placeholders (then ``{{``/``}}`` are
    literal braces, as in LangChain); any other placeholder, in either style, is an error. A prompt
    that does not show the tools or the reply format gets a ``PromptWarning``: the model would not
    know what it can call, or how to write a call the parser reads.
    """
    langchain_style = _LANGCHAIN_PLACEHOLDER.findall(template)
    for name in langchain_style:
        if name not in SYSTEM_PLACEHOLDERS:
            raise ConfigurationError(_unknown_placeholder("{" + name + "}", name))
    if langchain_style:
        template = _LANGCHAIN_PLACEHOLDER.sub(r"${\1}", template).replace("{{", "{").replace("}}", "}")
    for name in _BRACED.findall(template):
        if name not in SYSTEM_PLACEHOLDERS:
            raise ConfigurationError(_unknown_placeholder("${" + name + "}", name))
    used = {m["named"] or m["braced"] for m in Template.pattern.finditer(template)} - {None}
    if "tools" not in used:
        shown = "only their names (${tool_names})" if "tool_names" in used else "nothing about them"
        warnings.warn(
            f"the custom system prompt has no ${{tools}} placeholder: the model is told {shown}, "
            "not what each tool does or takes",
            PromptWarning,
            stacklevel=3,
        )
    if "format" not in used and "Action Input" not in template:
        warnings.warn(
            "the custom system prompt has no ${format} placeholder and does not spell out the reply "
            "format (Thought / Action / Action Input / Final Answer): the parser may not read the replies",
            PromptWarning,
            stacklevel=3,
        )
    return template


def _unknown_placeholder(written: str, name: str) -> str:
    where = (
        f" The agent puts {_FILLED_ELSEWHERE[name]} in the user message itself, after the system prompt."
        if name in _FILLED_ELSEWHERE
        else " Write $$ for a literal $ sign, {{ }} for literal braces in LangChain style."
    )
    allowed = ", ".join("${" + p + "}" for p in SYSTEM_PLACEHOLDERS)
    return f"prompt: unknown placeholder {written}; a system prompt may use {allowed} (or {{tools}} style).{where}"


class ReActPrompt:
    """The prompt, read from text files and rendered in one pass per message.

    ``system`` replaces the system template; it may use ``${tools}``, ``${tool_names}`` and ``${format}``
    (or LangChain's ``{tools}`` style); see ``check_system_template`` for what is refused or warned about.
    A custom one is also the system message of the tool-free call at a limit (``final_system``).
    """

    def __init__(self, system: str | None = None) -> None:
        default = load_template("system")
        if system is not None and system.strip() != default.strip():
            system = check_system_template(system)
        self.system_template = system if system is not None else default
        self.custom_system = self.system_template.strip() != default.strip()
        """True when ``system`` differs from ``prompts/system.txt``."""
        self._last_system: tuple[tuple[Any, ...], tuple[ToolSpec, ...], str] | None = None

    def system(self, tools: Sequence[ToolSpec]) -> str:
        """The system message: instructions, the tool list and the reply format.

        The same at every step of a run: the last one is kept, for the same (frozen) tool specs."""
        key = (self.system_template, *map(id, tools))
        last = self._last_system
        if last is not None and last[0] == key:
            return last[2]
        listing = "\n".join(t.describe() for t in tools) or "(no tools: answer from what you know)"
        text = _system(self.system_template, listing, ", ".join(t.name for t in tools))
        self._last_system = (key, tuple(tools), text)  # the specs are held, so their ids stay theirs
        return text

    def messages(
        self,
        question: str,
        tools: Sequence[ToolSpec],
        scratchpad: str = "",
        context: str = "",
        steps_left: int | None = None,
        *,
        continued: bool = False,
    ) -> list[Message]:
        """The messages for the next turn.

        ``continued``: the steps so far are the assistant's own reply, which the model goes on
        writing (a model that continues a last assistant message, such as a local ``ChatLlama``);
        the user message then holds the question alone, the same at every step."""
        user = render(
            load_template("question"),
            context=_context_block(context),
            question=question.strip(),
            scratchpad="" if continued else scratchpad,
            steps_left=NEXT_REPLY if continued else _steps_left_line(steps_left),
        )
        messages = [
            {"role": "system", "content": self.system(tools)},
            {"role": "user", "content": user.strip()},
        ]
        if continued and scratchpad:
            messages.append({"role": "assistant", "content": scratchpad.rstrip() + "\n"})
        return messages

    def final_system(self, tools: Sequence[ToolSpec]) -> str:
        """The system message of the tool-free call at a limit: ``prompts/final_system.txt`` (the
        answer needs no tool list, format or worked example), or a custom system prompt as it is,
        since it may hold instructions for the answer. Override it to change that message."""
        return self.system(tools) if self.custom_system else load_template("final_system").strip()

    def final_answer_messages(
        self, question: str, tools: Sequence[ToolSpec], findings: str = "", context: str = ""
    ) -> list[Message]:
        """The messages for the last, tool-free call at a limit: the question and ``findings``, what
        the tool calls returned (``scratchpad.render_findings``)."""
        user = render(
            load_template("final_answer"),
            context=_context_block(context),
            question=question.strip(),
            findings=findings.strip() or NO_CALLS,
        )
        return [
            {"role": "system", "content": self.final_system(tools)},
            {"role": "user", "content": user.strip()},
        ]


@lru_cache(maxsize=64)
def _system(template: str, listing: str, names: str) -> str:
    """The rendered system message: the same at every step of a run, so it is rendered once."""
    return render(template, tools=listing, tool_names=names, format=load_template("format").strip())


def _context_block(context: str) -> str:
    context = context.strip()
    return f"Context:\n{context}\n\n" if context else ""


# Not "Continue with your Thought.": small models (Qwen2.5 1.5B) took that literally and ended their
# turn after the Thought line, with no Action, turn after turn (bench/eval, docs/benchmarks.md).
NEXT_REPLY = "Reply with a Thought, then an Action with its Action Input, or a Final Answer."


def _steps_left_line(steps_left: int | None) -> str:
    if steps_left is None:
        return NEXT_REPLY
    if steps_left <= 1:
        return "This is your last step: give your Final Answer unless one more Action is essential."
    return f"You have {steps_left} steps left. {NEXT_REPLY}"
