"""Answer the development question set with a real model, through explicit_react and the classic agent.

Both frameworks get the same model object, the same tools (``knowledge_search`` over ``kb/`` and
``calculator``) and the same step limit. The classic agent is LangChain's own recipe:
``langchain_classic.agents.create_react_agent`` with the standard hub ReAct prompt (``hwchase17/react``)
and ``AgentExecutor(handle_parsing_errors=True, max_iterations=...)``. Answers are checked by a
normalised number or string match (``is_correct``). Results are written after every question, so a
long run can be watched and an interrupted one keeps what it measured.

Each run of a question starts from an empty llama.cpp context (``fresh_context``): llama-cpp-python
reuses the part of the previous prompt a new one starts with, and a prompt evaluated in other
pieces gives slightly different numbers, so at temperature 0 a question's answer depended on the
question run before it (13 right interleaved, 14 alone, with the same code). ``--reuse-context``
turns this off.

    python bench/eval/run.py --model local:qwen [--framework both] [--set dev|heldout] [--limit N] [--out PATH]

``--set dev`` (the default) is the development set: 20 questions over ``kb/``, the set every change
to the agent was measured on. ``--set heldout`` is 12 questions over another made-up company
(``heldout/kb/``), written after that work and never used to choose a change.

``--model scripted`` replaces the model with an instant scripted one (for the smoke test).
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult, LLMResult
from langchain_core.tools import BaseTool

from explicit_react import ExplicitReActAgent, Step
from explicit_react.loop import (
    STOPPED_ANSWERS as _STOPPED,
)  # the sentences a run ends with when it has no answer
from explicit_react.tools import KnowledgeBaseTool, calculator

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent / "results"
QUESTION_SETS = {
    "dev": (HERE / "questions.json", HERE / "kb"),
    "heldout": (HERE / "heldout" / "questions.json", HERE / "heldout" / "kb"),
}
"""Each set's questions file and the folder its knowledge base is read from."""
KB_FOLDER = QUESTION_SETS["dev"][1]

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(HERE))
from _common import HUB_REACT_PROMPT  # noqa: E402
from answers import contains, number_matches  # noqa: E402

CLASSIC_STOPPED = "Agent stopped due to iteration limit or time limit."


def fresh_context(model: Any) -> None:
    """Empty a llama.cpp model's context, so the next prompt is evaluated whole; others: nothing."""
    client = getattr(model, "client", None)
    reset = getattr(client, "reset", None)
    if callable(reset):
        reset()


# --- the question set and the check -------------------------------------------------------------


def load_questions(limit: int | None = None, question_set: str = "dev") -> list[dict[str, Any]]:
    """The questions of a set, in file order; the first ``limit`` of them if given."""
    path = QUESTION_SETS[question_set][0]
    questions: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return questions[:limit] if limit else questions


def is_correct(answer: str, expected: float | int | str) -> bool:
    """A numeric answer is right when a number in it equals ``expected`` (up to float noise, not to a
    percentage: 0.1% let "2019" pass for 2018); a text one when it contains it."""
    if isinstance(expected, int | float):
        return number_matches(answer, expected)
    return contains(answer, expected)


# --- tools, model, usage ------------------------------------------------------------------------


KNOWLEDGE_SETTINGS: dict[str, Any] = {"k": 3, "passage_chars": 220}
"""The knowledge search of every evaluation: one passage per paragraph, the best three returned."""


def make_tools(kb: Path = KB_FOLDER) -> list[BaseTool]:
    """The knowledge base over the files of ``kb`` and the calculator."""
    return [KnowledgeBaseTool.from_folder(kb, **KNOWLEDGE_SETTINGS), calculator]


class UsageCounter(BaseCallbackHandler):
    """Counts model calls and tokens (from ``usage_metadata``) for one run, whatever the framework,
    and keeps the text of the last reply (the Final Answer with its Thought; at a limit, the reply to the
    tool-free call)."""

    def __init__(self) -> None:
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cached_tokens = 0
        """Prompt tokens taken from the model's cache (``input_token_details["cache_read"]``)."""
        self.last_reply = ""

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        self.calls += 1
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                usage = getattr(message, "usage_metadata", None) or {}
                self.input_tokens += int(usage.get("input_tokens", 0))
                self.output_tokens += int(usage.get("output_tokens", 0))
                self.cached_tokens += int((usage.get("input_token_details") or {}).get("cache_read", 0))
                self.last_reply = generation.text

    def tokens(self) -> dict[str, int]:
        """The record's ``tokens``: prompt tokens (``input``, of them ``cached``) and ``output``."""
        return {"input": self.input_tokens, "output": self.output_tokens, "cached": self.cached_tokens}


