"""langchain_classic's own AgentExecutor unit tests, run against langchain_classic and against explicit_react.

    python bench/peer_suite.py                 # downloads the sdist of the installed langchain-classic
    python bench/peer_suite.py --sdist langchain_classic-1.0.8.tar.gz   # or uses one you have

1. ``pip download --no-binary :all: --no-deps langchain-classic==<installed version>`` (needs PyPI).
2. The sdist's ``tests/`` package is extracted to a temporary folder (its helpers — the fake LLMs,
   ``FakeCallbackHandler``, ``stubs`` — import as ``tests.unit_tests...``, as in the classic repo);
   the installed ``langchain_classic`` is the one tested, not the sdist's copy.
3. pytest runs the files in ``TEST_FILES`` twice, in fresh processes: unchanged, and with
   ``-p peer_redirect`` (``bench/peer_redirect.py``), which rebinds ``AgentExecutor``,
   ``AgentExecutorIterator``, ``create_react_agent`` and ``ReActSingleInputOutputParser`` in the
   ``langchain_classic`` modules to explicit_react's before the tests are imported. No downloaded
   file is edited.
4. It prints one row per test (classic, explicit_react, and for a difference the reason) and writes
   ``bench/results/peer_suite.json`` and ``peer_suite.md``. A difference is *documented* when
   docs/migration.md's peer-suite table names the test (with the reason, which is shown); any other
   difference is shown with its failure message and makes the exit status 1.

Test dependencies beyond the project's dev extra: ``pytest-asyncio`` (the sdist's tests are
``async def`` tests under ``asyncio_mode = "auto"``); install it with
``pip install "pytest-asyncio>=1.3,<2"`` (it is in the ``peer`` extra). Not part of the default
offline ``pytest``: it needs PyPI and takes about 30 seconds.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path
from typing import Any

from _common import RESULTS, table, write_json

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
MIGRATION = ROOT / "docs" / "migration.md"
TEST_FILES = (
    "tests/unit_tests/agents/test_agent.py",  # the executor: run, stream, callbacks, return_direct, runnables
    "tests/unit_tests/agents/test_agent_async.py",  # the same, async
    "tests/unit_tests/agents/test_agent_iterator.py",  # AgentExecutorIterator
    "tests/unit_tests/agents/test_initialize.py",  # initialize_agent building the executor
    "tests/unit_tests/agents/output_parsers/test_react_single_input.py",  # the ReAct output parser
)
PYTEST_OPTIONS = (
    "-o", "addopts=",  # the sdist's addopts need syrupy (snapshots), which these files do not use
    "-o", "asyncio_mode=auto",
    "-o", "asyncio_default_fixture_loop_scope=function",
    "-p", "no:cacheprovider",
    "-q",
)  # fmt: skip
TARGETS = ("classic", "explicit_react", "classic_unknown_tool")
"""langchain_classic; explicit_react as it comes; explicit_react with ``classic_unknown_tool=True``."""


def download_sdist(version: str, into: Path) -> Path:
    """The sdist of langchain-classic ``version``, fetched with pip."""
    command = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "--quiet"]
    command += [f"langchain-classic=={version}", "-d", str(into)]
    subprocess.run(command, check=True)
    return next(into.glob("langchain_classic-*.tar.gz"))


def extract_tests(sdist: Path, into: Path) -> Path:
    """Extract the sdist's ``tests/`` package (only that) into ``into``; returns ``into``."""
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if "/tests/" in m.name and m.isfile()]
        for member in members:
            member.name = member.name.split("/", 1)[1]  # drop the langchain_classic-X.Y.Z/ prefix
        archive.extractall(into, members=members, filter="data")
    return into


def run_pytest(workdir: Path, target: str) -> dict[str, dict[str, str]]:
    """Run ``TEST_FILES`` for one target; per test id, its outcome and failure message."""
    junit = workdir / f"junit-{target}.xml"
    command = [sys.executable, "-m", "pytest", *PYTEST_OPTIONS, f"--junitxml={junit}", *TEST_FILES]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BENCH), str(ROOT), str(workdir)])}
    if target != "classic":
        command += ["-p", "peer_redirect"]
        env["PEER_CLASSIC_UNKNOWN_TOOL"] = "1" if target == "classic_unknown_tool" else "0"
    done = subprocess.run(command, cwd=workdir, env=env, check=False, capture_output=True, text=True)
    if not junit.exists():
        raise RuntimeError(
            f"pytest wrote no report for {target}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return read_junit(junit)


def read_junit(path: Path) -> dict[str, dict[str, str]]:
    """``file.py::test_name`` -> {"outcome": passed|failed|error|skipped, "message": first line}."""
    results = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1]
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            element = case.find(tag)
            if element is not None:
                outcome = "failed" if tag == "failure" else tag
                message = (element.get("message") or element.text or "").strip().splitlines()[0][:200]
                break
        results[f"{module}.py::{case.get('name')}"] = {"outcome": outcome, "message": message}
    return results


