"""The model adapter with models wrapped by LangChain's helpers, async-only models, the run's config,
HTTP status errors and the failed call's traceback."""

from __future__ import annotations

import asyncio
import threading
import traceback
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import requests
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel, FakeListLLM
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import ConfigurableField, RunnableConfig, RunnableLambda
from pydantic import Field

from explicit_react import ExplicitReActAgent, StopReason
from explicit_react.errors import ModelCallError
from explicit_react.llm import ModelAdapter, has_native_async, is_transient
from explicit_react.testing import ScriptedChatModel
from explicit_react.two_phase import TwoPhaseModel
from tests.helpers import search

MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello there"}]
STOP = ["\nObservation:"]
KEY = "AIzaSyTESTKEY_0123456789abcdefghijklmn+/="


# The stop sequence and the prompt's form, through the wrappers -----------------------------------
WRAPPERS = {
    "bind": lambda m: m.bind(temperature=0),
    "with_config": lambda m: m.with_config(tags=["x"]),
    "with_retry": lambda m: m.with_retry(),
    "with_fallbacks": lambda m: m.with_fallbacks([ScriptedChatModel(["Final Answer: fallback"])]),
    "configurable_fields": lambda m: m.configurable_fields(ignore_stop=ConfigurableField(id="ignore")),
    "chain with a parser": lambda m: m | StrOutputParser(),
    "bind of with_retry": lambda m: m.with_retry().bind(temperature=0),
}


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS.keys())
def test_a_wrapped_chat_model_gets_the_stop_sequence(wrap: Any) -> None:
    model = ScriptedChatModel(["Final Answer: x"])
    assert ModelAdapter(wrap(model)).complete(MESSAGES).text == "Final Answer: x"
    assert model.calls[0].stop == STOP


class SpyLLM(FakeListLLM):
    """A text-completion model that records the prompt and the stop sequences it got."""

    seen: list[tuple[str, list[str] | None]] = Field(default_factory=list)

    def _call(self, prompt: str, stop: list[str] | None = None, run_manager: Any = None, **kw: Any) -> str:
        self.seen.append((prompt, stop))
        return super()._call(prompt, stop, run_manager, **kw)


@pytest.mark.parametrize("wrap", [lambda m: m, lambda m: m.bind(), lambda m: m.with_retry()])
def test_a_wrapped_llm_gets_the_text_prompt_and_the_stop_sequence(wrap: Any) -> None:
    llm = SpyLLM(responses=["Final Answer: 4"])
    ModelAdapter(wrap(llm)).complete(MESSAGES)
    assert llm.seen == [("sys\n\nhello there", STOP)]


def test_a_stop_bound_to_the_model_is_kept_beside_the_agents() -> None:
    model = ScriptedChatModel(["Final Answer: x"])
    ModelAdapter(model.bind(stop=["\nEND"])).complete(MESSAGES)
    assert model.calls[0].stop == [*STOP, "\nEND"]


def test_a_chain_whose_first_step_is_no_model_gets_no_stop_keyword() -> None:
    seen: list[Any] = []
    chain = RunnableLambda(lambda messages: seen.append(messages) or "Final Answer: 4") | StrOutputParser()
    assert ModelAdapter(chain).complete(MESSAGES).text == "Final Answer: 4"
    assert len(seen) == 1


def test_the_agent_sends_the_stop_sequence_to_a_bound_model() -> None:
    reply = "Thought: look\nAction: search\nAction Input: population of Paris\nObservation: (invented)"
    model = ScriptedChatModel([reply, "Thought: done\nFinal Answer: 2.1 million"])
    result = ExplicitReActAgent(model.bind(temperature=0), [search]).run("How many people live in Paris?")
    assert result.steps[0].observation == "2100000"
    assert model.calls[0].stop == STOP


# Native async forms ----------------------------------------------------------------------------
class SyncOnlyChat(BaseChatModel):
    """A chat model with only the sync API, as many community models are."""

    @property
    def _llm_type(self) -> str:
        return "sync-only"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage("Final Answer: 4"))])

    def bind_tools(self, tools: Any, **kw: Any) -> SyncOnlyChat:
        return self


ASYNC_WHEN = {
    "two_phase over sync-only": (lambda m: TwoPhaseModel(m, m.bind_tools([]), ""), False),
    "fallbacks to sync-only": (lambda m: ScriptedChatModel([]).with_fallbacks([m]), False),
    "retry over sync-only": (lambda m: m.with_retry(), False),
    "chain over sync-only": (lambda m: m | StrOutputParser(), False),
    "two_phase over scripted": (
        lambda m: TwoPhaseModel(ScriptedChatModel([]), ScriptedChatModel([]), ""),
        True,
    ),
    "retry over scripted": (lambda m: ScriptedChatModel([]).with_retry(), True),
    "chain over scripted": (lambda m: ScriptedChatModel([]) | StrOutputParser(), True),
}


@pytest.mark.parametrize(("wrap", "native"), ASYNC_WHEN.values(), ids=ASYNC_WHEN.keys())
def test_a_runnable_is_natively_async_only_when_every_model_it_calls_is(wrap: Any, native: bool) -> None:
    assert has_native_async(wrap(SyncOnlyChat())) is native


