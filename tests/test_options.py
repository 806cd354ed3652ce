"""Every constructor option is checked at construction, with a message naming the option and what it allows."""

from __future__ import annotations

from typing import Any

import pytest

from explicit_react import ConfigurationError, ExplicitReActAgent, StopReason
from explicit_react.testing import ScriptedChatModel
from tests.helpers import action, final, search, subtract


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"tool_timeout": "5"},
            r"tool_timeout must be a number of seconds greater than 0, or None.*'5' \(str\)",
        ),
        ({"tool_timeout": 0}, "tool_timeout must be a number of seconds greater than 0"),
        ({"tool_timeout": -1}, "tool_timeout must be a number of seconds greater than 0"),
        ({"llm_timeout": 0}, "llm_timeout must be a number of seconds greater than 0"),
        ({"llm_timeout": -1.5}, "llm_timeout must be a number of seconds greater than 0"),
        ({"max_seconds": 0}, "max_seconds must be a number of seconds greater than 0"),
        ({"max_iterations": 0}, "max_iterations must be a whole number of at least 1, or None for no limit"),
        ({"max_iterations": 2.5}, "max_iterations must be a whole number"),
        ({"max_tool_calls": -1}, "max_tool_calls must be a whole number of at least 0, or None"),
        ({"max_tokens": "many"}, "max_tokens must be a whole number"),
        ({"max_retries": -1}, "max_retries must be a whole number of at least 0"),
        ({"retry_backoff": -1}, "retry_backoff must be a finite number of at least 0"),
        (
            {"retry_backoff": float("nan")},
            "retry_backoff must be a finite number",
        ),  # raised at the first retry
        ({"retry_backoff": float("inf")}, "retry_backoff must be a finite number"),
        ({"max_observation_chars": 0}, "max_observation_chars must be a whole number of at least 1"),
        ({"keep_recent_steps": -2}, "keep_recent_steps must be a whole number of at least 0, or None"),
        ({"on_limit": "ask"}, "on_limit must be one of 'generate', 'force'"),
        ({"on_llm_error": "retry"}, "on_llm_error must be one of 'stop', 'raise'"),
        ({"mode": "json"}, "mode must be one of 'text', 'tool_calling', 'two_phase'"),
        ({"verbose": "yes"}, "verbose must be True or False"),
        (
            {"allowed_tools": "search"},
            r"allowed_tools must be a list or set of tool names.*allowed_tools=\['search'\]",
        ),
        ({"allowed_tools": [1]}, "allowed_tools must hold tool names"),
        ({"listeners": "abc"}, r"listeners must be a list of listeners \(write listeners=\[it\] for one\)"),
        ({"listeners": [object()]}, "listeners must hold objects with any of on_turn_start"),
        ({"allowed_tools": ["nope"]}, r"allowed_tools names tools that do not exist: \['nope'\]"),
        (
            {"prompt": 5},
            r"prompt must be a system prompt \(a string\) or a ReActPrompt, or None; got 5 \(int\)",
        ),
        ({"trace_path": 5}, r"trace_path must be a file path \(a string or a Path\), or None; got 5 \(int\)"),
    ],
)
def test_a_bad_option_fails_at_construction_naming_it(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ExplicitReActAgent(ScriptedChatModel([]), [search], **options)


def test_one_tool_instead_of_a_list_says_so() -> None:
    with pytest.raises(
        ConfigurationError,
        match=r"tools must be a list of tools; got one tool, 'search': pass tools=\[search\]",
    ):
        ExplicitReActAgent(ScriptedChatModel([]), search)  # type: ignore[arg-type]


def test_a_string_for_tools_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="tools must be a list of LangChain tools"):
        ExplicitReActAgent(ScriptedChatModel([]), "search")  # type: ignore[arg-type]


def test_good_options_are_kept() -> None:
    agent = ExplicitReActAgent(
        ScriptedChatModel([]), (search, subtract), tool_timeout=5, llm_timeout=2.5, allowed_tools={"search"}
    )
    assert agent.tool_timeout == 5.0 and agent.allowed_tools == frozenset({"search"})
    assert [t.name for t in agent.tools] == ["search", "subtract"]


def test_max_iterations_none_means_no_limit() -> None:
    replies = [action("search", f"query {i}") for i in range(7)] + [final("done")]
    model = ScriptedChatModel(replies)
    result = ExplicitReActAgent(model, [search], max_iterations=None).run("q")
    assert result.stop_reason is StopReason.SUCCESS and len(result.steps) == 7
    assert "steps left" not in model.calls[0].prompt  # no countdown without a limit


def test_any_collection_of_tools_is_accepted() -> None:
    agent = ExplicitReActAgent(ScriptedChatModel([]), {"s": search, "t": subtract}.values())
    assert [t.name for t in agent.tools] == ["search", "subtract"]


@pytest.mark.parametrize("option", ["tool_timeout", "llm_timeout", "max_seconds"])
@pytest.mark.parametrize("value", [float("inf"), 1e10, 10**30])
def test_an_infinite_or_huge_time_limit_works_as_no_limit(option: str, value: float) -> None:
    # threading's wait overflowed: every sync call that did not return at once failed (OverflowError).
    import time

    from langchain_core.tools import tool

    @tool
    def slow(query: str) -> str:
        """Answer after a moment."""
        time.sleep(0.05)
        return "slow result"

    model = ScriptedChatModel([action("slow", "x"), final("done")])
    result = ExplicitReActAgent(model, [slow], **{option: value}).run("q")
    assert result.stop_reason is StopReason.SUCCESS and result.steps[0].observation == "slow result"


def test_one_listener_instead_of_a_list_says_so() -> None:
    from explicit_react.display import TracePrinter

    with pytest.raises(
        ConfigurationError, match=r"write listeners=\[it\] for one"
    ):  # a bare TypeError before
        ExplicitReActAgent(ScriptedChatModel([]), [search], listeners=TracePrinter())  # type: ignore[arg-type]


def test_an_out_of_range_option_error_survives_pickling() -> None:
    """An agent built in a worker process (a process pool, a Ray actor) sends its error back
    pickled; OptionError's constructor takes its fields, so unpickling it raised TypeError and the
    pool broke instead of reporting the mistake."""
    import pickle

    from explicit_react.options import OptionError, count

    with pytest.raises(OptionError) as raised:
        count("max_iterations", 0, minimum=1, none_means="no limit")
    copy = pickle.loads(pickle.dumps(raised.value))
    assert (
        str(copy)
        == str(raised.value)
        == ("max_iterations must be a whole number of at least 1, or None for no limit; got 0 (int)")
    )
    assert (copy.name, copy.allows, copy.value, copy.none_means) == (
        "max_iterations",
        "a whole number of at least 1",
        0,
        "no limit",
    )
