"""Marks the lines of outside text (documents, chat turns, tool output) that could pass for the agent's own.

The prompt shows the run as lines that start with a label (``Question:``, ``Thought:``,
``Action:``, ``Action Input:``, ``Observation:``, ``Final Answer:``) and the context as ``[n]``
documents and ``Speaker:`` turns. A document or a tool's output can hold such lines too; shown as
they are, they would read as a step the agent took, an answer it gave, or a turn someone said. So
a line of outside text that starts with one of them (after white space, markdown's ``*``, ``_``,
``#``, ``` ` ``` or ``~``, a list item's number or bullet, and characters that show nothing, in any
case) gets ``> `` in front, the way a quoted line is
written. Every other line is left exactly as it is: ordinary text renders byte for byte the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from explicit_react.labels import ACTION, ACTION_INPUT, FINAL_ANSWER, OBSERVATION, THOUGHT

QUESTION = "Question"
"""The label of the question in the prompt (``prompts/question.txt``)."""
PROTOCOL_LABELS = (QUESTION, THOUGHT, ACTION, ACTION_INPUT, OBSERVATION, FINAL_ANSWER)
"""The labels of the ReAct format the prompt shows the run in."""
MARK = "> "
"""What a marked line starts with."""

# Every line break str.splitlines() knows: a model's tokenizer may read any of them as one.
_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e0fff"
)
"""A character class body of the characters that show nothing: format characters (zero-width
spaces and joiners, direction marks and isolates, the soft hyphen, tags), variation selectors and
blank fillers. Before a label they hide nothing from a tokenizer, so they must not hide it from
the marking either."""
# A list item's number or bullet may stand before a label ("2. Final Answer:", "- Observation:"):
# the web search numbers its results, and the parser reads such a line as the label.
_LIST_ITEM = (
    r"\(?\d{1,3}[.)]|\(?[A-Za-z]\)"
    r"|[-+\u2022\u2023\u25e6\u00b7\u25cf\u25cb\u25aa\u25a0\u2013\u2014\u2043\u2219\u27a2\u2192\u25b8\u25ba]"
)
# One starred union each (no two stars side by side): a long run of spaces is read once, not per split.
_LEAD = rf"(?:[^\S{_BREAKS}]|[*_#`~{INVISIBLE}]|{_LIST_ITEM})*"
# A number may stand before the colon ("Observation 2:", which the agent itself reads as an
# observation: llm.cut_invented_observation), and the colon may be a full-width one.
_COLON = rf"(?:[^\S{_BREAKS}]|[*_`~{INVISIBLE}])*(?:\d+(?:[^\S{_BREAKS}])*)?[:\uff1a]"
_DOCUMENT_MARKER = r"\[[ \t]*\d+[ \t]*\]"


def mark_lines(
    text: str,
    labels: Iterable[str] = PROTOCOL_LABELS,
    *,
    document_markers: bool = False,
    first_line: bool = False,
) -> str:
    """``text`` with ``MARK`` in front of each line that starts with one of ``labels`` and a colon
    (or with ``[n]`` when ``document_markers``). The first line is left alone unless
    ``first_line``: it usually follows a label of the agent's own (``Observation: ``)."""
    if not first_line and _A_BREAK.search(text) is None:
        return text  # one line, and the first is left alone (most observations: no regex pass)
    if not document_markers and ":" not in text and "\uff1a" not in text:  # every label ends in a colon
        return text
    labels = tuple(labels)
    pattern = _pattern(_longest_first(labels), document_markers, first_line)
    return pattern.sub(MARK, text) if pattern is not None else text


_A_BREAK = re.compile(f"[{_BREAKS}]")


@lru_cache(maxsize=64)
def _longest_first(labels: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted(set(labels), key=lambda label: (-len(label), label)))


@lru_cache(maxsize=64)
def _pattern(labels: tuple[str, ...], document_markers: bool, first_line: bool) -> re.Pattern[str] | None:
    words = [r"[ \t\u00a0]+".join(map(re.escape, label.split())) for label in labels if label.strip()]
    starts = [rf"(?:{'|'.join(words)}){_COLON}"] if words else []
    if document_markers:
        starts.append(_DOCUMENT_MARKER)
    if not starts:
        return None
    line_start = rf"(?:\A|(?<=[{_BREAKS}]))" if first_line else rf"(?<=[{_BREAKS}])"
    return re.compile(rf"{line_start}(?={_LEAD}(?:{'|'.join(starts)}))", re.IGNORECASE)
