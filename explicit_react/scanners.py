"""Linear-time scanners of reply text: code fences, leaked special tokens, the tool name and call
syntax of an Action line, a tool input.

Each is written so that no character is looked at more than a bounded number of times: a
fence-and-back-reference regex backtracks cubically on a run of backticks, and a lazy name that
competes with ``\\s*`` for a run of spaces is quadratic (issue 21).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from explicit_react.json_text import JSON_START, json_value
from explicit_react.types import ToolInput

# Fences are found by scanning (``fence_spans``, ``fenced_body``): a fence-and-back-reference regex
# backtracks cubically on a run of backticks.
_BACKTICK_RUN = re.compile(r"`{3,}")
_BACKTICKS = re.compile(r"`*")
_LINE = re.compile(r"[^\n]+")
_INFO_STRING = re.compile(r"[\w+.-]*[ \t]*\n?")
_MARKDOWN_NOISE = re.compile(r"\A[*_]+\s*")
_EXPRESSION_GOES_ON = re.compile(
    r"[ \t]*+(?:\.[ \t]*[A-Za-z_]|\[|(?:[-+*/%@&|^<>]|[=!<>]=|//|\*\*)[ \t]*[\d\[({\"'.]"
    r"|,[ \t]*+[\d\[{\"'A-Za-z_-])"
    r"|[ \t]++[A-Za-z_]"
)  # a method, an index, or an operator before a number or a literal; not "(", "-" and a word: prose;
# a comma and another value ("[1, 2], [3, 4]"), or words ('{"q": "x"} and more'): the text goes on
_JSON_IN_CALL = re.compile(r"\A[A-Za-z_][\w.]*+\s*+\((?P<json>\s*\{.*\})\s*\)\s*\Z", re.S)
# The name keeps the spaces before the parenthesis (``tool_name`` strips them): a lazy name that
# competes with ``\s*`` for them is quadratic on a run of spaces.
CALL = re.compile(r"\A(?P<name>[^()\[\]\n]++)\s*+\((?P<args>.*)\)\Z", re.S)
BRACKETS = re.compile(r"\A(?P<name>[^()\[\]\n]++)\s*+\[(?P<args>.*)\]\Z", re.S)
# The input written on the Action line: ``Action: knowledge_search, "price of X"``,
# ``Action: calculator: 2 + 2``, ``Action: mcp:search, weather`` (a name may hold a colon), and
# ``Action: knowledge_search:search query: "x"`` (a bare colon splits only when the rest has a
# space, so ``mcp:search`` alone stays one name). A short label (``input:``, ``query=``) is dropped
# when one quoted value (to the end of the line; its closing quote may have been trimmed with the
# name's trailing noise) or a JSON value follows it; before several (``query="x", max_results=5``) it
# is kept, for ``tool_input.fit_input`` to read them all as keyword arguments, as it reads them on the
# Action Input line. Possessive throughout (the name runs up to the first ", " or ": "), so a long
# name or run of spaces is read once, not once per shorter name.
_LABEL = (
    r"[A-Za-z_][\w ]{0,30}+\s*+[:=]\s*+"
    r"(?=\"(?:[^\"\\]|\\.)*+\"?+\s*+\Z|'(?:[^'\\]|\\.)*+'?+\s*+\Z|\{)"
)
MAX_CALL_SYNTAX = 2_000
"""Call arguments longer than this outside their string literals are taken as text, not parsed:
``ast.parse`` time grows with the number of arguments, faster than linearly (25,000 keyword
arguments, 100 KB, took 0.3 s), and no tool takes hundreds of arguments."""
# A Python string literal, also unterminated (to the end of its line, or of the text for a triple
# quote); possessive, so each character is read once.
_STRING_LITERAL = re.compile(
    r'"""(?:[^"\\]++|\\.|"(?!""))*+(?:"""|\Z)' + r"|'''(?:[^'\\]++|\\.|'(?!''))*+(?:'''|\Z)"
    r'|"(?:[^"\\\n]++|\\.)*+"?' + r"|'(?:[^'\\\n]++|\\.)*+'?",
    re.S,
)
_INLINE_INPUTS = (  # tried in order
    re.compile(r"\A(?P<name>[A-Za-z_][\w.-]*+):" + _LABEL + r"(?P<rest>\S.*)\Z"),
    re.compile(
        r"\A(?P<name>[A-Za-z_](?:[\w.-]++|:(?!\s))*+)(?:\s*+,\s*+|:\s++)(?:" + _LABEL + r")?(?P<rest>\S.*)\Z"
    ),
    re.compile(r"\A(?P<name>[A-Za-z_][\w.-]*+):(?=\S*+\s)(?P<rest>\S.*)\Z"),
)
# Stripped from a tool name: these before it, and these plus punctuation after it (matched on the
# reversed name: a ``[...]+\Z`` search rescans a long run from each of its characters).
_NAME_NOISE_BEFORE = re.compile(r"[\s`'\"*_]+")
_NAME_NOISE_AFTER_REVERSED = re.compile(r"[\s`'\"*_.,;:!]+")


def mask_fences(text: str) -> str:
    """The text with every fenced span blanked out (newlines kept, so positions and lines stay)."""
    if "```" not in text:
        return text
    pieces = []
    position = 0
    for start, end in fence_spans(text):
        pieces += [text[position:start], _LINE.sub(_blank, text[start:end])]
        position = end
    return "".join(pieces) + text[position:]


def _blank(line: re.Match[str]) -> str:
    return " " * (line.end() - line.start())


def fence_spans(text: str) -> list[tuple[int, int]]:
    """The spans ``(?P<fence>`{3,}).*?(?P=fence)`` would match left to right (re.S), in linear time.

    At a run of ``length`` backticks the regex tries fences from the longest down: a fence of k
    closes inside the same run when 2k <= length, else at the first later run of k or more. So the
    fence is the longest k <= length with 2k <= length or k <= the longest later run.
    """
    runs = [(run.start(), run.end()) for run in _BACKTICK_RUN.finditer(text)]
    longest_after = [0] * (len(runs) + 1)  # longest_after[i]: the longest of runs[i:]
    for index in range(len(runs) - 1, -1, -1):
        longest_after[index] = max(longest_after[index + 1], runs[index][1] - runs[index][0])
    spans = []
    index = 0
    position = runs[0][0] if runs else 0
    while index < len(runs):
        length = runs[index][1] - position
        fence = min(length, max(length // 2, longest_after[index + 1]))
        if fence < 3:  # no fence here, nor later in this run: fences only get shorter
            index += 1
            position = runs[index][0] if index < len(runs) else 0
        elif 2 * fence <= length:
            spans.append((position, position + 2 * fence))
            position += 2 * fence
        else:
            closing = next(
                later for later in range(index + 1, len(runs)) if runs[later][1] - runs[later][0] >= fence
            )
            spans.append((position, runs[closing][0] + fence))
            index, position = closing, runs[closing][0] + fence
    return spans


def fenced_body(text: str) -> str | None:
    r"""The body when the whole text is one fenced block (what a fence-and-back-reference regex
    ``\A(`{3,})[\w+.-]*[ \t]*\n?(.*?)\n?[ \t]*\1\Z`` captures), else ``None``; in linear time."""
    if not text.startswith("```") or not text.endswith("```"):
        return None
    opening, closing = _backticks_at_start(text), _backticks_at_start(text[::-1])
    fence = min(opening, closing, len(text) // 2)  # the longest fence that opens and closes the text
    if fence < 3:
        return None
    inner = text[fence : len(text) - fence]
    info = _INFO_STRING.match(inner)
    assert info is not None  # it matches the empty string
    body = inner[info.end() :].rstrip(" \t")
    return body[:-1] if body.endswith("\n") else body


def _backticks_at_start(text: str) -> int:
    """The length of the run of backticks the text starts with (a regex reads it 10x faster than lstrip)."""
    run = _BACKTICKS.match(text)
    return run.end() if run else 0


# -- Leaked special tokens ----------------------------------------------------------------------------
# Each pattern starts with "<", so the regex engine skips to the next "<" at C speed; that a token is
# written between quotes is checked in Python (a lookbehind in the pattern would be tried everywhere).
_TOKEN = r"<\|[^|<>\s]{1,64}\|>"
END_TOKEN = (  # what ends a turn in local models' chat templates (<|end|> Phi, </s> Llama 2 and Mistral)
    r"<(?:\|(?:im_end|eot_id|eom_id|endoftext|end_of_text|end|return|END_OF_TURN_TOKEN)\|>"
    r"|/s>|end_of_turn>|eos>|｜end▁of▁sentence｜>)"
)
_SPECIAL_TOKEN = re.compile(_TOKEN)
_END_OF_TURN = re.compile(END_TOKEN)
_NOTHING_WRITTEN = re.compile(rf"(?:\s++|{_TOKEN}|{END_TOKEN}|<s>)*+")


def drop_special_tokens(text: str) -> str:
    """The text without the ``<|...|>`` tokens of a chat template the model leaked (``<|im_start|>``),
    keeping those it names in quotes."""
    return _SPECIAL_TOKEN.sub(_kept_if_named, text) if "<|" in text else text


def _kept_if_named(token: re.Match[str]) -> str:
    return token[0] if _named(token) else ""


def _named(token: re.Match[str]) -> bool:
    """Whether a token is written between quotes or backticks: in ``s.replace('<|im_end|>', '')`` the
    code names the token, the model did not leak it."""
    text, start, end = token.string, token.start(), token.end()
    return start > 0 and end < len(text) and text[start - 1] in "\"'`" and text[end] in "\"'`"


def turn_end(text: str) -> int:
    """Where the model's turn ends: at the first end-of-turn token it leaked, else at the end.

    With the wrong chat template a local model writes its end token as text and goes on to invent
    the next turn (``<|im_start|>user ...``), which is no part of its reply. A token before any text
    ends nothing, and a ``</s>`` after an ``<s>`` on its line closes HTML strikethrough.
    """
    written = _NOTHING_WRITTEN.match(text)
    assert written is not None  # it matches the empty string
    searched = written.end()  # each stretch of text is searched for an <s> once
    for token in _END_OF_TURN.finditer(text, written.end()):
        line = max(text.rfind("\n", searched, token.start()) + 1, searched)
        if _named(token) or (token[0] == "</s>" and "<s>" in text[line : token.start()]):
            searched = token.end()
            continue
        return token.start()
    return len(text)


def tool_and_arguments(
    value: str, real: frozenset[str] = frozenset()
) -> tuple[str, ToolInput | None, ToolInput | None]:
    """The tool name on an Action line, the arguments of call or bracket syntax, and an input
    written after the name (``None`` for each that is not there). ``real``: the lowercase names of
    the real tools, whose calls may hold expressions (``calculator(2 + 3)``)."""
    value = tool_name(value.strip())
    if value.endswith(")") and (call := CALL.match(value)):
        name = tool_name(call["name"])
        return name, call_arguments(call["args"], expressions=name.lower() in real), None
    if value.endswith("]") and (brackets := BRACKETS.match(value)):
        args = brackets["args"]
        return tool_name(brackets["name"]), read_tool_input(args) if args.strip() else None, None
    first_line = next((line for line in value.splitlines() if line.strip()), "").strip()
    for pattern in _INLINE_INPUTS if ":" in first_line or "," in first_line else ():
        if inline := pattern.match(first_line):
            return inline["name"], None, read_tool_input(inline["rest"])
    return tool_name(first_line), None, None


def may_be_call(value: str) -> bool:
    """Whether an Action line's value can hold call or bracket syntax: past trailing noise, it ends
    with ``)`` or ``]`` (a cheap test that spares ``tool_and_arguments`` for each of many Actions)."""
    return tool_name(value.strip()).endswith((")", "]"))


def tool_name(name: str) -> str:
    """The name without quotes, backticks, bold or spaces around it, nor punctuation after it."""
    before = _NAME_NOISE_BEFORE.match(name)
    start = before.end() if before else 0
    after = _NAME_NOISE_AFTER_REVERSED.match(name[::-1])
    end = len(name) - after.end() if after else len(name)
    return name[start : max(start, end)]


def call_arguments(args: str, *, expressions: bool = False) -> ToolInput | None:
    """Arguments of ``tool(query="x")``, ``tool("x")``, ``tool({...})`` or ``tool(6, 7)`` (a list, in
    order); literals are read as Python literals, never run as code. Arguments with more than
    ``MAX_CALL_SYNTAX`` characters outside their string literals are the call's inside as written.

    With ``expressions`` (the call names a real tool), an argument that is not a literal is its text
    (``calculator(2 + 3)``, ``calculator(expression=2*3)``), and arguments that are not all literals or
    not Python at all (``calculator(1,595 + 663)``, ``search(capital of France)``) are the call's inside
    as written. Without, those are ``None``: ``print(df.shape)`` is code written where a tool's name
    belongs, and the model is told so.
    """
    args = args.strip()
    if not args:
        return None
    if JSON_START.match(args):
        return json_value(args)
    if len(args) > MAX_CALL_SYNTAX and len(_STRING_LITERAL.sub("", args)) > MAX_CALL_SYNTAX:
        return args
    source = f"f({args})"
    try:
        call = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _written_arguments(args) if expressions else None
    if not isinstance(call, ast.Call):  # "f(1) + (2)": the parentheses were not one call's
        return None
    text = source if expressions else None
    if call.keywords and not call.args and all(keyword.arg for keyword in call.keywords):
        values = {str(keyword.arg): _literal_or_text(keyword.value, text) for keyword in call.keywords}
        return None if _NOT_LITERAL in values.values() else values
    if len(call.args) == 1 and not call.keywords:
        value = _literal_or_text(call.args[0], text)
        if value is _NOT_LITERAL:
            return None
        return value if isinstance(value, (str, dict, list)) else str(value)
    if call.args and not call.keywords:  # multiply(6, 7): the executor maps them in order
        positional = [_literal_or_text(arg, None) for arg in call.args]
        if _NOT_LITERAL not in positional:
            return positional
        return args if expressions else None
    return None


_NOT_LITERAL = object()
_KEYWORD = re.compile(r"\A(?P<name>[A-Za-z_]\w*+)\s*+=\s*+(?P<value>[^=].*)\Z", re.S)


def _written_arguments(args: str) -> ToolInput | None:
    """Arguments that are not Python, as written: ``capital of France``, or ``{"query": "capital of
    France"}`` for ``query=capital of France``; ``None`` when the parentheses do not pair up (``Paris),
    then calculator(2+3``: two calls on one line, not one call's arguments)."""
    depth = 0
    for char in args:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return None
    if depth:
        return None
    keyword = _KEYWORD.match(args)
    return {keyword["name"]: keyword["value"].strip()} if keyword else args


def _literal_or_text(node: ast.expr, source: str | None) -> Any:
    """The literal ``node`` holds, as JSON holds it (``_json_form``); else its text in ``source``, or
    ``_NOT_LITERAL`` without one."""
    try:
        value = _json_form(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = _NOT_LITERAL
    if value is _NOT_LITERAL and source is not None:
        return ast.get_source_segment(source, node)
    return value


def _json_form(value: Any) -> Any:
    """A Python literal as a tool's JSON arguments can hold it: bytes as text (``b'Paris'`` is what
    a model means by ``'Paris'``), a tuple as a list; ``_NOT_LITERAL`` for what JSON has no form of
    (a set, whose order is not fixed, a complex number, ``...``, a key that is not text or a number)."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list | tuple):
        items = [_json_form(item) for item in value]
        return _NOT_LITERAL if any(item is _NOT_LITERAL for item in items) else items
    if isinstance(value, dict) and all(isinstance(key, str | int | float | bool) for key in value):
        entries = {key: _json_form(item) for key, item in value.items()}
        return _NOT_LITERAL if _NOT_LITERAL in entries.values() else entries
    return _NOT_LITERAL


def read_tool_input(raw: str) -> ToolInput:
    """JSON-like text (also in a fence, or nearly valid) as a dict or list; other text as written.

    One pair of wrapping quotes is removed, and a lone leading quote; fenced code is kept whole.
    """
    text = raw.strip()
    if (body := fenced_body(text)) is not None:
        value = json_value(body.strip())
        return text if value is None else value
    candidate = _MARKDOWN_NOISE.sub("", text)
    if wrapped := _JSON_IN_CALL.match(candidate):
        candidate = wrapped["json"].strip()
    value = json_value(candidate)
    return _unquote(text) if value is None or _expression_after_json(candidate) else value


def _expression_after_json(text: str) -> bool:
    """Whether a JSON value at the start of ``text`` goes on, on its own line: as an expression
    (``[1, 2, 3][::-1]``, ``{"a": 1}.items()``, ``[1] + [2]``), with another value after a comma
    (``[1, 2], [3, 4]``) or with words (``{"q": "x"} and more``): text to pass on as written, not JSON
    followed by noise (a stray ``}``, ``</s>``, a quote, a fence, a remark in parentheses)."""
    try:
        end = json.JSONDecoder().raw_decode(text)[1]
    except (ValueError, RecursionError):
        return False
    return _EXPRESSION_GOES_ON.match(text, end) is not None


def _unquote(text: str) -> str:
    """Remove one pair of wrapping quotes (never an unbalanced one) or a lone leading quote."""
    quote = text[:1]
    if quote not in ('"', "'"):
        return text
    if len(text) >= 2 and text.endswith(quote):
        inner = text[1:-1]
        if quote not in inner:
            return inner
        if quote == '"':
            try:
                decoded = json.loads(text)
            except ValueError:
                return text
            return decoded if isinstance(decoded, str) else text
        return text
    return text[1:] if text.count(quote) == 1 else text


_QUOTES = frozenset("\"'")


def quoted_spans(line: str) -> list[tuple[int, int]]:
    """The string literals of one line, as ``(start, end)`` from the opening quote to just past the
    closing one.

    A quote opens a string only after a character that is not a letter or digit (``"x"``, ``('x'``,
    ``= "x"``, but not the apostrophe of "Paul's"), and closes it only before one (so "it's" inside
    'it's fine' does not close it); a backslash escapes the next character. A quote that is never
    closed opens nothing, and no later quote of its kind does either: so each character is looked at
    a bounded number of times.
    """
    spans = []
    kinds, position = set(_QUOTES), 0
    while (start := _next_opening_quote(line, position, kinds)) is not None:
        end = _closing_quote(line, start)
        if end is None:
            kinds.discard(line[start])
            position = start + 1
            continue
        spans.append((start, end + 1))
        position = end + 1
    return spans


def _next_opening_quote(line: str, position: int, kinds: set[str]) -> int | None:
    for index in range(position, len(line)):
        if line[index] in kinds and (index == 0 or not line[index - 1].isalnum()):
            return index
    return None


def _closing_quote(line: str, start: int) -> int | None:
    quote, index = line[start], start + 1
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char == quote and (index + 1 == len(line) or not line[index + 1].isalnum()):
            return index
        index += 1
    return None
