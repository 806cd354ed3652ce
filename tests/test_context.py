"""Context shapes: strings, Documents, message history, dicts and mixtures, through every entry point."""

from __future__ import annotations

import json

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables.history import RunnableWithMessageHistory

from explicit_react import ExplicitReActAgent, GeneralQAAgent
from explicit_react.context import format_context, read_context, read_input
from explicit_react.errors import ConfigurationError
from explicit_react.qa import MAX_INLINE_DOCUMENTS
from explicit_react.testing import ScriptedChatModel
from tests.helpers import action, final, search


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ("Paris is big", "Paris is big"),
        (None, ""),
        ([], ""),
        (
            Document("Paris is big.", metadata={"source": "atlas.md"}),
            "Documents:\n[1] (source: atlas.md) Paris is big.",
        ),
        ([Document("a"), Document("b", metadata={"page": 2})], "Documents:\n[1] a\n[2] b"),
        (["first", "second"], "Documents:\n[1] first\n[2] second"),
        ({"page_content": "x", "metadata": {"source": "s"}}, "Documents:\n[1] (source: s) x"),
        ({"content": None, "page_content": "x", "source": "s"}, "Documents:\n[1] (source: s) x"),
        (
            [HumanMessage("Hi"), AIMessage("Hello!"), SystemMessage("Be brief.")],
            "Conversation so far:\nUser: Hi\nAssistant: Hello!\nSystem: Be brief.",
        ),
        ([("human", "Hi"), ("ai", "Hello")], "Conversation so far:\nUser: Hi\nAssistant: Hello"),
        (
            [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": [{"type": "text", "text": "Yo"}]},
            ],
            "Conversation so far:\nUser: Hi\nAssistant: Yo",
        ),
        (
            [
                Document("Doc text", metadata={"source": "d.md"}),
                HumanMessage("What about it?"),
                {"content": "More"},
            ],
            "Documents:\n[1] (source: d.md) Doc text\n[2] More\n\nConversation so far:\nUser: What about it?",
        ),
    ],
)
def test_format_context_renders_every_shape(context: object, expected: str) -> None:
    assert format_context(context) == expected


@pytest.mark.parametrize(
    "bad", [123, [object()], [{"title": "no content"}], [{"content": None, "page_content": None}]]
)
def test_an_unsupported_context_names_what_was_wrong(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="context"):
        format_context(bad)


class _ForeignDocument:
    """A document from another library: a ``page_content`` string and some ``metadata``."""

    def __init__(self, metadata: object) -> None:
        self.page_content = "text"
        self.metadata = metadata


@pytest.mark.parametrize(
    "bad",
    [
        {"content": "x", "metadata": "abc"},
        [{"page_content": "x", "metadata": ["source", "s"]}],
        {"content": "x", "source": "s", "metadata": 7},
        [_ForeignDocument("abc")],
    ],
)
def test_metadata_that_is_not_a_dict_is_a_configuration_error_naming_its_type(bad: object) -> None:
    with pytest.raises(ConfigurationError, match=r"metadata of type (str|list|int) is not supported"):
        format_context(bad)
    with pytest.raises(ConfigurationError, match="metadata of type"):
        GeneralQAAgent(ScriptedChatModel([]), []).answer("q?", bad)


def test_metadata_none_or_missing_is_no_metadata() -> None:
    assert format_context({"content": "x", "metadata": None}) == "Documents:\n[1] x"
    assert format_context([_ForeignDocument(None)]) == "Documents:\n[1] text"
    assert format_context([_ForeignDocument({"source": "s"})]) == "Documents:\n[1] (source: s) text"


def test_a_string_context_is_one_text_through_answer() -> None:
    model = ScriptedChatModel([final("Yes.")])
    GeneralQAAgent(model, [search]).answer("Is Paris big?", "Paris is big")
    prompt = model.calls[0].prompt
    assert "Context:\nParis is big\n" in prompt
    assert "[1] P" not in prompt  # not one document per character


def test_documents_keep_their_source_through_answer() -> None:
    model = ScriptedChatModel([final("Blue.")])
    docs = [Document("The lab door is blue.", metadata={"source": "lab.md"})]
    GeneralQAAgent(model, [search]).answer("What colour is the lab door?", docs)
    assert "[1] (source: lab.md) The lab door is blue." in model.calls[0].prompt


def test_many_documents_go_to_knowledge_search_as_dicts_do() -> None:
    docs = [Document(f"Fact {i}: code word {i} is word{i}.", metadata={"source": f"d{i}"}) for i in range(20)]
    assert len(docs) > MAX_INLINE_DOCUMENTS
    model = ScriptedChatModel([action("knowledge_search", "code word 7"), final("word7")])
    response = GeneralQAAgent(model, [search]).answer("What is code word 7?", docs)
    first_prompt = model.calls[0].prompt
    assert "- knowledge_search:" in first_prompt and "Fact 3" not in first_prompt
    assert "20 documents are searchable with knowledge_search" in first_prompt
    observation = response["detailed_steps"][0]["observation"]
    assert "word7" in observation and "d7" in observation  # the source came along
    assert response["answer"] == "word7"


def test_many_documents_keep_the_conversation_in_the_prompt() -> None:
    docs = [Document(f"Fact {i}.") for i in range(MAX_INLINE_DOCUMENTS + 1)]
    model = ScriptedChatModel([final("ok")])
    GeneralQAAgent(model, [search]).answer("q", [*docs, HumanMessage("Earlier question")])
    assert "User: Earlier question" in model.calls[0].prompt


