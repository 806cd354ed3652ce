"""The model adapter: stop sequences, the client-side cut, content parts, usage, transient errors."""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from explicit_react.errors import ConfigurationError, ModelCallError
from explicit_react.grammar import final_answer_grammar, react_grammar, takes_grammar
from explicit_react.llm import ModelAdapter, cut_invented_observation, is_transient, message_text
from explicit_react.testing import ScriptedChatModel

MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello there"}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Action: a\nAction Input: b\nObservation: invented", "Action: a\nAction Input: b"),
        ("Action: a\nAction Input: b\n  observation 1: x", "Action: a\nAction Input: b"),
        ("Action: a\nAction Input: b\n**Observation:** x", "Action: a\nAction Input: b"),
        ("Final Answer: the Observation: line is quoted", "Final Answer: the Observation: line is quoted"),
        ("Observation: at the very start is kept", "Observation: at the very start is kept"),
    ],
)
def test_cut_invented_observation(text: str, expected: str) -> None:
    assert cut_invented_observation(text) == expected


def test_message_text_joins_text_parts_and_drops_thinking() -> None:
    parts = [{"type": "thinking", "thinking": "secret plan"}, {"type": "text", "text": "a"}, "b"]
    assert message_text(parts) == "ab"
    assert message_text(None) == ""


def test_usage_and_stop_are_passed_through() -> None:
    model = ScriptedChatModel(["Final Answer: x\nObservation: y"])
    completion = ModelAdapter(model).complete(MESSAGES)
    assert completion.text == "Final Answer: x"
    assert model.calls[0].stop == ["\nObservation:"]
    assert completion.usage.input_tokens == 3 and completion.usage.output_tokens == 3


def test_usage_metadata_from_the_provider_is_used() -> None:
    reply = AIMessage(
        content="Final Answer: x", usage_metadata={"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}
    )
    assert ModelAdapter(ScriptedChatModel([reply])).complete(MESSAGES).usage.total_tokens == 14


@pytest.mark.parametrize(
    ("meta", "total"),
    [
        ({"input_tokens": None, "output_tokens": 4}, 4),  # a count the client does not know
        ({"input_tokens": 10, "output_tokens": 4}, 14),  # no total: the sum
        ({"input_tokens": 10, "output_tokens": 4, "total_tokens": None}, 14),
        ({"input_tokens": "n/a", "output_tokens": 4, "total_tokens": 4}, 4),
    ],
)
def test_usage_counts_a_client_leaves_out_or_sends_as_none_are_zero(meta: dict[str, Any], total: int) -> None:
    """A reply whose usage holds ``None`` failed the call (``int(None)``): usage is no reason to fail."""
    from types import SimpleNamespace

    from explicit_react.llm import usage_of

    assert usage_of(SimpleNamespace(usage_metadata=meta)).total_tokens == total


def test_a_text_part_holding_none_is_no_text() -> None:
    assert (
        message_text([{"type": "text", "text": None}, "Final Answer: x"]) == "Final Answer: x"
    )  # not "None..."


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (ConnectionError("x"), True),
        (TimeoutError("x"), True),
        (type("RateLimitError", (Exception,), {})("429"), True),
        (type("ResourceExhausted", (Exception,), {})("quota"), True),
        (type("HTTPError", (Exception,), {"status_code": 503})("x"), True),
        (type("HTTPError", (Exception,), {"status_code": 400})("x"), False),
        (ValueError("bad"), False),
    ],
)
def test_is_transient(exc: Exception, transient: bool) -> None:
    assert is_transient(exc) is transient


def test_errors_are_wrapped_once_retries_are_spent() -> None:
    adapter = ModelAdapter(ScriptedChatModel([ConnectionError("down")] * 2), max_retries=1, retry_backoff=0)
    with pytest.raises(ModelCallError, match="after 2 attempts: ConnectionError: down"):
        adapter.complete(MESSAGES)


def test_the_backoff_slept_is_the_one_checked_against_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    from explicit_react import llm
    from explicit_react.deadline import Deadline

    draws = iter([0.01, 50.0])  # a second draw would be far past the deadline
    slept: list[float] = []
    monkeypatch.setattr(ModelAdapter, "_delay", lambda self, attempt: next(draws))
    monkeypatch.setattr(llm.time, "sleep", slept.append)
    model = ScriptedChatModel([ConnectionError("blip"), AIMessage(content="Final Answer: ok")])
    completion = ModelAdapter(model, max_retries=1).complete(MESSAGES, deadline=Deadline(30))
    assert completion.text == "Final Answer: ok"
    assert slept == [0.01]


def test_async_callable_models_are_awaited() -> None:
    async def complete(messages: list[dict[str, str]]) -> str:
        return f"Final Answer: {len(messages)}"

    assert asyncio.run(ModelAdapter(complete).acomplete(MESSAGES)).text == "Final Answer: 2"


def test_not_a_model_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        ModelAdapter("gemini")


