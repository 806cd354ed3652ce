"""parse(text): read a model reply as an ``Action`` or a ``FinalAnswer``: the labels and the decision.

The parser reads top to bottom:

1. clean the text (line endings, leaked special tokens, a fence around the whole reply); a leaked
   end-of-turn token ends the reply;
2. find the labels (``Thought:``, ``Action:``, ``Action Input:``, ``Observation:``, ``Final Answer:``)
   in any case, with extra spaces, bold, numbered, indented or glued to the previous word;
3. cut the hallucinated continuation: everything from a model-written ``Observation`` after the
   first action, or from a ``Question:`` line after a final answer; label lines a final answer
   introduces with a colon are its text (``labels.quoted_in_answer``);
4. decide: a final answer that comes first (up to a line that opens with a label), else the first
   complete action (labels, call syntax ``tool(query="x")``, bracket syntax ``tool[x]``), else a JSON
   action blob;
5. normalise the tool input: JSON (also nearly valid JSON) becomes a dict or list, one pair of
   wrapping quotes is removed, anything else is kept as written.

The labels and their patterns are in ``labels``; the scanners of fences, call syntax and tool inputs
in ``scanners``; JSON (objects, nearly valid values, action blobs) in ``json_text``.

Anything that cannot be read raises ``ParseError`` whose ``feedback`` tells the model what was
wrong and shows the expected format (written by ``parse_feedback``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any, NamedTuple

from explicit_react.json_text import action_blobs, blob_parts, json_value
from explicit_react.labels import (
    ACTION,
    ACTION_INPUT,
    DEFAULT_LABELS,
    FINAL_ANSWER,
    OBSERVATION,
    THOUGHT,
    Grammar,
    Kind,
    Label,
    Labels,
    compile_labels,
    find_labels,
    label_matches,
    opens_turn,
    outside_strings,
    quoted_in_answer,
    thought_before,
)
from explicit_react.parse_feedback import missing_parts, parse_error
from explicit_react.scanners import (
    END_TOKEN,
    drop_special_tokens,
    fenced_body,
    mask_fences,
    may_be_call,
    read_tool_input,
    tool_and_arguments,
    turn_end,
)
from explicit_react.types import Action, FinalAnswer, ToolInput

__all__ = [
    "ACTION",
    "ACTION_INPUT",
    "DEFAULT_LABELS",
    "FINAL_ANSWER",
    "OBSERVATION",
    "THOUGHT",
    "Labels",
    "parse",
    "plain_text",
]

_WHOLE_REPLY_FENCE = re.compile(  # possessive: a backtracking fence retries every shorter one
    r"\A\s*+(?P<fence>`{3,}+)[\w+.-]*+[ \t]*+\n(?P<body>.*)\n[ \t]*(?P=fence)\s*\Z", re.S
)
MAX_LABELS = 500
"""A reply is read up to its 500th label: the text from the next label on is dropped (a real reply
holds a few dozen; each label costs a few microseconds to read)."""
_NO_TOOL = frozenset({"", "none", "null", "n/a", "nothing"})
_NO_INPUT = frozenset({"", "none", "null", '""', "''"})


def parse(text: str, *, labels: Labels = DEFAULT_LABELS, tools: Collection[str] = ()) -> Action | FinalAnswer:
    """Read a model reply as an ``Action`` or a ``FinalAnswer``.

    ``tools``: the names of the real tools. The words that mean "no tool" (``none``, ``null``,
    ``n/a``, ``nothing``) or "finish" (``Finish``, ``Final Answer``) as an Action keep that meaning
    only when no tool has that name: a real tool called ``finish`` is called.

    Raises ``ParseError`` (and nothing else) with feedback for the model when the reply cannot be read.
    """
    if labels is DEFAULT_LABELS and (quick := _well_formed(text)) is not None:
        return quick
    return parse_in_full(text, labels, tools)


def parse_in_full(
    text: str, labels: Labels = DEFAULT_LABELS, tools: Collection[str] = ()
) -> Action | FinalAnswer:
    """``parse`` without its shortcut for a reply in exactly the prompt's format: every step below."""
    real = frozenset(name.lower() for name in tools)
    grammar = compile_labels(labels)
    text = _clean(text, grammar)
    if not text.strip():
        raise parse_error("Your reply was empty.", text, labels)
    found = find_labels(text, grammar, limit=MAX_LABELS + 1)
    if len(found) > MAX_LABELS:
        text, found = text[: found[MAX_LABELS].start], found[:MAX_LABELS]
    found, quoted = quoted_in_answer(text, outside_strings(text, found), grammar)
    text, found = _cut_continuation(text, found, grammar, quoted)

    action = _first_action(text, found, labels, real)
    final = _final_label(found, has_action=action is not None)
    if final is not None and (action is None or final.start < action.start):
        return _final_answer(text, found, final, labels, grammar, real)
    if action is not None:
        return _checked_action(text, found, action, labels, real)
    blob = _json_blob(text, found, labels, real)
    if blob is not None:
        return blob
    raise missing_parts(text, found, labels)


