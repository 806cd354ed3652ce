"""The agent's LangChain chain run (``chain_run``): kept whenever any handler could see it, skipped
only when none could, and the model and tool calls get the config's tags and metadata either way."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.outputs import ChatResult
from langchain_core.runnables import RunnableLambda, ensure_config
from langchain_core.runnables.config import get_callback_manager_for_config
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tracers.context import collect_runs
from pydantic import Field

from explicit_react import ExplicitReActAgent, chain_run
from explicit_react.drivers import Call
from explicit_react.testing import ScriptedChatModel
from tests.helpers import EventRecorder, action, final

SCRIPT = [action("lookup", "item 7", "Look it up."), final("item 7 is 42")]
CONFIG: dict[str, Any] = {"tags": ["outer", "team-a"], "metadata": {"user": "u1", "request": 7}}


class SeenModel(ScriptedChatModel):
    """Records the tags, metadata and parent run id of each call's run manager."""

    seen: list[tuple[list[str], dict[str, Any], Any]] = Field(default_factory=list)

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: CallbackManagerForLLMRun | None = None, **kw: Any
    ) -> ChatResult:
        assert run_manager is not None
        self.seen.append((run_manager.tags, run_manager.metadata, run_manager.parent_run_id))
        return self._next(messages, stop)

    async def _agenerate(
        self,
        messages: Any,
        stop: Any = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kw: Any,
    ) -> ChatResult:
        assert run_manager is not None
        self.seen.append((run_manager.tags, run_manager.metadata, run_manager.parent_run_id))
        return self._next(messages, stop)


class SeenTool(BaseTool):
    """A text tool that records the tags, metadata and parent run id of its run manager."""

    name: str = "lookup"
    description: str = "Look up the value of an item."
    seen: list[tuple[list[str], dict[str, Any], Any]] = Field(default_factory=list)

    def _run(self, item: str, run_manager: Any = None) -> str:
        self.seen.append((run_manager.tags, run_manager.metadata, run_manager.parent_run_id))
        return f"The value of {item} is 42."


class AsyncSeenTool(SeenTool):
    async def _arun(self, item: str, run_manager: Any = None) -> str:
        return self._run(item, run_manager)


def build(asynchronous_tool: bool = False) -> tuple[ExplicitReActAgent, SeenModel, list[Any]]:
    """An agent whose model and tool record what their run managers carry."""
    tool = AsyncSeenTool(seen=[]) if asynchronous_tool else SeenTool(seen=[])
    model = SeenModel(SCRIPT, seen=[])
    return ExplicitReActAgent(model, [tool], max_iterations=3), model, tool.seen


def invoke(agent: ExplicitReActAgent, config: dict[str, Any], asynchronous: bool) -> dict[str, Any]:
    if asynchronous:
        return asyncio.run(agent.ainvoke("What is item 7?", config=config))  # type: ignore[arg-type]
    return agent.invoke("What is item 7?", config=config)  # type: ignore[arg-type]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_with_no_handler_the_calls_get_the_configs_tags_and_metadata_as_with_one(asynchronous: bool) -> None:
    """The same tags and metadata reach the model's and the tool's runs whether the chain run is
    skipped (no handler anywhere) or kept (a handler in the config); only the parent differs."""
    quiet_agent, quiet_model, quiet_tool = build(asynchronous)
    assert invoke(quiet_agent, dict(CONFIG), asynchronous)["output"] == "item 7 is 42"
    heard_agent, heard_model, heard_tool = build(asynchronous)
    recorder = EventRecorder()
    assert invoke(heard_agent, {**CONFIG, "callbacks": [recorder]}, asynchronous)["output"] == "item 7 is 42"

    assert len(quiet_model.seen) == len(heard_model.seen) == 2 and len(quiet_tool) == len(heard_tool) == 1
    for quiet, heard in zip(quiet_model.seen + quiet_tool, heard_model.seen + heard_tool, strict=True):
        assert sorted(quiet[0]) == sorted(heard[0]) == ["outer", "team-a"]
        assert quiet[1] == heard[1] and {"user": "u1", "request": 7}.items() <= quiet[1].items()
        assert quiet[2] is None  # no chain run: nobody could have seen it
        assert heard[2] == recorder.events[0][1]  # the chain run, as the handler saw it


def test_the_calls_get_what_the_chain_runs_child_would_give_from_a_managers_config() -> None:
    """A config whose callbacks are a manager (a chain step's child, with a local tag of its own)
    passes on only what the chain run's child would: its inheritable tags and metadata."""
    from langchain_core.callbacks import CallbackManager

    seen = []
    for handlers in ([], [EventRecorder()]):
        outer = CallbackManager(handlers=[], inheritable_tags=["outer"], tags=["outer", "seq:step:1"])
        outer.set_handlers(handlers)
        outer.add_metadata({"user": "u1"})
        agent, model, tool_seen = build()
        agent.invoke("What is item 7?", config={"callbacks": outer})
        seen.append([(tags, metadata) for tags, metadata, _ in model.seen + tool_seen])
    assert seen[0] == seen[1] and len(seen[0]) == 3
    assert all(tags == ["outer"] and metadata["user"] == "u1" for tags, metadata in seen[0])


