"""The labels of the ReAct format: ``Labels``, their patterns compiled once per ``Labels``, and every
label found in a reply (outside code fences), in linear time."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import NamedTuple

from explicit_react.scanners import mask_fences

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
    trailing_observation: re.Pattern[str]
    colon_runs: tuple[re.Pattern[str], re.Pattern[str]] | None
    """A run long enough to hold a label, up to a colon (within a line, since the last colon): at the
    start of the text, and after a colon or newline."""


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
    return Grammar(label, kinds, exact, trailing_observation, colon_runs)


# -- Finding the labels ------------------------------------------------------------------------------
def find_labels(text: str, grammar: Grammar) -> list[Label]:
    """Every label outside code fences, in order; inside a line only when written exactly."""
    masked = mask_fences(text)
    found = []
    line_begins = 0  # the start of the current match's line
    last_word = -1  # the last character before the current match that is not one of " \t#>-"
    scanned = 0  # line_begins and last_word are up to date for text[:scanned]
    for match in label_matches(masked, grammar):
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
        found.append(Label(grammar.kinds[group], start, match.end(), line_start))
    return found


def label_matches(masked: str, grammar: Grammar) -> Iterator[re.Match[str]]:
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
