"""Budgets, allowlist, loop detection, timeouts, retries, bounded context and the audit trail."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.tools import tool

from explicit_react import ExplicitReActAgent, StopReason
from explicit_react.policy import SOURCED_NUMBERS, Budget, RunGuard, call_signature, unsourced_numbers
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import CalculatorTool, calculator
from tests.helpers import action, final, search, subtract

release = threading.Event()


@tool
def hang(query: str) -> str:
    """Never returns in time."""
    release.wait(5)
    return "too late"


class HangingModel(ScriptedChatModel):
    """Replies from its script, but hangs (up to 5 s) once the script has ``None``."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        if self._index < len(self.replies) and self.replies[self._index] is None:
            self._index += 1
            release.wait(5)
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.fixture(autouse=True)
def _release_hanging_threads():
    release.clear()
    yield
    release.set()


# Loop detection ---------------------------------------------------------------------------------
def test_call_signature_normalises_whitespace_and_key_order_but_keeps_case() -> None:
    assert call_signature("search", "  paris   population ") == call_signature("search", "paris population")
    assert call_signature("search", "Paris") != call_signature("search", "paris")
    assert call_signature("t", {"a": 1, "b": " x  y"}) == call_signature("t", {"b": "x y", "a": 1})


def test_repeated_call_is_not_run_then_the_run_stops_with_loop_detected() -> None:
    calls: list[str] = []

    @tool
    def lookup(query: str) -> str:
        """Look up."""
        calls.append(query)
        return "nothing useful"

    model = ScriptedChatModel(
        [action("lookup", "x"), action("lookup", " x "), action("lookup", "x"), final("Nothing was found.")]
    )
    result = ExplicitReActAgent(model, [lookup], max_iterations=10).run("q")
    assert calls == ["x"]  # the repeats never ran
    assert result.stop_reason is StopReason.LOOP_DETECTED
    assert result.steps[1].error == "repeated_call"
    assert (
        "already called lookup" in result.steps[1].observation
        and "nothing useful" in result.steps[1].observation
    )
    assert result.answer == "Nothing was found."  # the final answer from what was gathered
    assert len(model.calls) == 4  # stopped long before max_iterations=10


def test_a_model_repeating_a_made_up_tool_is_stopped_as_a_loop() -> None:
    # Qwen2.5 1.5B in bench/eval called a nonexistent 'lookup' with the same input until max_iterations.
    model = ScriptedChatModel(
        [action("lookup", "price"), action("lookup", "price"), action("lookup", "price"), final("Unknown.")]
    )
    result = ExplicitReActAgent(model, [search], max_iterations=10).run("q")
    assert [step.error for step in result.steps] == ["unknown_tool", "repeated_call", "repeated_call"]
    assert "there is no tool named 'lookup'" in result.steps[0].observation
    assert "already called lookup with this input in step 1" in result.steps[1].observation
    assert result.stop_reason is StopReason.LOOP_DETECTED
    assert result.answer == "Unknown."
    assert len(model.calls) == 4


def test_a_made_up_tool_with_new_inputs_is_not_a_loop() -> None:
    model = ScriptedChatModel([action("lookup", "a"), action("lookup", "b"), final("Done.")])
    result = ExplicitReActAgent(model, [search], max_iterations=10).run("q")
    assert [step.error for step in result.steps] == ["unknown_tool", "unknown_tool"]
    assert result.stop_reason is StopReason.SUCCESS


def test_a_b_a_b_cycle_is_caught() -> None:
    model = ScriptedChatModel(
        [
            action("search", "population of France"),
            action("search", "population of Paris"),
            action("search", "population of France"),
            action("search", "population of Paris"),
            final("France 68M, Paris 2.1M"),
        ]
    )
    result = ExplicitReActAgent(model, [search], max_iterations=10).run("q")
    assert result.stop_reason is StopReason.LOOP_DETECTED
    assert [s.error for s in result.steps] == [None, None, "repeated_call", "repeated_call"]


