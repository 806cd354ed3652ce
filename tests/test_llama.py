"""ChatLlama's parts that need no model file: the prompt-cache reuse rule and the request it sends.

The real model (determinism, quiet logs, grammar, streaming) is tested in test_local_model.py.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any, Literal

import pytest

pytest.importorskip("llama_cpp")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from llama_cpp import LlamaGrammar
from pydantic import BaseModel

from explicit_react import ExplicitReActAgent, StopReason, llama, models
from explicit_react.errors import ConfigurationError
from explicit_react.llama import ChatLlama, aligned_reuse
from explicit_react.llama_tools import ToolRequest, compiled_grammar, llama_messages, read_reply
from explicit_react.tools import calculator
from tests.helpers import search


@pytest.mark.parametrize(
    ("previous", "prompt", "block", "expected"),
    [
        ([], [1, 2, 3], 2, 0),  # nothing cached
        ([1, 2, 3, 4, 5], [1, 2, 3, 4, 9, 9], 2, 4),  # shared 4: two whole blocks
        ([1, 2, 3, 4, 5], [1, 2, 3, 9, 9, 9], 2, 2),  # shared 3: cut back to one block
        ([1, 2, 3, 4], [1, 2, 3, 4], 2, 2),  # same prompt: one token must be read again
        ([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6, 7], 4, 4),
        ([9, 2, 3], [1, 2, 3], 1, 0),  # differs at the first token
    ],
)
def test_reuse_is_the_shared_prefix_in_whole_blocks(
    previous: list[int], prompt: list[int], block: int, expected: int
) -> None:
    reused = aligned_reuse(previous, prompt, block)
    assert reused == expected
    assert reused % block == 0
    assert reused < len(prompt)


class RecordingLlama:
    """Stands in for llama_cpp.Llama: records create_chat_completion's arguments."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def create_chat_completion(self, **request: Any) -> Any:
        self.requests.append(request)
        if request.get("stream"):
            return iter([{"choices": [{"delta": {"content": part}}]} for part in ("Thought: ", "", "hi")])
        return {
            "choices": [{"message": {"content": "Final Answer: 4"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
        }


def test_a_call_sends_roles_settings_and_stop_and_reads_usage() -> None:
    client = RecordingLlama()
    model = ChatLlama(model_path="unused.gguf", client=client, max_tokens=32)

    reply = model.invoke(
        [SystemMessage("be brief"), HumanMessage("2+2?"), AIMessage("Thought: add")], stop=["\nObs"]
    )

    request = client.requests[-1]
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant"]
    assert request["stop"] == ["\nObs"]
    assert (request["max_tokens"], request["temperature"], request["grammar"]) == (32, 0.0, None)
    assert reply.content == "Final Answer: 4"
    assert reply.usage_metadata == {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14}


def test_bound_arguments_reach_llama_cpp() -> None:
    client = RecordingLlama()
    model = ChatLlama(model_path="unused.gguf", client=client)
    grammar = LlamaGrammar.from_string('root ::= "G"', verbose=False)
    model.bind(grammar=grammar, stop=["X"]).invoke("hi")
    assert (client.requests[-1]["grammar"], client.requests[-1]["stop"]) == (grammar, ["X"])


def test_streaming_yields_the_text_pieces() -> None:
    client = RecordingLlama()
    model = ChatLlama(model_path="unused.gguf", client=client)
    assert [chunk.content for chunk in model.stream("hi") if chunk.content] == ["Thought: ", "hi"]
    assert client.requests[-1]["stream"] is True
    streaming = ChatLlama(model_path="unused.gguf", client=client, streaming=True)
    assert streaming.invoke("hi").content == "Thought: hi"


class StreamingLlama(RecordingLlama):
    """Streams ``parts`` as llama-cpp-python does: a role chunk, the text pieces, an empty finishing chunk."""

    def __init__(self, parts: list[str]) -> None:
        super().__init__()
        self.parts = parts

    def create_chat_completion(self, **request: Any) -> Any:
        self.requests.append(request)
        assert request.get("stream") is True
        choices = [{"delta": {"role": "assistant"}, "finish_reason": None}]
        choices += [{"delta": {"content": part}, "finish_reason": None} for part in self.parts]
        choices.append({"delta": {}, "finish_reason": "stop"})
        return iter([{"choices": [choice]} for choice in choices])


def joined(chunks: list[Any]) -> Any:
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole += chunk
    return whole


def test_a_loaded_model_streams_its_reply_in_pieces(tmp_path: Path) -> None:
    """load_model's settings leave ``streaming`` unset: an explicit False made stream() one chunk."""
    file = tmp_path / "model.gguf"
    file.write_bytes(b"GGUF")
    client = StreamingLlama(["Thought: ", "I add", "."])
    model = models.load_gguf(file, check_build=False, client=client, prompt_state_dir=None)
    chunks = list(model.stream("2+2?"))
    assert [chunk.content for chunk in chunks if chunk.content] == ["Thought: ", "I add", "."]
    assert joined(chunks).response_metadata["finish_reason"] == "stop"


def test_stream_takes_langchains_own_stream_switch() -> None:
    model = ChatLlama(model_path="unused.gguf", client=StreamingLlama(["a", "b"]))
    assert joined(list(model.stream("hi", stream=True))).content == "ab"
    recording = RecordingLlama()
    ChatLlama(model_path="unused.gguf", client=recording).invoke("hi", stream=False)
    assert "stream" not in recording.requests[-1]


def test_an_empty_streamed_reply_is_an_empty_message() -> None:
    """A reply that ends at once (or at a stop sequence at its start): one empty chunk, not an error."""
    model = ChatLlama(model_path="unused.gguf", client=StreamingLlama([]))
    whole = joined(list(model.stream("hi", stop=["Thought"])))
    assert (whole.content, whole.response_metadata["finish_reason"]) == ("", "stop")
    streaming = ChatLlama(model_path="unused.gguf", client=StreamingLlama([""]), streaming=True)
    reply = streaming.invoke("hi")
    assert (reply.content, reply.response_metadata["finish_reason"]) == ("", "stop")


def test_a_weights_file_deleted_while_loading_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process deletes the file llama.cpp has just mapped (say, while cleaning the cache):
    the prompt-state key, made from the file's size and time, can no longer be read."""
    file = tmp_path / "model.gguf"
    file.write_bytes(b"GGUF")

    class LlamaWhoseFileIsDeleted:
        def __init__(self, model_path: str, **settings: Any) -> None:
            Path(model_path).unlink()

    monkeypatch.setattr(llama, "AlignedLlama", LlamaWhoseFileIsDeleted)
    with pytest.raises(ConfigurationError, match=re.escape(str(file))) as error:
        models.load_gguf(file, check_build=False, prompt_state_dir=str(tmp_path / "states"))
    assert "was deleted while the model was loading" in str(error.value)


# -- Native function calling (explicit_react.llama_tools) ---------------------------------------
QWEN_LIKE_TEMPLATE = "{% if tools %}<tools>{{ tools }}</tools>{% endif %} ... <tool_call> ..."


class ScriptedLlama(RecordingLlama):
    """A recording client that answers with the given texts, in order."""

    def __init__(self, replies: list[str], template: str | None = None) -> None:
        super().__init__()
        self.replies = list(replies)
        self.chat_handler = None
        self.chat_format = "chat_template.default" if template else "chatml"
        self.metadata = {"tokenizer.chat_template": template} if template else {}

    def create_chat_completion(self, **request: Any) -> Any:
        self.requests.append(request)
        usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
        return {
            "choices": [{"message": {"content": self.replies.pop(0)}, "finish_reason": "stop"}],
            "usage": usage,
        }


def call_text(name: str, **args: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


def test_bind_tools_writes_the_tools_into_the_system_message_and_reads_the_call() -> None:
    client = ScriptedLlama([call_text("search", query="Paris")])
    model = ChatLlama(model_path="unused.gguf", client=client).bind_tools([search])
    reply = model.invoke([SystemMessage("be brief"), HumanMessage("How big is Paris?")])
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("search", {"query": "Paris"})]
    assert reply.content == "" and reply.invalid_tool_calls == []
    request = client.requests[-1]
    system = request["messages"][0]["content"]
    assert system.startswith("be brief\n\n# Tools\n")
    assert json.dumps(convert_to_openai_tool(search)) in system  # one JSON line per tool, as Qwen's template
    assert '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' in system
    assert "tools" not in request  # the template is not asked to render them
    assert isinstance(request["grammar"], LlamaGrammar)


def test_a_template_that_renders_tools_gets_them_and_the_calls_structured() -> None:
    client = ScriptedLlama(["The population is 2.1 million."], template=QWEN_LIKE_TEMPLATE)
    model = ChatLlama(model_path="unused.gguf", client=client).bind_tools([search])
    history = [
        HumanMessage("q"),
        AIMessage(
            "", tool_calls=[{"name": "search", "args": {"query": "Paris"}, "id": "c1", "type": "tool_call"}]
        ),
        ToolMessage("2100000", tool_call_id="c1"),
    ]
    reply = model.invoke(history)
    assert reply.content == "The population is 2.1 million." and reply.tool_calls == []
    request = client.requests[-1]
    assert request["tools"] == [convert_to_openai_tool(search)]
    assert request["messages"] == [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search", "arguments": {"query": "Paris"}},
                }
            ],
        },
        {"role": "tool", "content": "2100000", "tool_call_id": "c1"},
    ]


