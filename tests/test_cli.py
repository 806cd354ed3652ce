"""The ``explicit-react`` command, driven through ``main([...])`` with scripted models."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from explicit_react import cli, cli_output, models
from explicit_react.testing import ScriptedChatModel
from explicit_react.types import Step
from tests.helpers import action, final


def script(tmp_path: Path, *replies: str) -> str:
    """A ``scripted:FILE`` model name whose file holds ``replies`` as a JSON list."""
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(replies)), encoding="utf-8")
    return f"scripted:{path}"


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every model the CLI loads, so a test can read the prompts it received."""
    seen: list[Any] = []
    real = models.load_model

    def recording(name: Any = None, **options: Any) -> Any:
        model = real(name, **options)
        seen.append(model)
        return model

    monkeypatch.setattr(models, "load_model", recording)
    return seen


PARIS = (
    action("search", "population of Paris", "I need the population of Paris."),
    final("About 2.1 million people live in Paris."),
)


def assert_one_line_error(err: str, *fragments: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("explicit-react: error:")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0]


# --- a question --------------------------------------------------------------------------------


def test_answer_goes_to_stdout_and_the_trace_to_stderr(tmp_path: Path, capsys: Any) -> None:
    code = cli.main(["--model", script(tmp_path, *PARIS), "--tools", "search", "How many live in Paris?"])
    out, err = capsys.readouterr()
    assert code == 0
    assert out == "About 2.1 million people live in Paris.\n"
    assert "Action (turn 1/5):" in err and "search" in err
    assert "Observation:" in err and "2100000" in err
    assert "Final Answer:" in err


def test_ask_subcommand_and_quiet(tmp_path: Path, capsys: Any) -> None:
    code = cli.main(["ask", "--quiet", "--model", script(tmp_path, *PARIS), "--tools", "search", "Paris?"])
    out, err = capsys.readouterr()
    assert code == 0
    assert out.strip() == "About 2.1 million people live in Paris."
    assert err == ""


def test_question_words_are_joined(tmp_path: Path, loaded: list[Any], capsys: Any) -> None:
    cli.main(["-q", "--model", script(tmp_path, final("4")), "--tools", "none", "what", "is", "2+2?"])
    assert "Question: what is 2+2?" in loaded[0].calls[0].prompt


def test_json_output_has_the_steps(tmp_path: Path, capsys: Any) -> None:
    code = cli.main(["--json", "-q", "--model", script(tmp_path, *PARIS), "--tools", "search", "Paris?"])
    out, _ = capsys.readouterr()
    data = json.loads(out)
    assert code == 0
    assert data["success"] is True
    assert data["stop_reason"] == "success"
    assert data["answer"] == "About 2.1 million people live in Paris."
    assert [step["action"] for step in data["steps"]] == ["search"]
    assert data["steps"][0]["observation"] == "The population of Paris is about 2100000."


def test_trace_file_has_a_line_per_step_and_the_result(tmp_path: Path, capsys: Any) -> None:
    trace = tmp_path / "run.jsonl"
    code = cli.main(
        ["-q", "--trace", str(trace), "--model", script(tmp_path, *PARIS), "--tools", "search", "Paris?"]
    )
    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert code == 0
    assert [r["event"] for r in records] == ["step", "result"]
    assert records[0]["action_input"] == "population of Paris"
    assert records[1]["stop_reason"] == "success"


def test_context_reaches_the_prompt(tmp_path: Path, loaded: list[Any], capsys: Any) -> None:
    cli.main(
        [
            "-q",
            "--model",
            script(tmp_path, final("Blue.")),
            "--tools",
            "none",
            "--context",
            "The sky is blue.",
            "Sky?",
        ]
    )
    assert "The sky is blue." in loaded[0].calls[0].prompt