def step_records(steps: Sequence[Step], observation_chars: int) -> list[dict[str, Any]]:
    """The record's ``trace`` of explicit_react's steps, each observation kept to ``observation_chars``."""
    return [
        {
            "log": s.log,
            "action": s.action,
            "input": s.action_input,
            "observation": s.observation[:observation_chars],
            "error": s.error,
        }
        for s in steps
    ]


class AnswerKeyModel(BaseChatModel):
    """An instant model for the smoke test: looks the question up, searches once, then answers."""

    answers: dict[str, str]

    @property
    def _llm_type(self) -> str:
        return "answer-key"

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any
    ) -> ChatResult:
        prompt = "\n".join(str(m.content) for m in messages)
        question = next(q for q in self.answers if q in prompt)
        if "Observation:" in prompt.split(question, 1)[1]:
            reply = f"Thought: I now know the final answer\nFinal Answer: {self.answers[question]}"
        else:
            reply = f"Thought: I should look this up.\nAction: knowledge_search\nAction Input: {question}"
        usage = {"input_tokens": len(prompt.split()), "output_tokens": len(reply.split())}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        message = AIMessage(content=reply, usage_metadata=usage)  # type: ignore[arg-type]
        return ChatResult(generations=[ChatGeneration(message=message)])


def make_model(
    name: str, max_tokens: int, n_ctx: int, questions: Sequence[dict[str, Any]], **options: Any
) -> Any:
    """The named model (``explicit_react.models.load_model``, with ``options``), or
    ``AnswerKeyModel`` for ``scripted``."""
    if name == "scripted":
        return AnswerKeyModel(answers={q["question"]: str(q["answer"]) for q in questions})
    from explicit_react.models import load_model

    return load_model(name, max_tokens=max_tokens, n_ctx=n_ctx, temperature=0.0, **options)


# --- the two frameworks -------------------------------------------------------------------------


def run_explicit(
    model: Any,
    question: str,
    max_iterations: int,
    kb: Path = KB_FOLDER,
    *,
    constrain_local: bool = True,
    tools: list[BaseTool] | None = None,
    observation_chars: int = 300,
    mode: str = "text",
    check_answer: bool = False,
    prompt: str | None = None,
) -> dict[str, Any]:
    """One question through ``ExplicitReActAgent`` (in ``mode``, with ``check_answer``, the system
    prompt ``prompt`` or the package's); the record's
    framework-specific fields. ``tools`` replaces the tools over ``kb``; each observation is kept to
    ``observation_chars``."""
    agent = ExplicitReActAgent(
        model,
        tools or make_tools(kb),
        max_iterations=max_iterations,
        constrain_local=constrain_local,
        mode=mode,  # type: ignore[arg-type]
        check_answer=check_answer,
        prompt=prompt,
    )
    usage = UsageCounter()
    result = agent.run(question, config={"callbacks": [usage]})
    return {
        "answer": result.answer,
        "stop_reason": result.stop_reason.value,
        "steps": len(result.steps),
        "parse_failures": sum(step.error == "parse_error" for step in result.steps),
        "answers_sent_back": sum(step.error == "answer_check" for step in result.steps),
        "loop_stopped": result.stop_reason.value == "loop_detected",
        "limit_reached": not result.success,
        "llm_calls": usage.calls,
        "tokens": usage.tokens(),
        "trace": step_records(result.steps, observation_chars),
        "last_reply": usage.last_reply,
    }