def test_without_a_tools_template_calls_and_results_are_written_as_text() -> None:
    two_calls = [
        {"name": "search", "args": {"query": "a"}, "id": "c1", "type": "tool_call"},
        {"name": "search", "args": {"query": "b"}, "id": "c2", "type": "tool_call"},
    ]
    history = [
        HumanMessage("q"),
        AIMessage("Two searches.", tool_calls=two_calls),
        ToolMessage("A", tool_call_id="c1"),
        ToolMessage("B", tool_call_id="c2"),
        AIMessage("Thought: plain text stays as it is "),
    ]
    assert llama_messages(history, native=False) == [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": f"Two searches.\n{call_text('search', query='a')}\n{call_text('search', query='b')}",
        },
        {
            "role": "user",
            "content": "<tool_response>\nA\n</tool_response>\n<tool_response>\nB\n</tool_response>",
        },
        {"role": "assistant", "content": "Thought: plain text stays as it is "},
    ]


@pytest.mark.parametrize(
    ("reply", "content", "calls", "invalid"),
    [
        (call_text("search", query="x"), "", [("search", {"query": "x"})], []),
        ("I will look.\n" + call_text("search", query="x"), "I will look.", [("search", {"query": "x"})], []),
        ("Paris has 2.1 million people.", "Paris has 2.1 million people.", [], []),
        ("<tool_call>\n{not json}\n</tool_call>", "", [], [(None, "not a JSON call")]),
        (
            '<tool_call>\n{"name": "search", "arguments": {"query": "x',
            "",
            [],
            [("search", "the call was cut off before its </tool_call>")],
        ),  # cut off: said so, not "not a JSON call"
        (
            '<tool_call>{"name": "search", "arguments": "x"}</tool_call>',
            "",
            [],
            [("search", "arguments are not a JSON object")],
        ),
        ('<tool_call>{"name": "noargs"}</tool_call>', "", [("noargs", {})], []),
    ],
)
def test_a_reply_is_read_as_text_calls_and_malformed_calls(
    reply: str, content: str, calls: list[Any], invalid: list[Any]
) -> None:
    text, good, bad = read_reply(reply)
    assert text == content
    assert [(c["name"], c["args"]) for c in good] == calls
    assert [(c["name"], c["error"]) for c in bad] == invalid
    assert all(c["args"].startswith("<tool_call>") for c in bad)  # the block as written: not JSON
    assert read_reply(reply) == (text, good, bad)  # the same reply, the same call ids