def test_model_that_recovers_after_the_warning_goes_on() -> None:
    model = ScriptedChatModel(
        [action("search", "population of France"), action("search", "population of France"), final("68M")]
    )
    result = ExplicitReActAgent(model, [search]).run("q")
    assert result.stop_reason is StopReason.SUCCESS and result.answer == "68M"


# Budgets ----------------------------------------------------------------------------------------
def test_max_tool_calls_runs_n_calls_and_stops_at_the_next_request() -> None:
    model = ScriptedChatModel(
        [
            action("search", "population of France"),
            action("search", "population of Paris"),
            final("France has 68M."),
        ]
    )
    result = ExplicitReActAgent(model, [search], max_tool_calls=1).run("q")
    assert result.stop_reason is StopReason.MAX_TOOL_CALLS
    assert len(result.steps) == 1 and result.steps[0].observation == "68000000"
    assert result.answer == "France has 68M."


def test_max_tokens_stops_the_run() -> None:
    model = ScriptedChatModel([action("search", "population of France"), final("68M")])
    result = ExplicitReActAgent(model, [search], max_tokens=10, on_limit="force").run("q")
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert len(model.calls) == 1 and "max_tokens=10" in (result.error or "")


def test_max_seconds_stops_a_hanging_tool_at_once_without_another_model_call() -> None:
    model = ScriptedChatModel([action("hang", "x"), final("never asked")])
    started = time.monotonic()
    result = ExplicitReActAgent(model, [hang], max_seconds=0.5).run("q")
    assert time.monotonic() - started < 4  # the tool would hang for 5 s
    assert result.stop_reason is StopReason.MAX_SECONDS
    assert len(model.calls) == 1  # no further model call
    assert "time" in result.answer.lower()


def test_max_seconds_stops_a_hanging_model() -> None:
    model = HangingModel([action("search", "population of France"), None, final("x")])
    result = ExplicitReActAgent(model, [search], max_seconds=0.5).run("q")
    assert result.stop_reason is StopReason.MAX_SECONDS
    assert len(result.steps) == 1 and result.steps[0].observation == "68000000"


def test_max_seconds_in_async_runs() -> None:
    model = ScriptedChatModel([action("hang", "x"), final("never asked")])
    result = asyncio.run(ExplicitReActAgent(model, [hang], max_seconds=0.5).arun("q"))
    assert result.stop_reason is StopReason.MAX_SECONDS


def test_tool_timeout_is_an_observation_and_the_run_goes_on() -> None:
    model = ScriptedChatModel([action("hang", "x"), final("the tool was too slow")])
    result = ExplicitReActAgent(model, [hang], tool_timeout=0.2).run("q")
    assert result.stop_reason is StopReason.SUCCESS
    assert result.steps[0].error == "tool_timeout"
    assert result.steps[0].observation.startswith("Error: tool 'hang' timed out after 0.2 s")


def test_llm_timeout_ends_the_run_with_llm_error() -> None:
    model = HangingModel([None])
    result = ExplicitReActAgent(model, [search], llm_timeout=0.2, max_retries=0).run("q")
    assert result.stop_reason is StopReason.LLM_ERROR
    assert "timed out" in (result.error or "")


def test_transient_model_errors_are_retried() -> None:
    model = ScriptedChatModel([ConnectionError("reset"), TimeoutError("slow"), final("ok")])
    result = ExplicitReActAgent(model, [search], max_retries=2, retry_backoff=0.0).run("q")
    assert result.stop_reason is StopReason.SUCCESS and len(model.calls) == 3


def test_retries_give_up_after_max_retries() -> None:
    model = ScriptedChatModel(
        [ConnectionError("a"), ConnectionError("b"), ConnectionError("c"), final("unused")]
    )
    result = ExplicitReActAgent(model, [search], max_retries=2, retry_backoff=0.0).run("q")
    assert result.stop_reason is StopReason.LLM_ERROR and "after 3 attempts" in (result.error or "")
    assert model.remaining == 1


