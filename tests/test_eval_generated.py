"""The generated evaluation (bench/eval/worlds.py): deterministic worlds, answers that follow from
the facts, and an ideal model that answers every question through the real agent in the minimal
number of steps (the "no regression for a strong model" check)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel

from explicit_react import ExplicitReActAgent
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import KnowledgeBaseTool, calculator

EVAL = Path(__file__).resolve().parents[1] / "bench" / "eval"
sys.path.insert(0, str(EVAL))

import answer_check_replay  # noqa: E402
import answers  # noqa: E402
import failures  # noqa: E402
import generated  # noqa: E402
import worlds  # noqa: E402
from minimal_react import run_minimal  # noqa: E402

SEED = worlds.TUNING_SEEDS[0]


@cache
def world(seed: int = SEED) -> worlds.World:
    return worlds.World.generate(seed)


def knowledge(w: worlds.World) -> KnowledgeBaseTool:
    """The knowledge tool as the generated eval builds it (``generated.make_tools``)."""
    return KnowledgeBaseTool.from_documents(w.documents(), k=3, passage_chars=220)


# --- generation -------------------------------------------------------------------------------------


def test_generation_is_deterministic_per_seed_and_varies_across_seeds() -> None:
    first, again, other = worlds.World.generate(SEED), worlds.World.generate(SEED), world(SEED + 1)
    assert first.files == again.files
    assert [q.to_dict() for q in first.questions] == [q.to_dict() for q in again.questions]
    assert first.files != other.files
    assert {q.question for q in first.questions}.isdisjoint({q.question for q in other.questions})


@pytest.mark.parametrize("seed", [*worlds.TUNING_SEEDS, 1234])
def test_every_kind_appears_with_hundreds_of_questions(seed: int) -> None:
    counts = Counter(q.kind for q in world(seed).questions)
    assert set(counts) == set(worlds.KINDS)
    assert all(n >= 10 for n in counts.values()), counts
    assert sum(counts.values()) >= 250
    assert len({q.id for q in world(seed).questions}) == len(world(seed).questions)


def test_the_files_state_every_asked_fact_once_and_never_a_left_out_one() -> None:
    w = world()
    paragraphs = {
        (file, number): text
        for file, content in w.files.items()
        for number, text in enumerate(content.split("\n\n")[1:])
    }
    for key, fact in w.facts.items():
        text = paragraphs[w.paragraph_of[key]]
        assert len(text) <= worlds.PARAGRAPH_CHARS, text
        assert answers.contains(text, fact.owner), (fact, text)
        if isinstance(fact.value, str):
            assert answers.contains(text, fact.value), (fact, text)
        else:
            assert answers.number_matches(text, float(fact.value)), (fact, text)
    left_out = [q for q in w.questions if q.op == "left_out"]
    assert left_out
    for question in left_out:  # planned as "<name> <attribute>", e.g. "Sistguck Z5 weight"
        subject, attribute = question.plan[0].input.rsplit(" ", 1)
        assert (subject, attribute) not in w.facts


def answer_from_facts(w: worlds.World, q: worlds.Question) -> Any:
    """The answer recomputed from the facts the question names, by its op, independently of the
    generator's own arithmetic."""
    values = [w.value(*key) for key in q.facts]
    if q.kind in ("lookup", "chain"):
        subject, attribute = q.facts[-1]
        return subject if attribute == "role" else values[-1]  # "who is the head of sales at X"
    if q.kind == "comparison":
        (a, attribute), (b, _) = q.facts
        earlier = attribute in ("founded", "born")
        x, y = values
        return a if (x < y if earlier else x > y) else b
    return None