# --- the llama.cpp grammar ----------------------------------------------------------------------


def test_react_grammar_allows_only_the_given_tool_names() -> None:
    grammar = react_grammar(["calculator", 'odd"name'])
    assert 'tool ::= "calculator" | "odd\\"name"' in grammar
    assert grammar.startswith("root ::= knows final | thought (action | final)")
    assert '"Final Answer: "' in grammar
    assert react_grammar([]) == final_answer_grammar()  # no tool left: only an answer


# A GBNF grammar without recursion describes a regular language; written as a Python regex it can be
# checked against strings here, without llama.cpp (which compiles a grammar only against a vocabulary).
_GBNF_TOKEN = re.compile(
    r'\s*(?:(?P<lit>"(?:[^"\\]|\\.)*")|(?P<cls>\[(?:[^\]\\]|\\.)*\])|(?P<name>[a-zA-Z0-9-]+)'
    r"|(?P<rep>\{\d+(?:,\d*)?\}|[+*?])|(?P<op>[()|]))"
)


def _gbnf_regex(grammar: str) -> re.Pattern[str]:
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())

    def expand(name: str) -> str:
        parts, body = [], rules[name]
        for token in _GBNF_TOKEN.finditer(body):
            if token["lit"]:
                literal = token["lit"][1:-1].replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
                parts.append(re.escape(literal))
            elif token["cls"] or token["rep"] or token["op"]:
                parts.append(token[0].strip().replace("(", "(?:") if token["op"] else token[0].strip())
            else:
                parts.append(f"(?:{expand(token['name'])})")
        assert "".join(t[0] for t in _GBNF_TOKEN.finditer(body)).strip() == body.strip()
        return "".join(parts)

    return re.compile(expand("root"))


def _allows(grammar: str, text: str) -> bool:
    return _gbnf_regex(grammar).fullmatch(text) is not None


@pytest.mark.parametrize(
    ("text", "allowed"),
    [
        ("Thought: look it up\nAction: calculator\nAction Input: 2 + 2", True),
        ("Thought: add\n\nAction: search\nAction Input: a\nb", True),
        ("Thought: done\nFinal Answer: 4 wheels", True),
        ("Thought: I now know the final answer, in wheels\nFinal Answer: 4 wheels", True),
        # The format's "I now know the final answer" is followed by the answer, never another call.
        ("Thought: I now know the final answer\nAction: calculator\nAction Input: 2 + 2", False),
        ("Thought: I now know the final answer. Check it.\nAction: search\nAction Input: x", False),
        # Only that exact opening: a Thought that merely starts like it may act.
        ("Thought: I now\nAction: search\nAction Input: x", True),
        ("Thought: I now know the final\nAction: search\nAction Input: x", True),
        ("Thought: I now know what to search\nAction: search\nAction Input: x", True),
        ("Thought: It is known\nAction: search\nAction Input: x", True),
        ("Thought: x\nAction: other\nAction Input: q", False),  # not a shown tool
        ("Action: search\nAction Input: q", False),  # no Thought
        ("Thought: two\nlines\nFinal Answer: x", False),  # the Thought is one line
        ("Thought: " + "x" * 400 + "\nFinal Answer: x", True),
        ("Thought: " + "x" * 430 + "\nFinal Answer: x", False),  # at most ~400 characters
    ],
)
def test_the_react_grammar_accepts_exactly_the_reply_shapes_it_should(text: str, allowed: bool) -> None:
    assert _allows(react_grammar(["calculator", "search"]), text) is allowed


def test_the_final_answer_grammar_allows_only_a_thought_and_an_answer() -> None:
    grammar = final_answer_grammar()
    assert _allows(grammar, "Thought: I now know the final answer\nFinal Answer: 4")
    assert _allows(grammar, "Thought: sum it\nFinal Answer: 4")
    assert not _allows(grammar, "Thought: x\nAction: search\nAction Input: q")
    assert not _allows(grammar, "Final Answer: 4")


def test_the_final_answer_grammar_has_no_action() -> None:
    grammar = final_answer_grammar()
    assert "Action" not in grammar
    assert '"Final Answer: "' in grammar