def test_tool_choice_sets_what_the_grammar_allows() -> None:
    specs = [convert_to_openai_tool(t) for t in (search, calculator)]

    def grammar(choice: Any) -> str:
        request = ToolRequest.pop({"tools": specs, "tool_choice": choice})
        assert request is not None
        compiled_grammar(request.grammar())  # llama.cpp's parser accepts it
        return request.grammar()

    auto, required, one = (
        grammar(None),
        grammar("any"),
        grammar({"type": "function", "function": {"name": "calculator"}}),
    )
    assert auto.startswith("root ::= prose call-block? | call-block\n")  # text, a call, or text then a call
    assert required.startswith("root ::= call-block\n")
    assert '"\\"search\\""' in required and '"\\"calculator\\""' in required
    assert '"\\"search\\""' not in one and '"\\"calculator\\""' in one
    assert '"\\"expression\\""' in one  # the tool's arguments, from its JSON schema
    assert ToolRequest.pop({"tools": specs, "tool_choice": "none"}) is None
    with pytest.raises(ValueError, match="'nope' is not a bound tool"):
        ChatLlama(model_path="unused.gguf", client=ScriptedLlama([])).bind_tools([search], tool_choice="nope")


def raw_tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": "A tool.", "parameters": parameters},
    }


class Node(BaseModel):
    """A tree node (a recursive model: LangChain leaves its children's items untyped)."""

    label: str
    children: list[Node] = []