def test_permanent_model_errors_are_not_retried() -> None:
    model = ScriptedChatModel([ValueError("bad request"), final("unused")])
    result = ExplicitReActAgent(model, [search], max_retries=2, retry_backoff=0.0).run("q")
    assert result.stop_reason is StopReason.LLM_ERROR and len(model.calls) == 1


# Allowlist --------------------------------------------------------------------------------------
def test_allowlist_hides_other_tools_denies_them_then_stops() -> None:
    @tool
    def refund(order: str) -> str:
        """Issue a refund."""
        raise AssertionError("must never run")

    model = ScriptedChatModel(
        [action("refund", "A1"), action("refund", "A1 please"), final("I cannot refund here.")]
    )
    agent = ExplicitReActAgent(model, [search, refund], allowed_tools={"search"})
    result = agent.run("Refund A1")
    assert "- refund:" not in model.calls[0].prompt and "- search:" in model.calls[0].prompt
    assert result.steps[0].error == "tool_denied"
    assert result.steps[0].observation == agent.executor.unknown_tool_observation("refund")
    assert result.stop_reason is StopReason.TOOL_DENIED
    assert result.answer == "I cannot refund here."


@pytest.mark.parametrize("allowed", [set(), []])
def test_an_empty_allowlist_refuses_every_tool_and_names_no_hidden_one(allowed: set[str] | list[str]) -> None:
    @tool
    def issue_refund(order: str) -> str:
        """Issue a refund for an order."""
        raise AssertionError("must never run")

    model = ScriptedChatModel([action("issue_refnd", "42"), action("issue_refund", "42"), final("no tools")])
    result = ExplicitReActAgent(model, [issue_refund, search], allowed_tools=allowed).run("refund 42")
    made_up, hidden = (step.observation for step in result.steps)
    assert [step.error for step in result.steps] == ["unknown_tool", "tool_denied"]
    # The same answer for both, but for the name the model wrote; no other tool name in it.
    assert made_up.replace("'issue_refnd'", "NAME") == hidden.replace("'issue_refund'", "NAME")
    assert "issue_refund" not in made_up and "search" not in made_up
    assert "Did you mean" not in hidden and "search" not in hidden


# Bounded context --------------------------------------------------------------------------------
def test_long_observations_are_cut_with_a_marker() -> None:
    @tool
    def dump(query: str) -> str:
        """Return a lot."""
        return "HEAD" + "x" * 10_000 + "TAIL"

    model = ScriptedChatModel([action("dump", "x"), final("done")])
    result = ExplicitReActAgent(model, [dump], max_observation_chars=500).run("q")
    observation = result.steps[0].observation
    assert observation.startswith("HEAD") and observation.endswith("TAIL")
    assert "characters cut" in observation and len(observation) < 600


def test_long_runs_compact_the_scratchpad_so_the_prompt_stops_growing() -> None:
    @tool
    def page(n: str) -> str:
        """Read page n."""
        return f"page {n}: " + "lorem ipsum " * 40

    script = [action("page", str(i)) for i in range(30)] + [final("read")]
    model = ScriptedChatModel(script)
    ExplicitReActAgent(model, [page], max_iterations=31, keep_recent_steps=3).run("q")
    sizes = [len(call.prompt) for call in model.calls]
    plateau = sizes[16:30]  # 3 verbatim + 12 summarised steps: from here on the prompt stays flat
    assert max(plateau) - min(plateau) < 100, plateau
    assert "Earlier steps, summarised" in model.calls[29].prompt and "omitted" in model.calls[29].prompt
    uncompacted = ScriptedChatModel(script)
    ExplicitReActAgent(uncompacted, [page], max_iterations=31, keep_recent_steps=None).run("q")
    assert len(uncompacted.calls[29].prompt) > 3 * sizes[29]


# Audit trail ------------------------------------------------------------------------------------
def test_trace_file_has_a_line_per_step_and_the_result_and_no_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-test-secret-123456")

    @tool
    def leaky(query: str) -> str:
        """Leaks the environment."""
        return "key is AIza-test-secret-123456"

    path = tmp_path / "trace.jsonl"
    model = ScriptedChatModel([action("leaky", "x"), final("done")])
    ExplicitReActAgent(model, [leaky], trace_path=path).run("q")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["event"] for line in lines] == ["step", "result"]
    assert lines[0]["action"] == "leaky" and lines[1]["stop_reason"] == "success"
    assert "AIza-test-secret-123456" not in path.read_text()
    assert "[redacted]" in lines[0]["observation"]