def run_classic(
    model: Any,
    question: str,
    max_iterations: int,
    kb: Path = KB_FOLDER,
    *,
    tools: list[BaseTool] | None = None,
    observation_chars: int = 300,
) -> dict[str, Any]:
    """One question through langchain_classic's ``create_react_agent`` + ``AgentExecutor``."""
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.prompts import PromptTemplate

    tools = tools or make_tools(kb)
    agent = create_react_agent(model, tools, PromptTemplate.from_template(HUB_REACT_PROMPT))
    executor = AgentExecutor(
        agent=agent,
        tools=tools,
        handle_parsing_errors=True,
        max_iterations=max_iterations,
        return_intermediate_steps=True,
    )
    usage = UsageCounter()
    output = executor.invoke({"input": question}, config={"callbacks": [usage]})
    steps = output["intermediate_steps"]
    answer = str(output["output"])
    return {
        "answer": answer,
        "stop_reason": "iteration_limit" if answer == CLASSIC_STOPPED else "final_answer",
        "steps": len(steps),
        "parse_failures": sum(action.tool == "_Exception" for action, _ in steps),
        "loop_stopped": False,  # the classic executor has no loop detection
        "limit_reached": answer == CLASSIC_STOPPED,
        "llm_calls": usage.calls,
        "tokens": usage.tokens(),
        "trace": [
            {
                "log": action.log,
                "action": action.tool,
                "input": action.tool_input,
                "observation": str(obs)[:observation_chars],
            }
            for action, obs in steps
        ],
    }


def run_explicit_unconstrained(
    model: Any, question: str, max_iterations: int, kb: Path = KB_FOLDER
) -> dict[str, Any]:
    """``run_explicit`` without the llama.cpp grammar (``constrain_local=False``), to measure what it adds."""
    return run_explicit(model, question, max_iterations, kb, constrain_local=False)


def run_explicit_answer_check(
    model: Any, question: str, max_iterations: int, kb: Path = KB_FOLDER
) -> dict[str, Any]:
    """``run_explicit`` with ``check_answer=True``, to measure what the answer check adds."""
    return run_explicit(model, question, max_iterations, kb, check_answer=True)


FRAMEWORKS: dict[str, Callable[[Any, str, int, Path], dict[str, Any]]] = {
    "explicit": run_explicit,
    "classic": run_classic,
    "explicit_unconstrained": run_explicit_unconstrained,
    "explicit_answer_check": run_explicit_answer_check,
}
BOTH = ("explicit", "classic")


# --- the run ------------------------------------------------------------------------------------


# What each framework says when it ends without an answer.
_NO_ANSWER = {CLASSIC_STOPPED, *_STOPPED.values()}

FAILURE_KINDS = {
    "no_answer": "the run ended without an answer",
    "never_looked_up": "answered without one successful knowledge_search (a guessed fact)",
    "wrong_after_lookup": "looked facts up, then picked the wrong ones or computed wrongly",
}


def diagnose(record: dict[str, Any]) -> str | None:
    """Why a wrong answer is wrong, as one of ``FAILURE_KINDS`` (``None`` for a right answer)."""
    if record["correct"]:
        return None
    if record["answer"].strip() in _NO_ANSWER:
        return "no_answer"
    looked_up = any(
        step["action"] == "knowledge_search"
        and not str(step["observation"]).startswith(("Error", "No passages"))
        for step in record["trace"]
    )
    return "wrong_after_lookup" if looked_up else "never_looked_up"


