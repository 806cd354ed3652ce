"""The scratchpad and the prompt: pure text, tested with no model."""

from __future__ import annotations

from explicit_react import parser
from explicit_react.prompt import ReActPrompt, ToolSpec, load_template, render
from explicit_react.scratchpad import ScratchpadLimits, render_step, truncate_middle
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