def test_a_llama_cpp_chat_model_gets_the_grammars_unless_it_has_its_own() -> None:
    """The real detection and binding, with a ChatLlama whose llama.cpp client loads no file.

    (llama-cpp-python compiles a grammar only against a model's vocabulary, so whether llama.cpp
    accepts these grammars is tested with the real Gemma model in test_local_model.py.)"""
    llama_cpp = pytest.importorskip("llama_cpp")
    from explicit_react import ExplicitReActAgent
    from explicit_react.llama import ChatLlama
    from explicit_react.tools import calculator

    client = llama_cpp.Llama.__new__(llama_cpp.Llama)  # no weights: nothing is called here
    client._stack = contextlib.ExitStack()  # what Llama.close() releases
    model = ChatLlama(client=client, model_path="unused.gguf")
    assert takes_grammar(model)

    agent = ExplicitReActAgent(model, [calculator])
    assert agent.model.llm.kwargs["grammar"]._grammar == react_grammar(["calculator"])
    assert agent.model.llm.kwargs["stop"] == ["\nObservation:"]
    assert agent.final_model.llm.kwargs["grammar"]._grammar == final_answer_grammar()
    no_tools = ExplicitReActAgent(model, [])
    assert no_tools.model.llm.kwargs["grammar"]._grammar == final_answer_grammar()

    own = ChatLlama(client=client, model_path="unused.gguf", grammar='root ::= "x"')
    kept = ExplicitReActAgent(own, [calculator])
    assert kept.model.llm is own
    assert kept.final_model.llm is own


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Thought: look it up\nAction: knowledge_search\nAction Input: Lumacrab price", "knowledge_search"),
        ("Thought: add\n\nAction: calculator\nAction Input: 2 + 2", "calculator"),
        ("Thought: done\nFinal Answer: 4 wheels\nand more", None),
    ],
)
def test_what_the_grammar_allows_is_what_the_parser_reads(text: str, expected: str | None) -> None:
    """Strings of the grammar's shape parse to the action or answer they spell."""
    from explicit_react.parser import parse
    from explicit_react.types import Action, FinalAnswer

    decision = parse(text)
    if expected is None:
        assert isinstance(decision, FinalAnswer)
        assert decision.answer == "4 wheels\nand more"
    else:
        assert isinstance(decision, Action)
        assert decision.tool == expected


def test_only_llama_cpp_chat_models_take_a_grammar() -> None:
    class LooksLikeIt:
        client = object()
        grammar = None

    assert not takes_grammar(ScriptedChatModel(["Final Answer: x"]))
    assert not takes_grammar(LooksLikeIt())
    assert not takes_grammar(lambda messages: "x")


def test_other_models_are_called_as_they_are() -> None:
    from explicit_react import ExplicitReActAgent
    from explicit_react.tools import calculator

    model = ScriptedChatModel(["Thought: done\nFinal Answer: 4"])
    agent = ExplicitReActAgent(model, [calculator])
    assert agent.model.llm is model
    assert agent.final_model.llm is model
    assert agent.run("2 + 2?").answer == "4"


def _record_grammars(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The grammar sent with each turn, recorded through a stand-in for llama.cpp's binding."""
    from langchain_core.runnables import RunnableLambda

    import explicit_react.transport as transport

    sent: list[str] = []

    def record(llm: Any, grammar: str, stop: Any) -> Any:
        def call(messages: Any) -> Any:
            sent.append(grammar)
            return llm.invoke(messages, stop=list(stop))

        return RunnableLambda(call)

    monkeypatch.setattr(transport, "takes_grammar", lambda llm: True)
    monkeypatch.setattr(transport, "with_grammar", record)
    return sent


BOTH_TOOLS = 'tool ::= "calculator" | "search"'


def test_after_a_failed_call_is_repeated_the_grammar_leaves_that_tool_out_for_one_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from explicit_react import ExplicitReActAgent
    from explicit_react.tools import calculator
    from tests.helpers import search

    sent = _record_grammars(monkeypatch)
    words = "Thought: compute it\nAction: calculator\nAction Input: Lumacrab cost * 2"
    model = ScriptedChatModel(
        [
            words,
            words.replace(" cost", "  cost "),  # the same call, spaced differently
            "Thought: look it up\nAction: search\nAction Input: France",
            "Thought: done\nFinal Answer: 68 million",
        ]
    )
    result = ExplicitReActAgent(model, [calculator, search]).run("Population of France?")

    assert [step.error for step in result.steps] == ["tool_error", "repeated_call", None]
    assert result.answer == "68 million"
    assert [BOTH_TOOLS in g for g in sent] == [True, True, False, True]
    assert 'tool ::= "search"\n' in sent[2]


def test_a_repeated_call_that_had_succeeded_keeps_every_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model usually has what it needs then; forcing another tool made it compute nonsense."""
    from explicit_react import ExplicitReActAgent
    from explicit_react.tools import calculator
    from tests.helpers import search

    sent = _record_grammars(monkeypatch)
    lookup = "Thought: look it up\nAction: search\nAction Input: France"
    model = ScriptedChatModel([lookup, lookup, "Thought: done\nFinal Answer: 68 million"])
    result = ExplicitReActAgent(model, [calculator, search]).run("Population of France?")

    assert [step.error for step in result.steps] == [None, "repeated_call"]
    assert result.answer == "68 million"
    assert [BOTH_TOOLS in g for g in sent] == [True, True, True]


def test_the_phrase_the_grammar_holds_to_an_answer_is_the_one_the_prompt_teaches() -> None:
    from explicit_react.grammar import KNOWS_ANSWER
    from explicit_react.prompt import load_template

    assert f"Thought: {KNOWS_ANSWER}" in load_template("format")
