"""The labels of the ReAct format: ``Labels``, their patterns compiled once per ``Labels``, and every
label found in a reply (outside code fences), in linear time."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import NamedTuple

from explicit_react.scanners import mask_fences, quoted_spans

THOUGHT = "Thought"
ACTION = "Action"
ACTION_INPUT = "Action Input"
OBSERVATION = "Observation"
FINAL_ANSWER = "Final Answer"
QUESTION = "Question"


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
    question: str = QUESTION
    """The label of the question in the prompt. It is not read as a label: a line that opens with it
    after a Final Answer starts a turn the model invented, and ends the answer."""


DEFAULT_LABELS = Labels()


class Kind:
    """The kinds of label; the aliases map onto the kind they stand for."""

    THOUGHT = "thought"
    ACTION = "action"
    INPUT = "input"
    OBSERVATION = "observation"
    FINAL = "final"
    ANSWER = "answer"


class Label(NamedTuple):
    """One label found in the text; ``start`` is the start of its line when it opens the line."""

    kind: str
    start: int
    end: int
    line_start: bool


class Grammar(NamedTuple):
    """The compiled patterns for one ``Labels``."""

    label: re.Pattern[str]
    kinds: dict[str, str]
    words: dict[str, str]
    observation: str
    observation_at_end: re.Pattern[str]
    """An ``Observation`` label (or only its word) that ends the text."""
    observation_prefix_line: re.Pattern[str]
    """A last line that holds only the start of the Observation word (``Obs``), at that line's start."""
    colon_runs: tuple[re.Pattern[str], re.Pattern[str]] | None
    """A run long enough to hold a label, up to a colon (within a line, since the last colon): at the
    start of the text, and after a colon or newline."""
    label_colons: tuple[re.Pattern[str], re.Pattern[str]] | None
    """The colons a label can end at: after a label word's last letter, a space, a tab, a star or a
    digit (``None`` when a label word does not start and end with a letter); ASCII colons only (found
    10x faster), and both kinds."""
    reversed_label: re.Pattern[str] | None
    """``label`` read backwards from its colon, on the reversed text: where the label that ends at a
    colon starts, without searching the text before it."""
    question_line: re.Pattern[str]
    """A line after the first that opens with the question label (``Question:``, ``**Question:**``,
    ``2. Question:``), from the newline before it."""


_LINE_MARKUP = " \t#>*_-"
"""What may stand between the start of a line and a label that opens it: indentation, a heading, a
quote, a bullet, bold or italic markers (``- **Action:**``, ``> *Action:*``, ``_Action:_``)."""
_MARKUP = re.escape(_LINE_MARKUP)  # the same, inside a character class


