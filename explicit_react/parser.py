"""parse(text): read a model reply as an ``Action`` or a ``FinalAnswer``; the regexes and nothing else.

(Minimal first version; replaced by the full forgiving parser.)
"""

from __future__ import annotations

import json
import re

from explicit_react.errors import ParseError
from explicit_react.types import Action, FinalAnswer

THOUGHT = "Thought"
ACTION = "Action"
ACTION_INPUT = "Action Input"
OBSERVATION = "Observation"
FINAL_ANSWER = "Final Answer"

_FINAL = re.compile(r"Final Answer\s*:\s*(.*)", re.S | re.I)
_ACTION = re.compile(r"Action\s*:\s*(.*?)\n\s*Action Input\s*:\s*(.*)", re.S | re.I)
_THOUGHT = re.compile(r"^\s*(?:Thought\s*:)?\s*(.*?)\s*(?=\n\s*(?:Action|Final Answer)\s*:|\Z)", re.S | re.I)


def parse(text: str) -> Action | FinalAnswer:
    """Read a model reply; raise ``ParseError`` with feedback for the model when it cannot be read."""
    text = re.split(r"\n\s*Observation\s*:", text)[0]
    thought_match = _THOUGHT.match(text)
    thought = thought_match.group(1) if thought_match else ""
    if action := _ACTION.search(text):
        raw = action.group(2).strip()
        tool_input: object = raw
        if raw.startswith("{"):
            try:
                tool_input = json.loads(raw)
            except ValueError:
                pass
        return Action(action.group(1).strip(), tool_input, thought, text)  # type: ignore[arg-type]
    if final := _FINAL.search(text):
        return FinalAnswer(final.group(1).strip(), thought, text)
    raise ParseError(
        "Your reply had neither an Action with an Action Input nor a Final Answer. "
        "Reply in this format:\nThought: ...\nAction: <tool name>\nAction Input: <input>\n"
        "or\nThought: ...\nFinal Answer: <answer>",
        text,
    )
