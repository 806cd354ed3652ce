"""A run no handler can hear passes its model and tool calls no callback manager when the chain run's
child would carry nothing, and the calls' run managers are what they were with the empty child."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManager
from langchain_core.runnables import RunnableLambda, ensure_config
from langchain_core.runnables.config import get_callback_manager_for_config

from explicit_react import chain_run
from tests.test_chain_run import build, invoke


def callbacks_for(config: dict[str, Any]) -> Any:
    """The callbacks ``chain_run.start`` gives the calls of a run with ``config`` (no chain run)."""
    session = chain_run.start(ensure_config(config), get_callback_manager_for_config, {}, "agent", ())
    with pytest.raises(StopIteration) as done:
        next(session)
    manager, callbacks = done.value.value
    assert manager is None
    return callbacks


def test_no_manager_only_when_the_child_would_carry_nothing() -> None:
    assert callbacks_for({}) is None
    tagged = callbacks_for({"tags": ["outer"]})
    assert tagged is not None and tagged.inheritable_tags == ["outer"] and not tagged.handlers
    with_metadata = callbacks_for({"metadata": {"user": "u1"}})
    assert with_metadata is not None and with_metadata.inheritable_metadata == {"user": "u1"}


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_calls_of_a_quiet_run_see_what_they_saw_with_the_empty_child(
    asynchronous: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []
    for give in ("as now", "the empty child"):
        if give == "the empty child":
            monkeypatch.setattr(chain_run, "_quiet_callbacks", chain_run._child)
        agent, model, tool_seen = build(asynchronous)
        assert invoke(agent, {}, asynchronous)["output"] == "item 7 is 42"
        seen.append(model.seen + tool_seen)
    assert seen[0] == seen[1] and len(seen[0]) == 3
    assert all(tags == [] and parent is None for tags, _, parent in seen[0])


@pytest.mark.parametrize("asynchronous", [False, True])
def test_inside_a_parent_runnable_the_calls_keep_the_empty_child_and_no_parent(asynchronous: bool) -> None:
    """A parent runnable's config in the context has callbacks (its run's child, with no handler):
    given ``None`` a call would take those and the parent's run as its parent, so the calls still
    get the chain run's empty child, and no parent run, as before."""
    agent, model, tool_seen = build(asynchronous)
    if asynchronous:

        async def answer(question: str) -> dict[str, Any]:
            return await agent.ainvoke(question)

        parent = RunnableLambda(lambda q: q, afunc=answer)
        output = asyncio.run(parent.ainvoke("What is item 7?"))
    else:
        output = RunnableLambda(agent.invoke).invoke("What is item 7?")
    assert output["output"] == "item 7 is 42"
    assert [parent for _, _, parent in model.seen + tool_seen] == [None, None, None]


def test_a_manager_with_nothing_in_it_as_the_configs_callbacks_gives_no_manager() -> None:
    assert callbacks_for({"callbacks": CallbackManager(handlers=[])}) is None
