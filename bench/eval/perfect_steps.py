"""How often the model states the right answer when every step before the answer was right.

A diagnostic, not a system: for each generated question, the steps of its minimal plan are made by
the real agent and the real tools, driven by the ideal scripted model (``worlds.ideal_replies``:
neutral Thoughts, the planned searches, the calculation with the right formula), and then the model
under test is asked for the next turn once, with ``ExplicitReActAgent.think``: the same prompt,
grammar and parser as in a run. Its reply is scored like a run's Final Answer; a reply that takes
another action instead counts as not answered.

What it measures is an upper bound on the last step of a run: the share of questions whose answer
the model gets right when searching, choosing facts and computing were all done for it. If that
share is below a target for whole runs, no change to how the agent acts can reach the target with
this model; what is left between this share and the runs' is the part the agent's acting loses.

    python bench/eval/perfect_steps.py --seeds tuning --per-kind 2 --model local:qwen --threads 2

``--values-first`` tries one idea on top: a Final Answer to a choice question ("..., A or B?") that
states fewer than two numbers goes back to the model once, asking for each value and the comparison
in a Thought first; the record then scores the second answer (``first_correct`` keeps the first).

    python bench/eval/perfect_steps.py --seeds tuning --per-kind 3 --kinds comparison --values-first --model local:qwen
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from explicit_react import ExplicitReActAgent, FinalAnswer, Step
from explicit_react.policy import numbers_in
from explicit_react.testing import ScriptedChatModel

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run as hand_written  # noqa: E402
from generated import make_tools, parse_seeds  # noqa: E402
from worlds import KINDS, World, check, ideal_replies, sample  # noqa: E402

MAX_ITERATIONS = 6  # as the generated evaluation's runs: the prompt's countdown shows what is left
VALUES_FIRST = (
    "Error: your Final Answer does not show the values you compared. Write a Thought that states the "
    "value of each from the Observations and which number is larger, then give the Final Answer again."
)


def perfect_steps(world: World, question: Any) -> list[Any]:
    """The steps of the question's minimal plan, made by the agent with the ideal scripted model."""
    ideal = ScriptedChatModel(replies=ideal_replies(question))
    result = ExplicitReActAgent(ideal, make_tools(world), max_iterations=MAX_ITERATIONS).run(
        question.question
    )
    if not result.success or len(result.steps) != len(question.plan):
        raise RuntimeError(f"{question.id}: the ideal plan did not run as planned ({result.stop_reason})")
    return list(result.steps)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="tuning", help="'tuning' or a comma-separated list")
    parser.add_argument("--per-kind", type=int, default=2)
    parser.add_argument("--model", default="local:qwen", help="a load_model name, or 'ideal'")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--kinds", default=None, help="comma-separated question kinds (default: all)")
    parser.add_argument(
        "--values-first", action="store_true", help="send back a choice answer without values"
    )
    parser.add_argument("--out", type=Path, default=None, help="write the records here as JSON")
    args = parser.parse_args(argv)
    kinds = set(args.kinds.split(",")) if args.kinds else set(KINDS)
    options = {"n_threads": args.threads} if args.model.startswith("local") else {}
    # "ideal": the ideal model's own answer, to check the script offline (every question right)
    model = (
        None
        if args.model == "ideal"
        else hand_written.make_model(args.model, args.max_tokens, args.n_ctx, [], **options)
    )
    records, began = [], time.monotonic()
    for seed in parse_seeds(args.seeds):
        world = World.generate(seed)
        for question in sample(world.questions, args.per_kind, seed):
            if question.kind not in kinds:
                continue
            steps = perfect_steps(world, question)
            answerer = model or ScriptedChatModel(
                replies=ideal_replies(question)[-1:] * 2
            )  # twice: --values-first
            agent = ExplicitReActAgent(answerer, make_tools(world), max_iterations=MAX_ITERATIONS)
            turn = agent.think(question.question, steps, steps_left=MAX_ITERATIONS - len(steps))
            answered = isinstance(turn.decision, FinalAnswer)
            answer = turn.decision.answer if isinstance(turn.decision, FinalAnswer) else ""
            right = first_right = answered and check(question, answer)
            if args.values_first and answered and " or " in question.question and len(numbers_in(answer)) < 2:
                back = Step(thought="", action="", action_input="", observation=VALUES_FIRST, log=turn.text,
                            error="answer_check")  # fmt: skip
                turn = agent.think(
                    question.question, [*steps, back], steps_left=MAX_ITERATIONS - len(steps) - 1
                )
                answered = isinstance(turn.decision, FinalAnswer)
                answer = turn.decision.answer if isinstance(turn.decision, FinalAnswer) else ""
                right = answered and check(question, answer)
            records.append(
                {"id": question.id, "kind": question.kind, "question": question.question, "answered": answered,
                 "correct": right, "first_correct": first_right, "answer": answer, "reply": turn.text}
            )  # fmt: skip
            print(f"{question.id:28} {'ok ' if right else 'BAD'} {answer[:70]!r}", flush=True)
    by_kind = Counter(r["kind"] for r in records)
    right_by_kind = Counter(r["kind"] for r in records if r["correct"])
    print(f"\n{'kind':14} right")
    for kind in KINDS:
        if by_kind[kind]:
            print(f"{kind:14} {right_by_kind[kind]}/{by_kind[kind]}")
    right = sum(r["correct"] for r in records)
    not_answered = sum(not r["answered"] for r in records)
    print(f"{'all':14} {right}/{len(records)} ({not_answered} replies took another action instead)")
    print(f"{time.monotonic() - began:.0f} s")
    if args.out:
        command = "python bench/eval/perfect_steps.py " + " ".join(argv if argv is not None else sys.argv[1:])
        args.out.write_text(
            json.dumps({"command": command, "records": records}, indent=1) + "\n", encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
