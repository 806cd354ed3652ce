"""Properties of parse(), checked with hypothesis (the fast profile in conftest.py keeps this file to seconds).

Three kinds: what holds for any text (a result or a ParseError, and a well-formed result); what a
well-formed reply round-trips to; and that each linear-time scanner in the parser finds exactly
what the (backtracking) regex it replaced found, the regex kept here as the specification.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from explicit_react import Action, FinalAnswer, ParseError, json_text, parse, scanners
from explicit_react import labels as labels_module
from explicit_react import parser as parser_module
from explicit_react.llm import cut_invented_observation
from explicit_react.scratchpad import render_step
from explicit_react.types import Step

# Pieces that exercise every branch: labels (bold, numbered, spaced), fences, JSON, call syntax, junk.
PIECES = [
    "Thought:", "Action:", "Action Input:", "Observation:", "Final Answer:", "Answer:", "Input:",
    "**Action 1:**", "action input :", "FINAL ANSWER:", "Obs", "Finish[", "Final Answer",
    "`", "```", "````", "```json\n", "{", "}", "[", "]", "(", ")", '"', "'", ":", ",", "=", "\\",
    '{"action": "search", "action_input": ', '{"a": 1}', "[1, 2]", "True", "None", "null", "//", "/*",
    "\n", "\r\n", " ", "\t", "\x00", "\u00a0", "\u3000", "<|im_end|>", "search", "x", "42", "query=", "：", "**Thought**:", "Final  Answer：",
]  # fmt: skip
soup = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), max_size=30).map("".join)
NO_TOOL = {"", "none", "null", "n/a", "nothing"}


@given(st.one_of(soup, st.text()))
def test_any_text_gives_a_well_formed_result_or_a_parse_error(text: str) -> None:
    try:
        result = parse(text)
    except ParseError as error:
        assert error.feedback.strip()
        assert "Reply in exactly this format" in error.feedback
        return
    if isinstance(result, Action):
        assert result.tool == result.tool.strip() and result.tool.lower() not in NO_TOOL
        assert isinstance(result.tool_input, (str, dict, list))
    else:
        assert isinstance(result, FinalAnswer)
        assert result.answer.strip(), "an empty final answer must be a ParseError"


@given(soup)
def test_the_invented_observation_cut_keeps_a_prefix_and_the_first_line(text: str) -> None:
    cut = cut_invented_observation(text)
    assert text.startswith(cut.rstrip()) or text.rstrip() == cut
    assert text.split("\n", 1)[0].rstrip() in cut or not text.split("\n", 1)[0].strip()


# Round trips ------------------------------------------------------------------------------------
# Names as tools have them (the parser strips markdown noise such as a leading or trailing "_").
tool_names = st.from_regex(r"[A-Za-z](?:[A-Za-z0-9_]{0,14}[A-Za-z0-9])?", fullmatch=True).filter(
    lambda name: (
        name.lower() not in NO_TOOL | {"finish", "answer", "input", "thought", "action", "observation"}
    )
)
# Text without what the format gives meaning to (colons, quotes, brackets, backticks, newlines).
plain = st.text(
    st.characters(categories=["L", "N", "Zs"], exclude_characters="\u00a0"), min_size=1, max_size=30
)
words = plain.map(lambda text: " ".join(text.split())).filter(bool)
json_values = st.one_of(st.integers(-1000, 1000), st.booleans(), st.none(), words)
dict_inputs = st.dictionaries(
    st.from_regex(r"[a-z_]{1,10}", fullmatch=True), json_values, min_size=1, max_size=4
)


@given(tool_names, st.one_of(words, dict_inputs), words)
def test_a_rendered_step_parses_back_to_its_action(tool: str, tool_input: Any, thought: str) -> None:
    assume(isinstance(tool_input, dict) or tool_input.lower() not in {"none", "null"})
    reply = render_step(Step(thought=thought, action=tool, action_input=tool_input, observation="o"))
    result = parse(reply)
    assert isinstance(result, Action)
    assert (result.tool, result.tool_input, result.thought) == (tool, tool_input, thought)


@given(tool_names, st.one_of(words, dict_inputs), st.sampled_from(["```", "```text", "````"]))
def test_a_fence_around_the_whole_reply_changes_nothing(tool: str, tool_input: Any, fence: str) -> None:
    assume(isinstance(tool_input, dict) or tool_input.lower() not in {"none", "null"})
    reply = render_step(Step(thought="t", action=tool, action_input=tool_input, observation="o"))
    reply = reply.rsplit("\nObservation:", 1)[0]
    closing = fence.removesuffix("text")
    assert parse(f"{fence}\n{reply}\n{closing}") == parse(reply)


@given(words, words)
def test_a_final_answer_parses_back(thought: str, answer: str) -> None:
    result = parse(f"Thought: {thought}\nFinal Answer: {answer}")
    assert isinstance(result, FinalAnswer) and (result.thought, result.answer) == (thought, answer)


@pytest.mark.parametrize(
    "text",
    [
        "Thought: t\nAction: Final Answer\nAction Input: ",
        "Thought: t\nAction: Final Answer\nAction Input: ''",
        'Thought: t\nAction: Finish\nAction Input: "  "',
        '{"action": "Final Answer", "action_input": ""}',
        '{"action": "Final Answer", "action_input": null}',
    ],
)
def test_a_final_answer_given_as_an_action_with_no_answer_is_refused(text: str) -> None:
    with pytest.raises(ParseError, match="Final Answer is empty"):
        parse(text)


# The linear-time scanners find what the regexes they replaced found ----------------------------
FENCE_PAIR = re.compile(r"(?P<fence>`{3,}).*?(?P=fence)", re.S)
FENCED_BLOCK = re.compile(r"\A(?P<fence>`{3,})[\w+.-]*[ \t]*\n?(?P<body>.*?)\n?[ \t]*(?P=fence)\Z", re.S)
TOOL_NAME_NOISE = re.compile(r"\A[\s`'\"*_]+|[\s`'\"*_.,;:!]+\Z")
CALL = re.compile(r"\A(?P<name>[^()\[\]\n]+?)\s*\((?P<args>.*)\)\Z", re.S)
INVENTED_OBSERVATION = re.compile(r"^[ \t>*_#]*Observation\s*\d*\s*[:：]", re.IGNORECASE | re.MULTILINE)
fence_soup = st.lists(st.sampled_from(["`", "``", "```", "````", "a", "\n", " ", "\t", "json"]), max_size=20)


@given(fence_soup.map("".join))
def test_fence_spans_are_the_regex_matches(text: str) -> None:
    assert scanners.fence_spans(text) == [match.span() for match in FENCE_PAIR.finditer(text)]


@given(fence_soup.map("".join))
def test_a_fenced_body_is_the_regex_body(text: str) -> None:
    match = FENCED_BLOCK.match(text)
    assert scanners.fenced_body(text) == (match["body"] if match else None)


@given(st.text(st.sampled_from("`'\"*_ \t.,;:!ab\u3000\x85"), max_size=12))
def test_tool_name_noise_is_stripped_as_the_regex_did(name: str) -> None:
    assert scanners.tool_name(name) == TOOL_NAME_NOISE.sub("", name)


@given(st.text(st.sampled_from("()[]ab \n\t\x85"), max_size=12))
def test_call_syntax_reads_as_the_lazy_regex_did(text: str) -> None:
    old, new = CALL.match(text), scanners.CALL.match(text)
    assert (old is None) == (new is None)
    if old and new:
        assert old["args"] == new["args"]
        assert TOOL_NAME_NOISE.sub("", old["name"]) == scanners.tool_name(new["name"])


@given(
    st.lists(st.sampled_from([" ", "\t", "\n", ">", "*", "Observation", "observation", "1", ":", "x"])).map(
        "".join
    )
)
def test_the_invented_observation_pattern_matches_as_before(text: str) -> None:
    old = INVENTED_OBSERVATION.search(text, 1)
    assert cut_invented_observation(text) == (text[: old.start()].rstrip() if old else text)


def json_objects_by_decoding_at_every_brace(text: str) -> list[tuple[int, Any]]:
    """The definition _json_objects keeps: decode at every ``{``, skip past each object found."""
    decoder, objects, position = json.JSONDecoder(), [], 0
    while (start := text.find("{", position)) >= 0:
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            position = start + 1
            continue
        objects.append((start, value))
        position = end
    return objects


JSON_PIECES = ["{", "}", "[", "]", '"', ":", ",", " ", "\n", "1", "-", "0", ".", "e", "a", "true", "null"]
JSON_PIECES += [
    '"a"',
    '"k":',
    "\\",
    '\\"',
    "\\u00e9",
    "\\u12",
    "\x01",
    "NaN",
    "-Infinity",
    "01",
    '{"action": "x", ',
]


nested_json = st.recursive(
    json_values,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
)
json_soup = st.one_of(
    st.lists(st.sampled_from(JSON_PIECES), max_size=30).map("".join),
    nested_json.map(lambda value: f"x {json.dumps(value)} {{y"),
)


@given(json_soup)
def test_json_objects_are_those_found_by_decoding_at_every_brace(text: str) -> None:
    assert json_text.json_objects(text) == json_objects_by_decoding_at_every_brace(text)


@pytest.mark.parametrize("depth", [1, 99, 100])
def test_json_nested_up_to_the_limit_is_read(depth: int) -> None:
    nested = '{"a": ' * depth + "1" + "}" * depth
    result = parse(f"Thought: t\nAction: search\nAction Input: {nested}")
    assert isinstance(result, Action) and isinstance(result.tool_input, dict)
    assert json.dumps(result.tool_input) == json.dumps(json.loads(nested))


@pytest.mark.parametrize("depth", [101, 600, 5000])
def test_json_nested_past_the_limit_is_kept_as_text(depth: int) -> None:
    nested = '{"a": ' * depth + "1" + "}" * depth
    result = parse(f"Thought: t\nAction: search\nAction Input: {nested}")
    assert isinstance(result, Action) and result.tool_input == nested
    final = parse(f"Thought: t\nAction: Final Answer\nAction Input: {'[' * depth}{']' * depth}")
    assert isinstance(final, FinalAnswer) and final.answer == "[" * depth + "]" * depth


@given(
    soup,
    st.sampled_from(
        [
            parser_module.DEFAULT_LABELS,
            parser_module.Labels(action="Tool", action_input="Tool Input"),
            # a word that does not end with a letter: labels are searched for in colon runs instead
            parser_module.Labels(action="Action 1)", final_answer="Final Answer!"),
        ]
    ),
)
def test_labels_found_in_colon_runs_are_those_a_full_scan_finds(
    text: str, labels: parser_module.Labels
) -> None:
    grammar = labels_module.compile_labels(labels)
    found = [match.span() for match in labels_module.label_matches(text, grammar)]
    assert found == [match.span() for match in grammar.label.finditer(text)]


TRAILING_OBSERVATION = re.compile(  # what _cut_continuation searched the whole text for, before
    r"(?<!\S)Observation[ \t]*+[:：]?+\s*+\Z"
    r"|(?im:^[ \t]*+(?:Observation|Observatio|Observati|Observat|Observa|Observ|Obser|Obse|Obs)[ \t]*+\Z)"
)
observation_soup = st.lists(
    st.sampled_from(
        ["Observation", "observation", "Obs", "OBSERV", ":", "：", " ", "\t", "\n", "x", "\u3000"]
    )
).map("".join)


@given(observation_soup)
def test_a_trailing_observation_is_found_where_a_search_of_the_whole_text_finds_it(text: str) -> None:
    match = TRAILING_OBSERVATION.search(text)
    grammar = labels_module.compile_labels(parser_module.DEFAULT_LABELS)
    assert parser_module._trailing_observation(text, grammar) == (match.start() if match else None)
