"""The examples and the docs' code run, so they never rot.

Every ``examples/*.py`` runs as a subprocess, offline (no API key in its environment), and must
exit 0 and print its key line. The Python blocks of ``docs/tutorial.md`` run in order in one
namespace, and ``docs/api.md`` must mention every public name.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import explicit_react
import explicit_react.tools

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
DOCS = ROOT / "docs"

MY_DOCS = {"index.md", "tutorial.md", "architecture.md", "api.md", "security.md", "cli.md"}
PLANNED_DOCS = {"tools.md", "models.md", "migration.md", "benchmarks.md", "guardrails.md"}
"""Docs other engineers write; linked before they land."""

# example file -> (extra arguments, text its stdout must contain)
EXPECTED: dict[str, tuple[list[str], str]] = {
    "quickstart.py": ([], "Answer: About 2100"),
    "seed_demo.py": ([], "Answer: About 65,900,000"),
    "local_model.py": (["--offline"], "Answer: 15% of the population of Paris is about 315,000."),
    "qa_service.py": ([], '"success": true'),
    "coding_agent.py": ([], "TIMEOUT = 30  # seconds"),
    "refund_support.py": ([], "Forbidden tool: stop_reason=tool_denied"),
    "http_service.py": ([], "event: result"),
}
NEEDS = {"http_service.py": "fastapi"}
"""Examples that need an optional extra: skipped when it is not installed."""


def offline_environment() -> dict[str, str]:
    """The test's environment without API keys, with the examples' offline switch on."""
    env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
    env["EXPLICIT_REACT_OFFLINE"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def run_example(path: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(path), *args],
        cwd=ROOT,
        env=offline_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_listed_example_exists() -> None:
    assert set(EXPECTED) <= {p.name for p in EXAMPLES}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_offline(path: Path) -> None:
    if path.name in NEEDS:
        pytest.importorskip(NEEDS[path.name])
    args, expected = EXPECTED.get(path.name, ([], ""))
    done = run_example(path, args)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "Traceback" not in done.stderr
    assert done.stdout.strip(), "an example prints its result"
    assert expected in done.stdout


def test_seed_demo_shows_the_errors_and_the_recovery() -> None:
    out = run_example(ROOT / "examples" / "seed_demo.py", []).stdout
    assert "Error: there is no tool named 'google_search'" in out
    assert "Unreadable reply" in out
    assert "errors recovered from: 2" in out
    assert "Stop reason: success" in out


def test_quickstart_says_it_is_offline() -> None:
    done = run_example(ROOT / "examples" / "quickstart.py", [])
    assert "offline scripted model" in done.stderr


def test_examples_given_what_they_lack_say_so_in_one_line(tmp_path: Path) -> None:
    """``langchain_swap.py gemini-...`` with no key, and ``http_service.py --serve`` without
    uvicorn (the README's install has no ``[serve]``), ended in tracebacks."""
    swap = run_example(ROOT / "examples" / "langchain_swap.py", ["gemini-2.5-flash"])
    assert swap.returncode == 1 and "Traceback" not in swap.stderr
    assert swap.stderr.strip().startswith("gemini-2.5-flash needs a Gemini API key")
    pytest.importorskip("fastapi")
    (tmp_path / "uvicorn.py").write_text("raise ImportError('uvicorn is not installed')\n")
    env = {**offline_environment(), "PYTHONPATH": str(tmp_path)}
    serve = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "http_service.py"), "--serve"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert serve.returncode == 1 and "Traceback" not in serve.stderr
    assert (
        serve.stderr.strip()
        == '--serve needs uvicorn: pip install -e ".[serve]" (the demo without --serve does not)'
    )


def test_refund_support_stops_for_the_right_reasons() -> None:
    out = run_example(ROOT / "examples" / "refund_support.py", []).stdout
    assert "Fact finding: stop_reason=success success=True" in out
    assert "Error: there is no tool named 'issue_refund'" in out
    assert "Refunded" not in out


# --- docs ------------------------------------------------------------------------------------


def python_blocks(markdown: str) -> list[str]:
    """The fenced ```python blocks of a markdown text, in order."""
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.DOTALL | re.MULTILINE)


def test_tutorial_code_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = python_blocks((DOCS / "tutorial.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "tutorial"}
    for number, block in enumerate(blocks, 1):
        try:
            exec(compile(block, f"tutorial.md block {number}", "exec"), namespace)
        except Exception as error:  # pragma: no cover - the message names the failing block
            pytest.fail(f"tutorial.md block {number} failed: {error!r}\n{block}")


def test_api_reference_names_every_public_name() -> None:
    api = (DOCS / "api.md").read_text(encoding="utf-8")
    public = set(explicit_react.__all__) | set(explicit_react.tools.__all__)
    missing = sorted(name for name in public if not re.search(rf"`{re.escape(name)}\b", api))
    assert not missing, f"docs/api.md does not document: {missing}"


def test_index_links_every_doc() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for name in sorted(MY_DOCS - {"index.md"} | PLANNED_DOCS):
        assert f"]({name})" in index, f"docs/index.md does not link {name}"


def test_relative_links_in_my_docs_resolve() -> None:
    for name in sorted(MY_DOCS):
        text = (DOCS / name).read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:]+?)(?:#[^)]*)?\)", text):
            assert (DOCS / target).exists() or target in PLANNED_DOCS, f"{name} links missing {target}"