@lru_cache(maxsize=16)
def compile_labels(labels: Labels) -> Grammar:
    """Compile the label patterns once per ``Labels``.

    A label matches with any spacing, optionally bold and numbered (``**Action 1:**``), in any
    case; ``find_labels`` keeps a label that does not open its line only when it is written in
    the label's own case (``toolAction:``, ``... Action Input: x``, not ``your final answer:``).
    """
    words = {
        Kind.THOUGHT: labels.thought,
        Kind.ACTION: labels.action,
        Kind.INPUT: labels.action_input,
        Kind.OBSERVATION: labels.observation,
        Kind.FINAL: labels.final_answer,
        "input_alias": labels.input_alias,
        "answer_alias": labels.answer_alias,
    }
    kinds = {
        Kind.THOUGHT: Kind.THOUGHT,
        Kind.ACTION: Kind.ACTION,
        Kind.INPUT: Kind.INPUT,
        Kind.OBSERVATION: Kind.OBSERVATION,
    }
    kinds |= {Kind.FINAL: Kind.FINAL, "input_alias": Kind.INPUT, "answer_alias": Kind.ANSWER}
    alternatives = [
        rf"(?P<{group}>{_spaced(word)})"
        for group, word in sorted(words.items(), key=lambda item: -len(item[1]))  # longest first
        if word
    ]
    label = re.compile(
        r"(?P<bold>\*\*)?(?:" + "|".join(alternatives) + r")(?:[ \t]*\d+)?\**[ \t]*[:：](?(bold)(?:\*\*)?)",
        re.I,
    )
    observation = labels.observation
    prefixes = "|".join(re.escape(observation[:n]) for n in range(len(observation), 2, -1))
    # Possessive: "[ \t]*" and "\s*" would split a run of spaces n ways.
    observation_at_end = re.compile(rf"(?<!\S){re.escape(observation)}[ \t]*+[:：]?+\s*+\Z")
    observation_prefix_line = re.compile(rf"(?im:^[ \t]*+(?:{prefixes})[ \t]*+\Z)")
    exact = {group: " ".join(word.split()) for group, word in words.items()}
    shortest = min(len("".join(word.split())) for word in words.values() if word)
    run = rf"[^:：\n]{{{shortest},}}+(?=[:：])"
    colon_runs = label_colons = reversed_label = None  # a label word with a colon in it: look everywhere
    if not any(mark in word for word in words.values() for mark in ":：\n"):
        colon_runs = (re.compile(run), re.compile(rf"[:：\n]{run}"))
    if colon_runs and all(word[0].isalpha() and word[-1].isalpha() for word in words.values() if word):
        last_letters = "".join(sorted({re.escape(word[-1]) for word in words.values() if word}))
        before = rf"[{last_letters} \t*\d]"
        label_colons = (re.compile(rf":(?<={before}:)", re.I), re.compile(rf"[:：](?<={before}[:：])", re.I))
        backwards = [
            r"[ \t]*".join(re.escape(part[::-1]) for part in reversed(word.split()))
            for _, word in sorted(words.items(), key=lambda item: -len(item[1]))
            if word
        ]
        reversed_label = re.compile(
            r"[:：][ \t]*\**(?:\d+[ \t]*)?(?:" + "|".join(backwards) + r")(?:\*\*)?", re.I
        )
    question_line = re.compile(  # from its newline: a pattern that starts with one is searched fast
        rf"\n[{_MARKUP}]*+(?:\d++[.)][{_MARKUP}]*+)?+(?i:{_spaced(labels.question)})[ \t]*+\**+[ \t]*+[:：]"
        if labels.question.strip()
        else r"(?!)"  # the label turned off: no line opens with it
    )
    return Grammar(
        label,
        kinds,
        exact,
        observation,
        observation_at_end,
        observation_prefix_line,
        colon_runs,
        label_colons,
        reversed_label,
        question_line,
    )


def _spaced(word: str) -> str:
    """A pattern of ``word`` with any spaces or tabs between its parts (``Action  Input``)."""
    return r"[ \t]*".join(re.escape(part) for part in word.split())


# -- Finding the labels ------------------------------------------------------------------------------
_CLOSING_MARKUP = re.compile(r"(?:[*_]{1,3}(?=\s|\Z))?")
"""The rest of an emphasised label's markup, right after its colon: ``*Action Input:* x``, ``_Final
Answer:_ 42`` and ``***Final Answer:*** 42`` (the pattern takes only a closing ``**``); only for a
label that opens with ``*`` or ``_``, and never a value's own ``*args``."""


