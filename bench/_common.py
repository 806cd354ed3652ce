"""What every benchmark script shares: the machine description, medians, Markdown tables, JSON output."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
PACKAGES = ("explicit-react", "langchain-core", "langchain-classic", "langgraph", "llama_cpp_python")


def machine() -> dict[str, Any]:
    """CPU model, cores, RAM, Python and the versions of the packages compared."""
    cpu = ""
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        cpu = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines() if "Model name" in line), "")
    except OSError:
        pass
    ram_gb = None
    with contextlib.suppress(ValueError, OSError, AttributeError):
        ram_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "cpu": cpu or platform.processor(),
        "cores": os.cpu_count(),
        "ram_gb": ram_gb,
        "python": platform.python_version(),
        "packages": versions,
    }


def median(values: Sequence[float]) -> float:
    """The median (``nan`` for no values)."""
    return statistics.median(values) if values else float("nan")


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` (with the machine description added) as indented JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({**data, "machine": machine()}, indent=1, default=str) + "\n", encoding="utf-8"
    )


# The text of the LangChain hub prompt "hwchase17/react", which create_react_agent's docs use.
HUB_REACT_PROMPT = """Answer the following questions as best you can. You have access to the following tools:

{tools}

Use the following format:

Question: the input question you must answer
Thought: you should always think about what to do
Action: the action to take, should be one of [{tool_names}]
Action Input: the input to the action
Observation: the result of the action
... (this Thought/Action/Action Input/Observation can repeat N times)
Thought: I now know the final answer
Final Answer: the final answer to the original input question

Begin!

Question: {input}
Thought:{agent_scratchpad}"""


def run_in_trees(
    script: Path, trees: Sequence[Path], rounds: int, worker_args: Sequence[str]
) -> dict[str, list[dict[str, Any]]]:
    """Run ``script --worker`` once per tree per round, interleaved, each in a fresh process whose
    ``PYTHONPATH`` starts with the tree (so ``import explicit_react`` loads that tree's package while the
    measuring code is this one's); the worker prints its results as JSON on its last line.

    The order of the trees rotates each round (A B, B A, A B, ...), so a change in machine load
    between rounds falls on every tree alike. Returns each tree's results, one per round."""
    results: dict[str, list[dict[str, Any]]] = {str(tree): [] for tree in trees}
    for round_ in range(rounds):
        order = list(trees[round_ % len(trees) :]) + list(trees[: round_ % len(trees)])
        for tree in order:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
            done = subprocess.run(
                [sys.executable, str(script), *worker_args, "--worker"],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise RuntimeError(f"{script.name} in {tree} failed:\n{done.stderr[-3000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            loaded = Path(result["package"]).resolve()
            if not loaded.is_relative_to(Path(tree).resolve()):
                raise RuntimeError(f"{tree}: the worker imported explicit_react from {loaded}")
            results[str(tree)].append(result)
    return results


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` shows them."""
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"
