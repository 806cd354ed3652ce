"""Defects found by a review of the reply parser, each with the reply that showed it.

1. The Thought of a JSON action blob kept its own ``Thought:`` label, an ``Action:`` label and the
   opening fence, and the next prompt showed "Thought: Thought: ..." and an unclosed fence.
2. Italic (``*Action:*``, ``_Action:_``) and numbered (``2. Action:``) labels did not open their
   lines, so an Action Input swallowed the labels after it.
3. Of two actions written with the input on the Action line, the second ran.
4. A Final Answer followed by an invented next turn (``Question:``, ``Thought:`` ...) kept that turn.
5. A leaked end-of-turn token was deleted rather than ending the reply (the invented turn after it
   was glued on), and ``</s>`` or ``<end_of_turn>`` were not recognised.
6. ``query="x"`` / ``query: "x"`` on the Action Input line reached the tool as text.
"""

from __future__ import annotations

import pytest
from langchain_core.tools import tool

from explicit_react import ExplicitReActAgent
from explicit_react.executor import ToolExecutor
from explicit_react.parser import parse, parse_in_full, plain_text
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import CalculatorTool, MockSearchTool
from explicit_react.types import Action, FinalAnswer

TOOLS = ["search", "calculator"]


# -- 1. The Thought of a JSON action blob -----------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        'Thought: I should search.\n```json\n{"action": "search", "action_input": "df"}\n```',
        'Question: df\nThought: I should search.\nAction:\n{\n  "action": "search",\n  "action_input": "df"\n}',
        'Thought: I should search.\nAction:\n```json\n{"action": "search", "action_input": "df"}\n```',
        'Thought: I should search.\n{"action": "search", "action_input": "df"}',
        'I should search.\n<tool_call>\n{"name": "search", "arguments": "df"}\n</tool_call>',
    ],
)
def test_a_json_blob_thought_is_the_thought_text_alone(text: str) -> None:
    result = parse(text)
    assert isinstance(result, Action) and (result.tool, result.tool_input) == ("search", "df")
    assert result.thought == "I should search."


def test_a_json_blob_after_no_thought_has_an_empty_thought_not_its_fence_or_tag() -> None:
    for text in (
        '```json\n{"action": "search", "action_input": "df"}\n```',
        '<tool_call>\n{"name": "search", "arguments": {"query": "df"}}\n</tool_call>',
    ):
        assert parse(text).thought == ""


def test_the_next_prompt_shows_a_json_blob_thought_once_and_no_open_fence() -> None:
    reply = (
        "Thought: I should look up the capital.\n"
        '```json\n{"action": "search", "action_input": "capital of France"}\n```'
    )
    model = ScriptedChatModel(replies=[reply, "Thought: done\nFinal Answer: Paris"])
    result = ExplicitReActAgent(model, [MockSearchTool()], max_iterations=3).run("Capital of France?")
    assert result.steps[0].thought == "I should look up the capital."
    prompt = model.calls[1].messages[-1].content
    assert "Thought: I should look up the capital.\nAction: search" in prompt
    assert "Thought: Thought:" not in prompt and "```" not in prompt


# -- 2. Italic and numbered labels ------------------------------------------------------------------
TWO_STEPS = [
    "*Thought:* I will search.\n*Action:* search\n*Action Input:* capital of France\n"
    "*Thought:* then I compute\n*Action:* calculator\n*Action Input:* 2+2",
    "_Thought:_ I will search.\n_Action:_ search\n_Action Input:_ capital of France\n"
    "_Thought:_ then I compute\n_Action:_ calculator\n_Action Input:_ 2+2",
    "1. Thought: I will search.\n2. Action: search\n3. Action Input: capital of France\n"
    "4. Thought: then I compute\n5. Action: calculator\n6. Action Input: 2+2",
    "- 1) *Thought:* I will search.\n- 2) *Action:* search\n- 3) *Action Input:* capital of France\n"
    "- 4) *Thought:* then I compute\n- 5) *Action:* calculator\n- 6) *Action Input:* 2+2",
]