def find_labels(text: str, grammar: Grammar, limit: int | None = None) -> list[Label]:
    """Every label outside code fences, in order (the first ``limit`` of them); inside a line only
    when written exactly."""
    masked = mask_fences(text)
    found: list[Label] = []
    line_begins = 0  # the start of the current match's line
    last_word = -1  # the last character before the current match that is not markup or a list number
    scanned = 0  # line_begins and last_word are up to date for text[:scanned]
    for match in label_matches(masked, grammar):
        group = match.lastgroup  # the label's word: "bold", the only other group, closes before it
        assert group is not None and group != "bold"
        word = match[group]
        before = text[scanned : match.start()]
        if (newline := before.rfind("\n")) >= 0:
            line_begins = scanned + newline + 1
        if kept := _without_line_markup(before):
            last_word = scanned + len(kept) - 1
        scanned = match.start()
        line_start = last_word < line_begins
        if not line_start and " ".join(word.split()) != grammar.words[group]:
            continue
        start = line_begins if line_start else match.start()
        opened = masked[max(match.start() - 1, 0) : match.start() + 1].strip(" \t\n").startswith(("*", "_"))
        end = _CLOSING_MARKUP.match(masked, match.end()).end() if opened else match.end()  # type: ignore[union-attr]
        if not line_start and end > match.end() and masked[match.start() - 1] in "*_":
            start -= 1  # "I know. *Final Answer:* 42": the opening star is the label's, as "**" is
        found.append(Label(grammar.kinds[group], start, end, line_start))
        if len(found) == limit:
            break
    return found


def _without_line_markup(before: str) -> str:
    """``before`` less the markup and list number (``2.``, ``3)``) that may stand between the start
    of a line and a label that opens it: ``2. Action:`` and ``- 3) *Action:*`` open their lines, while
    in "the count was 2. Action:" the label follows a word."""
    kept = before.rstrip(_LINE_MARKUP)
    if kept.endswith((".", ")")) and kept[-2:-1].isdigit():
        kept = kept[:-1].rstrip("0123456789").rstrip(_LINE_MARKUP)
    return kept


def label_matches(masked: str, grammar: Grammar) -> Iterator[re.Match[str]]:
    """What ``grammar.label.finditer(masked)`` finds, looking only where a label can be.

    A label ends at a colon (and at most 2 characters past it, a closing ``**``), and holds no colon
    and no newline before it. When every label word starts and ends with a letter, only the colons
    after a letter that ends a word (or a space, tab, star or digit: ``Action 1:``, ``**Action**:``)
    are looked at, and the label is read backwards from each one on the reversed text, so the time
    spent on a colon does not grow with the text before it. Otherwise each run that starts after the
    previous colon or newline and is long enough for a label word is searched.
    """
    if grammar.colon_runs is None:
        yield from grammar.label.finditer(masked)
        return
    if grammar.label_colons is not None and grammar.reversed_label is not None:
        yield from _labels_read_backwards(masked, grammar.label, grammar.label_colons, grammar.reversed_label)
        return
    first_run, next_runs = grammar.colon_runs
    runs = [(0, first.end())] if (first := first_run.match(masked)) else []
    end = 0
    for start, colon in chain(runs, ((run.start() + 1, run.end()) for run in next_runs.finditer(masked))):
        match = grammar.label.search(masked, max(start, end), colon + 3)
        if match:
            end = match.end()
            yield match


def _labels_read_backwards(
    masked: str,
    label: re.Pattern[str],
    colons: tuple[re.Pattern[str], re.Pattern[str]],
    backwards: re.Pattern[str],
) -> Iterator[re.Match[str]]:
    """The labels ending at ``colons``, each found by reading ``backwards`` from its colon.

    Read backwards, the alternatives of the label words are tried longest first and the optional
    ``**`` greedily, so the start found is the leftmost one, the one ``finditer`` finds. A label
    that would start inside the previous one (``**Action:**Input:``) is searched for after it.
    """
    reversed_text = ""
    last = len(masked) - 1
    end = 0  # where the previous label ended
    for colon in colons[1 if "：" in masked else 0].finditer(masked):
        position = colon.start()
        if position < end:
            continue
        reversed_text = reversed_text or masked[::-1]
        backward = backwards.match(reversed_text, last - position)
        if backward is None:
            continue
        start = last + 1 - backward.end()
        match = label.match(masked, start, position + 3) if start >= end else None
        if match is None or match.end() <= position:
            match = label.search(masked, end, position + 3)
            if match is None:
                continue
        end = match.end()
        yield match


_TURN_KINDS = frozenset({Kind.THOUGHT, Kind.ACTION, Kind.INPUT, Kind.OBSERVATION, Kind.FINAL})