@tool
def total(values: list) -> str:  # type: ignore[type-arg]
    """Add up values (a list of anything: ``"items": {}``)."""
    return str(sum(values))


KIND = {"type": "string", "enum": ["a", "b"]}
WITH_DEFS = raw_tool("lookup", {"$defs": {"K": KIND}, "properties": {"k": {"$ref": "#/$defs/K"}}})
WITH_DEFINITIONS = raw_tool(
    "lookup", {"definitions": {"K": KIND}, "properties": {"k": {"$ref": "#/definitions/K"}}}
)
ONLY_DESCRIBED = raw_tool("note", {"type": "object", "properties": {"x": {"description": "anything"}}})


@pytest.mark.parametrize(
    ("spec", "args"),
    [
        (total, {"values": [1, "two", None, {"x": [3]}]}),
        (Node, {"label": "root", "children": [{"label": "leaf"}]}),
        (WITH_DEFS, {"k": "a"}),
        (WITH_DEFINITIONS, {"k": "b"}),  # JSON schema draft 7's name for $defs
        (ONLY_DESCRIBED, {"x": [True]}),
    ],
)
def test_untyped_parts_and_local_refs_in_a_tool_schema_get_a_grammar(spec: Any, args: dict[str, Any]) -> None:
    """llama-cpp-python's converter failed on ``"items": {}`` and could not follow a tool's own $refs."""
    name = convert_to_openai_tool(spec)["function"]["name"]
    client = ScriptedLlama([call_text(name, **args)])
    reply = (
        ChatLlama(model_path="unused.gguf", client=client)
        .bind_tools([spec], tool_choice="required")
        .invoke("q")
    )
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [(name, args)]
    assert isinstance(client.requests[-1]["grammar"], LlamaGrammar)


class Colour(BaseModel):
    """A colour by name."""

    name: Literal["red", "green"]


class Item(BaseModel):
    """An item: a model inside a model, and a recursive one (pydantic writes both as $refs)."""

    colour: Colour
    parts: list[Node] = []


class Order(BaseModel):
    item: Item
    gift: Item | None = None


@tool(args_schema=Order)
def place_order(item: Any, gift: Any = None) -> str:
    """Place an order for an item."""
    return "placed"


def grammar_of(spec: Any) -> str:
    request = ToolRequest.pop({"tools": [convert_to_openai_tool(spec)], "tool_choice": "required"})
    assert request is not None
    return request.grammar()


ITEM_ARGS = {"colour": {"name": "green"}, "parts": [{"label": "a", "children": [{"label": "b"}]}]}
# A pydantic model's own schema put inside a property: its $defs sit below the root, and its
# "#/$defs/..." refs mean them (as they did when the schema stood alone).
EMBEDDED_MODEL = raw_tool(
    "order", {"type": "object", "properties": {"item": Item.model_json_schema()}, "required": ["item"]}
)
POINTERS = raw_tool(
    "paint",
    {
        "type": "object",
        "properties": {
            "kind": {"$defs": {"K": KIND}, "$ref": "#/properties/kind/$defs/K"},
            "again": {"$ref": "#/properties/kind"},  # zod-to-json-schema reuses a schema this way
            "a/b": {
                "definitions": {"N": {"type": "integer"}},
                "type": "object",
                "properties": {"n": {"$ref": "#/properties/a~1b/definitions/N"}},  # "~1" is "/"
            },
        },
    },
)


@pytest.mark.parametrize(
    ("spec", "args", "literal"),
    [
        (EMBEDDED_MODEL, {"item": ITEM_ARGS}, '"\\"green\\""'),
        (POINTERS, {"kind": "a", "again": "b", "a/b": {"n": 3}}, '"\\"b\\""'),
        (place_order, {"item": ITEM_ARGS, "gift": None}, '"\\"red\\""'),  # langchain_core's own tool
        (raw_tool("tree", Node.model_json_schema()), {"label": "root", "children": []}, '"\\"children\\""'),
    ],
)
def test_refs_to_any_part_of_a_tool_schema_get_a_grammar(
    spec: Any, args: dict[str, Any], literal: str
) -> None:
    """A $ref may point anywhere in the tool's schema (a JSON pointer), not only to its root $defs;
    the grammar follows it (the enum it names is in the grammar) and the call is read back."""
    name = convert_to_openai_tool(spec)["function"]["name"]
    client = ScriptedLlama([call_text(name, **args)])
    reply = (
        ChatLlama(model_path="unused.gguf", client=client)
        .bind_tools([spec], tool_choice="required")
        .invoke("q")
    )
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [(name, args)]
    assert literal in grammar_of(spec)


