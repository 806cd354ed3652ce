"""Custom system prompts: both placeholder styles, unknown placeholders refused, missing parts warned."""

from __future__ import annotations

import warnings
from importlib import resources
from string import Template

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explicit_react import ConfigurationError, ExplicitReActAgent
from explicit_react.errors import PromptWarning
from explicit_react.prompt import ReActPrompt, ToolSpec, load_template, render
from explicit_react.testing import ScriptedChatModel
from tests.helpers import final, search

TOOLS = [ToolSpec("search", "Look up a fact.")]


@pytest.mark.parametrize(
    "template",
    [
        "Tools:\n${tools}\nNames: ${tool_names}\n${format}",
        "Tools:\n{tools}\nNames: {tool_names}\n{format}",
    ],
)
def test_both_placeholder_styles_render_the_tools_and_format(template: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        system = ReActPrompt(template).system(TOOLS)
    assert system.startswith("Tools:\n- search: Look up a fact.\nNames: search\nThought:")
    assert "{" not in system and "$" not in system


def test_langchain_style_keeps_doubled_braces_as_literal_braces() -> None:
    system = ReActPrompt('{tools}\n{format}\nReply with JSON like {{"a": 1}}.').system(TOOLS)
    assert system.endswith('Reply with JSON like {"a": 1}.')


def test_dollar_style_leaves_json_braces_alone() -> None:
    system = ReActPrompt('${tools}\n${format}\nJSON: {"a": 1}').system(TOOLS)
    assert system.endswith('JSON: {"a": 1}')


@pytest.mark.parametrize(
    ("template", "named"),
    [
        ("${tools} ${format} ${x}", r"\$\{x\}"),
        ("{tools} {format} {language}", r"\{language\}"),
        ("{tools} {format}\nQuestion: {input}\n{agent_scratchpad}", r"\{input\}.*the question"),
    ],
)
def test_unknown_placeholders_are_configuration_errors(template: str, named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        ReActPrompt(template)


def test_a_prompt_without_the_tools_warns_at_construction() -> None:
    model = ScriptedChatModel([])
    with pytest.warns(PromptWarning, match=r"no \$\{tools\} placeholder"):
        ExplicitReActAgent(model, [search], prompt="Be helpful.\n${format}")


def test_a_prompt_without_the_format_warns_at_construction() -> None:
    with pytest.warns(PromptWarning, match="reply format"):
        ReActPrompt("Be helpful. Tools: ${tools}")


def test_a_prompt_that_spells_out_the_format_needs_no_placeholder() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ReActPrompt("Tools: ${tools}\nWrite Thought:, Action:, Action Input: or Final Answer:.")


def test_the_default_prompt_passed_as_text_is_not_checked() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not ReActPrompt(load_template("system")).custom_system


def test_a_langchain_style_custom_prompt_reaches_the_model() -> None:
    model = ScriptedChatModel([final("Paris.")])
    agent = ExplicitReActAgent(model, [search], prompt="You can use:\n{tools}\n\n{format}")
    agent.run("Capital of France?")
    system = model.calls[0].messages[0].content
    assert "- search: Look up a fact." in system and "{tools}" not in system


_TEMPLATE_PARTS = st.sampled_from(
    ["$", "$$", "${", "}", "$a", "${a}", "${b}", "$b_1", "${ }", "$1", "a", " ", "\n", "{"]
)


@settings(max_examples=300, deadline=None)
@given(template=st.lists(st.one_of(_TEMPLATE_PARTS, st.text(max_size=3)), max_size=12).map("".join))
def test_render_fills_placeholders_as_string_template_does(template: str) -> None:
    values = {"a": "$b ${a}", "b": "x"}
    assert render(template, **values) == Template(template).safe_substitute(values)
    assert render(template) == Template(template).safe_substitute()


def test_every_prompt_file_renders_as_string_template_does() -> None:
    values = {
        "tools": "- t: x",
        "tool_names": "t",
        "format": "F",
        "question": "Q $x",
        "context": "",
        "scratchpad": "S",
    }
    for path in (resources.files("explicit_react") / "prompts").iterdir():
        text = path.read_text(encoding="utf-8")
        assert render(text, **values) == Template(text).safe_substitute(values)