@pytest.mark.parametrize("text", TWO_STEPS)
def test_italic_and_numbered_labels_open_their_lines(text: str) -> None:
    result = parse(text, tools=TOOLS)
    assert result == Action("search", "capital of France", "I will search.", result.log)


def test_italic_labels_are_read_as_the_plain_ones() -> None:
    """The last Final Answer that opens a line is the answer, and the label inside the Thought,
    with its opening star, ends the Thought: as for the same reply without the stars."""
    plain = parse("Thought: I know. Final Answer: 41 is wrong\nFinal Answer: 42", tools=TOOLS)
    italic = parse("*Thought:* I know. *Final Answer:* 41 is wrong\n*Final Answer:* 42", tools=TOOLS)
    assert isinstance(italic, FinalAnswer) and (italic.answer, italic.thought) == ("42", "I know.")
    assert (italic.answer, italic.thought) == (plain.answer, plain.thought)


@pytest.mark.parametrize(
    "thought",
    ["the count was 2. action: search for more", "see my_action: plan", "see *action: plan*"],
)
def test_a_label_after_a_word_number_or_underscore_in_a_line_does_not_open_it(thought: str) -> None:
    """Only markup and list numbering before a label make it open its line, and a label inside a
    line counts only in the label's own case: these lower-case ``action:`` are the Thought's words."""
    result = parse(f"Thought: {thought}\nAction: lookup\nAction Input: x")
    assert result == Action("lookup", "x", thought, result.log)


# -- 3. Two actions with their inputs on the Action lines -------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "Thought: I need the population of Paris first.\nAction: search: population of Paris\n"
        "Thought: then I take 12% of it\nAction: calculator: 2100000 * 0.12",
        "Thought: I need the population of Paris first.\nAction: search, population of Paris\n"
        "Action: calculator, 2100000 * 0.12",
        "Thought: I need the population of Paris first.\n**Action:** search: population of Paris\n"
        "**Action:** calculator: 2100000 * 0.12",
    ],
)
def test_of_two_actions_with_inputs_on_their_action_lines_the_first_runs(text: str) -> None:
    result = parse(text, tools=TOOLS)
    assert result == Action(
        "search", "population of Paris", "I need the population of Paris first.", result.log
    )


def test_an_action_written_inside_a_thought_still_gives_way_to_the_action_block() -> None:
    result = parse("Thought: My next Action: search, then compute.\nAction: calculator\nAction Input: 2+2")
    assert isinstance(result, Action) and (result.tool, result.tool_input) == ("calculator", "2+2")


# -- 4. A Final Answer followed by an invented next turn ---------------------------------------------
@pytest.mark.parametrize(
    "after",
    [
        "\n\nQuestion: What is the capital of Italy?\nThought: I need to search.\nAction: search\n"
        "Action Input: capital of Italy",
        "\nThought: I should double-check this with another search.",
        "\n**Question:** And Italy?",
        "\n2. Question: And Italy?",
        "\nObservation: Paris is the capital.",
        "\nAction: search",
        "\nAction Input: capital of Italy",
    ],
)
def test_a_final_answer_ends_at_an_invented_next_turn(after: str) -> None:
    result = parse("Thought: I now know the final answer\nFinal Answer: Paris" + after, tools=TOOLS)
    assert result == FinalAnswer("Paris", "I now know the final answer", result.log)
    assert result == parse_in_full(result.log, tools=TOOLS)


def test_the_final_answer_of_an_invented_turn_is_not_the_answer() -> None:
    """A Final Answer after an invented ``Question:`` answers a question nobody asked."""
    text = "Thought: known\nFinal Answer: Paris\n\nQuestion: And Italy?\nThought: known\nFinal Answer: Rome"
    result = parse(text, tools=TOOLS)
    assert result == FinalAnswer("Paris", "known", "Thought: known\nFinal Answer: Paris")


def test_a_question_echoed_before_the_reply_cuts_nothing() -> None:
    result = parse("Question: capital of France?\nThought: I know it.\nFinal Answer: Paris")
    assert result == FinalAnswer("Paris", "I know it.", result.log)


