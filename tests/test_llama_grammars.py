"""Grammars llama.cpp is given: each checked before use, tool schemas written as grammars it accepts
and that mean what the schema says, and calls checked against their schema when read.

No model file is needed: llama.cpp's grammar parser runs without one. (A rejected grammar used to
crash the process at the first token; test_llama_local.py runs that against the real model in a
child process.)
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import pytest

pytest.importorskip("llama_cpp")

import llama_cpp
from langchain_core.caches import InMemoryCache
from langchain_core.globals import set_llm_cache
from langchain_core.messages import HumanMessage
from llama_cpp import LlamaGrammar
from pydantic import BaseModel, Field

from explicit_react.errors import ConfigurationError
from explicit_react.llama import ChatLlama
from explicit_react.llama_tools import ToolRequest
from tests.helpers import search
from tests.test_llama import RecordingLlama, ScriptedLlama, call_text, raw_tool


def llama_accepts(grammar: str) -> bool:
    """What llama.cpp's sampler does with the grammar when a generation starts (NULL: rejected)."""
    sampler = llama_cpp.llama_sampler_init_grammar(None, grammar.encode(), b"root")
    if sampler:
        llama_cpp.llama_sampler_free(sampler)
    return bool(sampler)


def tool_grammar(*tools: Any, choice: str = "required") -> str:
    request = ToolRequest(tuple(tools), choice)
    return request.grammar()


def one_argument(schema: dict[str, Any], name: str = "t", argument: str = "q") -> dict[str, Any]:
    return raw_tool(name, {"type": "object", "properties": {argument: schema}, "required": [argument]})


# -- Every grammar is checked before a generation can use it ----------------------------------------
TYPO = "root ::= undefined-rule"


@pytest.mark.parametrize(
    "call",
    [
        lambda client: ChatLlama(model_path="unused.gguf", client=client, grammar=TYPO).invoke("hi"),
        lambda client: (
            ChatLlama(model_path="unused.gguf", client=client)
            .bind(grammar=LlamaGrammar.from_string(TYPO, verbose=False))
            .invoke("hi")
        ),
        lambda client: ChatLlama(model_path="unused.gguf", client=client).invoke("hi", grammar=TYPO),
        lambda client: list(ChatLlama(model_path="unused.gguf", client=client).stream("hi", grammar=TYPO)),
    ],
    ids=["on the model", "bound", "given to invoke", "given to stream"],
)
def test_a_grammar_llama_cpp_rejects_is_a_configuration_error_before_any_generation(call: Any) -> None:
    """llama-cpp-python's LlamaGrammar.from_string only stores the text: a grammar with a typo reached
    llama.cpp's sampler, which crashed the process (SIGSEGV) at the first token."""
    client = RecordingLlama()
    with pytest.raises(
        ConfigurationError, match=r"llama\.cpp rejects .*Undefined rule identifier 'undefined-rule'"
    ):
        call(client)
    assert client.requests == []


def test_a_good_grammar_given_as_text_reaches_llama_cpp_as_a_llama_grammar() -> None:
    client = RecordingLlama()
    ChatLlama(model_path="unused.gguf", client=client, grammar='root ::= "x"').invoke("hi")
    sent = client.requests[-1]["grammar"]
    assert isinstance(sent, LlamaGrammar) and sent._grammar == 'root ::= "x"'


class ZipInput(BaseModel):
    zip_code: str = Field(pattern=r"^\d{5}$", description="A US zip code")


class Note(BaseModel):
    text: str = Field(max_length=2000)
    tags: list[str] = Field(default_factory=list, max_length=5000)