def test_answers_follow_from_the_world() -> None:
    w = world()
    for q in w.questions:
        if q.kind in ("lookup", "chain", "comparison"):
            assert q.answer == answer_from_facts(w, q), q
        elif q.kind == "not_in_files":
            assert q.answer is None
        else:  # a calculation: the last planned call computes the answer from looked-up values
            expression = q.plan[-1].input
            assert q.plan[-1].tool == "calculator"
            assert isinstance(q.answer, int | float)
            assert calculator.invoke(expression) == pytest.approx(
                q.answer, rel=1e-9
            ) or answers.number_matches(str(calculator.invoke(expression)), q.answer, q.tolerance)
            for key in q.facts:
                value = w.value(*key)
                if isinstance(value, int | float):
                    assert answers.number_matches(expression, float(value)), (q, key)


# --- the checker ------------------------------------------------------------------------------------


def question(**fields: Any) -> worlds.Question:
    base = {
        "id": "x",
        "kind": "lookup",
        "op": "x",
        "question": "?",
        "answer": 1,
        "unit": "",
        "plan": (),
        "facts": (),
    }
    return worlds.Question(**{**base, **fields})


@pytest.mark.parametrize(
    ("fields", "reply", "right"),
    [
        ({"answer": 4850}, "It costs $4,850.", True),
        ({"answer": 4850}, "It costs 4851 dollars.", False),
        ({"answer": 2018}, "2019", False),
        ({"answer": 0.6333333, "tolerance": 0.01}, "about 0.63 hours", True),
        ({"answer": 29.5401, "tolerance": 0.01}, "29.5%", True),
        ({"answer": 29.5401, "tolerance": 0.01}, "30%", False),
        ({"answer": "Drax Maki"}, "It was founded by Drax Maki.", True),
        ({"answer": "Drax Maki"}, "Maki", False),
        ({"answer": "Hirron H5", "rival": "Hirron M8"}, "The Hirron H5 costs more than the Hirron M8.", True),
        (
            {"answer": "Hirron H5", "rival": "Hirron M8"},
            "The Hirron M8 is cheaper than the Hirron H5.",
            False,
        ),
        ({"answer": "Hirron H5", "rival": "Hirron M8"}, "Hirron M8", False),
        ({"answer": None}, "The files do not say what its top speed is.", True),
        ({"answer": None}, "The knowledge base doesn't mention a top speed.", True),
        ({"answer": None}, "There is no information about the top speed.", True),
        ({"answer": None}, "I could not find it.", True),
        ({"answer": None}, "The top speed of the Galquom K9 is not explicitly mentioned.", True),
        ({"answer": None}, "Its top speed is not directly given in the files.", True),
        ({"answer": None}, "It is only 40 km/h.", False),
        ({"answer": None}, "Its top speed is 40 km/h.", False),
    ],
)
def test_check(fields: dict[str, Any], reply: str, right: bool) -> None:
    assert worlds.check(question(**fields), reply) is right


# --- the ideal model through the real agent ---------------------------------------------------------


@cache
def retrieval_misses(seed: int = SEED) -> dict[str, list[str]]:
    """The planned searches whose results (from the knowledge tool alone) do not show a fact they
    were planned to find, by question id."""
    w = world(seed)
    tool = knowledge(w)
    missed: dict[str, list[str]] = {}
    for q in w.questions:
        for call in q.plan:
            if call.facts and not all(w.in_view(key, tool.invoke(call.input)) for key in call.facts):
                missed.setdefault(q.id, []).append(call.input)
    return missed