def test_trace_is_written_as_the_run_goes(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    model = ScriptedChatModel([action("search", "population of France"), RuntimeError("crash")])
    ExplicitReActAgent(model, [search], trace_path=path, max_retries=0).run("q")
    events = [json.loads(line)["event"] for line in path.read_text().splitlines()]
    assert events == ["step", "result"]


# Guard unit behaviour ---------------------------------------------------------------------------
def test_guard_reports_stops_in_order_of_cause() -> None:
    guard = RunGuard(Budget(max_iterations=2, max_tokens=5))
    assert guard.stop_before_turn(0) is None
    guard.record_tokens(6)
    assert guard.stop_before_turn(0) is StopReason.MAX_TOKENS
    assert RunGuard(Budget(max_iterations=2)).stop_before_turn(2) is StopReason.MAX_ITERATIONS


# Robustness: arbitrary model output -------------------------------------------------------------
labels = st.sampled_from(
    ["Thought:", "Action:", "Action Input:", "Observation:", "Final Answer:", "\n", " ", "{", "}"]
)
replies = st.lists(st.one_of(st.text(max_size=40), labels), max_size=12).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(replies, min_size=1, max_size=4))
def test_any_model_output_ends_with_a_stop_reason_and_a_string_answer(script: list[str]) -> None:
    model = ScriptedChatModel(script + ["Final Answer: fallback"] * 4)
    result = ExplicitReActAgent(model, [search], max_iterations=3, max_retries=0).run("q")
    assert isinstance(result.stop_reason, StopReason)
    assert isinstance(result.answer, str) and result.answer
    assert all(isinstance(s.observation, str) for s in result.steps)


# Numbers a calculation needs a source for -------------------------------------------------------
@pytest.mark.parametrize(
    ("tool_input", "sources", "missing"),
    [
        ("100 - 50", "How many dollars more does a T9 cost than an H2?", ["50"]),  # 100 is common
        ("9400 - 4850", "The T9 costs 9400 dollars. The H2 costs 4,850 dollars.", []),
        ("68000000 - 2100000", "France: 68,000,000 people. Paris: 2.1 million.", []),
        ("9400 * 0.8", "List price 9400 dollars; a 20% discount applies.", []),  # 1 - 20/100
        ("1270 * 1.15", "1270 dollars, plus 15% tax", []),  # 1 + 15/100
        ("3 * 1270", "three units at 1270 dollars each", []),  # a number written as a word
        ("90 / 60 + 24 * 7", "It lasts 90 minutes.", []),  # unit conversions need no source
        ("7.5 + 7.5 + 3", "nothing", ["7.5", "3"]),  # each missing number once, in order
        ({"expression": "5 * 17"}, "17 apples", ["5"]),  # a dict input: its values are checked
        (["5 * 17"], "17 apples", ["5"]),  # a list input too
        ("-5 + 2", "5 degrees", []),  # signs are not part of the number
        ("sqrt(16) + x1", "x", ["16"]),  # digits inside a name are not numbers
        ("1234567 * 3", "three", ["1234567"]),  # quoted as written, not as 1.23457e+06
        ("1,234,567.50 - 0.125", "none", ["1,234,567.50", "0.125"]),  # separators and digits kept
    ],
)
def test_unsourced_numbers(tool_input: object, sources: str, missing: list[str]) -> None:
    assert unsourced_numbers(tool_input, sources) == missing  # type: ignore[arg-type]


@tool
def price(product: str) -> str:
    """Look up a product's price."""
    return {"T9": "The T9 costs 9400 dollars.", "H2": "The H2 costs 4850 dollars."}[product.strip()]


