"""Keys in the environment stay out of what a run reports when a model call or a tool fails, and
out of the audit trail in its edge cases (docs/security.md, "API keys stay out of ...")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import ToolException, tool

from explicit_react import ExplicitReActAgent, StopReason, cli
from explicit_react.errors import ModelCallError
from explicit_react.redaction import redact, redact_cut, secret_values
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools.python import sandbox_environment
from explicit_react.trace import _CUT as CUT
from tests.helpers import action, final, search

KEY = "sk-canary-1234567890abcdef"


def http_error() -> Exception:
    """What an HTTP client raises: the request's address, key and all, in its message."""
    return ConnectionError(
        f"Client error for url 'https://generativelanguage.googleapis.com/v1beta/models/x:generateContent?key={KEY}'"
    )


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    return KEY


def test_a_failed_model_calls_key_is_not_in_the_result(key: str) -> None:
    result = ExplicitReActAgent(ScriptedChatModel([http_error()]), [], max_retries=0).run("q")
    assert result.stop_reason is StopReason.LLM_ERROR
    assert key not in json.dumps(result.to_dict()) and "key=[redacted]" in (result.error or "")


def test_a_failed_model_calls_key_is_not_in_the_error_raised(key: str) -> None:
    agent = ExplicitReActAgent(ScriptedChatModel([http_error()]), [], max_retries=0, on_llm_error="raise")
    with pytest.raises(ModelCallError) as raised:
        agent.run("q")
    assert key not in str(raised.value) and "[redacted]" in str(raised.value)


