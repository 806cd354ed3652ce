"""Defects a review of local native tool calling found, each with the schema or reply that showed it.

1. A character above U+00FF in a name, an argument name or an enum value was escaped as ``\\x202F``,
   which GBNF reads as ``\\x20`` and the text "2F": the only call the grammar allowed was wrong.
2. Any ``allOf`` went to llama-cpp-python's converter, which merges it as objects: a described enum
   in pydantic v1 (``allOf: [{"$ref": ...}]``) became a rule forcing ``{}``.
3. ``tool_choice`` dicts in Anthropic's and OpenAI Responses' shapes were read as ``"auto"``.
4. A ``</tool_call>`` inside a string argument, which the grammar allows, ended the block there.
5. In the native modes, a call whose arguments broke the tool's schema was reported to the model as
   "not valid JSON", whatever the reason.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.tools import tool
from pydantic import BaseModel, Field

pytest.importorskip("llama_cpp")

from explicit_react import ExplicitReActAgent
from explicit_react.llama import ChatLlama
from explicit_react.llama_tools import ToolRequest, read_reply
from tests.test_llama import ScriptedLlama, call_text, raw_tool
from tests.test_llama_grammars import llama_accepts, one_argument, tool_grammar


@pytest.mark.parametrize(
    ("tool", "escape"),
    [
        (one_argument({"enum": ["10\u202f%", "20\u202f%"]}), "\\u202F"),
        (one_argument({"type": "integer"}, argument="a\u200bb"), "\\u200B"),
        (one_argument({"type": "string"}, name="tool\u2028x"), "\\u2028"),
        (one_argument({"enum": ["a\U000e0001b"]}), "\\U000E0001"),
        (one_argument({"enum": ["a\x7fb"]}), "\\x7F"),
    ],
)
def test_characters_past_ff_are_escaped_as_gbnf_reads_them(tool: Any, escape: str) -> None:
    grammar = tool_grammar(tool)
    assert escape in grammar and llama_accepts(grammar)
    assert "\\x20" not in grammar.replace("\\x20-", "")  # the old mis-escape of U+202F


@pytest.mark.parametrize(
    ("schema", "rule"),
    [
        ({"allOf": [{"enum": ["celsius", "fahrenheit"]}], "description": "unit"}, '"\\"celsius\\""'),
        ({"allOf": [{"type": "integer"}]}, "integer"),
        (
            {"allOf": [{"type": "string"}, {"maxLength": 5}]},
            "string | number",
        ),  # any value: checked on reading
    ],
)
def test_an_all_of_that_is_not_objects_is_not_written_as_an_object(schema: dict[str, Any], rule: str) -> None:
    grammar = tool_grammar(one_argument(schema))
    argument = next(line for line in grammar.splitlines() if line.startswith("alternative-0-arguments-q"))
    assert '"{" space "}"' not in argument and llama_accepts(grammar)
    assert rule in grammar


def test_a_pydantic_v1_described_enum_gives_a_call_that_follows_it() -> None:
    definitions = {"Unit": {"title": "Unit", "enum": ["celsius", "fahrenheit"], "type": "string"}}
    tool = raw_tool(
        "get_weather",
        {
            "type": "object",
            "definitions": definitions,
            "properties": {"unit": {"allOf": [{"$ref": "#/definitions/Unit"}], "description": "unit"}},
            "required": ["unit"],
        },
    )
    grammar = tool_grammar(tool)
    assert '"\\"celsius\\""' in grammar and llama_accepts(grammar)


@pytest.mark.parametrize(
    ("choice", "read"),
    [
        ({"type": "tool", "name": "add"}, "add"),
        ({"type": "function", "name": "add"}, "add"),
        ({"type": "function", "function": {"name": "add"}}, "add"),
        ({"type": "any"}, "required"),
        ({"type": "auto"}, "auto"),
    ],
)
def test_tool_choice_in_each_providers_shape(choice: dict[str, Any], read: str) -> None:
    request = ToolRequest.pop(
        {"tools": [one_argument({"type": "integer"}, name="add")], "tool_choice": choice}
    )
    assert request is not None and request.choice == read


@pytest.mark.parametrize("choice", [{"type": "function"}, {"type": "tool", "name": "nope"}])
def test_a_tool_choice_that_names_no_bound_tool_is_refused(choice: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="tool_choice"):
        ToolRequest.pop({"tools": [one_argument({"type": "integer"}, name="add")], "tool_choice": choice})


def test_a_closing_tag_inside_a_string_argument_is_the_arguments() -> None:
    text = 'Saved.<tool_call>{"name": "save_note", "arguments": {"text": "calls end with </tool_call>"}}</tool_call>'
    content, calls, invalid = read_reply(text)
    assert content == "Saved." and invalid == []
    assert [(c["name"], c["args"]) for c in calls] == [("save_note", {"text": "calls end with </tool_call>"})]


def test_blocks_that_are_not_json_are_read_as_before() -> None:
    content, calls, invalid = read_reply('a <tool_call>not json</tool_call> b <tool_call>{"name": "x"')
    assert content == "a  b" and calls == []
    assert [i["args"] for i in invalid] == ["<tool_call>not json</tool_call>", '<tool_call>{"name": "x"']


class TopArgs(BaseModel):
    n: int = Field(ge=1, le=5)


@tool(args_schema=TopArgs)
def top_results(n: int) -> str:
    """Return the top n results."""
    return "r"


def test_the_model_is_told_why_its_call_could_not_run() -> None:
    client = ScriptedLlama([call_text("top_results", n=50), "Done."])
    model = ChatLlama(model_path="unused.gguf", client=client)
    result = ExplicitReActAgent(model, [top_results], mode="tool_calling", max_iterations=3).run(
        "Top 50 results?"
    )
    observation = result.steps[0].observation
    assert "50 is greater than the maximum of 5" in observation and "not valid JSON" not in observation