def test_a_calculation_with_made_up_numbers_is_refused_once_and_the_model_looks_them_up() -> None:
    # Qwen2.5 1.5B in bench/eval answered "How many dollars more does a T9 cost than an H2?" by
    # computing 100 - 50, values it had never looked up.
    model = ScriptedChatModel(
        [
            action("calculator", "100 - 50"),
            action("price", "T9"),
            action("price", "H2"),
            action("calculator", "9400 - 4850"),
            final("4550 dollars"),
        ]
    )
    result = ExplicitReActAgent(model, [price, calculator], max_iterations=6).run(
        "How many dollars more does a T9 cost than an H2?"
    )
    assert result.stop_reason is StopReason.SUCCESS and result.answer == "4550 dollars"
    refused = result.steps[0]
    assert refused.error == "unsourced_numbers" and refused.tool_output is None  # the calculator never ran
    assert refused.observation.startswith("Error: 50 is not in the question or in any tool result")
    assert "100" not in refused.observation  # a common number needs no source
    assert [s.observation for s in result.steps[1:]] == [
        "The T9 costs 9400 dollars.",
        "The H2 costs 4850 dollars.",
        "4550",
    ]


def test_the_same_calculation_sent_again_runs() -> None:
    # The model may know a value no tool gave it (a constant, a conversion factor).
    model = ScriptedChatModel(
        [action("calculator", "5 * 1.609"), action("calculator", "5 * 1.609"), final("8.045 km")]
    )
    result = ExplicitReActAgent(model, [calculator]).run("How far is 5 miles in km?")
    assert [s.error for s in result.steps] == ["unsourced_numbers", None]
    assert "1.609 is not in the question" in result.steps[0].observation
    assert result.steps[1].observation == "8.045"
    assert result.stop_reason is StopReason.SUCCESS


def test_numbers_from_the_context_and_earlier_results_count_and_failed_calls_do_not() -> None:
    @tool
    def broken(query: str) -> str:
        """Always fails."""
        raise ValueError("the value 31 is unavailable")

    model = ScriptedChatModel(
        [
            action("broken", "x"),
            action("calculator", "12 * 31"),  # 31 is only in an error: refused
            action("calculator", "12 * 45"),  # 45 is in the context: runs
            final("540"),
        ]
    )
    agent = ExplicitReActAgent(model, [broken, calculator], max_iterations=6)
    result = agent.run("What do 12 boxes cost?", context="A box costs 45 dollars.")
    assert [s.error for s in result.steps] == ["tool_error", "unsourced_numbers", None]
    assert result.steps[2].observation == "540"


def test_only_tools_flagged_in_their_metadata_are_checked() -> None:
    plain = ScriptedChatModel([action("subtract", '{"a": 100, "b": 57}'), final("43")])
    result = ExplicitReActAgent(plain, [subtract]).run("q")
    assert result.steps[0].error is None and result.steps[0].observation == "43"

    unchecked = CalculatorTool(metadata={})  # how to turn the check off for the calculator
    model = ScriptedChatModel([action("calculator", "100 - 57"), final("43")])
    result = ExplicitReActAgent(model, [unchecked]).run("q")
    assert result.steps[0].error is None and result.steps[0].observation == "43"

    @tool
    def transfer(amount: float) -> str:
        """Send money."""
        return f"sent {amount:g}"

    transfer.metadata = {SOURCED_NUMBERS: True}  # any tool can ask for the check
    model = ScriptedChatModel([action("transfer", '{"amount": 5000}'), final("not sent")])
    result = ExplicitReActAgent(model, [transfer]).run("Pay the invoice of 500 dollars.")
    assert result.steps[0].error == "unsourced_numbers" and "5000" in result.steps[0].observation


def test_the_check_is_made_in_async_runs_and_not_by_act_alone() -> None:
    model = ScriptedChatModel([action("calculator", "100 - 50"), final("unknown")])
    agent = ExplicitReActAgent(model, [calculator])
    result = asyncio.run(agent.arun("How many dollars more does a T9 cost than an H2?"))
    assert result.steps[0].error == "unsourced_numbers"

    # act() on its own has no question or results to check against, so it runs the call.
    turn = ExplicitReActAgent(ScriptedChatModel([action("calculator", "100 - 50")]), [calculator]).think("q")
    assert agent.act(turn).outcome.observation == "50"  # type: ignore[union-attr]