ODD_SCHEMAS = {
    "pattern with \\d": ZipInput,
    "quote in the tool name": one_argument({"type": "string"}, name='say"hi'),
    "backslash in the tool name": one_argument({"type": "string"}, name="dir\\list"),
    "quote in an argument name": one_argument({"type": "string"}, argument='a"b'),
    "backslash in an argument name": one_argument({"type": "integer"}, argument="a\\b"),
    "quote in an enum": one_argument({"enum": ['12" pizza', "small"]}),
    "backslash in an enum": one_argument({"enum": ["C:\\temp", "C:\\new"]}),
    "quote in a const": one_argument({"const": 'say "hi"'}),
    "backslash in a pattern": one_argument({"type": "string", "pattern": r"^\w+\.\w+$"}),
    "quote in a pattern": one_argument({"type": "string", "pattern": '^[^"]+$'}),
    "unanchored pattern": one_argument({"type": "string", "pattern": "[A-Z]{3}"}),
    "pattern llama.cpp cannot follow": one_argument({"type": "string", "pattern": r"^(?=a)\w+$"}),
    "long maxLength and maxItems": Note,
    "emoji and accents": one_argument({"enum": ["café", "😀"]}, name="t😀"),
}


@pytest.mark.parametrize("tool", ODD_SCHEMAS.values(), ids=ODD_SCHEMAS.keys())
def test_ordinary_tool_schemas_give_grammars_llama_cpp_accepts(tool: Any) -> None:
    """Each of these gave a grammar bind_tools accepted and llama.cpp then rejected (a crash at the
    first token), or made bind_tools refuse the tool (an unanchored pattern)."""
    model = ChatLlama(model_path="unused.gguf", client=ScriptedLlama([]))
    model.bind_tools([tool], tool_choice="required")
    from langchain_core.utils.function_calling import convert_to_openai_tool

    assert llama_accepts(tool_grammar(convert_to_openai_tool(tool)))


def test_bind_tools_names_the_tool_whose_grammar_llama_cpp_rejects(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should a schema still give a grammar llama.cpp rejects, bind_tools says which tool, not a run."""
    from explicit_react import llama_tools

    real = llama_tools.call_json_rules

    def broken_for_odd(schema: Any) -> str:
        rules = real(schema)
        return rules + ("\nodd ::= undefined" if '"odd"' in json.dumps(schema) else "")

    monkeypatch.setattr(llama_tools, "call_json_rules", broken_for_odd)
    model = ChatLlama(model_path="unused.gguf", client=ScriptedLlama([]))
    fine = one_argument({"type": "string"}, name="fine")
    with pytest.raises(ConfigurationError, match=r"call grammar of the tool 'odd'.*undefined"):
        model.bind_tools([fine, one_argument({"type": "string"}, name="odd")])


@pytest.mark.parametrize(
    ("tool", "literal"),
    [
        (one_argument({"enum": ["C:\\temp"]}), r'"\"C:\\\\temp\""'),  # the JSON text "C:\\temp"
        (one_argument({"type": "integer"}, argument="a\\b"), r'"\"a\\\\b\""'),
        (one_argument({"type": "string"}, name="dir\\list"), r'"\"dir\\\\list\""'),
        (one_argument({"const": 'say "hi"'}), r'"\"say \\\"hi\\\"\""'),
        (one_argument({"enum": ["café"]}), '"\\"café\\""'),  # non-ASCII as it is, not \u00e9
    ],
)
def test_names_and_values_are_written_as_the_json_text_that_means_them(tool: Any, literal: str) -> None:
    """llama-cpp-python escaped " but not \\ in these literals: the grammar forced "C:\\temp" (a tab)
    for the enum value C:\\temp, the key 'a\\x08' for the argument a\\b, and a name no call could use."""
    assert literal in tool_grammar(tool)


# -- What the grammar leaves out is checked when the call is read -----------------------------------
@pytest.mark.parametrize(
    ("tool", "args", "problem"),
    [
        (ZipInput, {"zip_code": "1000"}, "does not match"),
        (Note, {"text": "x" * 2001}, "is too long"),
        (one_argument({"enum": ["C:\\temp"]}), {"q": "C:\temp"}, "is not one of"),
        (one_argument({"type": "integer"}), {}, "'q' is a required property"),
    ],
)
def test_a_call_that_breaks_its_schema_is_an_invalid_call(
    tool: Any, args: dict[str, Any], problem: str
) -> None:
    """Under the model's own grammar nothing holds the call to the schema; and a pattern or a bound
    the grammar cannot write is left to this check."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    name = convert_to_openai_tool(tool)["function"]["name"]
    for grammar in (None, "root ::= [^\\x00]*"):
        client = ScriptedLlama([call_text(name, **args)])
        model = ChatLlama(model_path="unused.gguf", client=client, grammar=grammar)
        reply = model.bind_tools([tool], tool_choice="required").invoke("q")
        assert reply.tool_calls == []
        [invalid] = reply.invalid_tool_calls
        assert invalid["name"] == name and problem in str(invalid["error"]), invalid
        assert str(invalid["args"]).startswith("<tool_call>")  # not JSON: stays invalid when streamed


def test_a_call_that_follows_its_schema_is_a_call() -> None:
    client = ScriptedLlama([call_text("zip_input", zip_code="10001")])
    reply = ChatLlama(model_path="unused.gguf", client=client).bind_tools([ZipInput]).invoke("q")
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("zip_input", {"zip_code": "10001"})]