def test_a_failed_model_calls_key_is_not_printed_by_the_command(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr(cli, "load_named_model", lambda name, say=False: ScriptedChatModel([http_error()]))
    for flags in (["-q"], ["--json"]):
        code = cli.main(["--model", "scripted:unused", "--tools", "none", "--max-retries", "0", *flags, "q"])
        out, err = capsys.readouterr()
        assert code == 1 and key not in out + err and "[redacted]" in out + err


def test_a_failed_tools_key_reaches_neither_the_model_nor_the_result(key: str) -> None:
    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        raise http_error()

    model = ScriptedChatModel([action("weather", "Paris"), final("unknown")])
    result = ExplicitReActAgent(model, [weather]).run("q")
    assert result.steps[0].error == "tool_error" and "[redacted]" in result.steps[0].observation
    assert key not in model.calls[1].prompt and key not in json.dumps(result.to_dict())


def test_a_key_with_a_line_end_is_redacted_as_the_client_sends_it(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", KEY + "\r")  # from a .env file with CRLF line ends
    assert KEY in secret_values()

    @tool
    def echo(text: str) -> str:
        """Echoes the key as a client would have used it."""
        return f"using {KEY}"

    path = tmp_path / "trace.jsonl"
    ExplicitReActAgent(ScriptedChatModel([action("echo", "x"), final("ok")]), [echo], trace_path=path).run(
        "q"
    )
    assert KEY not in path.read_text() and "[redacted]" in path.read_text()


def test_a_key_cut_in_two_by_the_observation_limit_is_not_in_the_trace(key: str, tmp_path: Path) -> None:
    @tool
    def page(url: str) -> str:
        """A long page with the key twice: the cut keeps the first's start and the second's end."""
        return "a" * 125 + key + "b" * 200 + key + "c" * 50

    path = tmp_path / "trace.jsonl"
    agent = ExplicitReActAgent(
        ScriptedChatModel([action("page", "x"), final("ok")]),
        [page],
        trace_path=path,
        max_observation_chars=200,
    )
    observation = agent.run("q").steps[0].observation
    pieces = [key[i : i + 8] for i in range(len(key) - 7)]
    # The tool's output is redacted before it is cut (since the model reads it too) ...
    assert not any(piece in observation for piece in pieces) and "[redacted]" in observation
    written = json.loads(path.read_text().splitlines()[0])["observation"]
    assert not any(piece in written for piece in pieces), written
    # ... and the trace still cuts a key in two safely, whatever reaches it (redact_cut).
    cut = redact_cut("a" * 10 + key[:12] + "\n[... 9 characters cut ...]\n" + key[9:], [key], CUT)
    assert not any(piece in cut for piece in pieces) and cut.count("[redacted]") == 2


def test_redaction_covers_dict_keys_and_tuples() -> None:
    assert redact({KEY: [KEY, (KEY, 1)]}, [KEY]) == {"[redacted]": ["[redacted]", ("[redacted]", 1)]}


def test_the_sandbox_drops_credential_names_from_extra_env() -> None:
    extra = {"GOOGLE_APPLICATION_CREDENTIALS": "/x.json", "HF_AUTH": "t", "MY_PASSWD": "p", "REGION": "eu"}
    assert set(sandbox_environment("/home", extra)) & set(extra) == {"REGION"}


def test_a_key_in_a_handled_tool_exception_stays_out_of_the_prompt(key: str) -> None:
    # The error route docs/tools.md recommends for a tool: LangChain turns the ToolException into
    # the tool's output (handle_tool_error=True) before the agent sees it.
    @tool
    def weather(city: str) -> str:
        """Current weather for a city."""
        raise ToolException(f"Error: 401 Unauthorized for url 'https://api.example/v1?q={city}&key={KEY}'")

    weather.handle_tool_error = True
    model = ScriptedChatModel([action("weather", "Paris"), final("unknown")])
    result = ExplicitReActAgent(model, [weather]).run("Weather in Paris?")
    assert "key=[redacted]" in result.steps[0].observation
    assert key not in model.calls[1].prompt and key not in json.dumps(result.to_dict())


def test_a_password_escaped_in_a_json_observation_is_redacted(tmp_path: Path, monkeypatch: Any) -> None:
    password = 'hunter2"pass\\word'
    monkeypatch.setenv("DB_PASSWORD", password)

    @tool
    def settings(name: str) -> dict:
        """The service's settings (a dict: shown to the model as JSON)."""
        return {"user": "app", "password": password}

    path = tmp_path / "trace.jsonl"
    model = ScriptedChatModel([action("settings", "db"), final("ok")])
    result = ExplicitReActAgent(model, [settings], trace_path=path).run("q")
    assert 'hunter2\\"pass\\\\word' in result.steps[0].observation  # what the model read
    written = path.read_text()
    assert "hunter2" not in written and "[redacted]" in written


def test_a_password_escaped_twice_json_inside_json_is_redacted(tmp_path: Path, monkeypatch: Any) -> None:
    password = 'hunter2"pass\\word'
    monkeypatch.setenv("DB_PASSWORD", password)

    @tool
    def settings(name: str) -> dict:
        """The service's settings: one field holds the connection's own settings as a JSON string."""
        return {"user": "app", "connection": json.dumps({"password": password})}

    path = tmp_path / "trace.jsonl"
    model = ScriptedChatModel([action("settings", "db"), final("ok")])
    result = ExplicitReActAgent(model, [settings], trace_path=path).run("q")
    assert 'hunter2\\\\\\"pass' in result.steps[0].observation  # escaped twice in what the model read
    written = path.read_text()
    assert "hunter2" not in written and "[redacted]" in written


def test_a_key_set_after_the_agent_was_built_is_redacted(tmp_path: Path, monkeypatch: Any) -> None:
    path = tmp_path / "trace.jsonl"
    model = ScriptedChatModel([action("search", "x"), final(f"the key is {KEY}")])
    agent = ExplicitReActAgent(model, [search], trace_path=path)
    monkeypatch.setenv("LATE_API_KEY", KEY)  # load_dotenv() after construction
    agent.run("q")
    assert KEY not in path.read_text()


def test_every_trace_record_is_one_line_of_json_whatever_the_text(tmp_path: Path) -> None:
    @tool
    def read(name: str) -> str:
        """A Latin-1 file read with surrogateescape, and text with Unicode line breaks."""
        return "Caf\udce9 au lait\u2028second\u2029third\x85fourth"

    path = tmp_path / "trace.jsonl"
    model = ScriptedChatModel([action("read", "menu.txt"), final("done \udcff")])
    result = ExplicitReActAgent(model, [read], trace_path=path).run("q")  # UnicodeEncodeError before
    assert result.answer == "done \udcff"
    lines = path.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["event"] for r in records] == ["step", "result"]
    assert records[0]["observation"] == "Caf\\xe9 au lait\u2028second\u2029third\x85fourth"


def test_a_secret_in_a_python_repr_or_url_encoded_is_redacted(monkeypatch: Any) -> None:
    secret = 'it\'s a "pass/word" + more'
    monkeypatch.setenv("SERVICE_PASSWORD", secret)
    from urllib.parse import quote

    assert redact(repr(secret)) == "'[redacted]'"
    encoded = f"https://x.example/?p={quote(secret, safe='')}&q=1"
    assert redact(encoded) == "https://x.example/?p=[redacted]&q=1"  # the secret alone, where it stood
