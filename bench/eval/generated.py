"""Answer generated questions (worlds.py) with one model through three systems, and score them.

Every system gets the same model object, the same tools (``knowledge_search`` over the seed's
generated files, ``calculator``) and the same step limit, question by question, interleaved; each
question starts from an empty model context. With ``--warm`` each system has its own model object
of the same file and settings, which keeps its prompt cache from one question to the next, as a
service or the CLI with its prompt state does: the system prompt is read once, not per question.

- ``explicit``: explicit_react's ``ExplicitReActAgent`` with its defaults;
- ``classic``: LangChain's ``create_react_agent`` + ``AgentExecutor`` with the hub prompt;
- ``minimal``: the ~60-line baseline loop of ``bench/minimal_react.py`` (own short prompt, no guardrails);
- ``two_phase`` and ``tool_calling``: ``ExplicitReActAgent`` in those modes (native function calling;
  real models only: the ideal model's replies are ReAct text). Not run unless asked for (``--systems``).

Per question it records the answer, whether it is right (``worlds.check``), why not
(``failures.classify``), prompt and generated tokens, seconds, model calls and tool calls, with
the ideal plan's number of calls beside them; the summary gives each per system and per kind.

The protocol (docs/benchmarks.md): ``--seeds tuning`` (``worlds.TUNING_SEEDS``) is the only place
to choose and tune; a report uses ``--fresh K``, which draws K seeds never used before (from the
clock) and records them in ``bench/results/used_seeds.json`` before the run starts, so a seed that was
looked at is never fresh again. The results file holds the command that reproduces the run
(with the drawn seeds written out).

    python bench/eval/generated.py --model local:qwen --seeds tuning --per-kind 3
    python bench/eval/generated.py --model local:qwen --fresh 1 --per-kind 3
    python bench/eval/generated.py --model ideal --seeds tuning --per-kind 50   # the scripted ideal model

``--model ideal`` answers every question by its minimal plan (a ``ScriptedChatModel`` per question
and system): a check of the machinery, and of each system's handling of a strong model.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool

from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import KnowledgeBaseTool, calculator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import run as hand_written  # noqa: E402  (the hand-written sets' runner: systems, usage, model loading)
from decompose_proto import run_record as run_decompose_proto  # noqa: E402
from failures import FAILURES, classify  # noqa: E402
from minimal_react import run_minimal  # noqa: E402
from worlds import KINDS, TUNING_SEEDS, Question, World, check, ideal_replies, sample  # noqa: E402

RESULTS = HERE.parent / "results"
USED_SEEDS = RESULTS / "used_seeds.json"
OBSERVATION_CHARS = 2000  # whole search results: the failure classes read them
WRITE_EVERY = 5.0
"""Seconds between two writes of the results file: a real model's every answer is kept at once, a
scripted model's thousands of answers do not rewrite a growing file each time."""
_NOT_RUN = frozenset({"parse_error", "repeated_call", "unsourced_numbers", "unknown_tool", "tool_denied"})


# --- seeds ----------------------------------------------------------------------------------------


def used_seeds(path: Path = USED_SEEDS) -> list[dict[str, Any]]:
    """Every fresh seed drawn so far, with when, by which command and for which results file."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def draw_fresh_seeds(count: int, command: str, out: Path, path: Path = USED_SEEDS) -> list[int]:
    """``count`` seeds never used before (not tuning seeds, not drawn before), from the clock
    (``YYMMDDHHMM`` and up), recorded in ``path`` at once: a drawn seed is used, run or not."""
    taken = {entry["seed"] for entry in used_seeds(path)} | set(TUNING_SEEDS)
    now = datetime.now(UTC)
    seed = int(now.strftime("%y%m%d%H%M"))
    drawn: list[int] = []
    while len(drawn) < count:
        if seed not in taken:
            drawn.append(seed)
        seed += 1
    record = [
        {"seed": s, "drawn_at": now.isoformat(timespec="seconds"), "command": command, "out": _relative(out)}
        for s in drawn
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(used_seeds(path) + record, indent=1) + "\n", encoding="utf-8")
    return drawn


def _relative(path: Path) -> str:
    """``path`` from the repository's root, as a command run there names it."""
    return os.path.relpath(path.resolve(), HERE.parents[1])