# -- LangChain's bind_tools options, and arguments llama.cpp does not take ---------------------------
class LlamaSignatureClient(ScriptedLlama):
    """A scripted client whose create_chat_completion takes exactly what llama-cpp-python's does."""

    def create_chat_completion(self, **request: Any) -> Any:
        inspect.signature(llama_cpp.Llama.create_chat_completion).bind(
            self, **request
        )  # TypeError as llama.cpp
        return super().create_chat_completion(**request)

    create_chat_completion.__signature__ = inspect.signature(  # type: ignore[attr-defined]
        llama_cpp.Llama.create_chat_completion
    )


def test_langchains_bind_tools_options_are_accepted() -> None:
    """bind_tools(strict=True) and parallel_tool_calls=False (with_structured_output can pass them)
    reached create_chat_completion, a TypeError at the first call."""
    client = LlamaSignatureClient([call_text("search", query="x")] * 2)
    model = ChatLlama(model_path="unused.gguf", client=client)
    for options in ({"strict": True}, {"parallel_tool_calls": False}):
        reply = model.bind_tools([search], tool_choice="required", **options).invoke("q")
        assert [c["name"] for c in reply.tool_calls] == ["search"]


def test_an_argument_llama_cpp_does_not_take_is_a_configuration_error() -> None:
    client = LlamaSignatureClient(["hi"])
    with pytest.raises(ConfigurationError, match="takes no argument colour"):
        ChatLlama(model_path="unused.gguf", client=client).bind(colour="red").invoke("q")
    assert client.requests == []


# -- LangChain's LLM cache --------------------------------------------------------------------------
class CountingLlama(RecordingLlama):
    """Answers each call with its number, so a reply from LangChain's cache is seen."""

    def create_chat_completion(self, **request: Any) -> Any:
        super().create_chat_completion(**request)
        return {"choices": [{"message": {"content": f"reply {len(self.requests)}"}, "finish_reason": "stop"}]}


@pytest.mark.parametrize(
    "setting",
    [
        {"max_tokens": 5},
        {"top_k": 1},
        {"top_p": 0.5},
        {"repeat_penalty": 1.3},
        {"stop": ["hello"]},
        {"grammar": 'root ::= "x"'},
        {"chat_template": "{{ messages }}"},
        {"model_kwargs": {"flash_attn": True}},
    ],
)
def test_a_setting_that_changes_the_reply_changes_the_llm_cache_key(setting: dict[str, Any]) -> None:
    """The key held only model_path, temperature and seed: a model with another max_tokens (or stop,
    grammar...) got the reply cached for the first."""
    client = CountingLlama()
    set_llm_cache(InMemoryCache())
    try:
        first = ChatLlama(model_path="unused.gguf", client=client).invoke([HumanMessage("q")])
        other = ChatLlama(model_path="unused.gguf", client=client, **setting).invoke([HumanMessage("q")])
        again = ChatLlama(model_path="unused.gguf", client=client).invoke([HumanMessage("q")])
    finally:
        set_llm_cache(None)
    assert (first.content, other.content, again.content) == ("reply 1", "reply 2", "reply 1")