def test_a_recursive_model_gets_a_recursive_rule() -> None:
    """Recursion through an object or an array is a grammar rule that names itself: a value of any
    depth, each level opened by "{" or "[" (the rule is not left-recursive)."""
    grammar = grammar_of(EMBEDDED_MODEL)
    [node] = re.findall(r"^(tool0-Node-\d+) ::= ", grammar, re.M)
    assert re.search(rf"^{node}-children-item ::= {node}$", grammar, re.M), grammar


@pytest.mark.parametrize(
    "parameters",
    [
        {"$defs": {"A": {"$ref": "#/$defs/A"}}, "properties": {"a": {"$ref": "#/$defs/A"}}},
        {
            "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/A"}]}},
            "properties": {"a": {"$ref": "#/$defs/A"}},
        },
        {"properties": {"a": {"$ref": "#/properties/a"}}},
        {"anyOf": [{"$ref": "#"}, {"type": "string"}]},
    ],
)
def test_a_value_defined_only_by_itself_fails_at_bind_tools(parameters: dict[str, Any]) -> None:
    """A cycle of $refs with no object or array between them defines nothing: its grammar rule would
    be left-recursive, which llama.cpp rejects only when sampling starts."""
    model = ChatLlama(model_path="unused.gguf", client=ScriptedLlama([]))
    with pytest.raises(ConfigurationError, match=r"tool 'odd'.* refers to itself"):
        model.bind_tools([raw_tool("odd", parameters)])


def test_tools_keep_their_own_definitions_of_one_name() -> None:
    first = raw_tool("first", {"$defs": {"K": KIND}, "properties": {"k": {"$ref": "#/$defs/K"}}})
    other = raw_tool("other", {"$defs": {"K": {"enum": ["c"]}}, "properties": {"k": {"$ref": "#/$defs/K"}}})
    request = ToolRequest.pop({"tools": [first, other], "tool_choice": "required"})
    assert request is not None
    grammar = request.grammar()
    compiled_grammar(grammar)
    assert re.search(r'^tool0-K\S* ::= "\\"a\\"" \| "\\"b\\""$', grammar, re.M), grammar
    assert re.search(r'^tool1-K\S* ::= "\\"c\\""$', grammar, re.M), grammar


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"properties": {"k": {"$ref": "https://example.com/k.json"}}}, "https://example.com/k.json"),
        ({"properties": {"k": {"$ref": "#/$defs/Missing"}}}, "#/\\$defs/Missing"),
        ({"properties": {"k": {"type": "decimal"}}}, "the tools odd .*decimal"),
    ],
)
def test_a_schema_llama_cpp_cannot_follow_fails_at_bind_tools(
    parameters: dict[str, Any], message: str
) -> None:
    model = ChatLlama(model_path="unused.gguf", client=ScriptedLlama([]))
    with pytest.raises(ConfigurationError, match=message):
        model.bind_tools([raw_tool("odd", parameters)])


def test_tool_choice_none_sends_no_tools_and_no_grammar() -> None:
    client = ScriptedLlama(["just text"])
    ChatLlama(model_path="unused.gguf", client=client).bind_tools([search], tool_choice="none").invoke("q")
    assert client.requests[-1]["grammar"] is None
    assert client.requests[-1]["messages"] == [{"role": "user", "content": "q"}]


def test_streaming_with_tools_yields_the_call_in_one_chunk() -> None:
    client = ScriptedLlama([call_text("search", query="x")])
    model = ChatLlama(model_path="unused.gguf", client=client).bind_tools([search])
    chunks = list(model.stream("q"))
    assert len([c for c in chunks if c.tool_call_chunks]) == 1
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole += chunk
    assert [(c["name"], c["args"]) for c in whole.tool_calls] == [("search", {"query": "x"})]
    assert "stream" not in client.requests[-1]