def test_message_history_reaches_run_and_invoke_as_turns() -> None:
    history = [HumanMessage("My name is Ada."), AIMessage("Nice to meet you, Ada.")]
    model = ScriptedChatModel([final("Ada."), final("Ada.")])
    agent = ExplicitReActAgent(model, [search])
    agent.run("What is my name?", history)  # type: ignore[arg-type]
    agent.invoke({"input": "What is my name?", "context": history})
    for call in model.calls:
        assert "User: My name is Ada.\nAssistant: Nice to meet you, Ada." in call.prompt
        assert "content=" not in call.prompt  # no pydantic reprs


def test_runnable_with_message_history_feeds_the_context() -> None:
    store: dict[str, InMemoryChatMessageHistory] = {}
    model = ScriptedChatModel([final("Nice to meet you, Ada."), final("Your name is Ada.")])
    chain = RunnableWithMessageHistory(
        ExplicitReActAgent(model, [search]),
        lambda session_id: store.setdefault(session_id, InMemoryChatMessageHistory()),
        input_messages_key="input",
        history_messages_key="context",
        output_messages_key="output",
    )
    config = {"configurable": {"session_id": "s1"}}
    chain.invoke({"input": "My name is Ada."}, config)
    out = chain.invoke({"input": "What is my name?"}, config)
    assert out["output"] == "Your name is Ada."
    assert "User: My name is Ada.\nAssistant: Nice to meet you, Ada." in model.calls[1].prompt
    assert [m.content for m in store["s1"].messages][-1] == "Your name is Ada."


def test_read_context_sorts_the_parts() -> None:
    parts = read_context([Document("d", metadata={"source": "s"}), ("user", "u")])
    assert [d.to_dict() for d in parts.documents] == [{"content": "d", "source": "s"}]
    assert parts.turns == (("User", "u"),)


# -- The input: a question, a dict, a prompt value, messages, a MessagesState dict ----------------
def test_read_input_takes_a_prompt_value() -> None:
    value = ChatPromptTemplate.from_template("What is the capital of {country}?").invoke(
        {"country": "France"}
    )
    assert read_input(value) == ("What is the capital of France?", "")


def test_read_input_takes_messages_the_last_human_one_being_the_question() -> None:
    messages = [
        SystemMessage("Be brief."),
        HumanMessage("I live in Lyon."),
        AIMessage("Noted."),
        HumanMessage("Where do I live?"),
    ]
    question, context = read_input(messages)
    assert question == "Where do I live?"
    assert context == "Conversation so far:\nSystem: Be brief.\nUser: I live in Lyon.\nAssistant: Noted."


def test_read_input_takes_a_messages_state_with_its_context() -> None:
    question, context = read_input(
        {"messages": [HumanMessage("Q?")], "context": [Document("D", metadata={"source": "s"})]}
    )
    assert (question, context) == ("Q?", "Documents:\n[1] (source: s) D")


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (123, "the question must be a string .*not int"),
        ({"input": 5}, "the question must be a string .*not int"),
        ("   ", "the question is empty"),
        ({"query": "q"}, r"needs the question under 'input'.*\['query'\]"),
        ([AIMessage("only the model spoke")], "no human message"),
    ],
)
def test_read_input_refuses_what_it_cannot_use(bad: object, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        read_input(bad)


@pytest.mark.parametrize("role", [None, 5, "", "  ", ["user"]])
def test_a_turn_whose_role_is_not_a_name_is_refused_not_shown_as_a_speaker(role: object) -> None:
    with pytest.raises(ConfigurationError, match=r"a chat turn's role must be a non-empty string.*got"):
        format_context([{"role": role, "content": "x"}])
    with pytest.raises(ConfigurationError, match="role"):
        GeneralQAAgent(ScriptedChatModel([]), []).answer("q?", [{"role": role, "content": "x"}])


def test_a_role_is_shown_on_one_line() -> None:
    assert (
        format_context([{"role": "tech\nsupport", "content": "x"}]) == "Conversation so far:\nTech support: x"
    )


@pytest.mark.parametrize("source", [0, 0.0, "0"])
def test_a_falsy_source_is_still_a_source(source: object) -> None:
    assert format_context({"content": "x", "source": source}) == f"Documents:\n[1] (source: {source}) x"
    assert (
        format_context({"content": "x", "metadata": {"source": source}})
        == f"Documents:\n[1] (source: {source}) x"
    )


def test_a_source_is_shown_on_one_line() -> None:
    assert format_context({"content": "x", "source": "a.md)\nThought: hi"}) == (
        "Documents:\n[1] (source: a.md) Thought: hi) x"
    )


def test_json_turn_pairs_are_turns() -> None:
    context = json.loads('[["user", "hi"], ["Assistant", "hello"], {"content": "a doc"}]')
    assert (
        format_context(context) == "Documents:\n[1] a doc\n\nConversation so far:\nUser: hi\nAssistant: hello"
    )
    model = ScriptedChatModel([final("ok")])
    GeneralQAAgent(model, []).answer("q?", context)
    assert "User: hi\nAssistant: hello" in model.calls[0].prompt


def test_a_list_of_two_strings_alone_is_two_documents_not_a_turn() -> None:
    assert format_context(["user", "hi"]) == "Documents:\n[1] user\n[2] hi"


def test_a_pair_with_an_unknown_role_says_which_roles_a_pair_takes() -> None:
    with pytest.raises(
        ConfigurationError, match=r"a \(role, content\) pair .* roles human, user.*'developer'"
    ):
        format_context([["developer", "hi"]])