def plain_text(text: str, *, labels: Labels = DEFAULT_LABELS) -> str | None:
    """The reply, cleaned, when it has none of the labels (plain prose); ``None`` when it has any.

    The agent uses it on the tool-free call at a limit: told to answer, small models often just do.
    """
    grammar = compile_labels(labels)
    text = _clean(text, grammar).strip()
    return text if text and not find_labels(text, grammar, limit=1) else None


# -- 0. The common case ----------------------------------------------------------------------------
# A reply written exactly in the prompt's format: one Thought line, then an Action line with a plain
# tool name and one Action Input line, or a Final Answer. Most replies are; reading them takes one
# match instead of the steps below. ``_well_formed`` returns exactly what those steps return for such
# a reply (bench/parser_fast_path.py checks it on the corpus, the fuzz generator and the tests' cases),
# and ``None`` whenever anything in the reply could make them read it otherwise.
_WELL_FORMED = re.compile(
    rf"{THOUGHT}:(?P<thought>[^\n]*+)\n"
    rf"(?:{ACTION}:[ \t]*+(?P<tool>[A-Za-z](?:[A-Za-z0-9_-]*+(?<![_]))?+)[ \t]*+\n"
    rf"{ACTION_INPUT}:(?P<input>[^\n]*+)\s*+"
    rf"|{FINAL_ANSWER}:(?P<answer>.*+))\Z",
    re.S,
)
_QUICK_REFUSED = re.compile(rf"\r|<\||{END_TOKEN}|```|bservation")
"""Text the general path treats specially: line endings and special tokens it cleans (end-of-turn
ones too), fences it masks, an Observation it cuts (looked for anywhere, not only where it would cut)."""
_GRAMMAR = compile_labels(DEFAULT_LABELS)
_SPECIAL_TOOLS = _NO_TOOL | {FINAL_ANSWER.lower(), DEFAULT_LABELS.finish.lower()}


def _well_formed(text: str) -> Action | FinalAnswer | None:
    """``parse(text)`` for a reply in exactly the prompt's format, or ``None`` to read it in full.

    The only labels in such a reply are the line openers the pattern matched: no other label word
    followed by a colon is anywhere in its values (``Grammar.label`` finds none in them)."""
    match = _WELL_FORMED.match(text)
    if match is None or _QUICK_REFUSED.search(text):
        return None
    thought, tool, value = match["thought"], match["tool"], match["input"]
    if value is None:
        value = match["answer"]
        invented_turn = _GRAMMAR.question_line.search(value)  # the full reading cuts the answer there
        if _has_label(thought) or _has_label(value) or invented_turn or not value.strip():
            return None
        return FinalAnswer(value.strip(), thought.strip(), text.rstrip())
    if _has_label(thought) or _has_label(value) or tool.lower() in _SPECIAL_TOOLS:
        return None
    return Action(tool, read_tool_input(text[match.start("input") :]), thought.strip(), text.rstrip())


def _has_label(value: str) -> bool:
    """Whether ``value`` holds anything the label pattern matches (every label ends at a colon); read
    from the colons (``label_matches``), as a search of 100 KB of punctuation took 11 ms."""
    return (":" in value or "：" in value) and next(label_matches(value, _GRAMMAR), None) is not None


