"""PROTOTYPE (an experiment, not the library): answer a question by sub-questions.

1. one model call splits the question into numbered sub-questions (#1, #2 refer back);
2. each sub-question, with the earlier answers put in for #k, is one short ExplicitReActAgent run;
3. the question is answered by one more agent run whose context lists the sub-answers.
A plan of one sub-question is the question itself: one agent run, as without the plan.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from explicit_react import ExplicitReActAgent

PLAN_SYSTEM = """You split a question into the simplest sub-questions that answer it, in order.
Each sub-question asks for one fact, or for one calculation from earlier answers.
Refer to the answer of an earlier sub-question as #1, #2 and so on.
A question that asks for one fact is one sub-question. Write only the numbered list."""

PLAN_EXAMPLES = """Question: Who directed the film that won the Golden Bear in 1990?
1. Which film won the Golden Bear in 1990?
2. Who directed #1?

Question: How much longer is the Danube than the Rhine, in kilometres?
1. How long is the Danube, in kilometres?
2. How long is the Rhine, in kilometres?
3. Calculate #1 - #2.

Question: What is the boiling point of ethanol?
1. What is the boiling point of ethanol?

Question: In which year did the founder of the Red Cross turn 60?
1. Who founded the Red Cross?
2. In which year was #1 born?
3. Calculate #2 + 60.

Question: """

_ITEM = re.compile(r"^\s*(\d+)[.)]\s*(.+?)\s*$", re.MULTILINE)
_REF = re.compile(r"#(\d+)")
MAX_SUBQUESTIONS = 5


def _example_messages() -> list[Any]:
    out: list[Any] = []
    for block in PLAN_EXAMPLES.split("Question: ")[1:]:
        q, _, items = block.strip().partition("\n")
        if q:
            out += [HumanMessage(q.strip()), AIMessage(items.strip())]
    return out


def plan(model: Any, question: str, config: Any = None) -> tuple[list[tuple[int, str]], str]:
    """The numbered sub-questions, each with the number the model gave it (``#k`` refers to it)."""
    messages = [SystemMessage(PLAN_SYSTEM), *_example_messages(), HumanMessage(question)]
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
    subs = [sub for _, sub in numbered]
    steps: list[Any] = []
    answers: dict[int, str] = {}
    if len(subs) <= 1:
        result = ExplicitReActAgent(model, tools, max_iterations=max_iterations).run(question, config=config)
        return {
            "plan": plan_text,
            "subs": subs,
            "answer": result.answer,
            "result": result,
            "steps": result.steps,
            "sub_answers": [],
        }
    facts = []
    for number, sub in numbered:
        text = filled(sub, answers)
        result = ExplicitReActAgent(model, tools, max_iterations=3).run(text, config=config)
        steps.extend(result.steps)
        answers[number] = result.answer if result.success else "not found"
        facts.append(f"{len(facts) + 1}. {text} {answers[number]}")
    context = "What the sub-questions found:\n" + "\n".join(facts)
    final = ExplicitReActAgent(model, tools, max_iterations=2).run(question, context=context, config=config)
    steps.extend(final.steps)
    return {
        "plan": plan_text,
        "subs": subs,
        "answer": final.answer,
        "result": final,
        "steps": steps,
        "sub_answers": list(answers.values()),
    }


def run_record(model: Any, tools: list, question: str, max_iterations: int) -> dict[str, Any]:
    """``run_decomposed`` as a ``generated.py`` record (the fields ``run_explicit`` gives)."""
    import run as hand_written  # the hand-written eval's usage counter

    usage = hand_written.UsageCounter()
    out = run_decomposed(model, tools, question, max_iterations, config={"callbacks": [usage]})
    result = out["result"]
    return {
        "answer": out["answer"],
        "stop_reason": result.stop_reason.value,
        "steps": len(out["steps"]),
        "parse_failures": sum(s.error == "parse_error" for s in out["steps"]),
        "loop_stopped": result.stop_reason.value == "loop_detected",
        "limit_reached": not result.success,
        "llm_calls": usage.calls,
        "tokens": {"input": usage.input_tokens, "output": usage.output_tokens, "cached": usage.cached_tokens},
        "plan": out["plan"],
        "sub_questions": out["subs"],
        "sub_answers": out["sub_answers"],
        "trace": [
            {
                "log": s.log,
                "action": s.action,
                "input": s.action_input,
                "observation": s.observation[:2000],
                "error": s.error,
            }
            for s in out["steps"]
        ],
        "last_reply": usage.last_reply if not result.success else None,
    }
