"""The scratchpad and the prompt: pure text, tested with no model."""

from __future__ import annotations

from explicit_react import parser
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


def test_findings_show_each_successful_call_once_without_thoughts_or_errors() -> None:
    text = render_findings([LOOKUP, REPEAT, WORDS, SUM, Step("", "", "", "Error: format", log="prose")])
    assert text == (
        "search: Lumacrab battery\nThe Lumacrab battery lasts 90 minutes.\n\ncalculator: 90 / 60\n1.5"
    )


def test_findings_show_the_failed_calls_when_none_succeeded() -> None:
    """So the answer at the limit can say what went wrong (a tool down, a file not found)."""
    assert render_findings([WORDS, WORDS]) == "calculator: 90 minutes / 60\nError: numbers, not words"
    assert render_findings([]) == "(no tool was called)"


def test_findings_are_bounded_like_the_scratchpad() -> None:
    steps = [Step("t", "search", f"q{i}", f"obs{i} " * 50) for i in range(10)]
    text = render_findings(steps, ScratchpadLimits(keep_recent=2, max_summary_lines=3, summary_chars=20))
    assert text.startswith("Earlier results, summarised (8):\n- 5 omitted\n- step 6: search(q5) -> obs5")
    assert text.count("search: q") == 2 and "search: q9\nobs9" in text
    long = render_findings([Step("t", "search", "q", "x" * 500)], ScratchpadLimits(max_observation_chars=100))
    assert "characters cut" in long and len(long) < 200


def test_the_final_call_gets_the_question_and_findings_not_the_transcript() -> None:
    tools = [ToolSpec("search", "Look things up.")]
    system, user = ReActPrompt().final_answer_messages(
        "How long, in hours?", tools, "search: x\n90 minutes", "ctx"
    )
    assert "Look things up" not in system["content"] and "Ferrow" not in system["content"]
    assert user["content"].startswith("Context:\nctx\n\nQuestion: How long, in hours?")
    assert "search: x\n90 minutes" in user["content"]
    assert "No more tools can be used" in user["content"] and "Final Answer:" in user["content"]
    assert "${" not in system["content"] + user["content"]


def test_the_final_call_keeps_a_custom_system_prompt() -> None:
    """It may hold instructions the answer must follow (a language, a persona)."""
    system, _ = ReActPrompt("Answer in French. Tools: ${tool_names}.").final_answer_messages(
        "Why?", [ToolSpec("search", "x")], "(no tool was called)"
    )
    assert system["content"] == "Answer in French. Tools: search."


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
    prompt = ReActPrompt("Tools: ${tool_names}. Price $5.\n${format}")
    system = prompt.system([ToolSpec("a", "costs $1"), ToolSpec("b", "x")])
    assert system.startswith("Tools: a, b. Price $5.")
    assert render("${x} and $y", x="$y") == "$y and $y"