def parse_seeds(text: str) -> list[int]:
    """``tuning`` or a comma-separated list of seeds."""
    return list(TUNING_SEEDS) if text == "tuning" else [int(s) for s in text.split(",") if s.strip()]


# --- the systems ----------------------------------------------------------------------------------


def make_tools(world: World) -> list[BaseTool]:
    """Knowledge search over the world's files (the hand-written eval's settings) and the calculator."""
    return [
        KnowledgeBaseTool.from_documents(world.documents(), **hand_written.KNOWLEDGE_SETTINGS),
        calculator,
    ]


def run_explicit(
    model: Any,
    tools: list[BaseTool],
    question: str,
    max_iterations: int,
    *,
    mode: str = "text",
    check_answer: bool = False,
    prompt: str | None = None,
) -> dict[str, Any]:
    """One question through ``ExplicitReActAgent`` in ``mode`` (``two_phase``: a Thought call, then a
    native call, each turn; ``tool_calling``: one native call each turn)."""
    return hand_written.run_explicit(
        model,
        question,
        max_iterations,
        tools=tools,
        observation_chars=OBSERVATION_CHARS,
        mode=mode,
        check_answer=check_answer,
        prompt=prompt,
    )


def run_classic(model: Any, tools: list[BaseTool], question: str, max_iterations: int) -> dict[str, Any]:
    """One question through langchain_classic's ``create_react_agent`` + ``AgentExecutor`` (hub prompt)."""
    return hand_written.run_classic(
        model, question, max_iterations, tools=tools, observation_chars=OBSERVATION_CHARS
    )


def run_minimal_loop(model: Any, tools: list[BaseTool], question: str, max_iterations: int) -> dict[str, Any]:
    """One question through the minimal baseline loop (``bench/minimal_react.py``)."""
    usage = hand_written.UsageCounter()
    result = run_minimal(model, tools, question, max_iterations, config={"callbacks": [usage]})
    return {
        "answer": result["answer"],
        "stop_reason": result["stop_reason"],
        "steps": len(result["steps"]),
        "limit_reached": result["stop_reason"] == "max_iterations",
        "llm_calls": usage.calls,
        "tokens": usage.tokens(),
        "trace": [
            {**step, "observation": step["observation"][:OBSERVATION_CHARS]} for step in result["steps"]
        ],
    }


SYSTEMS: dict[str, Callable[..., dict[str, Any]]] = {
    "explicit": run_explicit,
    # beside ``explicit`` it measures the answer check on the same questions, interleaved
    "explicit_answer_check": partial(run_explicit, check_answer=True),
    "minimal": run_minimal_loop,
    "classic": run_classic,
    "two_phase": partial(run_explicit, mode="two_phase"),
    "tool_calling": partial(run_explicit, mode="tool_calling"),
    "decompose_proto": run_decompose_proto,
    # a tried system prompt with four worked examples instead of one (bench/eval/prompt_examples.txt)
    "explicit_examples": partial(
        run_explicit, prompt=(HERE / "prompt_examples.txt").read_text(encoding="utf-8")
    ),
}
DEFAULT_SYSTEMS = ("explicit", "minimal", "classic")
NATIVE_SYSTEMS = frozenset({"two_phase", "tool_calling"})
"""Systems that need a model with native function calling (not the ideal scripted model)."""
CHECKABLE_SYSTEMS = frozenset({"explicit", "two_phase", "tool_calling"})
"""Systems that ``--answer-check`` turns ``check_answer`` on for (explicit_react's agent)."""


def tool_calls(record: dict[str, Any], tools: Sequence[BaseTool]) -> int:
    """How many times a real tool ran (not parse errors, refusals, repeats or made-up tools)."""
    names = {tool.name for tool in tools}
    return sum(step["action"] in names and step.get("error") not in _NOT_RUN for step in record["trace"])