@pytest.mark.parametrize("where", ["model", "tool"])
@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_handler_of_the_model_or_a_tool_keeps_the_chain_run(where: str, asynchronous: bool) -> None:
    """Their own handler sees the agent's chain run as the parent of their runs, as before."""
    agent, model, _ = build(asynchronous)
    recorder = EventRecorder()
    (model if where == "model" else agent.tools[0]).callbacks = [recorder]
    run_id = uuid.uuid4()
    invoke(agent, {"run_id": run_id}, asynchronous)
    starts = [e for e in recorder.events if e[0] in ("llm_start", "tool_start")]
    assert len(starts) == (2 if where == "model" else 1)
    assert all(parent == run_id for _, _, parent in starts)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_handler_in_the_config_keeps_the_chain_run_with_the_same_parents(asynchronous: bool) -> None:
    agent, _, _ = build(asynchronous)
    recorder = EventRecorder()
    invoke(agent, {"callbacks": [recorder]}, asynchronous)
    assert recorder.names[0] == "chain_start" and recorder.names[-1] == "chain_end"
    root = recorder.events[0][1]
    starts = [e for e in recorder.events if e[0] in ("llm_start", "tool_start")]
    assert len(starts) == 3 and all(parent == root for _, _, parent in starts)


def test_a_handler_langchain_adds_itself_keeps_the_chain_run() -> None:
    """``collect_runs`` registers its handler through a configure hook, not the config."""
    agent, _, _ = build()
    with collect_runs() as collector:
        agent.invoke("What is item 7?")
    (root,) = collector.traced_runs
    assert root.name == "ExplicitReActAgent" and root.parent_run_id is None
    assert sorted(run.run_type for run in root.child_runs) == ["llm", "llm", "tool"]
    assert all(run.parent_run_id == root.id for run in root.child_runs)


def starts_a_chain_run(agent: ExplicitReActAgent) -> bool:
    """Whether a run of ``agent`` would start its chain run now (checked without running it: a
    LangSmith tracer would send the run over the network)."""
    parts = (agent.model.llm, *agent.tools)
    session = chain_run.start(ensure_config(), get_callback_manager_for_config, {}, "agent", parts)
    try:
        return isinstance(next(session), Call)
    except StopIteration:
        return False
    finally:
        session.close()


def offline_tracer(monkeypatch: pytest.MonkeyPatch) -> None:
    """LangChain's LangSmith tracer, as ``CallbackManager.configure`` creates it, without its client
    (which would connect to LangSmith)."""
    from langchain_core.tracers import langchain
    from langchain_core.tracers.base import BaseTracer

    class OfflineTracer(langchain.LangChainTracer):
        def __init__(self, **kwargs: Any) -> None:
            BaseTracer.__init__(self)

    monkeypatch.setattr(langchain, "LangChainTracer", OfflineTracer)


@pytest.mark.parametrize("variable", ["LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"])
def test_tracing_enabled_by_the_environment_keeps_the_chain_run(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langsmith import utils

    agent, _, _ = build()
    assert not starts_a_chain_run(agent)
    offline_tracer(monkeypatch)
    monkeypatch.setenv(variable, "true")
    utils.get_env_var.cache_clear()  # LangSmith reads the environment once
    try:
        assert starts_a_chain_run(agent)
    finally:
        monkeypatch.delenv(variable)
        utils.get_env_var.cache_clear()
    assert not starts_a_chain_run(agent)


def test_tracing_enabled_by_a_tracing_context_keeps_the_chain_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from langsmith import tracing_context

    offline_tracer(monkeypatch)
    agent, _, _ = build()
    assert not starts_a_chain_run(agent)
    with tracing_context(enabled=True):
        assert starts_a_chain_run(agent)
    assert not starts_a_chain_run(agent)  # the context, nothing else, kept it


def test_only_models_and_tools_that_cannot_hold_a_handler_are_quiet() -> None:
    model = ScriptedChatModel([])
    assert chain_run.quiet(model) and chain_run.quiet(model.bind(stop=["x"]))
    assert chain_run.quiet(lambda messages: "reply")
    assert not chain_run.quiet(model.with_config(callbacks=[EventRecorder()]))
    assert not chain_run.quiet(model.with_listeners(on_start=lambda run: None))
    assert not chain_run.quiet(RunnableLambda(lambda x: x))  # a runnable may hold a handler anywhere
    assert not chain_run.quiet(model | RunnableLambda(lambda x: x))
    assert not chain_run.quiet(ScriptedChatModel([], callbacks=[EventRecorder()]))
    assert not chain_run.quiet(ScriptedChatModel([], verbose=True))
    tool = StructuredTool.from_function(lambda x: x, name="t", description="d.")
    assert chain_run.quiet(tool)
    tool.callbacks = [EventRecorder()]
    assert not chain_run.quiet(tool)