class CutOffLlama(ScriptedLlama):
    """Answers as llama.cpp does when a reply reaches ``max_tokens``: finish reason ``"length"``."""

    def create_chat_completion(self, **request: Any) -> Any:
        response = super().create_chat_completion(**request)
        response["choices"][0]["finish_reason"] = "length"
        return response


CUT_OFF_CALL = '<tool_call>\n{"name": "search", "arguments": {"query": "population of Par'


def call_records(message: Any) -> tuple[list[Any], list[Any]]:
    """A message's calls and malformed calls as (name, args, id); LangChain's joining of chunks keeps
    no ``error`` text, so it is left out."""
    return (
        [(c["name"], c["args"], c["id"]) for c in message.tool_calls],
        [(c["name"], c["args"], c["id"]) for c in message.invalid_tool_calls],
    )


async def streamed_events(model: Any) -> tuple[Any, Any]:
    """The chunks of ``astream_events``' ``on_chat_model_stream`` events joined, and its end message."""
    chunks, end = [], None
    async for event in model.astream_events("q", version="v2"):
        if event["event"] == "on_chat_model_stream":
            chunks.append(event["data"]["chunk"])
        elif event["event"] == "on_chat_model_end":
            end = event["data"]["output"]
    return joined(chunks), end


@pytest.mark.parametrize(
    "reply",
    [
        CUT_OFF_CALL,  # max_tokens reached inside the arguments' JSON
        '<tool_call>\n{"name": "search", "arguments": {"query": "x"',  # inside the call's JSON
        '<tool_call>{"name": "search", "arguments": "x"}</tool_call>',  # whole JSON, not a call
    ],
)
def test_a_malformed_call_stays_invalid_when_streamed(reply: str) -> None:
    """LangChain joins streamed chunks by reading each call's text with a partial-JSON parser that
    closes what was cut off: a call cut at ``max_tokens`` came out of ``stream()``,
    ``streaming=True`` and ``astream_events`` as a valid call with partial arguments, which
    ``invoke`` reports as malformed."""

    def model(**settings: Any) -> Any:
        client = CutOffLlama([reply])
        return ChatLlama(model_path="unused.gguf", client=client, **settings).bind_tools([search])

    invoked = model().invoke("q")
    assert invoked.tool_calls == [] and [c["name"] for c in invoked.invalid_tool_calls] == ["search"]
    event_chunks, event_end = asyncio.run(streamed_events(model()))
    for streamed in (
        joined(list(model().stream("q"))),
        model(streaming=True).invoke("q"),
        event_chunks,
        event_end,
    ):
        assert call_records(streamed) == call_records(invoked), streamed
        assert streamed.response_metadata["finish_reason"] == "length"


def test_a_streamed_call_that_was_not_cut_off_is_still_a_call() -> None:
    """The last token of a reply at ``max_tokens`` closed the call's JSON: the call is whole."""
    reply = '<tool_call>\n{"name": "search", "arguments": {"query": "x"}}'
    model = ChatLlama(model_path="unused.gguf", client=CutOffLlama([reply, reply])).bind_tools([search])
    invoked, streamed = model.invoke("q"), joined(list(model.stream("q")))
    assert call_records(streamed) == call_records(invoked)
    assert [(c["name"], c["args"]) for c in streamed.tool_calls] == [("search", {"query": "x"})]


def test_two_phase_runs_on_a_llama_model() -> None:
    """mode="two_phase" needs bind_tools: a thought (plain call), a native call, then the answer."""
    client = ScriptedLlama(
        [
            "I should look up the population of Paris.",
            call_text("search", query="population of Paris"),
            "The search answered: 2100000. I know the answer.",
            "About 2.1 million.",
        ]
    )
    model = ChatLlama(model_path="unused.gguf", client=client)
    result = ExplicitReActAgent(model, [search], mode="two_phase").run("How many people live in Paris?")
    assert result.stop_reason is StopReason.SUCCESS and result.answer == "About 2.1 million."
    assert (result.steps[0].action, result.steps[0].action_input) == (
        "search",
        {"query": "population of Paris"},
    )
    thought_request, act_request = client.requests[:2]
    assert thought_request["grammar"] is None  # the thought is free text
    assert isinstance(act_request["grammar"], LlamaGrammar)
    assert "# Tools" in act_request["messages"][0]["content"]
    assert result.usage.input_tokens == 20  # four calls of 5 prompt tokens