# --- the run --------------------------------------------------------------------------------------


def summarise(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Correct answers, per kind and overall; the failure classes; the mean cost per question."""
    n = len(records)
    if not n:
        return {"questions": 0}

    def mean(values: Sequence[float], digits: int = 1) -> float:
        return round(sum(values) / len(values), digits)

    per_kind = {}
    for kind in KINDS:
        of_kind = [r for r in records if r["kind"] == kind]
        if of_kind:
            per_kind[kind] = {"correct": sum(r["correct"] for r in of_kind), "questions": len(of_kind)}
    return {
        "questions": n,
        "correct": sum(r["correct"] for r in records),
        "success_rate": round(sum(r["correct"] for r in records) / n, 3),
        "per_kind": per_kind,
        "failures": {name: sum(r["failure"] == name for r in records) for name in FAILURES},
        "limit_reached": sum(r["limit_reached"] for r in records),
        "mean_prompt_tokens": mean([r["tokens"]["input"] for r in records], 0),
        "mean_generated_tokens": mean([r["tokens"]["output"] for r in records]),
        "mean_prompt_tokens_read": mean(
            [r["tokens"]["input"] - r["tokens"].get("cached", 0) for r in records], 0
        ),
        "mean_seconds": mean([r["seconds"] for r in records]),
        "mean_llm_calls": mean([r["llm_calls"] for r in records], 2),
        "mean_tool_calls": mean([r["tool_calls"] for r in records], 2),
        "mean_minimal_tool_calls": mean([r["minimal_tool_calls"] for r in records], 2),
        "answers_sent_back": sum(r.get("answers_sent_back", 0) for r in records),
    }


def run(args: argparse.Namespace, seeds: Sequence[int], command: str) -> dict[str, Any]:
    """Every sampled question of every seed through every system; the JSON rewritten after each."""
    systems = args.systems.split(",")
    started = time.perf_counter()
    options: dict[str, Any] = {"n_threads": args.threads} if args.threads else {}
    if args.draft_tokens:
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        lookup = LlamaPromptLookupDecoding(max_ngram_size=args.draft_ngram, num_pred_tokens=args.draft_tokens)
        options["model_kwargs"] = {"draft_model": lookup}
    # One model object for every system; with --warm, one per system (llama.cpp maps the weights
    # once, so only the context is per object), each keeping its prompt cache between questions.
    models: dict[str, Any] = {}
    if args.model != "ideal":
        for name in systems if args.warm else systems[:1]:
            models[name] = hand_written.make_model(args.model, args.max_tokens, args.n_ctx, [], **options)
    report: dict[str, Any] = {
        "command": command,
        "commit": _commit(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": args.model,
        "seeds": list(seeds),
        "tuning_seeds": list(TUNING_SEEDS),
        "fresh": bool(args.fresh),
        "settings": {
            "per_kind": args.per_kind,
            "kinds": args.kinds,
            "max_iterations": args.max_iterations,
            "max_tokens": args.max_tokens,
            "n_ctx": args.n_ctx,
            "threads": args.threads or os.cpu_count(),
            "temperature": 0.0,
            "systems": systems,
            "knowledge": hand_written.KNOWLEDGE_SETTINGS,
            "fresh_context": not args.warm,
            "brief": args.brief,
            "answer_check": args.answer_check,
            "draft_tokens": args.draft_tokens,
            "draft_ngram": args.draft_ngram if args.draft_tokens else None,
        },
        "model_load_seconds": round(time.perf_counter() - started, 2),
        "failure_classes": FAILURES,
        "summary": {},
        "records": {name: [] for name in systems},
    }
    written = 0.0
    for seed in seeds:
        world = World.generate(seed)
        tools = make_tools(world)
        for question in chosen(world, args.per_kind, seed, args.kinds):
            for name in systems:  # interleaved: every system sees the same machine load
                if not models:
                    model = ScriptedChatModel(ideal_replies(question))
                elif args.warm:
                    model = models[name]
                else:
                    model = models[systems[0]]
                    hand_written.fresh_context(model)
                began = time.perf_counter()
                extra = {"check_answer": True} if args.answer_check and name in CHECKABLE_SYSTEMS else {}
                record = SYSTEMS[name](model, tools, question.question, args.max_iterations, **extra)
                record = {
                    "id": question.id,
                    "seed": seed,
                    "kind": question.kind,
                    "op": question.op,
                    "question": question.question,
                    "expected": question.answer,
                    "correct": check(question, record["answer"]),
                    "seconds": round(time.perf_counter() - began, 2),
                    "tool_calls": tool_calls(record, tools),
                    "minimal_tool_calls": len(question.plan),
                    **record,
                }
                record["failure"] = classify(question, record, world)
                if args.brief:  # the steps were needed for the failure class only
                    record.pop("trace", None)
                    record.pop("last_reply", None)
                report["records"][name].append(record)
                if time.perf_counter() - written > WRITE_EVERY:
                    _write(args.out, report)
                    written = time.perf_counter()
                mark = "ok " if record["correct"] else "BAD"
                print(
                    f"{question.id:24} {name:8} {mark} {record['seconds']:6.1f}s calls={record['llm_calls']} "
                    f"tools={record['tool_calls']}/{record['minimal_tool_calls']} "
                    f"{record['failure'] or '':15} answer={record['answer'][:70]!r}",
                    flush=True,
                )
    _write(args.out, report)
    return report


def rescored(record: dict[str, Any], world: World) -> dict[str, Any]:
    """``record`` with its correctness and failure class worked out again by the current scorer."""
    question = next(q for q in world.questions if q.id == record["id"])
    record = {**record, "correct": check(question, record["answer"])}
    if "trace" in record:  # a --brief record keeps the failure class it was given
        record["failure"] = classify(question, record, world)
    return record


def merged(paths: Sequence[Path]) -> dict[str, Any]:
    """The results files ``paths`` as one report: records joined by system (a later file's record of
    the same question replaces an earlier one), each scored again, so runs made before a scorer fix
    and runs made in pieces read alike. The first file's command is kept, with every file named."""
    reports = [json.loads(path.read_text(encoding="utf-8")) for path in paths]
    worlds: dict[int, World] = {}
    by_system: dict[str, dict[str, dict[str, Any]]] = {}
    for report in reports:
        for system, records in report["records"].items():
            for record in records:
                world = worlds.setdefault(record["seed"], World.generate(record["seed"]))
                by_system.setdefault(system, {})[record["id"]] = rescored(record, world)
    first = reports[0]
    return {
        **first,
        "seeds": sorted({seed for report in reports for seed in report["seeds"]}),
        "files": [str(path) for path in paths],
        "records": {system: list(records.values()) for system, records in by_system.items()},
    }


def chosen(world: World, per_kind: int, seed: int, kinds: str | None) -> list[Question]:
    """The sampled questions of ``world``, only those of ``kinds`` (comma-separated) when given: the
    same questions a full sample has, so a run on a few kinds compares with a run on all of them."""
    questions = sample(world.questions, per_kind, seed)
    if kinds is None:
        return questions
    wanted = set(kinds.split(","))
    return [q for q in questions if q.kind in wanted]


def _write(path: Path, report: dict[str, Any]) -> None:
    report["summary"] = {system: summarise(records) for system, records in report["records"].items()}
    hand_written.write_json(path, report)


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, cwd=HERE
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def print_summary(report: dict[str, Any]) -> None:
    """The tables (Markdown): correct per kind, failure classes, cost per question."""
    summary = report["summary"]
    names = list(summary)
    header = "| | " + " | ".join(names) + " |\n|---|" + "---|" * len(names)
    print(f"\nmodel {report['model']}, seeds {report['seeds']}, command: {report['command']}")
    if len(report.get("files", ())) > 1:
        print("merged from: " + ", ".join(report["files"]))
    print()
    print(header)
    for kind in KINDS:
        cells = (summary[n]["per_kind"].get(kind, {}) for n in names)
        print(
            f"| {kind} | "
            + " | ".join(f"{c.get('correct', '')}/{c.get('questions', '')}" for c in cells)
            + " |"
        )
    print(
        "| **all** | "
        + " | ".join(f"**{summary[n]['correct']}/{summary[n]['questions']}**" for n in names)
        + " |"
    )
    print("\n" + header)
    for failure in FAILURES:
        print(
            f"| wrong: {failure} | " + " | ".join(str(summary[n]["failures"][failure]) for n in names) + " |"
        )
    print("\n" + header)
    for key in (
        "mean_prompt_tokens",
        "mean_generated_tokens",
        "mean_seconds",
        "mean_llm_calls",
        "mean_tool_calls",
        "mean_minimal_tool_calls",
        "limit_reached",
        "answers_sent_back",
    ):
        print(f"| {key} | " + " | ".join(str(summary[n][key]) for n in names) + " |")


def sign_test(won: int, lost: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven between ``won`` and
    ``lost`` if either system were as likely as the other to be the one right on a question where
    only one is (the questions both got right or both got wrong say nothing about which is better)."""
    n, k = won + lost, min(won, lost)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired(records: dict[str, list[dict[str, Any]]], first: str) -> list[dict[str, Any]]:
    """``first`` against each other system on the questions both answered: how many both got right,
    only ``first``, only the other, neither, and the sign test's p on the questions only one got right."""
    right = {system: {r["id"]: bool(r["correct"]) for r in recs} for system, recs in records.items()}
    rows = []
    for other in right:
        if other == first:
            continue
        shared = right[first].keys() & right[other].keys()
        pairs = [(right[first][q], right[other][q]) for q in shared]
        won, lost = pairs.count((True, False)), pairs.count((False, True))
        rows.append(
            {
                "against": other,
                "questions": len(pairs),
                "both_right": pairs.count((True, True)),
                "won": won,
                "lost": lost,
                "both_wrong": pairs.count((False, False)),
                "sign_test_p": round(sign_test(won, lost), 3),
            }
        )
    return rows


def print_paired(first: str, rows: Sequence[dict[str, Any]]) -> None:
    """The paired comparison as a Markdown table."""
    print(
        f"\n| {first} against | questions | both right | only {first} | only the other | both wrong "
        "| sign test p |\n|---|---|---|---|---|---|---|"
    )
    for row in rows:
        print(
            f"| {row['against']} | {row['questions']} | {row['both_right']} | {row['won']} | {row['lost']} "
            f"| {row['both_wrong']} | {row['sign_test_p']} |"
        )


def show(paths: Sequence[Path], systems: str | None) -> int:
    """``--show``: the tables of the results files ``paths`` merged, on the questions every shown
    system answered, and the first system paired with each other one."""
    report = merged(paths)
    records = report["records"]
    if systems:
        if missing := [s for s in systems.split(",") if s not in records]:
            print(f"no records of system(s) {', '.join(missing)} in these files", file=sys.stderr)
            return 2
        records = {system: records[system] for system in systems.split(",")}
    done = set.intersection(*({r["id"] for r in of_system} for of_system in records.values()))
    shared = {system: [r for r in recs if r["id"] in done] for system, recs in records.items()}
    report["summary"] = {system: summarise(recs) for system, recs in shared.items()}
    print(f"{len(done)} questions answered by every system (an unfinished run's last ones are left out)")
    print_summary(report)
    first = next(iter(shared))
    if len(shared) > 1:
        print_paired(first, paired(shared, first))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local:qwen", help="a load_model name, or 'ideal'")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--seeds", help="'tuning' or a comma-separated list (e.g. to repeat a report)")
    which.add_argument("--fresh", type=int, help="draw this many never-used seeds and record them")
    which.add_argument(
        "--show",
        type=Path,
        nargs="+",
        help="print the tables of one or more results files (merged by system; each answer scored again "
        "with the current scorer), on the questions every system answered",
    )
    parser.add_argument("--per-kind", type=int, default=3, help="questions of each kind per seed")
    parser.add_argument(
        "--systems",
        default=None,
        help=f"a comma-separated list of: {', '.join(SYSTEMS)} (default: {','.join(DEFAULT_SYSTEMS)}); "
        "with --show, the systems to show (default: every system in the files)",
    )
    parser.add_argument("--max-iterations", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="llama.cpp threads (default: all cores; 1 on a busy machine)",
    )
    parser.add_argument(
        "--kinds",
        default=None,
        help=f"only these question kinds, comma-separated (of: {', '.join(KINDS)}); the same questions "
        "as the full sample",
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="each system has its own model object, whose prompt cache is kept from one question to the "
        "next (the system prompt is read once, as in a service or the CLI with its prompt state); "
        "default: every question starts from an empty context",
    )
    parser.add_argument("--brief", action="store_true", help="leave each record's steps out of the JSON")
    parser.add_argument(
        "--answer-check",
        action="store_true",
        help="explicit_react's systems with check_answer=True (the system explicit_answer_check has it always)",
    )
    parser.add_argument(
        "--draft-tokens",
        type=int,
        default=0,
        help="a local model drafts up to this many reply tokens by prompt lookup and checks them in one "
        "batch (llama_cpp's LlamaPromptLookupDecoding); 0: no drafts",
    )
    parser.add_argument(
        "--draft-ngram", type=int, default=2, help="with --draft-tokens: the longest n-gram looked up"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="default: bench/results/generated_<model>_<seeds>.json"
    )
    args = parser.parse_args(argv)
    if args.show:
        return show(args.show, args.systems)
    args.systems = args.systems or ",".join(DEFAULT_SYSTEMS)
    if unknown := set(args.systems.split(",")) - set(SYSTEMS):
        parser.error(f"unknown system(s): {', '.join(sorted(unknown))}")
    if args.kinds and (unknown := set(args.kinds.split(",")) - set(KINDS)):
        parser.error(f"unknown kind(s): {', '.join(sorted(unknown))}")
    if args.model == "ideal" and (native := NATIVE_SYSTEMS & set(args.systems.split(","))):
        parser.error(f"the ideal model writes ReAct text; {', '.join(sorted(native))} need(s) a real model")
    model_slug = re.sub(r"[^a-z0-9]+", "_", args.model.lower()).strip("_")
    stamp = datetime.now(UTC).strftime("%Y%m%d_%H%M")
    if args.out is None:
        label = (
            "fresh_" + stamp
            if args.fresh
            else ("tuning" if args.seeds == "tuning" else "seeds_" + args.seeds.replace(",", "_"))
        )
        checked = "_answer_check" if args.answer_check else ""
        args.out = RESULTS / f"generated_{model_slug}_{label}{checked}.json"
    options = (
        f"--model {args.model} --per-kind {args.per_kind} --systems {args.systems} "
        f"--max-iterations {args.max_iterations} --max-tokens {args.max_tokens} --n-ctx {args.n_ctx}"
        + (f" --threads {args.threads}" if args.threads else "")
        + (f" --kinds {args.kinds}" if args.kinds else "")
        + (" --warm" if args.warm else "")
        + (" --brief" if args.brief else "")
        + (" --answer-check" if args.answer_check else "")
        + (
            f" --draft-tokens {args.draft_tokens} --draft-ngram {args.draft_ngram}"
            if args.draft_tokens
            else ""
        )
    )
    if args.fresh:
        seeds = draw_fresh_seeds(
            args.fresh, f"python bench/eval/generated.py --fresh {args.fresh} {options}", args.out
        )
    else:
        seeds = parse_seeds(args.seeds)
    command = (
        f"python bench/eval/generated.py --seeds {','.join(map(str, seeds))} {options}"
        f" --out {shlex.quote(_relative(args.out))}"
    )
    report = run(args, seeds, command)
    print_summary(report)
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