def opens_turn(text: str, label: Label, grammar: Grammar) -> bool:
    """Whether ``label`` opens its line with a word of the format's turn (``Thought``, ``Action``,
    ``Action Input``, ``Observation``, ``Final Answer``): after a Final Answer, such a line starts a
    turn the model invented, while a line that opens with an alias (``Input: a list``) is prose."""
    if not label.line_start or label.kind not in _TURN_KINDS:
        return False
    written = grammar.label.search(text, label.start, label.end)
    return written is not None and written.lastgroup != "input_alias"


def thought_before(text: str, found: list[Label], decision: int) -> str:
    """The text of the Thought label before the decision (to the next label), or the text before
    the first label when there is none."""
    for index, label in enumerate(found):
        if label.kind == Kind.THOUGHT and label.start < decision:
            end = found[index + 1].start if index + 1 < len(found) else len(text)
            return text[label.end : end].strip()
    first = min([label.start for label in found] + [decision])
    return text[:first].strip()


def outside_strings(text: str, found: list[Label]) -> list[Label]:
    """The labels less those inside a string literal of an Action Input: in ``{"content":
    "Observation: the sample turned blue"}`` or ``print('Final Answer: ' + x)`` the label is the
    input's text (cutting there wrote an empty file). Strings are looked for only from the first
    Action Input's value to the end of each line, so the apostrophes of a Thought ("the '90s",
    "players'") pair with nothing; a label that opens a line always counts."""
    first_input = next((label.end for label in found if label.kind == Kind.INPUT), None)
    if first_input is None:
        return found
    spans_of: dict[int, tuple[list[int], list[tuple[int, int]]]] = {}
    kept = []
    for label in found:
        if not label.line_start and label.start >= first_input:
            begin = max(text.rfind("\n", 0, label.start) + 1, first_input)
            if begin not in spans_of:
                end = text.find("\n", label.start)
                spans = quoted_spans(text[begin : len(text) if end < 0 else end])
                spans_of[begin] = ([start for start, _ in spans], spans)
            starts, spans = spans_of[begin]
            index = bisect_left(starts, label.start - begin) - 1  # the last string opened before it
            if index >= 0 and label.end - begin <= spans[index][1]:
                continue
        kept.append(label)
    return kept


def quoted_in_answer(text: str, found: list[Label], grammar: Grammar) -> tuple[list[Label], set[int]]:
    """The labels less those a Final Answer quotes, and the starts of the lines that quote them.

    After a Final Answer, a line that opens with a label is the model's invented next turn, unless the
    answer is about the format: "Each step has three lines:" then "Thought: …", "Action: …", or a
    numbered list of them. A label line (or a ``Question:`` line) is quoted when the line right before
    it, within the answer, ends with a colon (the answer introduces it) or is quoted itself; every
    label on a quoted line is text. "Final Answer: Paris" then "2. Question: And Italy?" is still a
    turn the model invented."""
    final = next((label for label in found if label.kind == Kind.FINAL), None)
    if final is None:
        return found, set()
    starts = {label.start for label in found if label.start > final.end and opens_turn(text, label, grammar)}
    starts.update(match.start() + 1 for match in grammar.question_line.finditer(mask_fences(text), final.end))
    quoted: set[int] = set()
    for start in sorted(starts):
        previous = text.rfind("\n", 0, start - 1) + 1
        before = text[max(previous, final.end) : start].strip()
        if before and (before.endswith((":", "：")) or previous in quoted):
            quoted.add(start)
    if not quoted:
        return found, quoted
    lines = sorted(quoted)
    return [label for label in found if not _on_line(text, label.start, lines)], quoted


def _on_line(text: str, position: int, line_starts: list[int]) -> bool:
    """Whether ``position`` is on one of the lines that start at ``line_starts`` (sorted)."""
    index = bisect_right(line_starts, position) - 1
    return index >= 0 and position < _line_end(text, line_starts[index])


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end