# -- The pieces: patterns as grammars, and the schema check -----------------------------------------
@pytest.mark.parametrize(
    ("pattern", "grammar"),
    [
        (r"^\d{5}$", "[0-9]{5}"),
        (r"[A-Z]{3}", "char* [A-Z]{3} char*"),  # unanchored: anything around it
        (r"^(foo|bar)+$", '("foo" | "bar")+'),
        (r"^C:\\temp$", r'"C:\x5C\x5Ctemp"'),  # JSON writes \ as \\
        (r'^say "hi"$', r'"say \x5C\x22hi\x5C\x22"'),
        (r"^\w+$", "[0-9A-Z_a-z]+"),
        (r"^(?=a)\w$", None),  # a look-ahead: any string, checked when read
        (r"(?i)^abc$", None),
        (r"^x{0,5000}$", None),
    ],
)
def test_patterns_become_grammars_for_the_json_text_of_a_match(pattern: str, grammar: str | None) -> None:
    from explicit_react.llama_regex import pattern_grammar

    written = pattern_grammar(pattern, "char")
    assert written == grammar
    if written is not None:
        assert llama_accepts(f'root ::= "\\"" {written} "\\""\nchar ::= [a-z]')


@pytest.mark.parametrize(
    ("value", "schema", "problem"),
    [
        ({"a": 1}, {"type": "object", "properties": {"a": {"type": "integer"}}}, None),
        (
            {"a": True},
            {"properties": {"a": {"type": "integer"}}},
            "arguments.a: True is not of type 'integer'",
        ),
        ({"a": 1.0}, {"properties": {"a": {"enum": [1]}}}, None),
        ({"a": True}, {"properties": {"a": {"enum": [1]}}}, "is not one of"),
        ({"a": [1, "x"]}, {"properties": {"a": {"items": {"type": "integer"}}}}, "arguments.a[1]"),
        ({"a": "b"}, {"properties": {"a": {"$ref": "#/$defs/K"}}}, "is not one of ['a']"),
        (
            {"b": 1},
            {"properties": {"a": {}}, "additionalProperties": False},
            "('b' was unexpected)",
        ),
        (
            {"a": 5},
            {"properties": {"a": {"anyOf": [{"type": "string"}, {"maximum": 4}]}}},
            "is not valid under any of the given schemas",
        ),
        ({"a": "x"}, {"properties": {"a": {"pattern": "["}}}, None),  # a pattern Python cannot read
    ],
)
def test_the_schema_check(value: Any, schema: dict[str, Any], problem: str | None) -> None:
    from explicit_react.llama_call_check import schema_problem

    found = schema_problem(value, schema, {"K": {"enum": ["a"]}})
    assert (found is None) if problem is None else (found is not None and problem in found), found


def test_the_grammar_uses_bounds_not_nesting() -> None:
    """maxLength 2000 was written as 2000 nested optional groups, which llama.cpp rejects."""
    grammar = tool_grammar(raw_tool("note", Note.model_json_schema()))
    assert re.search(r"char\{0,2000\}", grammar) and "((" not in grammar


def test_another_threads_stderr_during_a_check_is_given_back_not_taken_for_the_reason(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Standard error is a file for the instant of a check: a line another thread wrote then is
    written out afterwards, and the reason is llama.cpp's own."""
    from explicit_react.llama_grammar_check import _given_back, _reason

    grammar = "root ::= undefined-rule"
    captured = (
        "parse: error parsing grammar: Undefined rule identifier 'undefined-rule'\n"
        "worker 3 error: from a logger\n\nroot ::= undefined-rule\nfailed to parse grammar\n"
    )
    kept = _given_back(captured, grammar)
    assert "worker 3" not in kept and "worker 3 error: from a logger" in capfd.readouterr().err
    assert _reason(kept) == "Undefined rule identifier 'undefined-rule' (in 'root ::= undefined-rule')"
