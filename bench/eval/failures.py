"""Why a wrong answer to a generated question is wrong, read from the run's steps and the world.

``classify(question, record, world)`` returns ``None`` for a right answer, else one of ``FAILURES``,
tested in this order (the first that fits wins):

1. ``limit``: the run ended at its step limit or by loop detection (whatever it then answered);
2. ``gave_up``: it said the fact was not in the files, and it was;
3. ``never_looked_up``: a fact the question needs never appeared in any search result it got;
4. ``wrong_fact``: every needed fact was in view, but the answer (or a calculation) used the value or
   name of another fact, e.g. the other product's price; for a question whose fact is not in the
   files, any answer that states one;
5. ``wrong_formula``: the right facts combined the wrong way: a calculation on the needed numbers
   that gives another result, or a comparison named the wrong way round;
6. ``arithmetic``: the right facts and no wrong formula in view, but a wrong number: worked out
   without the calculator, or a right calculator result copied wrongly.

A record is what ``generated.py`` stores per question: ``answer``, ``limit_reached`` and ``trace``
(steps with ``action``, ``input``, ``observation``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from explicit_react.policy import COMMON_NUMBERS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answers import contains, number_matches, numbers_in, says_not_found
from worlds import Question, World, check

FAILURES: dict[str, str] = {
    "limit": "the run ended at its step limit or by loop detection",
    "gave_up": "said the fact was not in the files, and it was",
    "never_looked_up": "a needed fact never appeared in a search result",
    "wrong_fact": "the needed facts were in view, but it used another fact (or stated one that is not in the files)",
    "wrong_formula": "the right facts combined the wrong way (another operation; a comparison backwards)",
    "arithmetic": "the right facts, a wrong number: worked out without the calculator, or copied wrongly",
}


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= max(1e-6 * abs(b), 1e-9)


def classify(question: Question, record: dict[str, Any], world: World) -> str | None:
    """The failure class of a record (``None`` when its answer is right)."""
    answer = str(record["answer"])
    if check(question, answer):
        return None
    if record["limit_reached"]:
        return "limit"
    if question.answer is None:
        return "wrong_fact"
    if says_not_found(answer):
        return "gave_up"
    trace = record["trace"]
    results = [str(s["observation"]) for s in trace if s["action"] == "knowledge_search"]
    if not all(any(world.in_view(key, result) for result in results) for key in question.facts):
        return "never_looked_up"
    if isinstance(question.answer, str):
        return "wrong_formula" if question.rival and contains(answer, question.rival) else "wrong_fact"

    needed = [float(world.value(*key)) for key in question.facts if not isinstance(world.value(*key), str)]
    allowed = [*needed, *numbers_in(question.question), *COMMON_NUMBERS]
    others = {
        float(fact.value)
        for fact in [*world.facts.values(), *world.distractors]
        if not isinstance(fact.value, str) and fact.key not in question.facts
    }
    calculations = [s for s in trace if s["action"] == "calculator"]
    used = [n for s in calculations for n in numbers_in(str(s["input"]))] + numbers_in(answer)
    if any(any(_close(n, o) for o in others) and not any(_close(n, a) for a in allowed) for n in used):
        return "wrong_fact"
    expected = float(question.answer)
    if any(number_matches(str(s["observation"]), expected, question.tolerance) for s in calculations):
        return "arithmetic"  # the calculator gave the answer; the Final Answer says otherwise
    last_inputs = numbers_in(str(calculations[-1]["input"])) if calculations else []
    if last_inputs and all(any(_close(n, v) for n in last_inputs) for v in needed):
        return "wrong_formula"
    return "arithmetic" if not calculations else "wrong_formula"