def test_arun_returns_at_llm_timeout_while_a_sync_only_two_phase_model_is_still_stuck() -> None:
    """The two calls of a sync-only model run in a daemon thread that the run gives up at the
    timeout: not in the event loop's default executor, which ``asyncio.run`` waits for at its end."""
    release, finished = threading.Event(), threading.Event()

    class Stuck(SyncOnlyChat):
        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            release.wait(5)
            finished.set()
            return super()._generate(*args, **kwargs)

    agent = ExplicitReActAgent(Stuck(), [search], mode="two_phase", llm_timeout=0.05, max_retries=0)
    try:
        result = asyncio.run(agent.arun("q"))
        was_still_stuck = not finished.is_set()
    finally:
        release.set()
    assert result.stop_reason is StopReason.LLM_ERROR and "timed out" in str(result.error)
    assert was_still_stuck


# Async-only models under the sync API ----------------------------------------------------------
async def _async_reply(messages: Any) -> str:
    await asyncio.sleep(0)
    return "Thought: done\nFinal Answer: 4"


class AsyncOnlyChat(BaseChatModel):
    """A chat model whose client is async only: its sync call raises ``NotImplementedError``."""

    @property
    def _llm_type(self) -> str:
        return "async-only"

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("this client is async only")

    async def _agenerate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage("Final Answer: 4"))])


@pytest.mark.parametrize(
    "make",
    [lambda: RunnableLambda(_async_reply), lambda: RunnableLambda(_async_reply).with_retry(), AsyncOnlyChat],
    ids=["async lambda", "retried async lambda", "async-only chat model"],
)
def test_an_async_only_model_is_awaited_under_the_sync_api(make: Any) -> None:
    result = ExplicitReActAgent(make(), [search], max_retries=0).run("2+2?")
    assert (result.stop_reason, result.answer) == (StopReason.SUCCESS, "4")
    assert asyncio.run(ExplicitReActAgent(make(), [search]).arun("2+2?")).stop_reason is StopReason.SUCCESS


def test_an_async_only_model_is_awaited_inside_a_running_event_loop() -> None:
    async def main() -> str:
        return ExplicitReActAgent(AsyncOnlyChat(), [search], max_retries=0).run("2+2?").answer

    assert asyncio.run(main()) == "4"


def test_a_not_implemented_error_from_deeper_down_is_the_calls_error_not_a_second_call() -> None:
    model = ScriptedChatModel([NotImplementedError("no such feature"), "Final Answer: 4"])
    with pytest.raises(ModelCallError, match="NotImplementedError: no such feature"):
        ModelAdapter(model, max_retries=0).complete(MESSAGES)
    assert model.remaining == 1


def test_a_sync_model_that_raises_not_implemented_without_an_async_form_fails_once() -> None:
    class Broken(SyncOnlyChat):
        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            raise NotImplementedError("no")

    with pytest.raises(ModelCallError, match="NotImplementedError: no"):
        ModelAdapter(Broken(), max_retries=0).complete(MESSAGES)


# The run's config reaches the model call -------------------------------------------------------
def test_the_runs_configurable_values_reach_a_configurable_model() -> None:
    model = ScriptedChatModel(["Final Answer: default"]).configurable_fields(
        replies=ConfigurableField(id="replies")
    )
    config: RunnableConfig = {"configurable": {"replies": ["Final Answer: configured"]}}
    assert ModelAdapter(model).complete(MESSAGES, config=config).text == "Final Answer: configured"
    assert ModelAdapter(model).complete(MESSAGES).text == "Final Answer: default"


def test_the_runs_tags_and_metadata_reach_the_model_and_callbacks_still_hear_it() -> None:
    seen: list[RunnableConfig] = []

    def model(messages: Any, config: RunnableConfig) -> str:
        seen.append(config)
        return "Final Answer: ok"

    class Starts(BaseCallbackHandler):
        def __init__(self) -> None:
            self.names: list[str] = []

        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            self.names.append(kwargs.get("name") or "")

    handler = Starts()
    run_config: RunnableConfig = {
        "tags": ["t1"],
        "metadata": {"user": "ada"},
        "configurable": {"session": "s1"},
        "run_name": "the agent run",
    }
    ModelAdapter(RunnableLambda(model, name="m")).complete(MESSAGES, callbacks=[handler], config=run_config)
    (got,) = seen
    assert got["configurable"]["session"] == "s1" and got["metadata"]["user"] == "ada"
    assert "t1" in got["tags"]
    assert handler.names == ["m"]  # the run's name is the agent run's, not the model call's


# Which errors are transient --------------------------------------------------------------------
def _httpx_error(code: int) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "https://api.example.com/v1/chat")
    return httpx.HTTPStatusError("status", request=request, response=httpx.Response(code, request=request))


def _requests_error(code: int) -> requests.HTTPError:
    response = requests.Response()
    response.status_code = code
    return requests.HTTPError("status", response=response)


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (_httpx_error(429), True),
        (_httpx_error(503), True),
        (_httpx_error(401), False),
        (_requests_error(429), True),
        (_requests_error(502), True),
        (_requests_error(404), False),
    ],
)
def test_http_status_errors_are_transient_by_the_responses_status(exc: Exception, transient: bool) -> None:
    assert is_transient(exc) is transient


# The failed call's traceback -------------------------------------------------------------------
def test_no_traceback_of_a_failed_call_shows_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    failure = RuntimeError(f"400 for url https://x/v1beta/models/m:generateContent?key={quote(KEY, safe='')}")
    agent = ExplicitReActAgent(ScriptedChatModel([failure]), [search], on_llm_error="raise", max_retries=0)
    with pytest.raises(ModelCallError) as raised:
        agent.run("q")
    shown = "".join(traceback.format_exception(raised.value))
    assert "RuntimeError: 400 for url" in shown and "[redacted]" in shown
    assert KEY not in shown and quote(KEY, safe="") not in shown
