"""The benchmark scripts still run: each in its tiny mode, checking the table and the JSON keys.

No timing is asserted (speed is measured by the scripts, not by tests); the eval uses an instant
scripted model, never a real one.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load(relative: str) -> ModuleType:
    """Import a bench script by path (bench/ is not a package)."""
    path = BENCH / relative
    sys.path.insert(0, str(path.parent))
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(
    relative: str, args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[str, Any]:
    out = tmp_path / "result.json"
    assert load(relative).main([*args, "--out", str(out)]) == 0
    return capsys.readouterr().out, json.loads(out.read_text(encoding="utf-8"))


def test_overhead(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed, data = run("overhead.py", ["--quick"], tmp_path, capsys)
    assert "| explicit_react |" in printed and "| classic AgentExecutor |" in printed
    assert set(data["summary"]["overhead_per_step_ms"]) == {
        "direct calls (no framework)",
        "explicit_react",
        "classic AgentExecutor",
        "langgraph create_react_agent",
    }
    assert {"ratio_to_classic", "ratio_to_langgraph", "target_met"} <= set(data["summary"])
    assert data["machine"]["cores"]


def test_overhead_compares_trees_in_fresh_processes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = str(BENCH.parent)
    printed, data = run("overhead.py", ["--quick", "--trees", tree], tmp_path, capsys)
    assert "| tree | commit |" in printed
    measured = data["trees"][tree]
    # the numbers are measured, not checked: three steps on a busy machine may time below the zero-step run
    assert len(measured["rounds"]["ratio_to_classic"]) >= 1
    assert all(math.isfinite(x) for x in measured["rounds"]["ratio_to_classic"])
    assert math.isfinite(measured["per_step_ms"])
    assert len(data["load_average"]) == 2


def test_concurrency(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed, data = run("concurrency.py", ["--quick"], tmp_path, capsys)
    assert "% of ideal" in printed
    frameworks = [
        "explicit_react",
        "classic AgentExecutor",
        "explicit_react, model as an async function",
        "no agent: the LangChain calls alone",
        "no agent: the agent's own LangChain calls, replayed, gather+Semaphore",
        "no agent: the agent's own LangChain calls, replayed, abatch",
    ]
    assert [(r["framework"], r["tool"], r["concurrency"]) for r in data["rows"]] == [
        (framework, tool, level) for level in (1, 5) for tool in ("sync", "async") for framework in frameworks
    ]
    assert data["summary"]["explicit_react_efficiency_at_50"] == {}  # --quick has no level 50
    assert data["summary"]["langchain_calls_alone_efficiency_at_50"] == {}
    assert [(r["framework"], r["tool"]) for r in data["cpu"]] == [
        (framework, tool) for tool in ("sync", "async") for framework in frameworks
    ]
    assert all(r["cpu_ms_per_question"] > 0 for r in data["cpu"])
    assert all(r["tasks_per_question"] >= 1 for r in data["cpu"])  # abatch's own task per question, at least
    assert all(r["ratio_to_no_agent"] > 0 and r["ratio_to_replayed"] > 0 for r in data["cpu"])
    assert "/ the agent's calls replayed (abatch)" in printed
    assert all(r["efficiency"] > 0 and r["kib_per_concurrent_run"] > 0 for r in data["rows"])


def test_concurrency_breakdown_builds_the_no_agent_row_up_to_the_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed, data = run("concurrency.py", ["--quick", "--breakdown", "--tools", "async"], tmp_path, capsys)
    assert "| + the parser | async |" in printed
    assert [r["layer"] for r in data["rows"]] == [
        "the LangChain calls alone",
        "+ a chain run for callbacks",
        "+ the agent's prompt",
        "+ the parser",
        "the agent (abatch)",
    ]
    assert data["rows"][0]["ratio_to_no_agent"] == 1.0
    assert all(r["cpu_ms_per_question"] > 0 for r in data["rows"])


def _described(value: Any) -> Any:
    """A call's argument as data that compares by value: messages by type and content, callback
    managers by type, handlers, tags, metadata and whether they have a parent run."""
    from langchain_core.callbacks import BaseCallbackManager
    from langchain_core.messages import BaseMessage

    if isinstance(value, BaseMessage):
        return (type(value).__name__, value.content)
    if isinstance(value, BaseCallbackManager):
        handlers = [type(h).__name__ for h in value.handlers]
        return (type(value).__name__, handlers, value.tags, value.metadata, value.parent_run_id is not None)
    if isinstance(value, dict):
        return (type(value).__name__, {k: _described(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_described(v) for v in value])
    return (type(value).__name__, value)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_the_replayed_row_makes_the_agents_own_langchain_calls(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row "the agent's own LangChain calls, replayed" makes, per question, exactly the model and
    tool calls the agent makes: seen at LangChain's classes (every ``invoke``/``ainvoke`` of a chat
    model, every ``run``/``arun`` of a tool, and every ``_generate``/``_agenerate`` underneath, so a
    call by another route would show up as a missing one), compared by method, thread, message types
    and contents, ``stop``, config, tool input (its type too) and keyword arguments."""
    import threading

    from langchain_core.language_models import BaseChatModel
    from langchain_core.tools import BaseTool

    bench = load("concurrency.py")
    seen: list[tuple[str, Any, bool]] = []

    def spy(cls: type, name: str) -> None:
        real = getattr(cls, name)
        if name.startswith("a"):

            async def aspied(self: Any, *args: Any, **kwargs: Any) -> Any:
                seen.append((name, _described([list(args), kwargs]), False))
                return await real(self, *args, **kwargs)

            monkeypatch.setattr(cls, name, aspied)
        else:

            def spied(self: Any, *args: Any, **kwargs: Any) -> Any:
                off_loop = threading.current_thread() is not threading.main_thread()
                seen.append((name, _described([list(args), kwargs]), off_loop))
                return real(self, *args, **kwargs)

            monkeypatch.setattr(cls, name, spied)

    for name in ("invoke", "ainvoke"):
        spy(BaseChatModel, name)
    for name in ("run", "arun"):
        spy(BaseTool, name)
    for name in ("_generate", "_agenerate"):
        spy(bench.QuestionKeyedModel, name)

    asked = bench.questions(7)
    tool = bench.TOOLS[kind]
    replays = {
        "abatch": bench.FRAMEWORKS[bench.REPLAYED](0.0, tool),
        "gather": bench.FRAMEWORKS[bench.REPLAYED_GATHER](0.0, tool),
    }
    bench.prepare(replays, asked)  # records the agent's calls (on copies: seen too, and dropped)
    seen.clear()
    bench.check("explicit_react", asyncio.run(bench.explicit_batch(0.0, tool)(asked, 3)), len(asked))
    agents = sorted(seen, key=repr)
    # two model calls, each seen twice (ainvoke, then _agenerate), and a tool call
    assert len(agents) == 5 * len(asked)
    assert sum(1 for name, _, _ in agents if name.endswith("generate")) == 2 * len(asked)
    for how, batch in replays.items():
        seen.clear()
        bench.check(how, asyncio.run(batch(asked, 3)), len(asked))
        assert sorted(seen, key=repr) == agents, how