# -- 1. Clean ---------------------------------------------------------------------------------------
def _clean(text: str, grammar: Grammar) -> str:
    """Normalise line endings, end the reply at a leaked end-of-turn token (what follows it is a turn
    the model invented), drop other leaked special tokens, unwrap a fence around the whole reply."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = drop_special_tokens(text[: turn_end(text)])
    whole = _WHOLE_REPLY_FENCE.match(text)
    if whole and grammar.label.match(whole["body"].lstrip()):
        return whole["body"]
    return text


# -- 2. Find the labels: ``labels.find_labels`` -----------------------------------------------------


# -- 3. Cut the hallucinated continuation -----------------------------------------------------------
# The line after a question that opens with "Answer:" or "A:": a question and answer the answer holds.
_ANSWERED_NEXT = re.compile(
    r"[^\n]*+\n(?:[ \t]*+\n)*+[ \t*_]*+(?:\d++[.)][ \t]*+)?+(?:answer|a)\b[ \t*_]*+[:：]", re.I
)


def _cut_continuation(
    text: str, found: list[Label], grammar: Grammar, quoted: set[int]
) -> tuple[str, list[Label]]:
    """Drop the turn the model went on to invent: everything from the first ``Question:`` line after
    a Final Answer (its answers are not the model's), unless the next line answers it (``Answer:``,
    a quiz or an FAQ in the answer) and no turn label follows; and from the first model-written
    Observation that follows an Action."""
    first_final = next((label.end for label in found if label.kind == Kind.FINAL), None)
    masked = mask_fences(text) if first_final is not None else text
    asked = None if first_final is None else grammar.question_line.search(masked, first_final)
    while asked is not None and asked.start() + 1 in quoted:  # the answer quotes it: not a turn
        asked = grammar.question_line.search(masked, asked.end())
    if asked is not None and (
        any(label.start > asked.end() and opens_turn(text, label, grammar) for label in found)
        or not _ANSWERED_NEXT.match(text, asked.end())  # a quiz's or an FAQ's question is the answer's
    ):
        text, found = text[: asked.start()], [label for label in found if label.end <= asked.start()]
    first_action = next((label.start for label in found if label.kind == Kind.ACTION), None)
    if first_action is None:
        return text, found
    cut = next(
        (label.start for label in found if label.kind == Kind.OBSERVATION and label.start > first_action),
        None,
    )
    if cut is not None:
        text = text[:cut]
    trailing = _trailing_observation(text, grammar)
    if trailing is not None and trailing > first_action:
        text = text[:trailing]
    return text, [label for label in found if label.end <= len(text)]


def _trailing_observation(text: str, grammar: Grammar) -> int | None:
    """Where an Observation label or word (or the start of the word alone on its line) ends the
    text, else ``None``. Each pattern is matched once, where it would have to start."""
    starts = []
    written = text.rstrip()
    colon = written.endswith((":", "："))
    written = written[:-1] if colon else written
    word = len(written.rstrip(" \t")) - len(grammar.observation)
    before = text[text.rfind("\n", 0, max(word, 0)) + 1 : max(word, 0)].rstrip()
    # The word without a colon ends an input on a line of its own or after code or a quoted value
    # ("```json{...}``` Observation"), not after a word: "Griffith Park Observation" is a place.
    if word >= 0 and grammar.observation_at_end.match(text, word) and (colon or not before[-1:].isalnum()):
        starts.append(word)
    if prefix := grammar.observation_prefix_line.match(text, text.rfind("\n") + 1):
        starts.append(prefix.start())
    return min(starts, default=None)


# -- 4. Decide --------------------------------------------------------------------------------------
class _Found(NamedTuple):
    """A complete action: the tool and its input, starting at ``start``."""

    start: int
    line_start: bool
    tool: str
    tool_input: ToolInput


def _first_action(text: str, found: list[Label], labels: Labels, real: frozenset[str]) -> _Found | None:
    """The first Action that has an input: an Action Input label, call/bracket syntax, or an input
    on the Action line (``Action: search: x``) when that Action opens its line or is the last: in
    "Thought: My next Action: search, then compute." the words are the Thought's, not an action."""
    next_step: Label | None = None  # the first Action or Action Input label after the current one
    next_steps = []
    for label in reversed(found):
        next_steps.append(next_step)
        if label.kind in (Kind.ACTION, Kind.INPUT):
            next_step = label
    next_steps.reverse()
    for index, label in enumerate(found):
        if label.kind != Kind.ACTION:
            continue
        value_end = found[index + 1].start if index + 1 < len(found) else len(text)
        value, next_step = text[label.end : value_end], next_steps[index]
        # When another Action follows, this one has an input only in call syntax or, when it opens
        # its line, written after its name ("search: x", "search, x"): the cheap tests first.
        another_action = next_step is not None and next_step.kind == Kind.ACTION
        may_be_inline = label.line_start and (":" in value or "," in value)
        if another_action and not (may_be_inline or may_be_call(value)):
            continue
        tool, call_input, inline_input = tool_and_arguments(value, real)
        if next_step is not None and next_step.kind == Kind.INPUT:
            raw_input = text[next_step.end : _value_end(text, found, next_step)]
            written = call_input if call_input is not None else inline_input
            use_written = written is not None and raw_input.strip().lower() in _NO_INPUT
            tool_input = written if use_written else read_tool_input(raw_input)
        elif call_input is not None:
            tool_input = call_input
        elif inline_input is not None and (label.line_start or not another_action):
            if _names_no_tool(tool, real):  # "Action: None, I know the answer": not an action
                continue
            tool_input = inline_input
        else:
            continue
        if _names_no_tool(tool, real):
            raise parse_error(f"Your {labels.action} line names no tool.", text, labels)
        return _Found(label.start, label.line_start, tool, tool_input)  # type: ignore[arg-type]
    return None


