"""GeneralQAAgent: the service-facing answer() dict, context handling, and failure responses."""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.tools import tool

from explicit_react import GeneralQAAgent
from explicit_react.errors import ConfigurationError
from explicit_react.qa import MAX_INLINE_CHARS, MAX_INLINE_DOCUMENTS, format_context
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import KnowledgeBaseTool
from tests.helpers import action, final, search


def test_answer_returns_the_service_dict() -> None:
    model = ScriptedChatModel([action("search", "population of Paris"), final("About 2.1 million.")])
    response = GeneralQAAgent(model, [search]).answer("How many people live in Paris?")
    assert response["answer"] == "About 2.1 million."
    assert response["success"] is True and response["stop_reason"] == "success"
    assert response["steps"] == [
        "Step 1: Thought: I need a tool. | Action: search(population of Paris) -> 2100000"
    ]
    assert response["detailed_steps"][0]["observation"] == "2100000"
    json.dumps(response)


def test_a_sent_back_final_answer_is_described_as_such_not_as_an_unreadable_reply() -> None:
    model = ScriptedChatModel([final("995"), final("995")])
    response = GeneralQAAgent(model, [search], check_answer=True).answer("How old will Flir turn in 2039?")
    assert response["detailed_steps"][0]["error"] == "answer_check"
    assert response["steps"][0].startswith(
        "Step 1: the Final Answer was sent back -> Error: 995 in your Final Answer is not in the question"
    )
    unreadable = GeneralQAAgent(ScriptedChatModel(["what now?", final("95")]), [search]).answer("q?")
    assert unreadable["steps"][0].startswith("Step 1: the reply could not be read -> Error:")


def test_documents_and_chat_turns_reach_the_prompt() -> None:
    model = ScriptedChatModel([final("Blue.")])
    context = [
        {"content": "The door of the lab is blue.", "source": "lab.md"},
        {"page_content": "The roof is red."},
        {"role": "user", "content": "We talked about the lab."},
        {"role": "assistant", "content": "Yes, the lab in Lyon."},
    ]
    GeneralQAAgent(model, [search]).answer("What colour is the lab door?", context)
    prompt = model.calls[0].prompt
    assert "[1] (source: lab.md) The door of the lab is blue." in prompt
    assert "[2] The roof is red." in prompt
    assert "User: We talked about the lab.\nAssistant: Yes, the lab in Lyon." in prompt


def test_many_documents_become_a_knowledge_search_tool() -> None:
    documents = [
        {"content": f"Fact {i}: the code word {i} is word{i}.", "source": f"doc{i}"} for i in range(12)
    ]
    assert len(documents) > MAX_INLINE_DOCUMENTS
    model = ScriptedChatModel([action("knowledge_search", "code word 7"), final("word7")])
    response = GeneralQAAgent(model, [search]).answer("What is code word 7?", documents)
    assert "- knowledge_search:" in model.calls[0].prompt
    assert "Fact 3" not in model.calls[0].prompt  # not pasted into the prompt
    assert "word7" in response["detailed_steps"][0]["observation"]
    assert response["answer"] == "word7"


def test_the_knowledge_search_over_the_callers_documents_passes_an_allowlist() -> None:
    documents = [{"content": f"Fact {i}: the code word {i} is word{i}."} for i in range(12)]
    model = ScriptedChatModel([action("knowledge_search", "code word 7"), final("word7")])
    qa = GeneralQAAgent(model, [search], allowed_tools={"search"})
    response = qa.answer("What is code word 7?", documents)
    assert response["stop_reason"] == "success", response
    assert "word7" in response["detailed_steps"][0]["observation"]
    assert qa.agent_kwargs["allowed_tools"] == {"search"}  # the caller's settings are not changed


def test_failed_run_is_reported_with_its_steps() -> None:
    model = ScriptedChatModel([action("search", "population of France"), RuntimeError("model down")])
    response = GeneralQAAgent(model, [search], max_retries=0).answer("q")
    assert response["success"] is False and response["stop_reason"] == "llm_error"
    assert len(response["detailed_steps"]) == 1 and "model down" in response["error"]


def test_agent_kwargs_pass_through() -> None:
    model = ScriptedChatModel([action("search", "population of France"), final("68M")])
    response = GeneralQAAgent(model, [search], max_iterations=1).answer("q")
    assert response["stop_reason"] == "max_iterations" and response["answer"] == "68M"


def test_format_context_accepts_a_string_or_a_single_dict() -> None:
    assert format_context("plain") == "plain"
    assert format_context({"content": "one"}) == "Documents:\n[1] one"


def test_the_answer_at_a_limit_still_sees_the_context() -> None:
    model = ScriptedChatModel([action("search", "population of France"), final("Blue.")])
    context = [{"content": "The lab door is blue.", "source": "notes.md"}]
    result = GeneralQAAgent(model, [search], max_iterations=1).answer("What colour is the lab door?", context)
    assert result["stop_reason"] == "max_iterations" and result["answer"] == "Blue."
    last_prompt = model.calls[-1].prompt
    assert "The lab door is blue." in last_prompt and "search: population of France\n68000000" in last_prompt


def test_a_long_string_context_is_searched_not_pasted() -> None:
    context = "Filler sentence about nothing. " * 1000 + "The code word is zebra. " + "More filler. " * 1000
    model = ScriptedChatModel([action("knowledge_search", "code word"), final("zebra")])
    response = GeneralQAAgent(model, [search]).answer("What is the code word?", context)
    assert "- knowledge_search:" in model.calls[0].prompt and len(model.calls[0].prompt) < 5_000
    assert "zebra" in response["detailed_steps"][0]["observation"] and response["answer"] == "zebra"


