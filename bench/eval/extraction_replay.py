"""A last extraction step, measured without running the loop: the steps of saved runs, put to one more
tool-free call that answers the question from what the tool calls returned, scored like the run's own
answer. The issue's idea "a last extraction step that states the answer in the units asked" and "a
compact list of facts" in one: if this call's answers beat the loop's on the same steps, the step is
worth building into the agent; if not, it is not.

``--prompt limit`` is the agent's own call at a limit (``prompts/final_answer.txt``, the findings of
``scratchpad.render_findings``); ``--prompt facts`` asks first for the sentences the question needs,
copied, then the answer. ``--gold`` skips the saved steps: each comparison question of the seeds is put
with only the two facts it needs, one line each, and "Answer with the name only": how well the model
compares two values when nothing else is in view. ``--prompt choice`` puts each choice question
("..., A or B?") of the saved runs with only the result sentences that name A or B (a sentence opening
with a pronoun counts for what its line began with), and "Answer with the name only": the gold test
with the sentences a run found instead of the two facts.

    python bench/eval/extraction_replay.py bench/results/generated_local_qwen_tuning_tried_cover_rarer.json --prompt facts
    python bench/eval/extraction_replay.py --gold --seeds 1,2,3,4,5
    python bench/eval/extraction_replay.py bench/results/generated_local_qwen_tuning_comparisons_x3.json --prompt choice
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from explicit_react.models import load_model
from explicit_react.prompt import ReActPrompt
from explicit_react.scratchpad import render_findings
from explicit_react.types import Step

sys.path.insert(0, str(Path(__file__).resolve().parent))
from name_links import names_in, sentences
from worlds import Question, World, check

FACTS_SYSTEM = "You answer a question from the results of the tool calls that were made for it."
FACTS_USER = """Question: {question}

The tool calls made for this question returned:

{findings}

No more tools can be used. Reply in this format:
Facts: the sentences of these results that the question needs, copied word for word
Final Answer: the answer to the question, worked out from those facts alone: a name, or a number in the units the question asks for; or, if the facts are not there, what is missing"""

_FINAL = re.compile(r"Final Answer:\s*(.*)", re.S)
_CHOICE = re.compile(r",\s*([^,]+?)\s+or\s+([^,]+?)\s*\?\s*$")


def extraction_messages(question: str, steps: Sequence[Step], prompt: str) -> list[Any]:
    """The one tool-free call: the agent's call at a limit (``limit``) or the facts-first one (``facts``)."""
    findings = render_findings(steps)
    if prompt == "limit":
        system, user = (m["content"] for m in ReActPrompt().final_answer_messages(question, [], findings))
    else:
        system, user = FACTS_SYSTEM, FACTS_USER.format(question=question, findings=findings)
    return [SystemMessage(system), HumanMessage(user)]


def option_sentences(question: str, observations: Sequence[str]) -> list[str] | None:
    """The result sentences that name an option of a choice question ("..., A or B?"), each once;
    ``None`` for a question that is not one."""
    match = _CHOICE.search(question)
    options = [set(names_in(part)) for part in match.groups()] if match else []
    if not options or not all(options):
        return None
    wanted = options[0] | options[1]
    kept: list[str] = []
    for observation in observations:
        for sentence, names in sentences(observation):
            if wanted & set(names) and sentence not in kept:
                kept.append(sentence)
    return kept


def choice_messages(question: str, steps: Sequence[Step]) -> list[Any] | None:
    """A choice question with the sentences of the steps' results that name its options."""
    found = option_sentences(
        question, [s.observation for s in steps if s.error is None and s.action != "calculator"]
    )
    if found is None:
        return None
    facts = "\n".join(found)
    return [HumanMessage(f"Facts:\n{facts}\n\nQuestion: {question}\nAnswer with the name only.")]


def final_answer(reply: str) -> str:
    """The first line after ``Final Answer:`` (the whole reply when it has none)."""
    match = _FINAL.search(reply)
    return (match[1] if match else reply).strip().split("\n")[0]


def gold_messages(world: World, question: Question) -> list[Any]:
    """A comparison question with only the facts it needs, one line each."""
    lines = []
    for subject, attribute in question.facts:
        fact = world.facts[(subject, attribute)]
        unit = f" {fact.unit}" if getattr(fact, "unit", "") else ""
        lines.append(f"{fact.owner}: {attribute} {fact.value}{unit}")
    facts = "\n".join(lines)
    return [HumanMessage(f"Facts:\n{facts}\n\nQuestion: {question.question}\nAnswer with the name only.")]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="results files of generated.py")
    parser.add_argument("--system", default="explicit", help="whose saved runs to replay")
    parser.add_argument("--prompt", choices=["limit", "facts", "choice"], default="facts")
    parser.add_argument("--gold", action="store_true", help="comparison questions with their facts only")
    parser.add_argument("--seeds", default="1,2,3,4,5", help="with --gold")
    parser.add_argument("--per-seed", type=int, default=6, help="with --gold: comparisons per seed")
    parser.add_argument("--model", default="local:qwen")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    model = load_model(args.model, max_tokens=200, n_ctx=4096, temperature=0.0, n_threads=args.threads)
    worlds: dict[int, World] = {}
    right = loop_right = total = 0
    if args.gold:
        for seed in (int(s) for s in args.seeds.split(",")):
            world = worlds.setdefault(seed, World.generate(seed))
            for question in [q for q in world.questions if q.kind == "comparison"][: args.per_seed]:
                reply = str(model.invoke(gold_messages(world, question)).content)
                ok = check(question, reply)
                right, total = right + ok, total + 1
                print(
                    f"{question.id:28} {int(ok)} | {question.question} | {reply.strip()[:60]!r}", flush=True
                )
        print(f"gold facts: {right}/{total} right")
        return 0
    for path in args.files:
        for record in json.loads(path.read_text(encoding="utf-8"))["records"].get(args.system, []):
            world = worlds.setdefault(record["seed"], World.generate(record["seed"]))
            question = next(q for q in world.questions if q.id == record["id"])
            steps = [
                Step(
                    thought="",
                    action=s["action"],
                    action_input=s["input"],
                    observation=s["observation"] or "",
                    error=s.get("error"),
                )
                for s in record.get("trace") or []
            ]
            began = time.monotonic()
            if args.prompt == "choice":
                messages = choice_messages(record["question"], steps)
                if messages is None:
                    continue  # not a choice question
            else:
                messages = extraction_messages(record["question"], steps, args.prompt)
            answer = final_answer(str(model.invoke(messages).content))
            ok = check(question, answer)
            right, loop_right, total = right + ok, loop_right + bool(record["correct"]), total + 1
            print(
                f"{record['id']:28} loop={int(bool(record['correct']))} extracted={int(ok)} "
                f"{time.monotonic() - began:4.1f}s | {answer[:60]!r} | the loop said {str(record['answer'])[:40]!r}",
                flush=True,
            )
    print(
        f"the loop's own answers: {loop_right}/{total} right; extracted ({args.prompt}): {right}/{total} right"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