def _value_end(text: str, found: list[Label], label: Label) -> int:
    """Where a label's value ends: at the next label that opens a line (labels inside a value stay)."""
    return next((other.start for other in found if other.start > label.start and other.line_start), len(text))


def _final_label(found: list[Label], *, has_action: bool) -> Label | None:
    """The last Final Answer label that opens a line, else the first one; the ``Answer:`` alias
    counts only when there is no action.

    One that opens a line wins over an earlier one inside a Thought: a small model wrote "Thought:
    … The result is 9 years. Final Answer: 9 years. The tool," and then "Final Answer: 9 years."
    on a line of its own, and the answer is that line, not everything after the first label. Of
    several on lines of their own ("Final Answer: 1 / Thought: let me restate / Final Answer: 2"),
    the last is the model's last word, as LangChain's parser takes it; the first would carry the
    rest of the reply, labels and all, into the answer.
    """
    kinds = (Kind.FINAL,) if has_action else (Kind.FINAL, Kind.ANSWER)
    finals = [label for label in found if label.kind == Kind.FINAL]
    if finals:
        return next((label for label in reversed(finals) if label.line_start), finals[0])
    return next((label for label in found if label.kind in kinds), None)


def _final_answer(
    text: str, found: list[Label], final: Label, labels: Labels, grammar: Grammar, real: frozenset[str]
) -> FinalAnswer:
    """The answer runs to the end, or to the first line after it that opens with a label of the
    format: the model went on to invent the next turn (a ``Thought:``, an action with its input; from
    a ``Question:`` with a turn after it, it was cut already). Any other line is the answer's: a
    list, code, paragraphs stay whole, and so do a line that opens with an alias (``Input: a list``,
    ``Answer: ...``), which is prose there, and an ``Action:`` line that names no tool and has no
    input after it ("Plan: / Action: restart the server"), a step of the answer's own."""
    later = (
        label.start
        for index, label in enumerate(found)
        if label.start > final.start
        and opens_turn(text, label, grammar)
        and (label.kind != Kind.ACTION or _invented_action(text, label, found[index + 1 :], real))
    )
    end = next(later, len(text))
    answer = text[final.end : end].strip()
    if not answer:
        raise parse_error(f"Your {labels.final_answer} is empty.", text, labels)
    return FinalAnswer(answer, thought_before(text, found, final.start), text[:end].rstrip())


def _invented_action(text: str, action: Label, after: list[Label], real: frozenset[str]) -> bool:
    """Whether the ``Action:`` line ``action`` after a Final Answer is a call the model went on to
    write: an input follows it (``after``: the labels after it), it names a real tool, or the tools
    are not known."""
    line_end = text.find("\n", action.end)
    named = text[action.end : len(text) if line_end < 0 else line_end].strip(" \t*`").lower()
    return not real or named in real or any(label.kind == Kind.INPUT for label in after)


