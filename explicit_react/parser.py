"""parse(text): read a model reply as an ``Action`` or a ``FinalAnswer``; the regexes and nothing else.

The parser reads top to bottom:

1. clean the text (line endings, leaked special tokens, a fence around the whole reply);
2. find the labels (``Thought:``, ``Action:``, ``Action Input:``, ``Observation:``, ``Final Answer:``)
   in any case, with extra spaces, bold, numbered, indented or glued to the previous word;
3. cut the hallucinated continuation: everything from a model-written ``Observation`` after the
   first action;
4. decide: a final answer that comes first, else the first complete action (labels, call syntax
   ``tool(query="x")``, bracket syntax ``tool[x]``), else a JSON action blob;
5. normalise the tool input: JSON (also nearly valid JSON) becomes a dict or list, one pair of
   wrapping quotes is removed, anything else is kept as written.

Anything that cannot be read raises ``ParseError`` whose ``feedback`` tells the model what was
wrong and shows the expected format.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from itertools import chain
from string import Template
from typing import Any, NamedTuple

from explicit_react.errors import ParseError
from explicit_react.types import Action, FinalAnswer, ToolInput

THOUGHT = "Thought"
ACTION = "Action"
ACTION_INPUT = "Action Input"
OBSERVATION = "Observation"
FINAL_ANSWER = "Final Answer"


@dataclass(frozen=True)
class Labels:
    """The keywords a reply is written with; change them for frameworks that use others.

    Haystack 1.x agents, for example, write ``Tool:`` and ``Tool Input:``:
    ``parse(text, labels=Labels(action="Tool", action_input="Tool Input"))``.
    The aliases are accepted too; set one to ``""`` to turn it off.
    """

    thought: str = THOUGHT
    action: str = ACTION
    action_input: str = ACTION_INPUT
    observation: str = OBSERVATION
    final_answer: str = FINAL_ANSWER
    input_alias: str = "Input"
    """Accepted in place of ``action_input``."""
    answer_alias: str = "Answer"
    """Accepted in place of ``final_answer`` when the reply holds no action (LlamaIndex style)."""
    finish: str = "Finish"
    """The bracket-style tool that finishes: ``Action: Finish[answer]``."""


DEFAULT_LABELS = Labels()

# -- Text-level patterns (independent of the labels) ---------------------------------------------
_SPECIAL_TOKEN = re.compile(r"<\|[^|<>\s]{1,64}\|>")
_WHOLE_REPLY_FENCE = re.compile(
    r"\A\s*(?P<fence>`{3,})[\w+.-]*[ \t]*\n(?P<body>.*)\n[ \t]*(?P=fence)\s*\Z", re.S
)
# Fences are found by scanning (``_fence_spans``, ``_fenced_body``): a fence-and-back-reference regex
# backtracks cubically on a run of backticks.
_BACKTICK_RUN = re.compile(r"`{3,}")
_NOT_NEWLINE = re.compile(r"[^\n]")
_INFO_STRING = re.compile(r"[\w+.-]*[ \t]*\n?")
# Text that starts like a JSON object or array (not `{temperature in SF}` or `[what is it?]`).
_JSON_START = re.compile(
    r"""\A(?:\{\s*(?:["'}]|\Z)|\[\s*(?:["'{\[\]\d-]|true\b|false\b|null\b|True\b|False\b|None\b|\Z))"""
)
_MARKDOWN_NOISE = re.compile(r"\A[*_]+\s*")
_JSON_IN_CALL = re.compile(r"\A[A-Za-z_][\w.]*\s*\((?P<json>\s*\{.*\})\s*\)\s*\Z", re.S)
# The name keeps the spaces before the parenthesis (``_tool_name`` strips them): a lazy name that
# competes with ``\s*`` for them is quadratic on a run of spaces.
_CALL = re.compile(r"\A(?P<name>[^()\[\]\n]++)\s*+\((?P<args>.*)\)\Z", re.S)
_BRACKETS = re.compile(r"\A(?P<name>[^()\[\]\n]++)\s*+\[(?P<args>.*)\]\Z", re.S)
# The input written on the Action line: ``Action: knowledge_search, "price of X"``,
# ``Action: calculator: 2 + 2``, ``Action: mcp:search, weather`` (a name may hold a colon), and
# ``Action: knowledge_search:search query: "x"`` (a bare colon splits only when the rest has a
# space, so ``mcp:search`` alone stays one name). A short label (``input:``, ``query=``) is dropped
# when a quoted or JSON value follows it.
_LABEL = r"[A-Za-z_][\w ]{0,30}+\s*+[:=]\s*+(?=[\"'{])"
_INLINE_INPUTS = (  # tried in order
    re.compile(r"\A(?P<name>[A-Za-z_][\w.-]*):" + _LABEL + r"(?P<rest>\S.*)\Z"),
    re.compile(r"\A(?P<name>[A-Za-z_][\w.:-]*?)(?:\s*,\s*|:\s+)(?:" + _LABEL + r")?(?P<rest>\S.*)\Z"),
    re.compile(r"\A(?P<name>[A-Za-z_][\w.-]*):(?=\S*\s)(?P<rest>\S.*)\Z"),
)
# Stripped from a tool name: these before it, and these plus punctuation after it (matched on the
# reversed name: a ``[...]+\Z`` search rescans a long run from each of its characters).
_NAME_NOISE_BEFORE = re.compile(r"[\s`'\"*_]+")
_NAME_NOISE_AFTER_REVERSED = re.compile(r"[\s`'\"*_.,;:!]+")
_NO_TOOL = frozenset({"", "none", "null", "n/a", "nothing"})
_NO_INPUT = frozenset({"", "none", "null", '""', "''"})
# Strict JSON, token by token (for _scan_json): whitespace, then a string, a scalar or punctuation.
_JSON_STRING = r"""(?:"(?:[^"\\\x00-\x1f]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+")"""
_JSON_TOKEN = re.compile(
    rf"""[ \t\n\r]*+(?:(?P<string>{_JSON_STRING})"""
    r"""|(?P<scalar>-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][-+]?[0-9]++)?+|true|false|null|NaN|-?Infinity)"""
    r"""|(?P<punct>[{}\[\]:,]))"""
)
_OBJECT_START = re.compile(rf"\{{[ \t\n\r]*+(?:\}}|{_JSON_STRING}[ \t\n\r]*+:)")  # how a valid object starts
_VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE, _COLON, _COMMA_OR_CLOSE = range(6)
_MAX_JSON_DEPTH = 100
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

# Kinds of label; the aliases map onto the kind they stand for.
_THOUGHT, _ACTION, _INPUT, _OBSERVATION, _FINAL, _ANSWER = (
    "thought",
    "action",
    "input",
    "observation",
    "final",
    "answer",
)


class _Label(NamedTuple):
    """One label found in the text; ``start`` is the start of its line when it opens the line."""

    kind: str
    start: int
    end: int
    line_start: bool


class _Grammar(NamedTuple):
    """The compiled patterns for one ``Labels``."""

    label: re.Pattern[str]
    kinds: dict[str, str]
    words: dict[str, str]
    trailing_observation: re.Pattern[str]
    colon_runs: tuple[re.Pattern[str], re.Pattern[str]] | None
    """A run long enough to hold a label, up to a colon (within a line, since the last colon): at the
    start of the text, and after a colon or newline."""


@lru_cache(maxsize=16)
def _grammar(labels: Labels) -> _Grammar:
    """Compile the label patterns once per ``Labels``.

    A label matches with any spacing, optionally bold and numbered (``**Action 1:**``), in any
    case; ``_find_labels`` keeps a label that does not open its line only when it is written in
    the label's own case (``toolAction:``, ``... Action Input: x``, not ``your final answer:``).
    """
    words = {
        _THOUGHT: labels.thought,
        _ACTION: labels.action,
        _INPUT: labels.action_input,
        _OBSERVATION: labels.observation,
        _FINAL: labels.final_answer,
        "input_alias": labels.input_alias,
        "answer_alias": labels.answer_alias,
    }
    kinds = {_THOUGHT: _THOUGHT, _ACTION: _ACTION, _INPUT: _INPUT, _OBSERVATION: _OBSERVATION}
    kinds |= {_FINAL: _FINAL, "input_alias": _INPUT, "answer_alias": _ANSWER}
    alternatives = []
    for group, word in sorted(words.items(), key=lambda item: -len(item[1])):  # longest first
        if word:
            spaced = r"[ \t]*".join(re.escape(part) for part in word.split())
            alternatives.append(rf"(?P<{group}>{spaced})")
    label = re.compile(
        r"(?P<bold>\*\*)?(?:" + "|".join(alternatives) + r")(?:[ \t]*\d+)?\**[ \t]*[:：](?(bold)(?:\*\*)?)",
        re.I,
    )
    observation = labels.observation
    prefixes = "|".join(re.escape(observation[:n]) for n in range(len(observation), 2, -1))
    trailing_observation = re.compile(  # possessive: "[ \t]*" and "\s*" would split a run of spaces n ways
        rf"(?<!\S){re.escape(observation)}[ \t]*+[:：]?+\s*+\Z|(?im:^[ \t]*+(?:{prefixes})[ \t]*+\Z)"
    )
    exact = {group: " ".join(word.split()) for group, word in words.items()}
    shortest = min(len("".join(word.split())) for word in words.values() if word)
    run = rf"[^:：\n]{{{shortest},}}+(?=[:：])"
    colon_runs = None  # a label word with a colon in it: look for labels everywhere
    if not any(mark in word for word in words.values() for mark in ":：\n"):
        colon_runs = (re.compile(run), re.compile(rf"[:：\n]{run}"))
    return _Grammar(label, kinds, exact, trailing_observation, colon_runs)


def parse(text: str, *, labels: Labels = DEFAULT_LABELS, tools: Collection[str] = ()) -> Action | FinalAnswer:
    """Read a model reply as an ``Action`` or a ``FinalAnswer``.

    ``tools``: the names of the real tools. The words that mean "no tool" (``none``, ``null``,
    ``n/a``, ``nothing``) or "finish" (``Finish``, ``Final Answer``) as an Action keep that meaning
    only when no tool has that name: a real tool called ``finish`` is called.

    Raises ``ParseError`` (and nothing else) with feedback for the model when the reply cannot be read.
    """
    real = frozenset(name.lower() for name in tools)
    grammar = _grammar(labels)
    text = _clean(text, grammar)
    if not text.strip():
        raise _error("Your reply was empty.", text, labels)
    found = _find_labels(text, grammar)
    text, found = _cut_continuation(text, found, grammar)

    action = _first_action(text, found, labels, real)
    final = _first_final(found, has_action=action is not None)
    if final is not None and (action is None or final.start < action.start):
        return _final_answer(text, found, final, labels)
    if action is not None:
        return _checked_action(text, found, action, labels, real)
    blob = _json_blob(text, labels, real)
    if blob is not None:
        return blob
    raise _missing_parts(text, found, labels)


def plain_text(text: str, *, labels: Labels = DEFAULT_LABELS) -> str | None:
    """The reply, cleaned, when it has none of the labels (plain prose); ``None`` when it has any.

    The agent uses it on the tool-free call at a limit: told to answer, small models often just do.
    """
    grammar = _grammar(labels)
    text = _clean(text, grammar).strip()
    return text if text and not _find_labels(text, grammar) else None


# -- 1. Clean ---------------------------------------------------------------------------------------
def _clean(text: str, grammar: _Grammar) -> str:
    """Normalise line endings, drop leaked special tokens, unwrap a fence around the whole reply."""
    text = _SPECIAL_TOKEN.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    whole = _WHOLE_REPLY_FENCE.match(text)
    if whole and grammar.label.match(whole["body"].lstrip()):
        return whole["body"]
    return text


# -- 2. Find the labels -----------------------------------------------------------------------------
def _find_labels(text: str, grammar: _Grammar) -> list[_Label]:
    """Every label outside code fences, in order; inside a line only when written exactly."""
    masked = _mask_fences(text)
    found = []
    line_begins = 0  # the start of the current match's line
    last_word = -1  # the last character before the current match that is not one of " \t#>-"
    scanned = 0  # line_begins and last_word are up to date for text[:scanned]
    for match in _label_matches(masked, grammar):
        group = match.lastgroup  # the label's word: "bold", the only other group, closes before it
        assert group is not None and group != "bold"
        word = match[group]
        before = text[scanned : match.start()]
        if (newline := before.rfind("\n")) >= 0:
            line_begins = scanned + newline + 1
        if kept := before.rstrip(" \t#>-"):
            last_word = scanned + len(kept) - 1
        scanned = match.start()
        line_start = last_word < line_begins
        if not line_start and " ".join(word.split()) != grammar.words[group]:
            continue
        start = line_begins if line_start else match.start()
        found.append(_Label(grammar.kinds[group], start, match.end(), line_start))
    return found


def _label_matches(masked: str, grammar: _Grammar) -> Iterator[re.Match[str]]:
    """What ``grammar.label.finditer(masked)`` finds, looking only where a label can be.

    A label holds no colon and no newline before its own colon, so each one lies in a run that
    starts after the previous colon or newline and ends at most 3 characters past its colon (a
    closing ``**``); runs too short for any label word, and text with no colon, are skipped.
    """
    if grammar.colon_runs is None:
        yield from grammar.label.finditer(masked)
        return
    first_run, next_runs = grammar.colon_runs
    runs = [(0, first.end())] if (first := first_run.match(masked)) else []
    end = 0
    for start, colon in chain(runs, ((run.start() + 1, run.end()) for run in next_runs.finditer(masked))):
        match = grammar.label.search(masked, max(start, end), colon + 3)
        if match:
            end = match.end()
            yield match


def _mask_fences(text: str) -> str:
    """The text with every fenced span blanked out (newlines kept, so positions and lines stay)."""
    pieces = []
    position = 0
    for start, end in _fence_spans(text):
        pieces += [text[position:start], _NOT_NEWLINE.sub(" ", text[start:end])]
        position = end
    return "".join(pieces) + text[position:]


def _fence_spans(text: str) -> list[tuple[int, int]]:
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


def _fenced_body(text: str) -> str | None:
    r"""The body when the whole text is one fenced block (what a fence-and-back-reference regex
    ``\A(`{3,})[\w+.-]*[ \t]*\n?(.*?)\n?[ \t]*\1\Z`` captures), else ``None``; in linear time."""
    opening = len(text) - len(text.lstrip("`"))
    closing = len(text) - len(text.rstrip("`"))
    fence = min(opening, closing, len(text) // 2)  # the longest fence that opens and closes the text
    if fence < 3:
        return None
    inner = text[fence : len(text) - fence]
    info = _INFO_STRING.match(inner)
    assert info is not None  # it matches the empty string
    body = inner[info.end() :].rstrip(" \t")
    return body[:-1] if body.endswith("\n") else body


# -- 3. Cut the hallucinated continuation -----------------------------------------------------------
def _cut_continuation(text: str, found: list[_Label], grammar: _Grammar) -> tuple[str, list[_Label]]:
    """Drop everything from the first model-written Observation that follows an Action."""
    first_action = next((label.start for label in found if label.kind == _ACTION), None)
    if first_action is None:
        return text, found
    cut = next(
        (label.start for label in found if label.kind == _OBSERVATION and label.start > first_action), None
    )
    if cut is not None:
        text = text[:cut]
    trailing = grammar.trailing_observation.search(text)
    if trailing and trailing.start() > first_action:
        text = text[: trailing.start()]
    return text, [label for label in found if label.end <= len(text)]


# -- 4. Decide --------------------------------------------------------------------------------------
class _Found(NamedTuple):
    """A complete action: the tool and its input, starting at ``start``."""

    start: int
    line_start: bool
    tool: str
    tool_input: ToolInput


def _first_action(text: str, found: list[_Label], labels: Labels, real: frozenset[str]) -> _Found | None:
    """The first Action that has an input: an Action Input label, call/bracket syntax, or, when no
    other Action follows, an input written on the Action line itself."""
    next_step: _Label | None = None  # the first Action or Action Input label after the current one
    next_steps = []
    for label in reversed(found):
        next_steps.append(next_step)
        if label.kind in (_ACTION, _INPUT):
            next_step = label
    next_steps.reverse()
    for index, label in enumerate(found):
        if label.kind != _ACTION:
            continue
        value_end = found[index + 1].start if index + 1 < len(found) else len(text)
        tool, call_input, inline_input = _tool_and_arguments(text[label.end : value_end])
        next_step = next_steps[index]
        if next_step is not None and next_step.kind == _INPUT:
            raw_input = text[next_step.end : _value_end(text, found, next_step)]
            written = call_input if call_input is not None else inline_input
            use_written = written is not None and raw_input.strip().lower() in _NO_INPUT
            tool_input = written if use_written else _tool_input(raw_input)
        elif call_input is not None:
            tool_input = call_input
        elif inline_input is not None and next_step is None:
            if _names_no_tool(tool, real):  # "Action: None, I know the answer": not an action
                continue
            tool_input = inline_input
        else:
            continue
        if _names_no_tool(tool, real):
            raise _error(f"Your {labels.action} line names no tool.", text, labels)
        return _Found(label.start, label.line_start, tool, tool_input)  # type: ignore[arg-type]
    return None


def _value_end(text: str, found: list[_Label], label: _Label) -> int:
    """Where a label's value ends: at the next label that opens a line (labels inside a value stay)."""
    return next((other.start for other in found if other.start > label.start and other.line_start), len(text))


def _first_final(found: list[_Label], *, has_action: bool) -> _Label | None:
    """The first Final Answer label that opens a line, else the first one; the ``Answer:`` alias
    counts only when there is no action.

    One that opens a line wins over an earlier one inside a Thought: a small model wrote "Thought:
    … The result is 9 years. Final Answer: 9 years. The tool," and then "Final Answer: 9 years."
    on a line of its own, and the answer is that line, not everything after the first label.
    """
    kinds = (_FINAL,) if has_action else (_FINAL, _ANSWER)
    finals = [label for label in found if label.kind == _FINAL]
    if finals:
        return next((label for label in finals if label.line_start), finals[0])
    return next((label for label in found if label.kind in kinds), None)


def _final_answer(text: str, found: list[_Label], final: _Label, labels: Labels) -> FinalAnswer:
    """The answer runs to the end, or to an action block that opens a line after it."""
    last_input = max((label.start for label in found if label.kind == _INPUT), default=-1)
    action_blocks = (
        label.start
        for label in found
        if label.kind == _ACTION and label.line_start and final.start < label.start < last_input
    )
    end = next(action_blocks, len(text))
    answer = text[final.end : end].strip()
    if not answer:
        raise _error(f"Your {labels.final_answer} is empty.", text, labels)
    return FinalAnswer(answer, _thought(text, found, final.start), text[:end].rstrip())


def _checked_action(
    text: str, found: list[_Label], action: _Found, labels: Labels, real: frozenset[str]
) -> Action | FinalAnswer:
    """The action, unless a Final Answer follows it (a conflict) or it names the final answer."""
    if any(label.kind == _FINAL and label.start > action.start for label in found):
        raise _error(
            f"Your reply contains both an {labels.action} and a {labels.final_answer}; give one of them.",
            text,
            labels,
        )
    thought = _thought(text, found, action.start)
    if _names_finish(action.tool, labels, real):
        return _answer_from_input(action.tool_input, thought, text, labels)
    return Action(action.tool, action.tool_input, thought, text.rstrip())


def _answer_from_input(tool_input: ToolInput, thought: str, text: str, labels: Labels) -> FinalAnswer:
    """The final answer given as the input of a ``Final Answer`` action; an empty one is refused."""
    answer = _as_text(tool_input)
    if not answer.strip():
        raise _error(f"Your {labels.final_answer} is empty.", text, labels)
    return FinalAnswer(answer, thought, text.rstrip())


def _names_no_tool(tool: str, real: frozenset[str]) -> bool:
    """True when ``tool`` is a word for "no tool" that no real tool is called."""
    return tool.lower() in _NO_TOOL and tool.lower() not in real


def _names_finish(tool: str, labels: Labels, real: frozenset[str], *, finish: bool = True) -> bool:
    """True when ``tool`` is the Final Answer label (or, with ``finish``, ``Finish``) and no real tool
    is called that."""
    words = (labels.final_answer, labels.finish) if finish else (labels.final_answer,)
    return tool.lower() in {w.lower() for w in words} and tool.lower() not in real


def _thought(text: str, found: list[_Label], decision: int) -> str:
    """The Thought before the decision, or the text before the first label when there is none."""
    for index, label in enumerate(found):
        if label.kind == _THOUGHT and label.start < decision:
            end = found[index + 1].start if index + 1 < len(found) else len(text)
            return text[label.end : end].strip()
    first = min([label.start for label in found] + [decision])
    return text[:first].strip()


def _json_blob(text: str, labels: Labels, real: frozenset[str]) -> Action | FinalAnswer | None:
    """A JSON action blob anywhere in the text: ``{"action": ..., "action_input": ...}`` and kin."""
    blobs = [(start, blob) for start, blob in _json_objects(text) if _blob_parts(blob)]
    if not blobs:
        body = _fenced_body(text.strip())
        value = _json_value(body.strip() if body is not None else text.strip())
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if not isinstance(value, dict) or not _blob_parts(value):
            return None
        blobs = [(0, value)]
    if len(blobs) > 1:
        raise _error("Your reply contains more than one action; give one at a time.", text, labels)
    start, blob = blobs[0]
    tool, raw_input = _blob_parts(blob)  # type: ignore[misc]
    thought = text[:start].strip()
    if _names_finish(" ".join(tool.split()), labels, real, finish=False):
        return _answer_from_input("" if raw_input is None else raw_input, thought, text, labels)
    if isinstance(raw_input, str):
        tool_input: ToolInput = _tool_input(raw_input)
    elif isinstance(raw_input, (dict, list)):
        tool_input = raw_input
    else:  # a JSON scalar: null is no input, numbers and booleans are their JSON text
        tool_input = "" if raw_input is None else json.dumps(raw_input)
    if _names_no_tool(tool, real):
        raise _error(f"Your {labels.action} names no tool.", text, labels)
    return Action(tool, tool_input, thought, text.rstrip())


def _json_objects(text: str) -> list[tuple[int, Any]]:
    """Every top-level strictly valid JSON object in the text (at most ``_MAX_JSON_DEPTH`` deep), with its position.

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
    opens ends (-1 for one that is invalid or nested more than ``_MAX_JSON_DEPTH`` deep).

    An object's validity depends on its own text only, so it is the same whether it is read on its
    own or nested in another: each object is checked once.
    """
    open_containers: list[tuple[str, int]] = []  # (closer, start) of each container not yet closed
    too_deep = 0  # open_containers[:too_deep] hold more than _MAX_JSON_DEPTH levels: settled as invalid
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
                if len(open_containers) - too_deep > _MAX_JSON_DEPTH:
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


def _blob_parts(blob: dict[str, Any]) -> tuple[str, Any] | None:
    """The tool name and raw input of a JSON action blob, or ``None`` when it is not one."""
    for tool_key, input_key in _BLOB_KEYS:
        if isinstance(blob.get(tool_key), str) and input_key in blob:
            return blob[tool_key].strip(), blob[input_key]
    return None


# -- 5. Normalise ---------------------------------------------------------------------------------
def _tool_and_arguments(value: str) -> tuple[str, ToolInput | None, ToolInput | None]:
    """The tool name on an Action line, the arguments of call or bracket syntax, and an input
    written after the name (``None`` for each that is not there)."""
    value = _tool_name(value.strip())
    if call := _CALL.match(value):
        return _tool_name(call["name"]), _call_arguments(call["args"]), None
    if brackets := _BRACKETS.match(value):
        args = brackets["args"]
        return _tool_name(brackets["name"]), _tool_input(args) if args.strip() else None, None
    first_line = next((line for line in value.splitlines() if line.strip()), "").strip()
    for pattern in _INLINE_INPUTS:
        if inline := pattern.match(first_line):
            return inline["name"], None, _tool_input(inline["rest"])
    return _tool_name(first_line), None, None


def _tool_name(name: str) -> str:
    """The name without quotes, backticks, bold or spaces around it, nor punctuation after it."""
    before = _NAME_NOISE_BEFORE.match(name)
    start = before.end() if before else 0
    after = _NAME_NOISE_AFTER_REVERSED.match(name[::-1])
    end = len(name) - after.end() if after else len(name)
    return name[start : max(start, end)]


def _call_arguments(args: str) -> ToolInput | None:
    """Arguments of ``tool(query="x")``, ``tool("x")``, ``tool({...})`` or ``tool(6, 7)`` (a list, in
    order); only literals, never code."""
    args = args.strip()
    if not args:
        return None
    if _JSON_START.match(args):
        return _json_value(args)
    try:
        call = ast.parse(f"f({args})", mode="eval").body
        if not isinstance(call, ast.Call):
            return None
        if call.keywords and not call.args and all(keyword.arg for keyword in call.keywords):
            return {str(keyword.arg): ast.literal_eval(keyword.value) for keyword in call.keywords}
        if len(call.args) == 1 and not call.keywords:
            value = ast.literal_eval(call.args[0])
            return value if isinstance(value, (str, dict, list)) else str(value)
        if len(call.args) > 1 and not call.keywords:  # multiply(6, 7): the executor maps them in order
            return [ast.literal_eval(arg) for arg in call.args]
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    return None


def _tool_input(raw: str) -> ToolInput:
    """JSON-like text (also in a fence, or nearly valid) as a dict or list; other text as written.

    One pair of wrapping quotes is removed, and a lone leading quote; fenced code is kept whole.
    """
    text = raw.strip()
    if (body := _fenced_body(text)) is not None:
        value = _json_value(body.strip())
        return text if value is None else value
    candidate = _MARKDOWN_NOISE.sub("", text)
    if wrapped := _JSON_IN_CALL.match(candidate):
        candidate = wrapped["json"].strip()
    value = _json_value(candidate)
    return _unquote(text) if value is None else value


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


def _json_value(text: str) -> dict[str, Any] | list[Any] | None:
    """Parse JSON-like text, repairing only what models get nearly right; ``None`` when it is not JSON.

    Repairs: single quotes, Python ``True/False/None``, trailing commas, ``/* */`` and ``//`` comments,
    raw newlines and tabs inside strings, missing closing brackets. Text after the value is ignored.
    """
    if not _JSON_START.match(text):
        return None
    decoder = json.JSONDecoder()
    try:
        return _container(decoder.raw_decode(text)[0])
    except RecursionError:  # tidying keeps the valid text that nests too deep
        return None
    except ValueError:
        pass
    tidied, closers = _tidy_json(text)
    for candidate in (tidied, tidied + closers):
        try:
            return _container(decoder.raw_decode(candidate)[0])
        except (ValueError, RecursionError):
            continue
    return None


def _container(value: Any) -> dict[str, Any] | list[Any] | None:
    """A dict or list nested at most ``_MAX_JSON_DEPTH`` deep, else ``None``."""
    if not isinstance(value, (dict, list)):
        return None
    level = [value]
    for _ in range(_MAX_JSON_DEPTH):
        level = [
            child
            for container in level
            for child in (container.values() if isinstance(container, dict) else container)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return value
    return None


def _tidy_json(text: str) -> tuple[str, str]:
    """Rewrite nearly valid JSON as JSON; also return the closers a truncated value is missing."""
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
            out.append(openers)
            index += len(openers)
            continue
        elif char in "}]":
            if closers and closers[-1] == char:
                closers.pop()
            out.append(char)
        elif word := _BARE_WORD.match(text, index):
            out.append(_PYTHON_LITERALS.get(word[0], word[0]))
            index = word.end()
            continue
        else:
            out.append(char)
        index += 1
    return "".join(out), ('"' if quote else "") + "".join(reversed(closers))


def _as_text(value: ToolInput) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


# -- Feedback for the model -------------------------------------------------------------------------
def _missing_parts(text: str, found: list[_Label], labels: Labels) -> ParseError:
    """Say which part of the format is missing."""
    kinds = [label.kind for label in found]
    if _ACTION in kinds:
        return _error(f"Your reply has an {labels.action} but no {labels.action_input} line.", text, labels)
    if _INPUT in kinds:
        return _error(f"Your reply has an {labels.action_input} but no {labels.action} line.", text, labels)
    if _THOUGHT in kinds:
        problem = f"Your reply has a {labels.thought} but no {labels.action} and no {labels.final_answer}."
    else:
        problem = f"Your reply has no {labels.action} and no {labels.final_answer} line."
    return _error(problem, text, labels)


def _error(problem: str, text: str, labels: Labels) -> ParseError:
    return ParseError(f"{problem}\nReply in exactly this format:\n{_format_block(labels)}", text)


@lru_cache(maxsize=16)
def _format_block(labels: Labels) -> str:
    """The format block of the prompt, with the tool list shown as ``...`` and these labels."""
    template = resources.files("explicit_react").joinpath("prompts/format.txt").read_text(encoding="utf-8")
    block = Template(template).safe_substitute(tool_names="...").strip()
    renamed = {
        FINAL_ANSWER: labels.final_answer,
        ACTION_INPUT: labels.action_input,
        OBSERVATION: labels.observation,
        THOUGHT: labels.thought,
        ACTION: labels.action,
    }
    pattern = re.compile(r"^(" + "|".join(re.escape(word) for word in renamed) + r"):", re.M)
    return pattern.sub(lambda match: f"{renamed[match[1]]}:", block)