def summarise(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Success rate, parse failures, loops stopped, limits reached, mean steps, seconds and tokens."""
    n = len(records)
    if not n:
        return {"questions": 0}
    return {
        "questions": n,
        "correct": sum(r["correct"] for r in records),
        "success_rate": round(sum(r["correct"] for r in records) / n, 3),
        "parse_failures": sum(r["parse_failures"] for r in records),
        "questions_with_parse_failures": sum(r["parse_failures"] > 0 for r in records),
        "loops_stopped": sum(r["loop_stopped"] for r in records),
        "limit_reached": sum(r["limit_reached"] for r in records),
        "mean_steps": round(sum(r["steps"] for r in records) / n, 2),
        "mean_llm_calls": round(sum(r["llm_calls"] for r in records) / n, 2),
        "mean_seconds": round(sum(r["seconds"] for r in records) / n, 1),
        "mean_tokens": round(sum(r["tokens"]["input"] + r["tokens"]["output"] for r in records) / n),
        "mean_output_tokens": round(sum(r["tokens"]["output"] for r in records) / n, 1),
        "failures": {kind: sum(diagnose(r) == kind for r in records) for kind in FAILURE_KINDS},
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run every selected question through every selected framework; write the JSON after each one."""
    questions = load_questions(args.limit, args.set)
    kb = QUESTION_SETS[args.set][1]
    frameworks = list(BOTH) if args.framework == "both" else args.framework.split(",")
    started = time.perf_counter()
    model = make_model(args.model, args.max_tokens, args.n_ctx, questions)
    report: dict[str, Any] = {
        "model": args.model,
        "settings": {
            "max_iterations": args.max_iterations,
            "max_tokens": args.max_tokens,
            "n_ctx": args.n_ctx,
            "temperature": 0.0,
            "frameworks": frameworks,
            "question_set": args.set,
            "questions": len(questions),
            "fresh_context": not args.reuse_context,
        },
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "model_load_seconds": round(time.perf_counter() - started, 2),
        "summary": {},
        "records": {name: [] for name in frameworks},
    }
    for question in questions:
        for name in frameworks:  # interleaved: both frameworks see the same machine load
            if not args.reuse_context:
                fresh_context(model)
            began = time.perf_counter()
            record = FRAMEWORKS[name](model, question["question"], args.max_iterations, kb)
            record = {
                "id": question["id"],
                "question": question["question"],
                "expected": question["answer"],
                "correct": is_correct(record["answer"], question["answer"]),
                "seconds": round(time.perf_counter() - began, 2),
                **record,
            }
            report["records"][name].append(record)
            report["summary"] = {fw: summarise(recs) for fw, recs in report["records"].items()}
            if args.out:
                write_json(args.out, report)
            mark = "ok " if record["correct"] else "BAD"
            print(
                f"{question['id']} {name:8} {mark} {record['seconds']:6.1f}s steps={record['steps']} "
                f"stop={record['stop_reason']} answer={record['answer'][:80]!r}",
                flush=True,
            )
    return report


def write_json(path: Path, report: dict[str, Any]) -> None:
    """Write ``report`` atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(".json.partial")
    temp.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    temp.replace(path)


def print_summary(report: dict[str, Any]) -> None:
    """The summary table (Markdown)."""
    keys = [
        "correct",
        "success_rate",
        "parse_failures",
        "loops_stopped",
        "limit_reached",
        "mean_steps",
        "mean_llm_calls",
        "mean_seconds",
        "mean_tokens",
    ]
    names = list(report["summary"])
    print(f"\nmodel {report['model']}, {report['settings']['questions']} questions")
    print("| metric | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for key in keys:
        print(f"| {key} | " + " | ".join(str(report["summary"][n].get(key, "")) for n in names) + " |")
    for kind in FAILURE_KINDS:
        counts = (str(report["summary"][n].get("failures", {}).get(kind, "")) for n in names)
        print(f"| wrong: {kind} | " + " | ".join(counts) + " |")


def rescore(path: Path) -> dict[str, Any]:
    """Check the answers in a results file again (after a change to ``is_correct``) and rewrite it."""
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for records in report["records"].values():
        for record in records:
            record["correct"] = is_correct(record["answer"], record["expected"])
    report["summary"] = {fw: summarise(recs) for fw, recs in report["records"].items()}
    write_json(path, report)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local:qwen", help="a load_model name, or 'scripted'")
    parser.add_argument(
        "--framework",
        default="both",
        help=f"'both' ({' and '.join(BOTH)}) or a comma-separated list of: {', '.join(FRAMEWORKS)}",
    )
    parser.add_argument(
        "--set", choices=sorted(QUESTION_SETS), default="dev", help="the question set (default: dev)"
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--max-iterations", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument(
        "--reuse-context",
        action="store_true",
        help="let a question's first prompt reuse the llama.cpp context left by the one before",
    )
    parser.add_argument("--out", type=Path, default=None, help="default: bench/results/eval_<model>.json")
    parser.add_argument("--rescore", type=Path, default=None, help="re-check the answers in a results file")
    args = parser.parse_args(argv)
    unknown = set(args.framework.split(",")) - {"both", *FRAMEWORKS}
    if unknown:
        parser.error(f"unknown framework(s): {', '.join(sorted(unknown))}")
    if args.rescore:
        print_summary(rescore(args.rescore))
        return 0
    if args.out is None:
        suffix = "" if args.set == "dev" else f"_{args.set}"
        args.out = RESULTS / f"eval_{re.sub(r'[^a-z0-9]+', '_', args.model.lower()).strip('_')}{suffix}.json"
    report = run(args)
    print_summary(report)
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