def _checked_action(
    text: str, found: list[Label], action: _Found, labels: Labels, real: frozenset[str]
) -> Action | FinalAnswer:
    """The action, unless a Final Answer follows it (a conflict) or it names the final answer."""
    if any(label.kind == Kind.FINAL and label.start > action.start for label in found):
        raise parse_error(
            f"Your reply contains both an {labels.action} and a {labels.final_answer}; give one of them.",
            text,
            labels,
        )
    thought = thought_before(text, found, action.start)
    if _names_finish(action.tool, labels, real):
        return _answer_from_input(action.tool_input, thought, text, labels)
    return Action(action.tool, action.tool_input, thought, text.rstrip())


def _answer_from_input(tool_input: ToolInput, thought: str, text: str, labels: Labels) -> FinalAnswer:
    """The final answer given as the input of a ``Final Answer`` action; an empty one is refused."""
    answer = _as_text(tool_input)
    if not answer.strip():
        raise parse_error(f"Your {labels.final_answer} is empty.", text, labels)
    return FinalAnswer(answer, thought, text.rstrip())


def _names_no_tool(tool: str, real: frozenset[str]) -> bool:
    """True when ``tool`` is a word for "no tool" that no real tool is called."""
    return tool.lower() in _NO_TOOL and tool.lower() not in real


def _names_finish(tool: str, labels: Labels, real: frozenset[str], *, finish: bool = True) -> bool:
    """True when ``tool`` is the Final Answer label (or, with ``finish``, ``Finish``) and no real tool
    is called that."""
    words = (labels.final_answer, labels.finish) if finish else (labels.final_answer,)
    return tool.lower() in {w.lower() for w in words} and tool.lower() not in real


def _json_blob(
    text: str, found: list[Label], labels: Labels, real: frozenset[str]
) -> Action | FinalAnswer | None:
    """A JSON action blob anywhere in the text: ``{"action": ..., "action_input": ...}`` and kin."""
    blobs: list[tuple[int, dict[str, Any]]] = action_blobs(text)
    if not blobs:
        body = fenced_body(text.strip())
        value = json_value(body.strip() if body is not None else text.strip())
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if not isinstance(value, dict) or not blob_parts(value):
            return None
        blobs = [(0, value)]
    if len(blobs) > 1:
        raise parse_error("Your reply contains more than one action; give one at a time.", text, labels)
    start, blob = blobs[0]
    tool, raw_input = blob_parts(blob)  # type: ignore[misc]
    thought = _blob_thought(text, found, start)
    if _names_finish(" ".join(tool.split()), labels, real, finish=False):
        return _answer_from_input("" if raw_input is None else raw_input, thought, text, labels)
    if isinstance(raw_input, str):
        tool_input: ToolInput = read_tool_input(raw_input)
    elif isinstance(raw_input, (dict, list)):
        tool_input = raw_input
    else:  # a JSON scalar: null is no input, numbers and booleans are their JSON text
        tool_input = "" if raw_input is None else json.dumps(raw_input)
    if _names_no_tool(tool, real):
        raise parse_error(f"Your {labels.action} names no tool.", text, labels)
    return Action(tool, tool_input, thought, text.rstrip())


_BLOB_WRAPPING = re.compile(r"[ \t]*+(?:`{3,}+[\w+.-]*+|</?tool_call>)[ \t]*+")
"""A line that only wraps a JSON blob: a fence (```` ```json ````) or a ``<tool_call>`` tag."""


def _blob_thought(text: str, found: list[Label], start: int) -> str:
    """The Thought before a JSON action blob at ``start``, as ``thought_before`` reads it (its label's text,
    ending at the next label such as a bare ``Action:``), less the lines that open the blob: the next
    prompt shows it after its own ``Thought:``, where a fence left open would swallow the rest."""
    thought = thought_before(text[:start], [label for label in found if label.end <= start], start)
    return "\n".join(line for line in thought.split("\n") if not _BLOB_WRAPPING.fullmatch(line)).strip()


def _as_text(value: ToolInput) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