def test_iteration_limit_exits_1_with_the_stop_reason(tmp_path: Path, capsys: Any) -> None:
    replies = [action("search", f"population of place {i}") for i in range(2)]
    code = cli.main(
        [
            "--model",
            script(tmp_path, *replies),
            "--tools",
            "search",
            "--max-iterations",
            "2",
            "--on-limit",
            "force",
            "?",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 1
    assert out.strip() == "I could not find an answer within the allowed number of steps."
    assert "Stopped (max_iterations)" in err


def test_answer_at_the_limit_is_printed_but_still_exits_1(tmp_path: Path, capsys: Any) -> None:
    replies = [action("search", "population of Paris"), final("Roughly 2.1 million.")]
    code = cli.main(
        ["-q", "--model", script(tmp_path, *replies), "--tools", "search", "--max-iterations", "1", "?"]
    )
    out, err = capsys.readouterr()
    assert code == 1
    assert out.strip() == "Roughly 2.1 million."
    assert "stopped (max_iterations)" in err


def test_guardrail_options_reach_the_agent(tmp_path: Path, capsys: Any) -> None:
    replies = [action("calculator", "2+2"), final("4")]
    code = cli.main(
        [
            "-q",
            "--json",
            "--model",
            script(tmp_path, *replies),
            "--tools",
            "search,calculator",
            "--allow",
            "search",
            "--max-tool-calls",
            "3",
            "?",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["steps"][0]["error"] == "tool_denied"
    assert data["steps"][0]["observation"].startswith("Error: there is no tool named 'calculator'")


def test_tool_call_budget(tmp_path: Path, capsys: Any) -> None:
    replies = [action("search", "population of Paris"), action("search", "population of France")]
    code = cli.main(
        [
            "-q",
            "--json",
            "--model",
            script(tmp_path, *replies),
            "--tools",
            "search",
            "--max-tool-calls",
            "1",
            "--on-limit",
            "force",
            "?",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert data["stop_reason"] == "max_tool_calls"


def test_a_failing_model_exits_1(tmp_path: Path, capsys: Any) -> None:
    code = cli.main(
        [
            "-q",
            "--model",
            script(tmp_path, action("search", "x")),
            "--tools",
            "search",
            "--max-retries",
            "0",
            "?",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 1
    assert out.strip() == "I could not answer because the language model failed."
    assert "llm_error" in err
    assert "Traceback" not in err


def test_tool_calling_mode(tmp_path: Path, capsys: Any) -> None:
    code = cli.main(
        ["-q", "--mode", "tool_calling", "--model", script(tmp_path, "Paris."), "--tools", "search", "?"]
    )
    assert code == 0
    assert capsys.readouterr().out.strip() == "Paris."


# --- mistakes: exit 2, one line, no traceback ------------------------------------------------


def test_unknown_model(capsys: Any) -> None:
    assert cli.main(["--model", "gpt-banana", "hello"]) == 2
    assert_one_line_error(capsys.readouterr().err, "Unknown model 'gpt-banana'")


def test_missing_script_file(tmp_path: Path, capsys: Any) -> None:
    assert cli.main(["--model", f"scripted:{tmp_path / 'nope.json'}", "hello"]) == 2
    assert_one_line_error(capsys.readouterr().err, "no such file")


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("search,bogus", "unknown tool 'bogus'"),
        ("files:/definitely/not/here", "no such directory"),
        ("knowledge:/definitely/not/here.md", "no such file or directory"),
        ("files:", "--tools files needs a path: files:DIR"),
    ],
)
def test_bad_tool_spec(tmp_path: Path, capsys: Any, spec: str, fragment: str) -> None:
    assert cli.main(["--model", script(tmp_path, final("x")), "--tools", spec, "hello"]) == 2
    assert_one_line_error(capsys.readouterr().err, fragment)


def test_allow_names_a_tool_that_is_not_among_the_tools(tmp_path: Path, capsys: Any) -> None:
    """The error was the Python API's ("allowed_tools names tools that do not exist: ['calculator']"),
    though calculator exists: it was just not in --tools."""
    model = script(tmp_path, final("x"))
    assert cli.main(["--model", model, "--tools", "search", "--allow", "calculator", "?"]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err, "--allow names calculator, not among the tools of --tools (it gives search)")


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--max-iterations", "0", "--max-iterations must be a whole number of at least 1; got 0"),
        ("--max-tool-calls", "-1", "--max-tool-calls must be a whole number of at least 0; got -1"),
        ("--max-seconds", "-1", "--max-seconds must be a number of seconds greater than 0; got -1.0"),
        ("--llm-timeout", "nan", "--llm-timeout must be a number of seconds greater than 0; got nan"),
        ("--tool-timeout", "0", "--tool-timeout must be a number of seconds greater than 0; got 0.0"),
        ("--max-retries", "-1", "--max-retries must be a whole number of at least 0; got -1"),
    ],
)
def test_a_limit_out_of_range_is_named_by_its_flag(
    tmp_path: Path, capsys: Any, flag: str, value: str, message: str
) -> None:
    """The message named the Python argument ("max_iterations ... or None for no limit; got 0 (int)")."""
    assert cli.main(["--model", script(tmp_path, final("x")), flag, value, "?"]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err, message)
    assert "None" not in err and "_" not in err.split("error:")[1]


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ("", "--tools is empty"),
        (",", "--tools is empty"),
        ("calculater", "unknown tool 'calculater' in --tools (did you mean 'calculator'?)"),
        ("files", "--tools files needs a path: files:DIR"),
        ("knowledge", "--tools knowledge needs a path: knowledge:PATH"),
        ("search,search", "--tools gives more than one tool named 'search'; name each once"),
    ],
)
def test_a_tools_value_that_gives_no_tools_or_the_wrong_ones(
    tmp_path: Path, capsys: Any, tools: str, message: str
) -> None:
    """An empty value ran with no tools (a script's unset "$TOOLS"); a typo got no suggestion; a
    tool twice got the Python API's advice ("rename one with tool.name = ...")."""
    assert cli.main(["--model", script(tmp_path, final("x")), "--tools", tools, "?"]) == 2
    assert_one_line_error(capsys.readouterr().err, message)


def test_the_default_model_is_named_with_why_it_was_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Without --model and a key, nothing said that a local model, not Gemini, was answering."""
    monkeypatch.setattr(models, "default_model_name", lambda: "local")
    monkeypatch.setattr(models, "best_local_model", lambda: "gemma")
    answers = script(tmp_path, final("4"))
    monkeypatch.setattr(
        models, "load_model", lambda name, **options: ScriptedChatModel.from_file(answers[9:])
    )
    assert cli.main(["--tools", "none", "What is 2 + 2?"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "4"
    assert captured.err.startswith(
        "explicit-react: no Gemini API key is set: using the local model Gemma 3 270M base Q4_K_M (250 MB), "
        "on this CPU; choose another with --model\n"
    )
    assert cli.main(["--quiet", "--tools", "none", "What is 2 + 2?"]) == 0
    assert capsys.readouterr().err == ""  # --quiet: the answer alone


def test_no_model_configured(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setattr(models, "default_model_name", lambda: None)
    assert cli.main(["--tools", "search", "hello"]) == 2
    assert_one_line_error(capsys.readouterr().err, "No model is configured")


def test_gemini_without_a_key(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    for variable in models.API_KEY_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    assert cli.main(["--model", "gemini-2.5-flash", "--tools", "search", "hello"]) == 2
    assert_one_line_error(capsys.readouterr().err, "GOOGLE_API_KEY")


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        ([], "give a question"),
        (["ask"], "give a question"),
        (["--max-iterations", "many", "?"], "invalid int value"),
        (["--on-limit", "panic", "?"], "invalid choice"),
        (["--frobnicate", "?"], "unrecognized arguments"),
        (["chat", "extra"], "chat takes no question"),
    ],
)
def test_usage_errors(capsys: Any, argv: list[str], fragment: str) -> None:
    assert cli.main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, fragment)


def test_help_has_examples(capsys: Any) -> None:
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out
    assert 'explicit-react "' in out
    assert "explicit-react chat" in out
    assert "--max-tool-calls" in out


# --- chat ------------------------------------------------------------------------------------


def test_chat_keeps_the_conversation(
    tmp_path: Path, loaded: list[Any], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr(
        "sys.stdin", io.StringIO("Capital of France?\n\nHow many live there?\n/exit\nnot read\n")
    )
    model = script(tmp_path, final("Paris."), final("About 2.1 million."))
    code = cli.main(["chat", "-q", "--model", model, "--tools", "search"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert out.splitlines() == ["Paris.", "About 2.1 million."]
    scripted: ScriptedChatModel = loaded[0]
    first, second = (call.prompt for call in scripted.calls)
    assert "Conversation so far" not in first
    assert "User: Capital of France?" in second
    assert "Assistant: Paris." in second
    assert "Question: How many live there?" in second
    scripted.assert_all_used()


def test_chat_json_lines_until_eof(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("one\ntwo"))
    code = cli.main(
        ["chat", "-q", "--json", "--model", script(tmp_path, final("1"), final("2")), "--tools", "none"]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [json.loads(line)["answer"] for line in lines] == ["1", "2"]


# --- tools and the live trace ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ("web_search,python_repl", ["web_search", "python_repl"]),
        ("calculator, search", ["calculator", "search"]),
        ("none", []),
    ],
)
def test_build_tools(spec: str, names: list[str]) -> None:
    assert [t.name for t in cli.build_tools(spec)] == names


def test_build_file_and_knowledge_tools(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("The launch code word is marmalade.", encoding="utf-8")
    file_names = [t.name for t in cli.build_tools(f"files:{tmp_path}")]
    assert file_names == ["read_file", "grep", "search_files", "write_file", "edit_file"]
    (knowledge,) = cli.build_tools(f"knowledge:{tmp_path / 'notes.md'}")
    assert "marmalade" in knowledge.invoke({"query": "launch code word"})
    (folder,) = cli.build_tools(f"knowledge:{tmp_path}")
    assert "[notes.md]" in folder.invoke({"query": "marmalade"})


def test_live_trace_spins_only_on_a_terminal() -> None:
    terminal = cli_output.LiveTrace(Console(file=io.StringIO(), force_terminal=True))
    terminal.on_turn_start(1, 5)
    assert terminal._status is not None
    terminal.on_step(Step("t", "search", "q", "obs"), 1, 5)
    assert terminal._status is None
    assert "Observation:" in terminal.console.file.getvalue()  # type: ignore[attr-defined]

    piped = cli_output.LiveTrace(Console(file=io.StringIO(), force_terminal=False))
    piped.on_turn_start(1, 5)
    assert piped._status is None


def test_chat_quiet_says_why_a_run_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("Population of Paris?\n"))
    replies = [action("search", "population of Paris"), final("Roughly 2.1 million.")]
    code = cli.main(
        ["chat", "-q", "--model", script(tmp_path, *replies), "--tools", "search", "--max-iterations", "1"]
    )
    out, err = capsys.readouterr()
    assert code == 0 and out.strip() == "Roughly 2.1 million."
    assert "stopped (max_iterations)" in err


def test_a_piped_trace_does_not_wrap_long_lines(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    console = cli_output._console()
    assert not console.is_terminal and console.soft_wrap
    console.print("word " * 40)
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_check_answer_sends_a_wordless_answer_back(tmp_path: Path, capsys: Any) -> None:
    replies = [final("Paris"), action("search", "population of Paris"), final("2100000")]
    argv = ["-q", "--json", "--model", script(tmp_path, *replies), "--tools", "search"]
    assert cli.main([*argv, "--check-answer", "How many people live in Paris?"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["answer"] == "2100000"
    assert [s["error"] for s in data["steps"]] == ["answer_check", None]
    assert cli.main([*argv, "How many people live in Paris?"]) == 0  # off by default
    assert json.loads(capsys.readouterr().out)["answer"] == "Paris"


# --- files and pipes that fail -------------------------------------------------------------------


def test_a_trace_path_that_cannot_be_written_is_a_usage_error_before_the_run(
    tmp_path: Path, capsys: Any
) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    model = script(tmp_path, *PARIS)
    cases = ((tmp_path, "Is a directory"), (blocker / "trace.jsonl", f"{blocker} is a file, not a folder"))
    for target, problem in cases:  # before: "File exists: .../file.txt", naming no option
        code = cli.main(["--model", model, "--tools", "search", "--trace", str(target), "q"])
        out, err = capsys.readouterr()
        assert code == 2 and out == ""
        assert_one_line_error(err, f"--trace {target}", problem)


def test_a_script_that_is_missing_or_a_folder_names_the_option(tmp_path: Path, capsys: Any) -> None:
    for target, problem in (
        (tmp_path / "missing.txt", "no such file"),
        (tmp_path, "a directory, not a file"),
    ):
        code = cli.main(["--model", f"scripted:{target}", "q"])
        out, err = capsys.readouterr()
        assert code == 2 and out == ""
        assert_one_line_error(err, f"--model scripted:{target}: {problem}")


def test_an_unreadable_script_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    path = tmp_path / "replies.txt"
    path.write_text("Final Answer: x")

    def refuse(self: Path, *args: Any, **kwargs: Any) -> str:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_text", refuse)
    assert cli.main(["--model", f"scripted:{path}", "--tools", "none", "q"]) == 2
    assert_one_line_error(capsys.readouterr().err, "Permission denied", str(path))


def test_an_empty_knowledge_folder_is_a_usage_error(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "scan.pdf").write_bytes(b"%PDF")
    assert cli.main(["--model", script(tmp_path, *PARIS), "--tools", f"knowledge:{tmp_path}", "q"]) == 2
    assert_one_line_error(capsys.readouterr().err, "no .txt or .md files")


def folder_with_a_link_out(tmp_path: Path, link_name: str) -> Path:
    """A knowledge folder holding notes.md and a link, named ``link_name``, to a file outside it."""
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "notes.md").write_text("The launch code word is marmalade.")
    (tmp_path / "private.txt").write_text("secret")
    (folder / link_name).symlink_to(tmp_path / "private.txt")
    return folder


def test_a_skipped_knowledge_file_is_a_one_line_warning(tmp_path: Path, capsys: Any) -> None:
    folder = folder_with_a_link_out(tmp_path, "link.txt")
    (tool,) = cli.build_tools(f"knowledge:{folder}")
    assert [passage.source for passage in tool.passages] == ["notes.md"]
    err = capsys.readouterr().err
    assert err == (
        f"explicit-react: warning: knowledge folder {folder}: skipped {folder / 'link.txt'} "
        "(a link to a file outside the folder)\n"
    )


def test_a_skipped_files_name_is_printed_without_its_control_characters(tmp_path: Path, capsys: Any) -> None:
    cli.build_tools(
        f"knowledge:{folder_with_a_link_out(tmp_path, chr(27) + ']0;owned' + chr(7) + chr(27) + '[2J.txt')}"
    )
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\x1b]0;owned\\x07\\x1b[2J.txt" in err


def test_ctrl_c_while_the_agent_is_built_exits_130(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    def interrupted(args: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_agent", interrupted)
    assert cli.main(["--tools", "none", "q"]) == 130
    assert "Traceback" not in capsys.readouterr().err


COMMAND = [sys.executable, "-c", "import sys; from explicit_react.cli import main; sys.exit(main())"]
"""The ``explicit-react`` command in a process of its own."""


def test_a_closed_stdout_pipe_ends_quietly(tmp_path: Path) -> None:
    reader, writer = os.pipe()
    os.close(reader)
    command = [*COMMAND, "--model", script(tmp_path, *PARIS), "--tools", "search"]
    done = subprocess.run(
        [*command, "--json", "q"], stdout=writer, stderr=subprocess.PIPE, text=True, timeout=60
    )
    os.close(writer)
    assert "Traceback" not in done.stderr and done.returncode == 1


def test_json_output_is_ascii_where_stdout_cannot_encode_the_text(tmp_path: Path) -> None:
    model = script(tmp_path, final("Café"))
    command = [*COMMAND, "--model", model, "--tools", "none", "--json", "q"]
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == "Café"


# --- text stdout cannot encode, bytes stdin cannot decode ---------------------------------------


def byte_stream(monkeypatch: pytest.MonkeyPatch, name: str, encoding: str, errors: str) -> io.BytesIO:
    """Replace ``sys.<name>`` by a text stream over bytes, as Python opens it with PYTHONIOENCODING."""
    raw = io.BytesIO()
    monkeypatch.setattr(f"sys.{name}", io.TextIOWrapper(raw, encoding=encoding, errors=errors))
    return raw


@pytest.mark.parametrize("errors", ["strict", "surrogateescape"])  # PYTHONIOENCODING=utf-8; C.UTF-8
def test_json_of_a_file_that_is_not_utf8_is_valid_json_in_utf8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, errors: str
) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "menu.txt").write_bytes(b"caf\xe9 menu\n")
    model = script(tmp_path, action("read_file", '{"path": "menu.txt"}'), final("done"))
    out = byte_stream(monkeypatch, "stdout", "utf-8", errors)
    code = cli.main(["-q", "--json", "--model", model, "--tools", f"files:{folder}", "q"])
    sys.stdout.flush()
    assert code == 0
    data = json.loads(out.getvalue().decode("utf-8"))  # strict: no raw 0xE9 byte
    assert "caf\\xe9 menu" in data["steps"][0]["observation"]  # the observation shows the byte as \xe9
    assert b"caf\\\\xe9 menu" in out.getvalue()


@pytest.mark.parametrize("encoding", ["ascii", "cp1252"])
def test_an_answer_stdout_cannot_encode_is_written_with_escapes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    out = byte_stream(monkeypatch, "stdout", encoding, "strict")
    code = cli.main(["-q", "--model", script(tmp_path, final("Café ☕ — 2 €")), "--tools", "none", "q"])
    sys.stdout.flush()
    assert code == 0
    expected = {"ascii": "Caf\\xe9 \\u2615 \\u2014 2 \\u20ac\n", "cp1252": "Café \\u2615 — 2 €\n"}
    assert out.getvalue().decode(encoding) == expected[encoding]


def test_the_escapes_last_only_while_the_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    byte_stream(monkeypatch, "stdout", "ascii", "strict")
    cli.main(["-q", "--model", script(tmp_path, final("x")), "--tools", "none", "q"])
    assert sys.stdout.errors == "strict"


def test_chat_reads_a_line_that_is_not_utf8(
    tmp_path: Path, loaded: list[Any], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"caf\xe9?\nnext\n"), encoding="utf-8"))
    code = cli.main(["chat", "-q", "--model", script(tmp_path, final("1"), final("2")), "--tools", "none"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines() == ["1", "2"]
    assert "Question: caf\ufffd?" in loaded[0].calls[0].prompt


def test_plain_answer_under_pythonioencoding_ascii(tmp_path: Path) -> None:
    model = script(tmp_path, final("Café"))
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    command = [*COMMAND, "--model", model, "--tools", "none", "-q", "q"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "Caf\\xe9\n", "")


# --- a trace that fails during the run, a file that fails as it is read -------------------------


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_trace_that_cannot_be_written_mid_run_is_one_warning_and_the_answer_is_printed(
    tmp_path: Path, capsys: Any
) -> None:
    code = cli.main(
        ["-q", "--trace", "/dev/full", "--model", script(tmp_path, *PARIS), "--tools", "search", "q"]
    )
    out, err = capsys.readouterr()
    assert code == 0
    assert out == "About 2.1 million people live in Paris.\n"
    assert "Traceback" not in err
    assert err.count("\n") == 1  # once, not once per record
    assert err.startswith("explicit-react: warning: --trace /dev/full:")
    assert "No space left on device" in err


def test_a_trace_that_fails_at_the_result_keeps_the_stop_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from explicit_react.trace import JsonlTrace

    def full(self: JsonlTrace, record: dict[str, Any]) -> None:
        if record["event"] == "result":
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(JsonlTrace, "_write", full)
    trace = tmp_path / "run.jsonl"
    model = script(tmp_path, *(action("search", "population of Paris"),) * 3)
    code = cli.main(
        [
            "-q",
            "--max-iterations",
            "2",
            "--on-limit",
            "force",
            "--trace",
            str(trace),
            "--model",
            model,
            "--tools",
            "search",
            "q",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1
    lines = err.splitlines()
    assert (
        lines[0] == f"explicit-react: warning: --trace {trace}: No space left on device; the trace stops here"
    )
    assert lines[1].startswith("explicit-react: stopped (max_iterations)")


def read_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading any file fails as /proc/self/mem does: an I/O error that names no file."""

    def fail(self: Path, *args: Any, **kwargs: Any) -> str:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(Path, "read_text", fail)
    monkeypatch.setattr(Path, "read_bytes", fail)


def test_a_script_that_fails_as_it_is_read_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    model = script(tmp_path, final("x"))
    read_fails(monkeypatch)
    assert cli.main(["--model", model, "--tools", "none", "q"]) == 2
    assert_one_line_error(capsys.readouterr().err, f"--model {model}: Input/output error")


def test_a_knowledge_file_that_fails_as_it_is_read_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    model = script(tmp_path, final("x"))
    read_fails(monkeypatch)
    assert cli.main(["--model", model, "--tools", f"knowledge:{notes}", "q"]) == 2
    assert_one_line_error(capsys.readouterr().err, f"--tools knowledge:{notes}: Input/output error")
