"""The scratchpad and the prompt: pure text, tested with no model."""

from __future__ import annotations

import pytest

from explicit_react import parser
from explicit_react.errors import PromptWarning
from explicit_react.prompt import ReActPrompt, ToolSpec, load_template, render
from explicit_react.scratchpad import ScratchpadLimits, render_findings, render_step, truncate_middle
from explicit_react.scratchpad import render as render_scratchpad
from explicit_react.types import Step


def test_truncate_middle_keeps_head_and_tail_and_says_how_much_was_cut() -> None:
    text = "A" * 100 + "B" * 100
    cut = truncate_middle(text, 60)
    assert cut.startswith("A" * 40) and cut.endswith("B" * 20)
    assert "[... 140 characters cut ...]" in cut
    assert truncate_middle("short", 60) == "short"


def test_a_step_renders_in_the_format_the_model_writes() -> None:
    step = Step("think", "search", {"q": "x"}, "found", log="raw")
    assert render_step(step) == 'Thought: think\nAction: search\nAction Input: {"q": "x"}\nObservation: found'


def test_an_unreadable_reply_is_shown_with_its_feedback() -> None:
    step = Step("", "", "", "Error: use the format", log="just prose")
    assert render_step(step) == "just prose\nObservation: Error: use the format"


def test_compaction_summarises_older_steps_and_drops_the_oldest() -> None:
    steps = [Step(f"t{i}", "search", f"q{i}", f"obs{i} " * 50) for i in range(10)]
    text = render_scratchpad(steps, ScratchpadLimits(keep_recent=2, max_summary_lines=3, summary_chars=20))
    assert "Earlier steps, summarised (8 steps):" in text
    assert "- steps 1-5: omitted" in text
    assert "- step 6: search(q5) -> obs5 obs5 obs5 obs5..." in text
    assert text.count("Action: search") == 2 and "Thought: t9" in text and "Thought: t5" not in text


def test_no_compaction_when_disabled() -> None:
    steps = [Step(f"t{i}", "search", f"q{i}", "o") for i in range(10)]
    assert render_scratchpad(steps, ScratchpadLimits(keep_recent=None)).count("Action: search") == 10


LOOKUP = Step("find it", "search", "Lumacrab battery", "The Lumacrab battery lasts 90 minutes.")
REPEAT = Step(
    "find it", "search", "Lumacrab battery", "Error: you already called search", error="repeated_call"
)
WORDS = Step("compute", "calculator", "90 minutes / 60", "Error: numbers, not words", error="tool_error")
SUM = Step("convert", "calculator", "90 / 60", "1.5")


def test_findings_show_each_result_once_then_the_failed_calls() -> None:
    text = render_findings([LOOKUP, REPEAT, WORDS, SUM, Step("", "", "", "Error: format", log="prose")])
    assert text == (
        "search: Lumacrab battery\nThe Lumacrab battery lasts 90 minutes.\n\n"
        "calculator: 90 / 60\n1.5\n\n"
        "These calls failed:\n- calculator: 90 minutes / 60 -> Error: numbers, not words"
    )


def test_findings_treat_calls_as_loop_detection_does() -> None:
    """The same call (keys in another order, other spacing) once; text that looks like a dict is
    another call than the dict (with loop detection off, repeats run and succeed again)."""
    steps = [
        Step("", "lookup", {"a": 1, "b": "x  y"}, "first"),
        Step("", "lookup", {"b": "x y", "a": 1}, "again"),
        Step("", "lookup", '{"a": 1, "b": "x y"}', "as text"),
    ]
    text = render_findings(steps)
    assert "first" in text and "again" not in text and "as text" in text


def test_findings_when_nothing_was_found() -> None:
    """The failed calls say what could not be found; with no call at all, the findings say so."""
    assert (
        render_findings([WORDS])
        == "These calls failed:\n- calculator: 90 minutes / 60 -> Error: numbers, not words"
    )
    unknown = Step(
        "", "battery_catalog", "x", "Error: there is no tool 'battery_catalog'", error="unknown_tool"
    )
    assert "- battery_catalog: x -> Error: there is no tool" in render_findings([unknown])
    assert render_findings([]) == "(no tool call was made)"
    assert render_findings([Step("", "", "", "Error: format", log="prose")]) == "(no tool call was made)"