@pytest.mark.parametrize("context", [{1: "a", "text": "b"}, b"raw bytes"])
def test_an_unreadable_context_is_a_configuration_error(context: object) -> None:
    with pytest.raises(ConfigurationError):
        GeneralQAAgent(ScriptedChatModel([final("x")]), [search]).answer("q", context)


@tool
def knowledge_search(query: str) -> str:
    """The caller's own knowledge base."""
    return "mine"


@pytest.mark.parametrize("own", [knowledge_search, KnowledgeBaseTool(["Our office opens at nine."])])
def test_a_tool_named_like_the_context_search_is_refused_at_construction(own: object) -> None:
    # Without the check the clash would surface only on a large context, in the middle of serving.
    model = ScriptedChatModel([final("x")])
    with pytest.raises(ConfigurationError, match=r"keeps the tool name 'knowledge_search'.*rename it"):
        GeneralQAAgent(model, [search, own])
    assert model.calls == []


def test_an_assistant_turn_with_no_content_is_not_written_as_none() -> None:
    # OpenAI's format: the assistant turn that called a tool has content None.
    history = [
        {"role": "user", "content": "look up X"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function"}]},
        {"role": "tool", "content": "X is 5", "tool_call_id": "1"},
    ]
    model = ScriptedChatModel([final("5")])
    GeneralQAAgent(model, tools=[]).answer("What is X?", history)
    assert "None" not in model.calls[0].prompt and "X is 5" in model.calls[0].prompt


def test_a_long_conversation_keeps_its_latest_turns_within_the_inline_limit() -> None:
    turns = [{"role": "user", "content": f"turn {i}: " + "blah " * 200} for i in range(2000)]
    model = ScriptedChatModel([final("ok")])
    GeneralQAAgent(model, tools=[]).answer("What did I say last?", turns)
    prompt = model.calls[0].prompt
    assert "turn 1999:" in prompt and "turn 0:" not in prompt
    assert len(prompt) < MAX_INLINE_CHARS + 5_000
    assert "earlier turns of the conversation are left out" in prompt


def test_each_readable_step_is_one_line() -> None:
    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        return "word\n" * 200

    replies = [action("fetch", '{"url": "http://x",\n "note": "a\\nb"}', thought="get it\nnow"), final("ok")]
    response = GeneralQAAgent(ScriptedChatModel(replies), [fetch]).answer("q?")
    [line] = response["steps"]
    assert "\n" not in line
    assert line.startswith("Step 1: Thought: get it now | Action: fetch(")
    assert "word [... " in line and " characters cut ...] word" in line


def _qa(replies: list[str], **kwargs: object) -> tuple[GeneralQAAgent, ScriptedChatModel]:
    model = ScriptedChatModel(replies)
    return GeneralQAAgent(model, [search], **kwargs), model


TIMINGS = {"llm_seconds", "tool_seconds", "duration"}


def test_aanswer_returns_what_answer_returns() -> None:
    replies = [action("search", "population of Paris"), final("About 2.1 million.")]
    context = [{"role": "user", "content": "We talk about Paris."}]
    sync_qa, sync_model = _qa(replies)
    async_qa, async_model = _qa(replies)
    expected = sync_qa.answer("How many people live in Paris?", context)
    got = asyncio.run(async_qa.aanswer("How many people live in Paris?", context))
    for response in (expected, got):  # the same but for the timings
        response.pop("elapsed_seconds")
        response["detailed_steps"] = [
            {k: v for k, v in s.items() if k not in TIMINGS} for s in response["detailed_steps"]
        ]
    assert got == expected and got["answer"] == "About 2.1 million."
    assert [c.prompt for c in async_model.calls] == [c.prompt for c in sync_model.calls]


def test_aanswer_searches_many_documents_as_answer_does() -> None:
    documents = [{"content": f"Fact {i}: the code word {i} is word{i}."} for i in range(12)]
    qa, model = _qa([action("knowledge_search", "code word 7"), final("word7")])
    response = asyncio.run(qa.aanswer("What is code word 7?", documents))
    assert "- knowledge_search:" in model.calls[0].prompt and "Fact 3" not in model.calls[0].prompt
    assert response["answer"] == "word7" and "word7" in response["detailed_steps"][0]["observation"]


def test_aanswer_leaves_the_event_loop_free_while_a_tool_waits() -> None:
    arrived = 0
    both_in = asyncio.Event()

    @tool
    async def meet(name: str) -> str:
        """Wait until both questions are in their tool call."""
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both_in.set()
        await both_in.wait()  # a blocked loop never lets the second question arrive
        return f"met {name}"

    async def both() -> list[dict[str, object]]:
        qa_a = GeneralQAAgent(ScriptedChatModel([action("meet", "a"), final("a")]), [meet])
        qa_b = GeneralQAAgent(ScriptedChatModel([action("meet", "b"), final("b")]), [meet])
        return await asyncio.wait_for(asyncio.gather(qa_a.aanswer("a?"), qa_b.aanswer("b?")), timeout=30)

    first, second = asyncio.run(both())
    assert (first["answer"], second["answer"]) == ("a", "b")
    assert first["detailed_steps"][0]["observation"] == "met a"


def test_aanswer_refuses_a_bad_context_before_any_model_call() -> None:
    qa, model = _qa([])
    with pytest.raises(ConfigurationError, match="role"):
        asyncio.run(qa.aanswer("q?", [{"role": None, "content": "x"}]))
    assert model.calls == []