def test_an_ideal_model_answers_every_question_in_the_minimal_steps() -> None:
    """Each question's minimal plan, played by a scripted model through the real agent, real
    knowledge search and real calculator: every answer right, in exactly the planned steps, every
    search showing the facts it was meant to find, every calculation giving the answer.

    Any question whose planned search the knowledge tool itself did not answer (none on seed 1, see
    the test below) would be left out here, and must fail: the agent may not make up a fact it never saw."""
    w = world()
    tools = [knowledge(w), calculator]
    misses = retrieval_misses()
    failures, failed_misses = [], []
    for q in w.questions:
        model = ScriptedChatModel(worlds.ideal_replies(q))
        result = ExplicitReActAgent(model, tools, max_iterations=6).run(q.question)
        problems = []
        if not worlds.check(q, result.answer):
            problems.append(f"answer {result.answer!r}")
        if len(result.steps) != len(q.plan) or result.stop_reason.value != "success":
            problems.append(f"{len(result.steps)} steps, {result.stop_reason.value}")
        for call, step in zip(q.plan, result.steps, strict=False):
            if step.error:
                problems.append(f"{call.tool}({call.input!r}): {step.observation[:120]}")
            for key in call.facts:
                if not w.in_view(key, step.observation):
                    problems.append(f"{call.input!r} did not return {key}")
        calculated = q.plan and q.plan[-1].tool == "calculator" and result.steps
        if calculated and not answers.number_matches(
            result.steps[-1].observation, float(q.answer), q.tolerance
        ):  # type: ignore[arg-type]
            problems.append(f"calculator gave {result.steps[-1].observation}")
        model.assert_all_used()
        if q.id in misses:
            failed_misses.append(bool(problems))
        elif problems:
            failures.append(f"{q.id} {q.question}: {'; '.join(problems)}")
    assert not failures, f"{len(failures)} of {len(w.questions)}:\n" + "\n".join(failures[:20])
    assert all(failed_misses)
    assert len(misses) <= 0.02 * len(w.questions)


def test_knowledge_search_returns_every_planned_fact() -> None:
    """Every planned search of seed 1 shows the facts it was planned for: passages holding more query
    words rank first (BM25 alone ranked "Sistguck Z5 weight"'s answer fourth, see bench/eval/retrieval.py)."""
    assert retrieval_misses() == {}


# --- failure classes --------------------------------------------------------------------------------


def first(kind: str, op: str | None = None) -> worlds.Question:
    return next(
        q
        for q in world().questions
        if q.kind == kind and op in (None, q.op) and q.id not in retrieval_misses()
    )


def ideal_trace(q: worlds.Question, calculation: str | None = None) -> list[dict[str, Any]]:
    """The searches of ``q``'s plan with their real results, then ``calculation`` if given."""
    tool = knowledge(world())
    trace: list[dict[str, Any]] = [
        {"action": c.tool, "input": c.input, "observation": tool.invoke(c.input)}
        for c in q.plan
        if c.tool == "knowledge_search"
    ]
    if calculation is not None:
        trace.append(
            {"action": "calculator", "input": calculation, "observation": str(calculator.invoke(calculation))}
        )
    return trace


def record(answer: str, trace: list[dict[str, Any]], limit: bool = False) -> dict[str, Any]:
    return {"answer": answer, "trace": trace, "limit_reached": limit}


def test_failure_classes() -> None:
    w = world()
    price = first("lookup", "price")
    assert failures.classify(price, record(worlds.answer_text(price), ideal_trace(price)), w) is None
    assert failures.classify(price, record("12", ideal_trace(price), limit=True), w) == "limit"
    assert failures.classify(price, record("The files do not say.", ideal_trace(price)), w) == "gave_up"
    assert failures.classify(price, record("1000 dollars", []), w) == "never_looked_up"
    other = next(f for f in w.facts.values() if f.attribute == "price" and f.subject != price.facts[0][0])
    assert failures.classify(price, record(f"{other.value} dollars", ideal_trace(price)), w) == "wrong_fact"

    difference = first("two_lookups", "difference")
    a, b = (w.value(*key) for key in difference.facts)
    trace = ideal_trace(difference, f"{a} + {b}")
    assert failures.classify(difference, record(f"{a + b}", trace), w) == "wrong_formula"
    assert failures.classify(difference, record(f"{a - b + 3}", ideal_trace(difference)), w) == "arithmetic"
    trace = ideal_trace(difference, f"{a} - {b}")
    assert failures.classify(difference, record(f"{a - b + 3}", trace), w) == "arithmetic"  # copied wrongly

    comparison = first("comparison")
    backwards = f"The {comparison.rival} is ahead of the {comparison.answer}."
    assert failures.classify(comparison, record(backwards, ideal_trace(comparison)), w) == "wrong_formula"

    missing = first("not_in_files")
    assert failures.classify(missing, record("It is 40.", ideal_trace(missing)), w) == "wrong_fact"
    assert failures.classify(missing, record("The files do not say.", ideal_trace(missing)), w) is None