def test_lockstep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed, data = run("lockstep.py", ["--quick"], tmp_path, capsys)
    assert "| CPU ms per job | 1 turn per burst | 4 turns per burst |" in printed
    assert [(r["cpu_ms_per_job"], r["turns_per_burst"]) for r in data["rows"]] == [(0.5, 1), (0.5, 4)]
    assert all(0 < r["efficiency"] <= 1.05 for r in data["rows"])


PARSER_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "parser-corpus" / "corpus.jsonl"


@pytest.mark.skipif(
    not PARSER_CORPUS.exists(),
    reason=f"parser corpus not found at {PARSER_CORPUS} (it lives outside the repo, in ../shared; "
    "the fuzz generator that this check also uses mutates it)",
)
def test_parser_fast_path_finds_no_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed, data = run("parser_fast_path.py", ["--replies", "300"], tmp_path, capsys)
    assert "near misses: read by the shortcut" in printed
    assert data["differences"] == []
    assert data["counts"]["corpus: read by the shortcut"] > 0


def test_context(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed, data = run("context.py", ["--quick"], tmp_path, capsys)
    assert "call 9" in printed
    sizes = data["prompt_chars_per_call"]
    assert all(len(calls) == 9 for calls in sizes.values())  # 8 steps, then the answer
    assert set(data["summary"]["max_chars"]) == set(sizes)


def test_startup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed, data = run("startup.py", ["--quick"], tmp_path, capsys)
    assert "import explicit_react" in printed
    assert {"python -c pass", "import explicit_react"} <= set(data["summary"]["median_ms"])


def test_eval_with_a_scripted_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed, data = run("eval/run.py", ["--model", "scripted", "--limit", "3"], tmp_path, capsys)
    assert "| success_rate |" in printed
    for framework in ("explicit", "classic"):
        records = data["records"][framework]
        assert [r["id"] for r in records] == ["q01", "q02", "q03"]
        assert all(r["correct"] and r["steps"] == 1 for r in records)
        assert {
            "question",
            "expected",
            "answer",
            "stop_reason",
            "parse_failures",
            "seconds",
            "tokens",
        } <= set(records[0])
        assert data["summary"][framework]["success_rate"] == 1.0
    explicit = data["records"]["explicit"][0]
    assert explicit["trace"][0]["error"] is None and explicit["trace"][0]["action"] == "knowledge_search"
    # the last reply is kept for every run: the Final Answer and the Thought that led to it
    assert explicit["last_reply"].endswith(f"Final Answer: {explicit['answer']}")


def test_eval_held_out_set_searches_its_own_knowledge_base(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed, data = run("eval/run.py", ["--model", "scripted", "--set", "heldout"], tmp_path, capsys)
    assert data["settings"]["question_set"] == "heldout"
    assert "12 questions" in printed
    for framework in ("explicit", "classic"):
        records = data["records"][framework]
        assert [r["id"] for r in records] == [f"h{n:02}" for n in range(1, 13)]
        assert all(r["correct"] for r in records)
    first = data["records"]["explicit"][0]  # "What do 4 adult single tickets cost, in dollars?"
    assert "[fares.md]" in first["trace"][0]["observation"]
    assert "18 dollars" in first["trace"][0]["observation"]


def test_eval_keeps_the_reply_at_a_limit() -> None:
    """For a run that ends at a limit, the reply to the tool-free call is in the record."""
    from explicit_react.testing import ScriptedChatModel

    evaluation = load("eval/run.py")
    search = "Thought: look\nAction: knowledge_search\nAction Input: Lumacrab battery"
    model = ScriptedChatModel([search, "Thought: 90 / 60 = 1.5\nFinal Answer: 1.5 hours"])
    record = evaluation.run_explicit(model, "How long does the Lumacrab battery last, in hours?", 1)
    assert record["stop_reason"] == "max_iterations"
    assert record["answer"] == "1.5 hours"
    assert record["last_reply"] == "Thought: 90 / 60 = 1.5\nFinal Answer: 1.5 hours"
    assert record["trace"][0]["error"] is None and "90 minutes" in record["trace"][0]["observation"]


def test_eval_starts_each_run_from_an_empty_llama_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The llama.cpp context is emptied before each question and framework, unless --reuse-context."""
    evaluation = load("eval/run.py")
    emptied: list[object] = []
    monkeypatch.setattr(evaluation, "fresh_context", emptied.append)
    out = tmp_path / "result.json"
    assert evaluation.main(["--model", "scripted", "--limit", "2", "--out", str(out)]) == 0
    assert len(emptied) == 4  # 2 questions x 2 frameworks
    assert json.loads(out.read_text(encoding="utf-8"))["settings"]["fresh_context"] is True
    emptied.clear()
    assert evaluation.main(["--model", "scripted", "--limit", "2", "--reuse-context", "--out", str(out)]) == 0
    assert emptied == []
    assert json.loads(out.read_text(encoding="utf-8"))["settings"]["fresh_context"] is False
    capsys.readouterr()


def test_fresh_context_resets_only_a_llama_client() -> None:
    evaluation = load("eval/run.py")
    resets: list[bool] = []

    class Client:
        def reset(self) -> None:
            resets.append(True)

    class LlamaLike:
        client = Client()

    evaluation.fresh_context(LlamaLike())
    evaluation.fresh_context(object())  # a model without a llama.cpp client: nothing to do
    assert resets == [True]


@pytest.mark.parametrize(
    ("answer", "expected", "correct"),
    [
        ("The total is $53,544.00.", 53544, True),
        ("1.5 hours", 1.5, True),
        ("about 3000 dollars", 3810, False),
        ("2019", 2018, False),  # a year one off is wrong
        ("53500 dollars", 53544, False),
        ("316.80 dollars", 316.8, True),
        ("She works in Port Hallam.", "Port Hallam", True),
        ("Port", "Port Hallam", False),
        ("It was 14 years old when the Tidewalker T9 launched.", 9, False),
        ("-5 years", 5, False),
        ("x=-5", 5, False),
        ("-$5", 5, False),
        ("\u22125 years", 5, False),
        ("It opened 5 years later (2016-2011).", 5, True),
    ],
)
def test_eval_answer_check(answer: str, expected: float | str, correct: bool) -> None:
    assert load("eval/run.py").is_correct(answer, expected) is correct


def _record(answer: str, correct: bool, *trace: tuple[str, str]) -> dict[str, Any]:
    steps = [{"action": action, "observation": observation} for action, observation in trace]
    return {"answer": answer, "correct": correct, "trace": steps}


@pytest.mark.parametrize(
    ("record", "kind"),
    [
        (_record("3810", True, ("knowledge_search", "1. costs 1270")), None),
        (_record("Agent stopped due to iteration limit or time limit.", False), "no_answer"),
        (_record("I could not find an answer within the allowed number of steps.", False), "no_answer"),
        (
            _record("I could not say exactly; about 3000.", False),
            "never_looked_up",
        ),  # an answer, though hedged
        (_record("$3000", False, ("calculator", "3000")), "never_looked_up"),
        (_record("$3000", False, ("knowledge_search", "Error: empty query")), "never_looked_up"),
        (_record("1270", False, ("knowledge_search", "1. costs 1270")), "wrong_after_lookup"),
    ],
)
def test_eval_diagnoses_each_wrong_answer(record: dict[str, Any], kind: str | None) -> None:
    assert load("eval/run.py").diagnose(record) == kind


# -- bench/peer_suite.py: its offline parts (the run itself needs PyPI and is not in the tests) ---------
def junit(cases: str) -> str:
    return f'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>'


CLASSIC_JUNIT = junit(
    '<testcase classname="tests.unit_tests.agents.test_agent" name="test_same" />'
    '<testcase classname="tests.unit_tests.agents.test_agent" name="test_listed" />'
    '<testcase classname="tests.unit_tests.agents.test_agent_async" name="test_new">'
    '<skipped message="needs a package" /></testcase>'
)
OUR_JUNIT = junit(
    '<testcase classname="tests.unit_tests.agents.test_agent" name="test_same" />'
    '<testcase classname="tests.unit_tests.agents.test_agent" name="test_listed"><failure message="m" /></testcase>'
    '<testcase classname="tests.unit_tests.agents.test_agent_async" name="test_new">'
    '<failure message="AssertionError: assert &apos;a&apos; == &apos;b&apos;&#10;more">trace</failure></testcase>'
)


def test_peer_suite_reads_junit_and_flags_differences_not_in_the_docs(tmp_path: Path) -> None:
    peer = load("peer_suite.py")
    (tmp_path / "classic.xml").write_text(CLASSIC_JUNIT, encoding="utf-8")
    (tmp_path / "ours.xml").write_text(OUR_JUNIT, encoding="utf-8")
    results = {"classic": peer.read_junit(tmp_path / "classic.xml")}
    results["explicit_react"] = results["classic_unknown_tool"] = peer.read_junit(tmp_path / "ours.xml")
    assert results["explicit_react"]["test_agent_async.py::test_new"] == {
        "outcome": "failed",
        "message": "AssertionError: assert 'a' == 'b'",
    }
    rows = {row["test"]: row for row in peer.compare(results, {"test_agent.py::test_listed": "on purpose"})}
    assert rows["test_agent.py::test_same"]["status"] == "same"
    listed = rows["test_agent.py::test_listed"]
    assert (listed["classic"], listed["explicit_react"], listed["status"], listed["reason"]) == (
        "passed",
        "failed",
        "documented",
        "on purpose",
    )
    assert rows["test_agent_async.py::test_new"]["status"] == "UNEXPLAINED"  # skipped there, failed here


def test_peer_suite_documented_differences_are_the_migration_table() -> None:
    documented = load("peer_suite.py").documented_differences()
    assert len(documented) == 5
    assert "test_agent_iterator.py::test_agent_iterator_failing_tool" in documented
    assert all(reason for reason in documented.values())
    recorded = json.loads((BENCH / "results" / "peer_suite.json").read_text(encoding="utf-8"))
    assert {r["test"] for r in recorded["tests"] if r["status"] != "same"} == set(documented)
    assert recorded["summary"]["UNEXPLAINED"] == 0
