"""PROTOTYPE (an experiment, not the library): answer a question by sub-questions.

1. one model call splits the question into numbered sub-questions (#1, #2 refer back);
2. each sub-question, with the earlier answers put in for #k, is one short ExplicitReActAgent run;
3. the question is answered by one more agent run whose context lists the sub-answers.
A plan of one sub-question is the question itself: one agent run, as without the plan.
"""

from __future__ import annotations

import re
from typing import Any

import run as hand_written  # the hand-written eval's runner: usage counter, step records
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from explicit_react import ExplicitReActAgent, Step

PLAN_SYSTEM = """You split a question into the simplest sub-questions that answer it, in order.
Each sub-question asks for one fact, or for one calculation from earlier answers.
Refer to the answer of an earlier sub-question as #1, #2 and so on.
A question that asks for one fact is one sub-question. Write only the numbered list."""

PLAN_EXAMPLES = (  # (question, plan): worked examples from other domains, as chat turns
    (
        "Who directed the film that won the Golden Bear in 1990?",
        "1. Which film won the Golden Bear in 1990?\n2. Who directed #1?",
    ),
    (
        "How much longer is the Danube than the Rhine, in kilometres?",
        "1. How long is the Danube, in kilometres?\n2. How long is the Rhine, in kilometres?\n3. Calculate #1 - #2.",
    ),
    ("What is the boiling point of ethanol?", "1. What is the boiling point of ethanol?"),
    (
        "In which year did the founder of the Red Cross turn 60?",
        "1. Who founded the Red Cross?\n2. In which year was #1 born?\n3. Calculate #2 + 60.",
    ),
)
EXAMPLE_MESSAGES = [m for q, a in PLAN_EXAMPLES for m in (HumanMessage(q), AIMessage(a))]

_ITEM = re.compile(r"^\s*(\d+)[.)]\s*(.+?)\s*$", re.MULTILINE)
_REF = re.compile(r"#(\d+)")
MAX_SUBQUESTIONS = 5


def plan(model: Any, question: str, config: Any = None) -> tuple[list[tuple[int, str]], str]:
    """The numbered sub-questions, each with the number the model gave it (``#k`` refers to it)."""
    messages = [SystemMessage(PLAN_SYSTEM), *EXAMPLE_MESSAGES, HumanMessage(question)]
    reply = model.invoke(messages, stop=["\nQuestion:", "\n\n"], config=config)
    text = str(reply.content)
    items = [(int(m.group(1)), m.group(2)) for m in _ITEM.finditer(text)][:MAX_SUBQUESTIONS]
    if len(items) > 1:  # an item that restates the whole question is no step towards it
        items = [(n, i) for n, i in items if _words(i) != _words(question)] or items
    return items, text


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def filled(sub: str, answers: dict[int, str]) -> str:
    """``sub`` with each ``#k`` whose answer is known replaced by it."""
    return _REF.sub(lambda m: answers.get(int(m.group(1)), m.group(0)), sub)


def run_decomposed(
    model: Any, tools: list, question: str, max_iterations: int, config: Any = None
) -> dict[str, Any]:
    """The plan, each sub-question's run, then the answer run; the steps of all runs in order."""
    numbered, plan_text = plan(model, question, config)
    steps: list[Step] = []
    answers: dict[int, str] = {}
    facts: list[str] = []
    if len(numbered) > 1:
        for number, sub in numbered:
            text = filled(sub, answers)
            result = ExplicitReActAgent(model, tools, max_iterations=3).run(text, config=config)
            steps.extend(result.steps)
            answers[number] = result.answer if result.success else "not found"
            facts.append(f"{len(facts) + 1}. {text} {answers[number]}")
    # A plan of one sub-question is the question itself: one run, as without the plan.
    context = "What the sub-questions found:\n" + "\n".join(facts) if facts else ""
    final = ExplicitReActAgent(model, tools, max_iterations=2 if facts else max_iterations).run(
        question, context=context, config=config
    )
    steps.extend(final.steps)
    return {
        "plan": plan_text,
        "subs": [sub for _, sub in numbered],
        "result": final,
        "steps": steps,
        "sub_answers": list(answers.values()),
    }


def run_record(model: Any, tools: list, question: str, max_iterations: int) -> dict[str, Any]:
    """``run_decomposed`` as a ``generated.py`` record (the fields ``run_explicit`` gives)."""
    usage = hand_written.UsageCounter()
    out = run_decomposed(model, tools, question, max_iterations, config={"callbacks": [usage]})
    result = out["result"]
    return {
        "answer": result.answer,
        "stop_reason": result.stop_reason.value,
        "steps": len(out["steps"]),
        "parse_failures": sum(s.error == "parse_error" for s in out["steps"]),
        "loop_stopped": result.stop_reason.value == "loop_detected",
        "limit_reached": not result.success,
        "llm_calls": usage.calls,
        "tokens": usage.tokens(),
        "plan": out["plan"],
        "sub_questions": out["subs"],
        "sub_answers": out["sub_answers"],
        "trace": hand_written.step_records(out["steps"], 2000),
        "last_reply": usage.last_reply,
    }