@pytest.mark.parametrize("asked", ["refund", "REFUND", "re-fund"])
def test_a_denied_tool_gets_the_answer_a_made_up_tool_gets(asked: str) -> None:
    @tool
    def refund(order: str) -> str:
        """Issue a refund."""
        raise AssertionError("must never run")

    def first_observation(name: str) -> str:
        model = ScriptedChatModel([action(name, "A1"), final("no")])
        agent = ExplicitReActAgent(model, [search, refund], allowed_tools={"search"})
        return agent.run("Refund A1").steps[0].observation

    denied, made_up = first_observation(asked), first_observation(asked + "x")
    assert denied == made_up.replace(repr(asked + "x"), repr(asked))
    assert "refund" not in denied.replace(repr(asked), "").lower()
    assert "search" in denied


@pytest.mark.parametrize("reply", ["I am not sure what to do here.", "Thought: t\nFinal Answer:"])
def test_the_same_unreadable_reply_a_third_time_is_a_loop(reply: str) -> None:
    # With max_iterations=None nothing else ended it: the model was asked until its script ran out.
    model = ScriptedChatModel([reply] * 3 + ["Final Answer: 42"])
    result = ExplicitReActAgent(model, [], max_iterations=None).run("q")
    assert result.stop_reason is StopReason.LOOP_DETECTED
    assert [step.error for step in result.steps] == ["parse_error"] * 3
    assert result.answer == "42"  # the answer asked for at the limit


def test_different_unreadable_replies_are_not_a_loop() -> None:
    model = ScriptedChatModel(["no format one", "no format two", "no format three", "Final Answer: 42"])
    result = ExplicitReActAgent(model, [], max_iterations=None).run("q")
    assert result.stop_reason is StopReason.SUCCESS and len(result.steps) == 3


def test_each_text_is_read_once_for_the_numbers_a_call_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    from explicit_react import policy, run_state
    from explicit_react.tools import calculator

    read: list[str] = []
    real = policy.sourced_numbers

    def counting(text: str) -> set[float]:
        read.append(text)
        return real(text)

    monkeypatch.setattr(policy, "sourced_numbers", counting)
    monkeypatch.setattr(run_state, "sourced_numbers", counting)  # where RunState looks it up
    replies = [action("calculator", f"{n} + 1") for n in range(1, 21)] + [final("21")]
    result = ExplicitReActAgent(ScriptedChatModel(replies), [calculator], max_iterations=30).run(
        "Start at 1."
    )
    assert [s.observation for s in result.steps] == [str(n + 1) for n in range(1, 21)]  # each sourced
    # The question once, then each observation once; before, all of them again at every call.
    told = len("Start at 1.\n") + sum(len(step.observation) for step in result.steps)
    assert read and sum(map(len, read)) <= told  # read: a patch of the wrong name would count nothing


def test_the_same_unreadable_reply_apart_or_after_a_repeated_call_is_not_a_loop() -> None:
    replies = [
        "",
        action("search", "population of France"),
        "",
        action("search", "population of France"),  # a repeat: warned once
        "",
        final("68 million"),
    ]
    result = ExplicitReActAgent(ScriptedChatModel(replies), [search], max_iterations=None).run("q")
    assert result.stop_reason is StopReason.SUCCESS and result.answer == "68 million"


def test_the_prompts_placeholder_written_back_at_a_limit_is_no_answer() -> None:
    # Qwen 1.5B at a limit on a fresh seed: "Final Answer: the answer, in the units the question asks for".
    replies = [
        action("search", "a"),
        "Thought: t\nFinal Answer: The answer, in the units the question asks for.",
    ]
    result = ExplicitReActAgent(ScriptedChatModel(replies), [search], max_iterations=1).run("q")
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert result.answer == "I could not find an answer within the allowed number of steps."