def documented_differences(path: Path = MIGRATION) -> dict[str, str]:
    """The rows of docs/migration.md's peer-suite table: test id -> the reason given there."""
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        match = re.fullmatch(r"`(test_\w+\.py::test_\w+)`", cells[0]) if len(cells) >= 2 else None
        if match:
            rows[match[1]] = cells[-1]
    return rows


def compare(
    results: dict[str, dict[str, dict[str, str]]], documented: dict[str, str]
) -> list[dict[str, Any]]:
    """One row per test: the outcome per target and, where explicit_react's differs from the classic's, why."""
    missing = {"outcome": "missing", "message": ""}
    rows = []
    for test in sorted(set().union(*results.values())):
        outcome = {target: results[target].get(test, missing) for target in TARGETS}
        theirs, ours = outcome["classic"], outcome["explicit_react"]
        if theirs["outcome"] == ours["outcome"]:
            reason, status = "", "same"
        elif test in documented:
            reason, status = documented[test], "documented"
        else:
            reason, status = ours["message"] or theirs["message"], "UNEXPLAINED"
        row: dict[str, Any] = {target: outcome[target]["outcome"] for target in TARGETS}
        row |= {"test": test, "status": status, "reason": reason}
        row |= {f"{target}_message": outcome[target]["message"] for target in TARGETS}
        rows.append(row)
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts per target and per status."""
    counts: dict[str, Any] = {target: {} for target in TARGETS}
    for row in rows:
        for target in TARGETS:
            counts[target][row[target]] = counts[target].get(row[target], 0) + 1
    for status in ("same", "documented", "UNEXPLAINED"):
        counts[status] = sum(row["status"] == status for row in rows)
    return counts


def passed(counts: dict[str, Any], target: str) -> str:
    """``"N/M"``: the target's passed tests out of all."""
    return f"{counts[target].get('passed', 0)}/{sum(counts[target].values())}"


def main() -> int:
    """Download, run both ways, compare, print and save."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", type=Path, help="a langchain_classic sdist to use instead of downloading")
    parser.add_argument("--out", type=Path, default=RESULTS / "peer_suite.json")
    args = parser.parse_args()
    version = metadata.version("langchain-classic")
    with tempfile.TemporaryDirectory(prefix="peer_suite_") as tmp:
        workdir = Path(tmp)
        sdist = args.sdist or download_sdist(version, workdir)
        extract_tests(sdist, workdir / "run")
        results = {target: run_pytest(workdir / "run", target) for target in TARGETS}
    documented = documented_differences()
    rows = compare(results, documented)
    counts = summary(rows)
    same_outcome = {row["test"] for row in rows if row["status"] == "same"}
    counts["stale_doc_rows"] = sorted(test for test in documented if test in same_outcome)
    header = ["test", "classic", "explicit_react", "with classic_unknown_tool=True", "difference"]
    body = [
        [
            f"`{r['test']}`",
            *(r[target] for target in TARGETS),
            f"{r['status']}: {r['reason']}" if r["reason"] else "",
        ]
        for r in rows
    ]
    figures = (
        f"langchain-classic {version}, {len(rows)} tests. Passed: classic {passed(counts, 'classic')}, "
        f"explicit_react {passed(counts, 'explicit_react')}, explicit_react with classic_unknown_tool=True "
        f"{passed(counts, 'classic_unknown_tool')}. explicit_react against classic: same outcome "
        f"{counts['same']}, documented differences {counts['documented']}, unexplained {counts['UNEXPLAINED']}."
    )
    markdown = f"# Peer suite\n\n{figures}\n\n{table(header, body)}\n"
    if counts["stale_doc_rows"]:
        markdown += f"\nListed in docs/migration.md but now the same: {', '.join(counts['stale_doc_rows'])}\n"
    print(markdown)
    command = "python bench/peer_suite.py" + (f" --sdist {args.sdist}" if args.sdist else "")
    data = {"langchain_classic": version, "test_files": list(TEST_FILES), "summary": counts, "tests": rows}
    write_json(args.out, {**data, "command": command})
    args.out.with_suffix(".md").write_text(markdown, encoding="utf-8")
    return 1 if counts["UNEXPLAINED"] else 0


if __name__ == "__main__":
    sys.exit(main())