@pytest.mark.parametrize(
    "answer",
    [
        "The steps:\n1. Search the capital.\n2. Check the population.\n\nBoth are done.",
        "Use this:\n```python\nprint('Question: why?')\n```\nIt prints the question.",
        "First paragraph.\n\nSecond paragraph: it goes on.\nInput: a list\nOutput: the list, sorted.",
        "Paris.\nThe question: was it Paris? Yes.",
    ],
)
def test_a_multi_line_final_answer_stays_whole(answer: str) -> None:
    result = parse(f"Thought: done\nFinal Answer: {answer}", tools=TOOLS)
    assert isinstance(result, FinalAnswer) and result.answer == answer


def test_the_agent_answers_without_the_invented_turn() -> None:
    reply = (
        "Thought: I now know the final answer\nFinal Answer: Paris\n\nQuestion: And Italy?\nThought: search"
    )
    result = ExplicitReActAgent(ScriptedChatModel(replies=[reply]), [MockSearchTool()]).run("Capital?")
    assert result.answer == "Paris"


# -- 5. Leaked end-of-turn tokens --------------------------------------------------------------------
@pytest.mark.parametrize(
    "rest",
    [
        "<|im_end|>\n<|im_start|>user\nThanks! And Italy?",
        "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nThanks!",
        "</s>",
        "</s>\n[INST] Thanks! [/INST]",
        "<end_of_turn>\n<start_of_turn>user\nThanks!",
        "<|endoftext|>Human: thanks",
        "<|end|>\n<|user|>\nThanks!",
    ],
)
def test_a_reply_ends_at_a_leaked_end_of_turn_token(rest: str) -> None:
    result = parse("Thought: I know it.\nFinal Answer: Paris" + rest)
    assert isinstance(result, FinalAnswer) and result.answer == "Paris"


def test_an_action_input_ends_at_a_leaked_end_of_turn_token() -> None:
    result = parse("Thought: search\nAction: search\nAction Input: capital of France</s>\nObservation: x")
    assert isinstance(result, Action) and result.tool_input == "capital of France"


def test_plain_text_ends_at_a_leaked_end_of_turn_token() -> None:
    assert plain_text("The capital is Paris.<|im_end|>\n<|im_start|>user\nThanks!") == "The capital is Paris."


@pytest.mark.parametrize(
    "text, expected",
    [
        # A token named in quotes is text: code that strips it must reach the tool whole.
        (
            "Thought: t\nAction: python\nAction Input: print(s.replace('<|endoftext|>', ''))",
            "print(s.replace('<|endoftext|>', ''))",
        ),
        # HTML strikethrough, not Llama's end of sequence.
        ("Thought: t\nFinal Answer: The price was <s>$10</s> $8.", "The price was <s>$10</s> $8."),
        # A token before any text ends nothing.
        ("<|im_end|>\nThought: t\nFinal Answer: 42", "42"),
    ],
)
def test_an_end_token_that_ends_no_turn_is_left_alone(text: str, expected: str) -> None:
    result = parse(text)
    assert (result.tool_input if isinstance(result, Action) else result.answer) == expected


# -- 6. Keyword arguments on the Action Input line ---------------------------------------------------
@tool
def web_search(query: str, max_results: int = 3) -> str:
    """Search the web."""
    return f"searched {query!r} max_results={max_results}"


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"looked up {query!r}"


