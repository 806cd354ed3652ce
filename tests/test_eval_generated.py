"""The generated evaluation (bench/eval/worlds.py): deterministic worlds, answers that follow from
the facts, and an ideal model that answers every question through the real agent in the minimal
number of steps (the "no regression for a strong model" check)."""

from __future__ import annotations

import sys
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from explicit_react import ExplicitReActAgent
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import KnowledgeBaseTool, calculator

EVAL = Path(__file__).resolve().parents[1] / "bench" / "eval"
sys.path.insert(0, str(EVAL))

import answers  # noqa: E402
import worlds  # noqa: E402

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
        ({"answer": None}, "Its top speed is 40 km/h.", False),
    ],
)
def test_check(fields: dict[str, Any], reply: str, right: bool) -> None:
    assert worlds.check(question(**fields), reply) is right


# --- the ideal model through the real agent ---------------------------------------------------------


def retrieval_misses(w: worlds.World) -> dict[str, list[str]]:
    """The planned searches whose results (from the knowledge tool alone) do not show a fact they
    were planned to find, by question id."""
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

    The questions whose planned search the knowledge tool itself does not answer (see the xfail
    test below) are left out here, and must fail: the agent may not make up a fact it never saw."""
    w = world()
    tools = [knowledge(w), calculator]
    misses = retrieval_misses(w)
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


@pytest.mark.xfail(
    strict=True,
    reason="knowledge_search ranks a paragraph holding every query word below shorter ones holding "
    "fewer (BM25 length normalisation): 'Sistguck Z5 weight' returns the Z5's colour and warranty "
    "paragraphs and the T6's weight (docs/benchmarks.md, generated evaluation)",
)
def test_knowledge_search_returns_every_planned_fact() -> None:
    assert retrieval_misses(world()) == {}