def test_findings_are_bounded_like_the_scratchpad() -> None:
    steps = [Step("t", "search", f"q{i}", f"obs{i} " * 50) for i in range(10)]
    limits = ScratchpadLimits(keep_recent=2, max_summary_lines=3, summary_chars=20)
    text = render_findings(steps, limits)
    assert text.startswith("Earlier results (8):\n- 5 omitted\n- search: q5 -> obs5 obs5 obs5 obs5...\n")
    assert text.count("search: q") == 5 and "\n\nsearch: q9\nobs9" in text
    assert render_findings(steps, ScratchpadLimits(keep_recent=None)).count("\n\nsearch: q") == 9
    failures = [Step("", "search", f"f{i}", "Error: down", error="tool_error") for i in range(5)]
    assert render_findings(failures, limits).startswith("These calls failed:\n- 2 omitted\n- search: f2 ->")
    long = render_findings(
        [Step("t", "python", "x" * 900, "y" * 500)], ScratchpadLimits(max_observation_chars=100)
    )
    assert long.count("characters cut") == 2 and len(long) < 600


def test_an_empty_result_is_shown_as_such() -> None:
    assert render_findings([Step("", "search", "q", "  ")]) == "search: q\n(empty result)"


def test_the_final_call_gets_the_question_and_findings_not_the_transcript() -> None:
    tools = [ToolSpec("search", "Look things up.")]
    system, user = ReActPrompt().final_answer_messages(
        "How long, in hours?", tools, "search: x\n90 minutes", "ctx"
    )
    assert system["content"] == load_template("final_system").strip()
    assert "Look things up" not in system["content"] and "Ferrow" not in system["content"]
    assert user["content"].startswith("Context:\nctx\n\nQuestion: How long, in hours?")
    assert "search: x\n90 minutes" in user["content"]
    assert "No more tools can be used" in user["content"] and "say what is missing" in user["content"]
    assert "${" not in system["content"] + user["content"]
    _, empty = ReActPrompt().final_answer_messages("Why?", tools)
    assert "(no tool call was made)" in empty["content"]


def test_the_final_call_keeps_a_custom_system_prompt() -> None:
    """It may hold instructions the answer must follow (a language, a persona)."""
    with pytest.warns(PromptWarning):  # no ${tools}, no format: the model is told little
        custom = ReActPrompt("Answer in French. Tools: ${tool_names}.")
    system, _ = custom.final_answer_messages("Why?", [ToolSpec("search", "x")], "(none)")
    assert custom.custom_system and system["content"] == "Answer in French. Tools: search."
    same = ReActPrompt(load_template("system") + "\n")  # the default, passed in as text
    assert not same.custom_system
    assert same.final_answer_messages("Why?", [])[0]["content"] == load_template("final_system").strip()


def test_a_subclass_can_change_the_final_system_message() -> None:
    class Dated(ReActPrompt):
        def final_system(self, tools: list[ToolSpec]) -> str:  # type: ignore[override]
            return "Today is 2026-11-23. " + super().final_system(tools)

    system, _ = Dated().final_answer_messages("Why?", [])
    assert system["content"].startswith("Today is 2026-11-23. You answer a question")


def test_markers_in_the_prompt_files_are_the_parsers() -> None:
    fmt = load_template("format")
    for marker in (
        parser.THOUGHT,
        parser.ACTION,
        parser.ACTION_INPUT,
        parser.OBSERVATION,
        parser.FINAL_ANSWER,
    ):
        assert f"{marker}:" in fmt


def test_prompt_lists_tools_with_arguments_context_and_steps_left() -> None:
    tools = [
        ToolSpec("search", "Look things up."),
        ToolSpec(
            "read_file", "Read a file.", {"path": {"type": "string"}, "start": {"type": "integer"}}, ("path",)
        ),
    ]
    system, user = ReActPrompt().messages("Why?", tools, "Thought: a", "Some context", steps_left=3)
    assert "- search: Look things up." in system["content"]
    assert 'Action Input: {"path": string, "start": integer (optional)}' in system["content"]
    assert "Final Answer:" in system["content"] and "${" not in system["content"]
    assert user["content"] == (
        "Context:\nSome context\n\nQuestion: Why?\nThought: a\nYou have 3 steps left. "
        "Reply with a Thought, then an Action with its Action Input, or a Final Answer."
    )


def test_last_step_is_announced() -> None:
    _, user = ReActPrompt().messages("Why?", [], steps_left=1)
    assert "This is your last step" in user["content"]


def test_custom_system_prompt_and_dollar_signs_in_values() -> None:
    with pytest.warns(PromptWarning, match="only their names"):
        prompt = ReActPrompt("Tools: ${tool_names}. Price $5.\n${format}")
    system = prompt.system([ToolSpec("a", "costs $1"), ToolSpec("b", "x")])
    assert system.startswith("Tools: a, b. Price $5.")
    assert render("${x} and $y", x="$y") == "$y and $y"
