"""Start-up cost: import times and ``explicit-react --help``, each in a fresh Python process.

Every row is a fresh subprocess (so nothing is cached in memory but the OS file cache), run
``--runs`` times with the rows interleaved; we report the median wall time of the whole process,
and that time minus the bare interpreter's (``python -c pass``) as the import cost.

    python bench/startup.py [--runs 9] [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, median, table, write_json

PYTHON = sys.executable
BASELINE = "python -c pass"
ROWS: dict[str, list[str]] = {
    BASELINE: [PYTHON, "-c", "pass"],
    "import langchain_core": [PYTHON, "-c", "import langchain_core"],
    "langchain_core: models, tools, runnables": [
        PYTHON,
        "-c",
        "import langchain_core.language_models, langchain_core.tools, langchain_core.runnables",
    ],
    "import explicit_react": [PYTHON, "-c", "import explicit_react"],
    "from explicit_react import ExplicitReActAgent": [
        PYTHON,
        "-c",
        "from explicit_react import ExplicitReActAgent",
    ],
    "from langchain_classic.agents import AgentExecutor, create_react_agent": [
        PYTHON,
        "-c",
        "from langchain_classic.agents import AgentExecutor, create_react_agent",
    ],
    "from langgraph.prebuilt import create_react_agent": [
        PYTHON,
        "-W",
        "ignore",
        "-c",
        "from langgraph.prebuilt import create_react_agent",
    ],
}

QUICK_ROWS = (BASELINE, "import explicit_react")


def cli_command() -> list[str] | None:
    """``explicit-react --help`` from the same environment, if the command is installed."""
    script = Path(PYTHON).with_name("explicit-react")
    found = str(script) if script.exists() else shutil.which("explicit-react")
    return [found, "--help"] if found else None


def run_once(command: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="1 run of the quick rows (smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS / "startup.json")
    args = parser.parse_args(argv)
    rows = dict(ROWS)
    if args.quick:
        args.runs = 1
        rows = {name: rows[name] for name in QUICK_ROWS}
    cli = cli_command()
    if cli:
        rows["explicit-react --help"] = cli
    if not args.quick:
        for command in rows.values():  # warm the OS file cache
            run_once(command)
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.runs):
        for name, command in rows.items():
            samples[name].append(run_once(command))
    medians = {name: median(times) for name, times in samples.items()}
    base = medians[BASELINE]
    print(f"Fresh-process start-up, median of {args.runs} (interleaved)\n")
    print(
        table(
            ["command", "process (ms)", "minus bare interpreter (ms)"],
            [[name, f"{m * 1000:.0f}", f"{(m - base) * 1000:.0f}"] for name, m in medians.items()],
        )
    )
    if not cli:
        print("\n(explicit-react is not installed in this environment: no CLI row)")
    summary = {
        "runs": args.runs,
        "median_ms": {name: m * 1000 for name, m in medians.items()},
        "import_ms": {name: (m - base) * 1000 for name, m in medians.items()},
        "cli_measured": cli is not None,
    }
    write_json(args.out, {"summary": summary, "samples_seconds": samples})
    return 0


if __name__ == "__main__":
    sys.exit(main())