@pytest.mark.parametrize(
    "line, observation",
    [
        ('Action: web_search\nAction Input: query="capital of France", max_results=5',
         "searched 'capital of France' max_results=5"),
        ('Action: web_search(query="capital of France", max_results=5)',
         "searched 'capital of France' max_results=5"),
        ('Action: web_search, query="capital of France", max_results=5',
         "searched 'capital of France' max_results=5"),
        ("Action: web_search\nAction Input: query=capital of France", "searched 'capital of France' max_results=3"),
        ('Action: lookup\nAction Input: query="capital of France"', "looked up 'capital of France'"),
        ('Action: lookup\nAction Input: query: "capital of France"', "looked up 'capital of France'"),
        ("Action: lookup\nAction Input: query: capital of France", "looked up 'capital of France'"),
        ('Action: lookup: query: "capital of France"', "looked up 'capital of France'"),
        ('Action: lookup, query="capital of France"', "looked up 'capital of France'"),
    ],
)  # fmt: skip
def test_keyword_arguments_are_read_the_same_on_either_line(line: str, observation: str) -> None:
    executor = ToolExecutor([web_search, lookup])
    result = parse(f"Thought: t\n{line}", tools=list(executor.tools))
    assert isinstance(result, Action)
    assert executor.execute(result.tool, result.tool_input).observation == observation


@pytest.mark.parametrize(
    "tool_input, fitted",
    [
        ("x=5", {"expression": "x=5"}),  # not the calculator's argument
        ("a: b", {"expression": "a: b"}),
        ("expression = 2 + 3", {"expression": "2 + 3"}),
        ('expression="2 + 3"', {"expression": "2 + 3"}),
        ("expression: 2024", {"expression": "2024"}),  # a number for an argument that takes text
        ("expression == 2\nprint(1)", {"expression": "expression == 2\nprint(1)"}),
    ],
)
def test_keywords_are_read_only_when_they_name_the_tools_arguments(tool_input: str, fitted: object) -> None:
    assert ToolExecutor([CalculatorTool()]).fit_input("calculator", tool_input) == fitted


def test_code_that_assigns_a_name_of_the_argument_is_kept_as_code() -> None:
    @tool
    def python(code: str) -> str:
        """Run code."""
        return code

    executor = ToolExecutor([python])
    for code in ("code = 5; print(code)", "code = 5\nprint(code)", "x = 'a'"):
        assert executor.fit_input("python", code) == {"code": code}


# -- A Python literal JSON has no form of, in call syntax ---------------------------------------------
# Found by a review of the service path: search(query=b'...') reached json.dumps in the next prompt
# and in qa's step descriptions, and the run raised TypeError with its steps lost.
@pytest.mark.parametrize(
    ("call", "tool_input"),
    [
        ("search(query=b'population of Paris')", {"query": "population of Paris"}),
        ("search(b'population of Paris')", "population of Paris"),
        ("calculator(expression=(1, 2))", {"expression": [1, 2]}),
        ('search(query={"k": b"v"})', {"query": {"k": "v"}}),
        ("calculator(expression={1, 2})", {"expression": "{1, 2}"}),  # a set has no fixed order: as written
        ("calculator(expression=1j)", {"expression": "1j"}),
        ("calculator(expression={(1, 2): 3})", {"expression": "{(1, 2): 3}"}),
        ("calculator(1j)", "1j"),
    ],
)
def test_a_literal_in_call_syntax_is_read_as_json_holds_it(call: str, tool_input: object) -> None:
    parsed = parse(f"Thought: t\nAction: {call}", tools=TOOLS)
    assert isinstance(parsed, Action) and parsed.tool_input == tool_input


def test_a_run_given_bytes_in_call_syntax_goes_on_and_keeps_its_steps() -> None:
    from explicit_react import GeneralQAAgent
    from tests.helpers import final, search

    model = ScriptedChatModel(
        ["Thought: I will search.\nAction: search(query=b'population of Paris')", final("2.1 million")]
    )
    response = GeneralQAAgent(model, [search]).answer("How many people live in Paris?")
    assert response["answer"] == "2.1 million" and response["stop_reason"] == "success"
    assert response["detailed_steps"][0]["observation"] == "2100000"
    assert 'Action Input: {"query": "population of Paris"}' in model.calls[-1].prompt


def test_structured_input_json_cannot_write_is_shown_as_text() -> None:
    from explicit_react.scratchpad import format_tool_input

    assert format_tool_input({"x": {1}, "y": b"z"}) == '{"x": "{1}", "y": "b\'z\'"}'
