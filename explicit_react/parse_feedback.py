"""The ``ParseError`` a reply that cannot be read raises: what was wrong, then the format to use.

Its ``feedback`` is written for the model and becomes the next observation: one sentence on what the
reply lacked or got wrong, then the format block of the prompt (``prompts/format.txt``) in the
labels the parser reads with, so the retry prompt shows exactly what to write.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from string import Template

from explicit_react.errors import ParseError
from explicit_react.labels import (
    ACTION,
    ACTION_INPUT,
    FINAL_ANSWER,
    OBSERVATION,
    THOUGHT,
    Kind,
    Label,
    Labels,
)


def missing_parts(text: str, found: list[Label], labels: Labels) -> ParseError:
    """Say which part of the format is missing."""
    kinds = [label.kind for label in found]
    if Kind.ACTION in kinds:
        return parse_error(
            f"Your reply has an {labels.action} but no {labels.action_input} line.", text, labels
        )
    if Kind.INPUT in kinds:
        return parse_error(
            f"Your reply has an {labels.action_input} but no {labels.action} line.", text, labels
        )
    if Kind.THOUGHT in kinds:
        problem = f"Your reply has a {labels.thought} but no {labels.action} and no {labels.final_answer}."
    else:
        problem = f"Your reply has no {labels.action} and no {labels.final_answer} line."
    return parse_error(problem, text, labels)


def parse_error(problem: str, text: str, labels: Labels) -> ParseError:
    """A ``ParseError`` for ``text``: the problem, then the format block in these labels."""
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
