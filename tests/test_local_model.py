"""The real Gemma 3 270M GGUF through llama.cpp: loading, stop sequences, usage, one agent run.

A 270M base model does not answer reliably, so these tests check what is deterministic and
meaningful (greedy decoding, the stop cut, the token counts, how the run ends), never whether an
answer is right.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel

from explicit_react import buildcheck, models
from explicit_react.errors import ConfigurationError

pytestmark = pytest.mark.local_model

if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip(f"llama-cpp-python is not installed ({models.LOCAL_EXTRA_INSTALL})", allow_module_level=True)
if "gemma" not in models.installed_local_models():
    pytest.skip(
        f"the Gemma 3 270M weights are not installed ({models.LOCAL_EXTRA_INSTALL})", allow_module_level=True
    )

try:  # a build that crashes on this CPU skips the module with the reinstall command, never kills pytest
    buildcheck.check_llama_build(models.ensure_local_model("gemma"))
except ConfigurationError as error:
    pytest.skip(str(error), allow_module_level=True)

# Small settings keep the whole module well under a minute on 2 CPU cores.
N_CTX = 2048
MAX_TOKENS = 64
TRANSCRIPT = (
    "Copy these lines exactly:\n"
    "Thought: I need to add two numbers.\n"
    "Action: calculator\n"
    "Action Input: 2 + 2\n"
    "Observation: 4\n"
)
STOP = "\nObservation:"


@pytest.fixture(scope="module")
def gemma() -> BaseChatModel:
    return models.load_model("local:gemma", n_ctx=N_CTX, max_tokens=MAX_TOKENS)


def test_local_gemma_is_loaded_with_cpu_defaults(gemma: Any) -> None:
    assert gemma.temperature == 0
    assert gemma.streaming is False
    assert gemma.verbose is False
    assert gemma.client.n_ctx() == N_CTX
    assert gemma.max_tokens == MAX_TOKENS
    assert gemma.model_path.endswith("gemma-3-270m-q4_k_m.gguf")


def test_invoke_returns_text_with_usage(gemma: BaseChatModel) -> None:
    reply = gemma.invoke("Say hello.")
    assert isinstance(reply.content, str)
    assert reply.content.strip()
    usage = reply.usage_metadata  # type: ignore[attr-defined]
    assert usage is not None
    assert usage["input_tokens"] > 0
    assert 0 < usage["output_tokens"] <= MAX_TOKENS
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_greedy_decoding_is_deterministic(gemma: BaseChatModel) -> None:
    assert gemma.invoke(TRANSCRIPT).content == gemma.invoke(TRANSCRIPT).content


def test_the_same_messages_get_the_same_reply_whatever_the_model_read_before() -> None:
    """The local path's promise: at temperature 0, a reply depends only on the messages, not on what
    the model object read before (llama.cpp's prompt-cache reuse is cut to whole n_batch blocks).

    A small n_batch makes these short prompts span several blocks, so the cache is really reused."""
    from langchain_core.messages import HumanMessage, SystemMessage

    system = SystemMessage("You answer questions about numbers. " * 6)
    first = [system, HumanMessage("What is 2 + 2? Answer in one sentence.")]
    second = [system, HumanMessage("What is 3 + 5? Answer in one sentence.")]

    def fresh(messages: list[Any]) -> str:
        model = models.load_model("local:gemma", n_ctx=N_CTX, max_tokens=24, n_batch=16)
        return str(model.invoke(messages).content)

    used = models.load_model("local:gemma", n_ctx=N_CTX, max_tokens=24, n_batch=16)
    replies = [str(used.invoke(m).content) for m in (first, second, first, second, second)]
    assert used.client._last_prompt  # type: ignore[attr-defined]
    assert replies == [fresh(first), fresh(second), fresh(first), fresh(second), fresh(second)]


def test_the_cache_is_really_reused_between_calls_that_share_a_prefix() -> None:
    """Without this, the test above could pass because nothing was ever reused."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from explicit_react.llama import aligned_reuse

    model: Any = models.load_model("local:gemma", n_ctx=N_CTX, max_tokens=4, n_batch=16)
    system = SystemMessage("You answer questions about numbers. " * 6)
    model.invoke([system, HumanMessage("What is 2 + 2?")])
    first = list(model.client._last_prompt)
    model.invoke([system, HumanMessage("What is 3 + 5?")])
    second = model.client._last_prompt
    reused = aligned_reuse(first, second, 16)
    assert reused >= 32  # the system message spans several 16-token blocks
    assert first[:reused] == second[:reused]


def test_a_new_model_object_starts_from_the_saved_prompt_state(tmp_path: Any) -> None:
    """What a second ``explicit-react`` process gets: the system prompt's blocks come from the state
    file the first one saved, and the reply is the one a model with no saved state gives."""
    from langchain_core.messages import HumanMessage, SystemMessage

    system = SystemMessage("You answer questions about numbers. " * 6)
    settings: dict[str, Any] = {"n_ctx": N_CTX, "max_tokens": 16, "n_batch": 16}
    first = models.load_model("local:gemma", prompt_state_dir=str(tmp_path), **settings)
    first.invoke([system, HumanMessage("What is 2 + 2?")])
    (saved,) = tmp_path.glob("*.state")

    question = [system, HumanMessage("What is 3 + 5?")]
    reply = models.load_model("local:gemma", prompt_state_dir=str(tmp_path), **settings).invoke(question)
    unsaved = models.load_model("local:gemma", prompt_state_dir=None, **settings).invoke(question)
    assert reply.usage_metadata["input_token_details"]["cache_read"] >= 32  # type: ignore[index]
    assert "input_token_details" not in unsaved.usage_metadata  # type: ignore[operator]
    assert reply.content == unsaved.content

    saved.write_bytes(b"not a llama.cpp state")  # a damaged file is read as no file
    damaged = models.load_model("local:gemma", prompt_state_dir=str(tmp_path), **settings).invoke(question)
    assert damaged.content == unsaved.content
    assert "input_token_details" not in damaged.usage_metadata  # type: ignore[operator]


QUESTION_SETTINGS: dict[str, Any] = {"n_ctx": N_CTX, "max_tokens": 8, "n_batch": 16}


def numbers_question(text: str = "What is 3 + 5?") -> list[Any]:
    """A question after a system message of several 16-token blocks (the part a state file keeps)."""
    from langchain_core.messages import HumanMessage, SystemMessage

    return [SystemMessage("You answer questions about numbers. " * 6), HumanMessage(text)]


def read_in_part(model: Any) -> None:
    """Make the model's next call stop after one 16-token block of the prompt, as Ctrl-C does."""
    read = model.client.eval

    def interrupted(tokens: Any) -> None:
        read(tokens[:16])
        raise KeyboardInterrupt

    model.client.eval = interrupted


def broken_state(folder: Any, names: int) -> Any:
    """A state file in ``folder`` that names ``names`` prompt tokens of which llama.cpp read 16 (a
    prompt read in part, saved as if read whole): restoring it fails with ``llama_decode``."""
    model = models.load_model("local:gemma", prompt_state_dir=str(folder), **QUESTION_SETTINGS)
    read_in_part(model)
    with pytest.raises(KeyboardInterrupt):
        model.invoke(numbers_question())
    model.client._save_state(model.client._last_prompt[:names])
    (broken,) = folder.glob("*.state")
    return broken


def test_a_prompt_read_in_part_is_not_saved(tmp_path: Any) -> None:
    """Interrupted while reading its first prompt, the model saved a state naming blocks it never
    read; every later process then failed with ``llama_decode returned -1``."""
    model = models.load_model("local:gemma", prompt_state_dir=str(tmp_path), **QUESTION_SETTINGS)
    read_in_part(model)
    with pytest.raises(KeyboardInterrupt):
        model.invoke(numbers_question())
    assert list(tmp_path.glob("*.state")) == []


def test_a_saved_prompt_state_holds_only_the_blocks_it_names(tmp_path: Any) -> None:
    """The state was saved once the whole prompt was read, so it also held the cache of every prompt
    token after the blocks it names (a file naming 128 tokens of a 750-token prompt was 21 MB)."""
    import llama_cpp

    long_question = "What is 3 + 5? " + "Explain each step of the addition in plain words. " * 4
    first = models.load_model("local:gemma", prompt_state_dir=str(tmp_path), **QUESTION_SETTINGS)
    first.invoke(numbers_question(long_question))
    read = len(first.client._last_prompt)  # type: ignore[attr-defined]
    (saved,) = tmp_path.glob("*.state")

    later: Any = models.load_model("local:gemma", prompt_state_dir=str(tmp_path), **QUESTION_SETTINGS)
    later.client.state_file = saved
    named = later.client._restore_state()
    assert named and len(named) % 16 == 0 and read - len(named) < 16  # the prompt's whole blocks
    memory = llama_cpp.llama_get_memory(later.client._ctx.ctx)
    assert llama_cpp.llama_memory_seq_pos_max(memory, 0) == len(named) - 1  # and nothing past them


def test_a_draft_model_checks_its_drafts_without_logits_for_the_whole_context() -> None:
    """llama_cpp's prompt-lookup draft model failed past the first n_batch tokens ("could not
    broadcast input array") unless the model kept every token's logits (``logits_all=True``: n_ctx
    rows of the vocabulary, 2.5 GB for Qwen 1.5B at 4,096)."""
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    question = "Repeat after me, word for word: the quick brown fox jumps over the lazy dog. " * 2
    settings: dict[str, Any] = {"n_ctx": N_CTX, "max_tokens": 24, "n_batch": 16}
    drafted: Any = models.load_model(
        "local:gemma", model_kwargs={"draft_model": LlamaPromptLookupDecoding()}, **settings
    )
    blocks: list[tuple[int, bool]] = []
    decode = drafted.client._decode

    def recorded(block: Any, *, every_token: bool) -> None:
        blocks.append((len(block), every_token))
        decode(block, every_token=every_token)

    drafted.client._decode = recorded
    reply = drafted.invoke(question).content
    assert reply == models.load_model("local:gemma", **settings).invoke(question).content
    assert any(size > 1 and every for size, every in blocks)  # drafted tokens were checked in a batch
    assert not any(every for size, every in blocks if size == 16)  # prompt blocks: the last logits only
    assert drafted.invoke(question).content == reply  # and again from the cache
    with pytest.raises(ValueError, match="logprobs is not supported"):  # not read from an empty table
        drafted.client.create_completion("fox fox fox", max_tokens=2, logprobs=1)


def test_drafts_longer_than_a_block_are_cut_to_fit_one() -> None:
    """A draft of n_batch tokens or more was checked in two decodes, and the sampler then read the
    logits of the first, which llama.cpp no longer held: the process aborted (GGML_ASSERT)."""
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    question = "Repeat after me, word for word: the quick brown fox jumps over the lazy dog. " * 2
    settings: dict[str, Any] = {"n_ctx": N_CTX, "max_tokens": 16, "n_batch": 8}
    drafted: Any = models.load_model(
        "local:gemma", draft_model=LlamaPromptLookupDecoding(num_pred_tokens=10), **settings
    )
    reply = drafted.invoke(question).content
    assert reply == models.load_model("local:gemma", **settings).invoke(question).content


def test_a_saved_state_that_does_not_decode_is_deleted_and_the_prompt_read_afresh(tmp_path: Any) -> None:
    broken = broken_state(tmp_path, names=32)
    broken_bytes = broken.read_bytes()

    question = numbers_question("What is 2 + 2?")
    reply = models.load_model("local:gemma", prompt_state_dir=str(tmp_path), **QUESTION_SETTINGS).invoke(
        question
    )
    unsaved = models.load_model("local:gemma", prompt_state_dir=None, **QUESTION_SETTINGS).invoke(question)
    assert reply.content == unsaved.content
    assert broken.read_bytes() != broken_bytes  # replaced by the state of the prompt read afresh
    again = models.load_model("local:gemma", prompt_state_dir=str(tmp_path), **QUESTION_SETTINGS).invoke(
        question
    )
    assert again.usage_metadata["input_token_details"]["cache_read"] >= 32  # type: ignore[index]
    assert again.content == unsaved.content


def test_a_saved_state_that_does_not_decode_is_deleted_when_saving_fails_too(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """A restored state that shares fewer blocks with the prompt than it names is saved again, cut
    to those blocks, before the first block decodes. When that save failed (a full disk) and the
    decode then failed, the call raised AssertionError and the broken file stayed for every process."""
    import llama_cpp

    broken = broken_state(tmp_path, names=48)

    from langchain_core.messages import HumanMessage, SystemMessage

    shares_two_blocks = [
        SystemMessage("You answer questions about numbers. " * 6 + "Be brief and exact. " * 10),
        HumanMessage("What is 2 + 2?"),
    ]
    monkeypatch.setattr(llama_cpp, "llama_state_save_file", lambda *args: False)
    later = models.load_model("local:gemma", prompt_state_dir=str(tmp_path), **QUESTION_SETTINGS)
    with pytest.warns(RuntimeWarning, match="Could not save the prompt state"):
        reply = later.invoke(shares_two_blocks)
    unsaved = models.load_model("local:gemma", prompt_state_dir=None, **QUESTION_SETTINGS)
    assert reply.content == unsaved.invoke(shares_two_blocks).content
    assert not broken.exists()


def test_a_prompt_state_folder_that_cannot_be_written_is_a_warning(tmp_path: Any) -> None:
    """A read-only or full cache folder: the reply comes, the prompt start is just not kept."""
    blocked = tmp_path / "a-file"
    blocked.write_text("where the folder should be")
    model = models.load_model("local:gemma", prompt_state_dir=str(blocked / "states"), **QUESTION_SETTINGS)
    with pytest.warns(RuntimeWarning, match="Could not save the prompt state"):
        reply = model.invoke(numbers_question())
    unsaved = models.load_model("local:gemma", prompt_state_dir=None, **QUESTION_SETTINGS)
    assert reply.content == unsaved.invoke(numbers_question()).content
    model.invoke(numbers_question("What is 2 + 2?"))  # no second warning: saving is off for this model


def test_two_threads_can_save_the_same_prompt_state_at_once(tmp_path: Any, monkeypatch: Any) -> None:
    """Two model objects of one process save the same state: both write their temporary file before
    either renames it, so the two names must differ (they were the process id)."""
    import threading

    import llama_cpp

    both_written = threading.Barrier(2, timeout=60)
    save = llama_cpp.llama_state_save_file
    written: list[bytes] = []

    def save_then_wait(context: Any, path: bytes, *args: Any) -> Any:
        saved = save(context, path, *args)
        written.append(path)
        both_written.wait()
        return saved

    monkeypatch.setattr(llama_cpp, "llama_state_save_file", save_then_wait)
    pair = [
        models.load_model("local:gemma", prompt_state_dir=str(tmp_path), **QUESTION_SETTINGS) for _ in "ab"
    ]
    errors: list[BaseException] = []

    def ask(model: Any) -> None:
        try:
            model.invoke(numbers_question())
        except BaseException as error:  # reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=ask, args=(model,)) for model in pair]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(written)) == 2  # one file written over by the other thread gave a mixed state
    assert [path.suffix for path in tmp_path.iterdir()] == [".state"]


def test_stream_gives_in_pieces_the_message_invoke_gives(gemma: Any) -> None:
    """stream() yields the reply as it is written, then its usage and finish reason; joined, the chunks
    are invoke's message, for an answer and for a continued reply; and streaming=True changes nothing."""
    from langchain_core.messages import AIMessage, HumanMessage

    asked = [HumanMessage("Count from one to ten in words.")]
    continued = [HumanMessage("Count from one to ten in words."), AIMessage("one, two, three,")]
    short = gemma.model_copy(update={"max_tokens": 16})  # the same llama.cpp object
    streaming = short.model_copy(update={"streaming": True})
    for messages in (asked, continued):
        short.invoke(messages)  # the same cache before each call below: the same cache_read
        reply = short.invoke(messages)
        chunks = list(short.stream(messages))
        assert len([chunk for chunk in chunks if chunk.content]) > 2
        whole = chunks[0]
        for chunk in chunks[1:]:
            whole += chunk
        for message in (whole, streaming.invoke(messages)):
            assert message.content == reply.content
            assert message.usage_metadata == reply.usage_metadata
            assert message.response_metadata == reply.response_metadata


def test_a_last_assistant_message_is_continued_not_answered(gemma: Any) -> None:
    """The agent gives a local model the steps so far as its own reply to go on with: the prompt
    ends inside that reply (no end-of-turn, no new assistant turn), and the reply is the rest."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    so_far = "Thought: I add.\nAction: calculator\nAction Input: 2 + 2\nObservation: 4\n"
    messages = [SystemMessage("Answer with the tools."), HumanMessage("What is 2 + 2?"), AIMessage(so_far)]
    assert gemma.continues_replies
    prompt = gemma._continuation(messages)
    assert prompt.endswith("<start_of_turn>model\n" + so_far)
    reply = gemma.invoke(messages, stop=[STOP])
    assert reply.response_metadata["continued"] is True
    tokens = gemma.client.tokenize(prompt.encode(), add_bos=False, special=True)  # the template writes <bos>
    assert reply.usage_metadata["input_tokens"] == len(tokens) == len(gemma._tokens(prompt))
    bos = gemma.client.token_bos()
    assert gemma._tokens(prompt)[:2] == [bos, tokens[1]] and tokens[1] != bos  # one <bos>, not two


def test_stop_sequence_is_honoured_in_invoke_and_stream(gemma: BaseChatModel) -> None:
    free = str(gemma.invoke(TRANSCRIPT).content)
    if STOP not in free:
        pytest.skip(f"the model did not write {STOP!r} unprompted, so there is nothing to cut: {free!r}")
    stopped = gemma.invoke(TRANSCRIPT, stop=[STOP])
    assert STOP not in stopped.content
    assert stopped.content == free[: free.index(STOP)]
    assert stopped.usage_metadata["output_tokens"] < MAX_TOKENS  # type: ignore[attr-defined]
    streamed = "".join(str(chunk.content) for chunk in gemma.stream(TRANSCRIPT, stop=[STOP]))
    assert streamed == stopped.content


def test_the_agent_loop_runs_on_the_real_model(gemma: BaseChatModel) -> None:
    from explicit_react import ExplicitReActAgent, StopReason
    from explicit_react.tools import calculator

    agent = ExplicitReActAgent(gemma, [calculator], max_iterations=3)
    result = agent.run("What is 12 * 7?")

    assert isinstance(result.stop_reason, StopReason)
    assert isinstance(result.answer, str)
    assert result.answer.strip()
    assert result.llm_calls >= 1
    assert result.usage.input_tokens > 0  # the local model reports usage_metadata
    assert len(result.steps) <= 3
    if result.success:
        assert result.error is None
    else:  # a stated reason, e.g. the iteration budget ran out
        assert result.stop_reason is not StopReason.SUCCESS
        assert result.error


def test_the_grammar_holds_the_real_model_to_the_format_and_real_tools(gemma: BaseChatModel) -> None:
    """Unconstrained, this 270M model never writes a usable action; under the grammar every reply
    parses and every action names one of the agent's tools."""
    from explicit_react import ExplicitReActAgent
    from explicit_react.tools import KnowledgeBaseTool, calculator

    tools = [calculator, KnowledgeBaseTool(["The Lumacrab costs 1270 dollars."])]
    agent = ExplicitReActAgent(gemma, tools, max_iterations=3)
    result = agent.run("How much do 3 Lumacrab robots cost?")

    # Whether this 270M model acts or answers at once depends on the build's numbers; either way
    # every reply must have parsed: no parse errors, no made-up tools, and an answer that was read.
    assert result.steps or result.success, result
    for step in result.steps:
        assert step.error not in ("parse_error", "unknown_tool"), step
        assert step.action in {"calculator", "knowledge_search"}
        assert step.log.startswith("Thought: ")


def test_the_grammar_can_be_turned_off(gemma: BaseChatModel) -> None:
    from explicit_react import ExplicitReActAgent
    from explicit_react.tools import calculator

    constrained = ExplicitReActAgent(gemma, [calculator])
    free = ExplicitReActAgent(gemma, [calculator], constrain_local=False)
    assert constrained.model.llm is not gemma
    assert constrained.model.llm.kwargs["grammar"] is not None  # type: ignore[attr-defined]
    assert free.model.llm is gemma
    assert free.final_model.llm is gemma


def test_at_a_limit_the_grammar_asks_the_real_model_for_a_final_answer(gemma: BaseChatModel) -> None:
    from explicit_react import ExplicitReActAgent
    from explicit_react.parser import parse
    from explicit_react.types import FinalAnswer

    agent = ExplicitReActAgent(gemma, [])
    messages = agent.transport.final_messages("What is 2 + 2?", [], [], "")
    completion = agent.final_model.complete(messages)
    assert isinstance(parse(completion.text), FinalAnswer), completion.text


@pytest.mark.parametrize("verbose", [False, True])
def test_llama_cpp_prints_nothing_unless_verbose(verbose: bool) -> None:
    """In a child process, so that output written by native code to file descriptor 2 is seen."""
    import subprocess
    import sys

    code = (
        "from explicit_react import models; "
        f"m = models.load_model('local:gemma', n_ctx=256, max_tokens=4, verbose={verbose}); "
        "m.invoke('Say hello.')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    if verbose:
        assert "llama_" in done.stderr  # the loading log, e.g. llama_context / llama_kv_cache lines
    else:
        assert done.stderr == "" and done.stdout == ""


def _bounded_calculator() -> Any:
    """The calculator with its argument capped at 40 characters in its schema: the grammar follows
    the schema, so a call always closes within the token limit (this base model otherwise repeats
    digits inside the string until ``max_tokens`` cuts the call off)."""
    from pydantic import BaseModel, Field

    from explicit_react.tools import calculator

    class Expression(BaseModel):
        expression: str = Field(max_length=40, description="an arithmetic expression, e.g. 2 + 2")

    return calculator.model_copy(update={"args_schema": Expression})


def test_a_native_tool_call_from_the_real_model_is_well_formed(gemma: BaseChatModel) -> None:
    """bind_tools: the grammar holds the reply to one call of a bound tool with its JSON arguments."""
    reply = gemma.bind_tools([_bounded_calculator()], tool_choice="required", max_tokens=128).invoke(
        "What is 12 * 7?"
    )
    assert reply.invalid_tool_calls == [], reply  # type: ignore[attr-defined]
    [call] = reply.tool_calls  # type: ignore[attr-defined]
    assert call["name"] == "calculator"
    assert list(call["args"]) == ["expression"] and isinstance(call["args"]["expression"], str)
    assert len(call["args"]["expression"]) <= 40


def test_two_phase_runs_end_to_end_on_the_real_model(gemma: BaseChatModel) -> None:
    """mode="two_phase" on a local model: a free-text thought, then a native call or an answer, each
    turn; whatever this 270M model decides, every action is a well-formed call of a real tool, a call
    cut off by the token limit is reported to the model as such, and the run ends with a stated
    reason."""
    from explicit_react import ExplicitReActAgent

    longer = gemma.model_copy(update={"max_tokens": 128})  # the same llama.cpp object, room for a call
    agent = ExplicitReActAgent(longer, [_bounded_calculator()], mode="two_phase", max_iterations=2)
    result = agent.run("What is 12 * 7?")
    assert result.answer.strip()
    assert 1 <= result.llm_calls <= 3 and result.usage.input_tokens > 0
    for step in result.steps:
        if step.action:  # a call: well formed, of the real tool, with the Thought call's paragraph
            assert step.action == "calculator", step
            assert step.error not in ("parse_error", "unknown_tool", "invalid_input"), step
            assert step.thought.strip()
        else:  # text before the call used up max_tokens and cut the call off: said to the model
            assert step.observation.startswith("Error: your call to 'calculator' could not be run"), step
            assert "cut off" in step.observation, step


def test_the_real_model_follows_a_tool_schema_with_its_own_defs(gemma: BaseChatModel) -> None:
    """A $ref to the tool's own $defs: the grammar holds the call to the definition it names."""
    parameters = {
        "type": "object",
        "$defs": {"Kind": {"type": "string", "enum": ["red", "green"]}},
        "properties": {"kind": {"$ref": "#/$defs/Kind"}},
        "required": ["kind"],
    }
    paint = {
        "type": "function",
        "function": {"name": "paint", "description": "Paint.", "parameters": parameters},
    }
    reply = gemma.bind_tools([paint], tool_choice="required", max_tokens=32).invoke("Paint the door red.")
    assert reply.invalid_tool_calls == [], reply  # type: ignore[attr-defined]
    [call] = reply.tool_calls  # type: ignore[attr-defined]
    assert call["args"] in ({"kind": "red"}, {"kind": "green"})


def test_a_call_the_real_model_cut_off_at_max_tokens_is_invalid_streamed_or_not(gemma: BaseChatModel) -> None:
    """max_tokens ends the reply inside the call's JSON: invoke, stream() and streaming=True all give
    one invalid call and no call with partial arguments (LangChain's joining of streamed chunks
    turned it into one)."""
    short = gemma.bind_tools([_bounded_calculator()], tool_choice="required", max_tokens=24)
    streaming = gemma.model_copy(update={"streaming": True}).bind_tools(
        [_bounded_calculator()], tool_choice="required", max_tokens=24
    )
    invoked = short.invoke("What is 12 * 7?")
    assert invoked.tool_calls == [] and invoked.response_metadata["finish_reason"] == "length", invoked  # type: ignore[attr-defined]
    [cut] = invoked.invalid_tool_calls  # type: ignore[attr-defined]
    assert cut["name"] == "calculator" and cut["args"].startswith("<tool_call>")
    assert '"arguments": {"expression": "' in cut["args"], cut  # cut off inside the arguments
    chunks = list(short.stream("What is 12 * 7?"))
    streamed = chunks[0]
    for chunk in chunks[1:]:
        streamed += chunk
    for message in (streamed, streaming.invoke("What is 12 * 7?")):
        assert message.tool_calls == [], message
        assert [(c["name"], c["args"], c["id"]) for c in message.invalid_tool_calls] == [
            (cut["name"], cut["args"], cut["id"])
        ]


def test_the_real_model_follows_a_tool_schema_with_defs_inside_a_property(gemma: BaseChatModel) -> None:
    """A $ref to a $defs below the schema's root (a JSON pointer): the grammar holds the call to it."""
    parameters = {
        "type": "object",
        "properties": {
            "kind": {
                "$defs": {"Kind": {"type": "string", "enum": ["red", "green"]}},
                "$ref": "#/properties/kind/$defs/Kind",
            }
        },
        "required": ["kind"],
    }
    paint = {
        "type": "function",
        "function": {"name": "paint", "description": "Paint.", "parameters": parameters},
    }
    reply = gemma.bind_tools([paint], tool_choice="required", max_tokens=32).invoke("Paint the door red.")
    assert reply.invalid_tool_calls == [], reply  # type: ignore[attr-defined]
    [call] = reply.tool_calls  # type: ignore[attr-defined]
    assert call["args"] in ({"kind": "red"}, {"kind": "green"})


def test_two_tool_sets_used_in_turn_each_keep_their_saved_prompt(tmp_path: Any) -> None:
    """One state file per model and settings: a process with other tools overwrote it, and the next
    process with the first tools read its whole prompt again. Each first block now has its slot."""
    from langchain_core.messages import HumanMessage, SystemMessage

    tools_a = SystemMessage("Tools: search, calculator. Answer questions about numbers. " * 4)
    tools_b = SystemMessage("Tools: calculator only. Reply in one short sentence, always. " * 4)

    def first_call(system: Any) -> int:
        model = models.load_model("local:gemma", prompt_state_dir=str(tmp_path), **QUESTION_SETTINGS)
        reply = model.invoke([system, HumanMessage("What is 3 + 5?")])
        return int((reply.usage_metadata or {}).get("input_token_details", {}).get("cache_read", 0))

    assert [first_call(tools_a), first_call(tools_b)] == [0, 0]  # nothing saved yet
    assert first_call(tools_a) >= 32 and first_call(tools_b) >= 32  # each from its own file
    assert len(list(tmp_path.glob("*.state"))) == 2
