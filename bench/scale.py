"""Many questions on one machine: ``abatch`` in one process against ``answer_on_ray`` with two workers.

The questions, model and tool are ``concurrency.py``'s: the model waits ``--delay`` seconds per call
(``asyncio.sleep``, like a remote API) and each question costs two model calls and one tool call.
Each row answers the same ``--questions`` with the same number of runs in flight in total:

- ``abatch``: ``ExplicitReActAgent.abatch`` in this process (output dicts), ``max_concurrency`` = total;
- ``aanswer_all``: the same through ``explicit_react.scale.aanswer_all`` (``AgentResult`` records,
  failures kept), the code each Ray worker runs;
- ``answer_on_ray``: two Ray actors (one per CPU), each with half the total in flight; the time
  includes starting the actors (each builds its agent) and is also shown without that fixed cost,
  measured as the time of a call with one question per worker.

Ray's own start (``ray.init`` on this machine) is measured once and reported apart, and so is
what ``examples/http_service.py`` pays per request before the run starts: building an agent
(budgets and allowlist are constructor arguments) around a shared model and two tools. Ratios are
within one run, the rows interleaved; the machine's other load shows in the spread of the samples.

    python bench/scale.py [--questions 1000] [--delay 0.05] [--levels 16,64] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import math
import os
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, median, table, write_json
from concurrency import QuestionKeyedModel, async_lookup, check, questions

from explicit_react import ExplicitReActAgent
from explicit_react.scale import aanswer_all, answer_on_ray


def build_agent(delay: float) -> ExplicitReActAgent:
    """The agent factory: each Ray worker calls it, so the model and tool are made on the worker."""
    return ExplicitReActAgent(QuestionKeyedModel(delay=delay), [async_lookup], max_iterations=3)


Runner = Callable[[list[str], int], list[str]]
"""``runner(questions, total_in_flight) -> answers``."""


def plain_abatch(delay: float) -> Runner:
    agent = build_agent(delay)

    def run(qs: list[str], in_flight: int) -> list[str]:
        outputs = asyncio.run(agent.abatch(qs, config={"max_concurrency": in_flight}))  # type: ignore[arg-type]
        return [o["output"] for o in outputs]

    return run


def records_in_process(delay: float) -> Runner:
    agent = build_agent(delay)

    def run(qs: list[str], in_flight: int) -> list[str]:
        return [r["answer"] for r in asyncio.run(aanswer_all(agent, qs, concurrency=in_flight))]

    return run


def on_ray(delay: float, workers: int, chunk_size: int | None = None) -> Runner:
    factory = functools.partial(build_agent, delay)

    def run(qs: list[str], in_flight: int) -> list[str]:
        per_worker = max(1, in_flight // workers)
        records = answer_on_ray(qs, factory, workers=workers, concurrency=per_worker, chunk_size=chunk_size)
        return [r["answer"] for r in records]

    return run


def agent_build_microseconds(n: int = 2000) -> float:
    """Microseconds to build an ``ExplicitReActAgent`` with a budget and an allowlist (median of 5)."""
    from explicit_react.tools import WebSearchTool, calculator

    model, tools = QuestionKeyedModel(delay=0.0), [calculator, WebSearchTool()]

    def build() -> None:
        ExplicitReActAgent(model, tools, max_iterations=3, max_seconds=20, allowed_tools=["calculator"])

    build()
    return median([timeit.timeit(build, number=n) / n * 1e6 for _ in range(5)])


def timed(name: str, runner: Runner, n: int, in_flight: int) -> float:
    began = time.perf_counter()
    answers = runner(questions(n), in_flight)
    seconds = time.perf_counter() - began
    check(name, answers, n)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the model waits per call")
    parser.add_argument("--levels", default="16,64", help="runs in flight in total, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="Ray actors (this machine has 2 CPUs)")
    parser.add_argument("--quick", action="store_true", help="40 questions, 5 ms, level 8, once")
    parser.add_argument("--out", type=Path, default=RESULTS / "scale.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.questions, args.delay, args.levels, args.repeats = 40, 0.005, "8", 1
    levels = [int(level) for level in args.levels.split(",")]

    import ray

    load_before = os.getloadavg()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    began = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
    init_seconds = time.perf_counter() - began

    runners: dict[str, Runner] = {
        "abatch, one process": plain_abatch(args.delay),
        "aanswer_all, one process": records_in_process(args.delay),
        f"answer_on_ray, {args.workers} workers": on_ray(args.delay, args.workers),
    }
    ray_name = f"answer_on_ray, {args.workers} workers"
    for name, runner in runners.items():  # warm-up
        timed(name, runner, 10, 8)
    one_each = on_ray(args.delay, args.workers, chunk_size=1)
    startup = [timed(ray_name, one_each, args.workers, args.workers) for _ in range(max(1, args.repeats))]
    fixed = median(startup)

    rows = []
    for in_flight in levels:
        samples: dict[str, list[float]] = {name: [] for name in runners}
        for _ in range(args.repeats):  # interleaved
            for name, runner in runners.items():
                samples[name].append(timed(name, runner, args.questions, in_flight))
        base = median(samples["abatch, one process"])
        ideal = math.ceil(args.questions / in_flight) * 2 * args.delay
        for name, times in samples.items():
            seconds = median(times)
            steady = seconds - fixed if name == ray_name else seconds
            rows.append(
                {
                    "runner": name,
                    "in_flight": in_flight,
                    "ideal_seconds": ideal,
                    "median_seconds": seconds,
                    "samples": times,
                    "questions_per_second": args.questions / seconds,
                    "throughput_vs_abatch": base / seconds,
                    "without_actor_start_seconds": steady,
                    "throughput_vs_abatch_without_actor_start": base / steady,
                }
            )
    ray.shutdown()
    build_us = agent_build_microseconds(200 if args.quick else 2000)

    print(
        f"{args.questions} questions, 2 model calls each, {args.delay * 1000:.0f} ms per call, median of "
        f"{args.repeats}; ray.init took {init_seconds:.1f} s, starting {args.workers} actors "
        f"(a call with one question each) {fixed:.1f} s; building an agent per request {build_us:.0f} µs\n"
    )
    print(
        table(
            [
                "runner",
                "in flight",
                "ideal (s)",
                "measured (s)",
                "questions/s",
                "vs abatch",
                "vs abatch, actors up",
            ],
            [
                [
                    r["runner"],
                    r["in_flight"],
                    f"{r['ideal_seconds']:.2f}",
                    f"{r['median_seconds']:.2f}",
                    f"{r['questions_per_second']:.0f}",
                    f"{r['throughput_vs_abatch']:.2f}x",
                    f"{r['throughput_vs_abatch_without_actor_start']:.2f}x",
                ]
                for r in rows
            ],
        )
    )
    summary = {
        "questions": args.questions,
        "delay": args.delay,
        "repeats": args.repeats,
        "workers": args.workers,
        "ray_init_seconds": init_seconds,
        "actor_start_seconds": fixed,
        "actor_start_samples": startup,
        "agent_build_microseconds": build_us,
        "ray": ray.__version__,
        "load_average_before_after": [load_before, os.getloadavg()],
    }
    write_json(args.out, {"summary": summary, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
