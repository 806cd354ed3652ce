"""Why a millisecond of CPU per question costs more than a millisecond at concurrency 50.

No framework here: 200 jobs shaped like ``concurrency.py``'s questions (a burst of CPU, a 50 ms
wait, a burst, a 50 ms wait, a burst), 50 at a time under an ``asyncio.Semaphore`` as ``abatch``
runs them. Each burst is split into ``turns`` pieces with ``await asyncio.sleep(0)`` between them,
the way LangChain's async plumbing hands the event loop back inside every call (an
``asyncio.gather`` around the model's ``_agenerate``, a task for each shielded callback, a task for
a tool's coroutine).

With one turn per burst, the 50 runs that start together spread out: each waits once for the ones
ahead of it, then runs its bursts between the others' waits. With several turns, every run that is
ready gets one piece per pass of the loop, so the 50 replies that arrive together are all finished
only when all their CPU is done, and they wait again together: each 50 ms wave also costs the CPU
of the whole wave. Same CPU, more turns, less of the ideal.

    python bench/lockstep.py [--cpu-ms 0.25,0.5,1.0] [--turns 1,2,4,8] [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, median, table, write_json

BURSTS = 3
"""CPU bursts per job: before the first wait, between the waits (the tool), after the second."""


def burn(seconds: float) -> None:
    """Keep the CPU busy for ``seconds`` (wall clock; the machine must be otherwise idle)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def job(cpu: float, turns: int, delay: float, slots: asyncio.Semaphore) -> None:
    piece = cpu / BURSTS / turns
    async with slots:
        for burst in range(BURSTS):
            for turn in range(turns):
                if turn:
                    await asyncio.sleep(0)
                burn(piece)
            if burst < BURSTS - 1:
                await asyncio.sleep(delay)


async def batch(jobs: int, concurrency: int, cpu: float, turns: int, delay: float) -> None:
    slots = asyncio.Semaphore(concurrency)
    await asyncio.gather(*(job(cpu, turns, delay, slots) for _ in range(jobs)))


def efficiency(jobs: int, concurrency: int, cpu: float, turns: int, delay: float) -> float:
    ideal = math.ceil(jobs / concurrency) * (BURSTS - 1) * delay
    began = time.perf_counter()
    asyncio.run(batch(jobs, concurrency, cpu, turns, delay))
    return ideal / (time.perf_counter() - began)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds per wait")
    parser.add_argument("--cpu-ms", default="0.25,0.5,1.0", help="CPU per job in ms, comma-separated")
    parser.add_argument("--turns", default="1,2,4,8", help="event-loop turns per burst, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="20 jobs, 5 ms waits (smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS / "lockstep.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.jobs, args.concurrency, args.delay, args.repeats = 20, 5, 0.005, 1
        args.cpu_ms, args.turns = "0.5", "1,4"
    cpus = [float(ms) for ms in args.cpu_ms.split(",")]
    turns = [int(t) for t in args.turns.split(",")]

    samples: dict[tuple[float, int], list[float]] = {(c, t): [] for c in cpus for t in turns}
    for _ in range(args.repeats):  # interleaved
        for cpu_ms, turn in samples:
            samples[cpu_ms, turn].append(
                efficiency(args.jobs, args.concurrency, cpu_ms / 1000, turn, args.delay)
            )
    rows: list[dict[str, Any]] = [
        {"cpu_ms_per_job": c, "turns_per_burst": t, "efficiency": median(s), "samples": s}
        for (c, t), s in samples.items()
    ]
    print(
        f"{args.jobs} jobs, {args.concurrency} at a time, two {args.delay * 1000:.0f} ms waits each; "
        f"% of ideal, median of {args.repeats}\n"
    )
    by_key = {(r["cpu_ms_per_job"], r["turns_per_burst"]): r["efficiency"] for r in rows}
    print(
        table(
            ["CPU ms per job", *(f"{t} turn{'s' if t > 1 else ''} per burst" for t in turns)],
            [[f"{c:g}", *(f"{100 * by_key[c, t]:.0f}%" for t in turns)] for c in cpus],
        )
    )
    write_json(
        args.out,
        {
            "jobs": args.jobs,
            "concurrency": args.concurrency,
            "delay": args.delay,
            "repeats": args.repeats,
            "rows": rows,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