# --- the runner and the baseline loop ---------------------------------------------------------------


def test_the_runner_scores_the_ideal_model_on_every_system(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "generated.json"
    assert generated.main(["--model", "ideal", "--seeds", "2", "--per-kind", "1", "--out", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["seeds"] == [2] and not report["fresh"]
    assert "--seeds 2 " in report["command"] and "--per-kind 1 " in report["command"]
    for system in ("explicit", "minimal", "classic"):
        records = report["records"][system]
        assert sorted(r["kind"] for r in records) == sorted(worlds.KINDS)
        assert all(r["correct"] and r["failure"] is None for r in records), system
        assert all(r["tool_calls"] == r["minimal_tool_calls"] == r["llm_calls"] - 1 for r in records), system
        summary = report["summary"][system]
        assert summary["correct"] == summary["questions"] == len(worlds.KINDS)
        assert summary["mean_prompt_tokens"] > 0 and summary["mean_generated_tokens"] > 0
    assert "| **all** | **7/7** | **7/7** | **7/7** |" in capsys.readouterr().out
    report["records"]["classic"].pop()  # as if the run had stopped before the classic agent's last answer
    out.write_text(json.dumps(report), encoding="utf-8")
    assert generated.main(["--show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert (
        "6 questions answered by every system" in shown
        and "| **all** | **6/6** | **6/6** | **6/6** |" in shown
    )


def test_the_native_modes_are_systems_a_real_model_can_run() -> None:
    """two_phase: a Thought call and a native call per turn, through the runner's record; the ideal
    model writes ReAct text, so it is refused for the native systems."""
    from langchain_core.messages import AIMessage

    from explicit_react.testing import ScriptedChatModel

    w = worlds.World.generate(SEED)
    question = w.questions[0]
    call = {"name": "knowledge_search", "args": {"query": question.question}, "id": "c1", "type": "tool_call"}
    model = ScriptedChatModel(["Look it up.", AIMessage("", tool_calls=[call]), "Found it.", "42"])
    record = generated.SYSTEMS["two_phase"](model, generated.make_tools(w), question.question, 4)
    assert (record["answer"], record["stop_reason"], record["llm_calls"]) == (
        "42",
        "success",
        4,
    )  # model calls: two per turn
    [step] = record["trace"]
    assert (step["action"], step["input"], step["error"]) == (
        "knowledge_search",
        {"query": question.question},
        None,
    )
    assert generated.tool_calls(record, generated.make_tools(w)) == 1
    model.assert_all_used()
    with pytest.raises(SystemExit):
        generated.main(["--model", "ideal", "--seeds", "2", "--systems", "explicit,two_phase"])


def test_fresh_seeds_are_never_tuning_seeds_nor_drawn_twice(tmp_path: Path) -> None:
    used = tmp_path / "used_seeds.json"
    first_draw = generated.draw_fresh_seeds(2, "cmd one", tmp_path / "a.json", used)
    second_draw = generated.draw_fresh_seeds(1, "cmd two", tmp_path / "b.json", used)
    assert len(set(first_draw + second_draw)) == 3
    assert not set(first_draw + second_draw) & set(worlds.TUNING_SEEDS)
    recorded = generated.used_seeds(used)
    assert [e["seed"] for e in recorded] == first_draw + second_draw
    assert [e["command"] for e in recorded] == ["cmd one", "cmd one", "cmd two"]


def test_the_minimal_loop() -> None:
    tools = [knowledge(world()), calculator]
    model = ScriptedChatModel(
        [
            "Thought: look\nAction: calculator\nAction Input: 2 + 3",
            "Thought: oops\nAction: web_search\nAction Input: x",
            "Final Answer: 5",
        ]
    )
    result = run_minimal(model, tools, "What is 2 + 3?")
    assert result["answer"] == "5" and result["stop_reason"] == "success"
    assert result["steps"][0]["observation"] == "5"
    assert "Unknown tool 'web_search'" in result["steps"][1]["observation"]
    assert "Observation: 5" in model.calls[1].prompt
    assert run_minimal(ScriptedChatModel(["just 5"]), tools, "?")["answer"] == "just 5"
    looping = ScriptedChatModel(["Action: calculator\nAction Input: 1 + 1"] * 2)
    assert run_minimal(looping, tools, "?", max_iterations=2)["stop_reason"] == "max_iterations"


def test_bm25_alone_missed_facts_that_the_ranking_now_finds(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/eval/retrieval.py on seed 10: BM25 alone (the ranking before) misses planned facts, the
    package's ranking misses none. (Seed 1's three misses went with the tokenizer that reads "9,380"
    as one number.)"""
    import retrieval

    assert retrieval.main(["--seeds", "10"]) == 0
    total = capsys.readouterr().out.splitlines()[-1]
    searches = sum(1 for q in world(10).questions for c in q.plan if c.facts)
    assert total == f"| **all** | {searches} | 2 | 0 |"


def test_the_answer_check_does_not_slow_the_ideal_model(tmp_path: Path) -> None:
    # --answer-check turns check_answer on for explicit_react's systems; explicit_answer_check has it
    # always. A strong model's answers pass every check: no answer goes back, no step is added.
    out = tmp_path / "checked.json"
    argv = ["--model", "ideal", "--seeds", "3", "--per-kind", "2", "--answer-check", "--out", str(out)]
    assert generated.main([*argv, "--systems", "explicit,explicit_answer_check"]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["settings"]["answer_check"] and "--answer-check" in report["command"]
    for system in ("explicit", "explicit_answer_check"):
        records = report["records"][system]
        assert len(records) == 2 * len(worlds.KINDS)
        assert all(r["correct"] and r["answers_sent_back"] == 0 for r in records), system
        assert all(r["tool_calls"] == r["minimal_tool_calls"] == r["llm_calls"] - 1 for r in records), system
        assert report["summary"][system]["answers_sent_back"] == 0
    # replayed over the saved records, the check sends none of these right answers back either
    counts = answer_check_replay.replay(report["records"]["explicit"])
    assert counts == {("right", "-"): 2 * len(worlds.KINDS)}
    wrong = [{**r, "answer": "Vionlio Optics", "correct": False} for r in report["records"]["explicit"]]
    assert answer_check_replay.replay(wrong)["wrong", "number"] > 0


def test_show_merges_files_and_scores_again(tmp_path: Path) -> None:
    """``--show a.json b.json``: records joined by system, a later file's record of the same question
    wins, and every answer is scored by the current scorer, not the stored verdict."""
    world = worlds.World.generate(SEED)
    first, second = worlds.sample(world.questions, 1, SEED)[:2]

    def record(q: worlds.Question, answer: str, stored: bool) -> dict[str, Any]:
        return {"id": q.id, "seed": SEED, "kind": q.kind, "answer": answer, "correct": stored}

    right = str(first.answer)
    older = {
        "seeds": [SEED],
        "records": {"explicit": [record(first, "no idea", False), record(second, "x", False)]},
    }
    newer = {"seeds": [SEED], "records": {"explicit": [record(first, right, False)]}}
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path, report in zip(paths, (older, newer), strict=True):
        path.write_text(json.dumps({"command": "c", "model": "m", **report}), encoding="utf-8")

    report = generated.merged(paths)

    records = {r["id"]: r for r in report["records"]["explicit"]}
    assert list(records) == [first.id, second.id]
    assert records[first.id]["answer"] == right
    assert records[first.id]["correct"] is True  # stored False, scored again
    assert records[second.id]["correct"] is False
    assert report["files"] == [str(p) for p in paths]


def test_sign_test_is_the_exact_binomial_tail() -> None:
    assert generated.sign_test(0, 0) == 1.0
    assert generated.sign_test(3, 3) == 1.0
    assert generated.sign_test(5, 0) == pytest.approx(2 / 32)  # 5 of 5 one way: 1/32, either way
    assert generated.sign_test(1, 7) == pytest.approx(2 * 9 / 256)  # P(X <= 1 of 8), both tails
    assert generated.sign_test(7, 1) == generated.sign_test(1, 7)


def test_show_pairs_the_first_system_with_each_other_on_shared_questions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--show FILE --systems a,b,c``: only those systems; the first against each other, question by
    question; a question one system did not answer is left out of every table."""
    world = worlds.World.generate(SEED)
    q1, q2, q3, q4 = worlds.sample(world.questions, 1, SEED)[:4]

    def record(q: worlds.Question, right: bool) -> dict[str, Any]:
        answer = str(q.answer) if right else "no idea at all"
        cost = {"tokens": {"input": 1, "output": 1}, "seconds": 1.0, "llm_calls": 1, "tool_calls": 1}
        failure = None if right else "never_looked_up"
        return {
            "id": q.id,
            "seed": SEED,
            "kind": q.kind,
            "answer": answer,
            "correct": right,
            "failure": failure,
            "limit_reached": False,
            "minimal_tool_calls": 1,
            **cost,
        }

    records = {
        "explicit": [record(q1, True), record(q2, True), record(q3, False), record(q4, True)],
        "minimal": [record(q1, True), record(q2, False), record(q3, True)],
        "classic": [record(q1, False), record(q2, False), record(q3, False), record(q4, False)],
        "other": [record(q1, False)],
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"command": "c", "model": "m", "seeds": [SEED], "records": records}))

    assert generated.main(["--show", str(path), "--systems", "explicit,minimal,classic"]) == 0
    shown = capsys.readouterr().out
    assert "3 questions answered by every system" in shown
    assert "| **all** | **2/3** | **2/3** | **0/3** |" in shown
    assert "| minimal | 3 | 1 | 1 | 1 | 0 | 1.0 |" in shown
    assert "| classic | 3 | 0 | 2 | 0 | 1 | 0.5 |" in shown
    assert "| other |" not in shown
    assert generated.main(["--show", str(path), "--systems", "explicit,nobody"]) == 2


def test_kinds_runs_the_same_questions_of_those_kinds_only(tmp_path: Path) -> None:
    out = tmp_path / "chains.json"
    argv = ["--model", "ideal", "--seeds", "2", "--per-kind", "2", "--systems", "explicit"]
    assert generated.main([*argv, "--kinds", "chain,dates", "--out", str(out)]) == 0
    records = json.loads(out.read_text(encoding="utf-8"))["records"]["explicit"]
    world = worlds.World.generate(2)
    expected = [q.id for q in worlds.sample(world.questions, 2, 2) if q.kind in {"chain", "dates"}]
    assert [r["id"] for r in records] == expected
    assert len(expected) == 4
    assert all(r["correct"] for r in records)
    with pytest.raises(SystemExit):
        generated.main([*argv, "--kinds", "chains"])


def test_warm_gives_each_system_its_own_model_and_never_empties_its_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Any] = []
    emptied: list[Any] = []

    def make_model(*args: Any, **kwargs: Any) -> Any:
        made.append(FakeListChatModel(responses=["Thought: I cannot tell.\nFinal Answer: unknown"]))
        return made[-1]

    monkeypatch.setattr(generated.hand_written, "make_model", make_model)
    monkeypatch.setattr(generated.hand_written, "fresh_context", emptied.append)
    argv = ["--model", "local:qwen", "--seeds", "2", "--per-kind", "1", "--kinds", "lookup,chain"]
    out = tmp_path / "cold.json"
    assert generated.main([*argv, "--out", str(out)]) == 0
    assert len(made) == 1 and emptied == [made[0]] * 6  # 2 questions x 3 systems, each from empty
    assert json.loads(out.read_text(encoding="utf-8"))["settings"]["fresh_context"]

    made.clear(), emptied.clear()
    out = tmp_path / "warm.json"
    assert generated.main([*argv, "--warm", "--out", str(out)]) == 0
    assert len(made) == 3 and len({id(m) for m in made}) == 3 and emptied == []
    report = json.loads(out.read_text(encoding="utf-8"))
    assert not report["settings"]["fresh_context"] and " --warm" in report["command"]
    assert [len(r) for r in report["records"].values()] == [2, 2, 2]


def test_the_sub_question_prototype_plans_runs_each_sub_question_and_answers_from_them() -> None:
    """bench/eval/decompose_proto.py: the plan's items (a restated question dropped), each run with the
    earlier answers put in for #k, then an answer run whose context lists the sub-answers."""
    from explicit_react.testing import ScriptedChatModel

    w = worlds.World.generate(SEED)
    question = next(q for q in w.questions if q.kind == "chain")
    first, second = question.plan
    model = ScriptedChatModel(
        [
            f"1. {question.question}\n2. Which company is it?\n3. What does #2 employ?",  # item 1 restates
            f"Thought: look.\nAction: knowledge_search\nAction Input: {first.input}",
            "Thought: found.\nFinal Answer: Acme",
            f"Thought: look.\nAction: knowledge_search\nAction Input: {second.input}",
            "Thought: found.\nFinal Answer: 12",
            "Thought: I know it.\nFinal Answer: 12",
        ]
    )
    record = generated.SYSTEMS["decompose_proto"](model, generated.make_tools(w), question.question, 6)
    assert record["sub_questions"] == ["Which company is it?", "What does #2 employ?"]
    assert record["sub_answers"] == ["Acme", "12"]
    assert (record["answer"], record["stop_reason"], record["llm_calls"]) == ("12", "success", 6)
    assert [step["input"] for step in record["trace"]] == [first.input, second.input]
    sub_run = str(model.calls[3])  # the second sub-question's first turn: #2 is item 2's answer
    assert "Question: What does Acme employ?" in sub_run and "#2" not in sub_run
    final_prompt = str(model.calls[5])
    assert "What the sub-questions found" in final_prompt and "Acme" in final_prompt
    model.assert_all_used()


def test_perfect_steps_asks_the_model_once_after_the_ideal_plan(tmp_path: Path, capsys: Any) -> None:
    """The diagnostic's steps are the ideal plan run for real, and the model under test is asked once
    after them: the ideal model's own answer is right every time, and the model sees every planned
    observation (a model that answers wrong is scored wrong)."""
    import perfect_steps

    out = tmp_path / "perfect.json"
    assert perfect_steps.main(["--seeds", "1", "--per-kind", "1", "--model", "ideal", "--out", str(out)]) == 0
    records = json.loads(out.read_text(encoding="utf-8"))["records"]
    assert [r["kind"] for r in records] == list(worlds.KINDS)
    assert all(r["correct"] and r["answered"] for r in records)
    assert "7/7" in capsys.readouterr().out

    world = worlds.World.generate(1)
    question = next(q for q in world.questions if q.kind == "chain")
    steps = perfect_steps.perfect_steps(world, question)
    assert [s.action_input for s in steps] == [call.input for call in question.plan]
    assert all(s.error is None and s.observation for s in steps)
    wrong = ScriptedChatModel(replies=["Thought: I now know the final answer\nFinal Answer: Nobody Atall"])
    turn = ExplicitReActAgent(wrong, generated.make_tools(world), max_iterations=6).think(
        question.question, steps
    )
    assert not worlds.check(question, turn.decision.answer)  # type: ignore[union-attr]
