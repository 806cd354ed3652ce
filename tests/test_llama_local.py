"""The grammar, tool-call and prompt-state fixes against the real Gemma 3 270M model.

A 270M base model answers nothing reliably, so these check what holds whatever it writes: the
process survives, a forced call's arguments follow the schema, a damaged state file is not used.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from explicit_react import buildcheck, models
from explicit_react.errors import ConfigurationError

pytestmark = pytest.mark.local_model

if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip(f"llama-cpp-python is not installed ({models.LOCAL_EXTRA_INSTALL})", allow_module_level=True)
if "gemma" not in models.installed_local_models():
    pytest.skip("the Gemma 3 270M weights are not installed", allow_module_level=True)
try:
    buildcheck.check_llama_build(models.ensure_local_model("gemma"))
except ConfigurationError as error:
    pytest.skip(str(error), allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
SETTINGS: dict[str, Any] = {"n_ctx": 512, "max_tokens": 40, "n_threads": 1, "prompt_state_dir": None}


def gemma(**settings: Any) -> Any:
    return models.load_model("local:gemma", **{**SETTINGS, **settings})


CRASHED_BEFORE = textwrap.dedent(
    """
    from langchain_core.tools import tool
    from pydantic import BaseModel, Field
    from explicit_react import models
    from explicit_react.errors import ConfigurationError

    class ZipInput(BaseModel):
        zip_code: str = Field(pattern=r"^\\d{5}$")

    @tool(args_schema=ZipInput)
    def weather(zip_code: str) -> str:
        \"\"\"Weather for a US zip code.\"\"\"
        return "sunny"

    quoted = {"type": "function", "function": {"name": 'say"hi', "description": "x", "parameters":
              {"type": "object", "properties": {"q": {"enum": ['12" pizza', "small"]}}, "required": ["q"]}}}
    model = models.load_model("local:gemma", n_ctx=512, max_tokens=60, n_threads=1, prompt_state_dir=None)
    for spec in (weather, quoted):
        reply = model.bind_tools([spec], tool_choice="required").invoke("Call the tool.")
        print([(c["name"], sorted(c["args"])) for c in reply.tool_calls], len(reply.invalid_tool_calls))
    try:
        model.invoke("hi", grammar="root ::= undefined-rule")
    except ConfigurationError as error:
        print("ConfigurationError", "Undefined rule" in str(error))
    """
)


def test_grammars_that_crashed_the_process_now_work_or_raise() -> None:
    """A pydantic Field(pattern=r"^\\d{5}$"), a quote in a tool name and enum, a grammar with a typo:
    each gave llama.cpp a grammar it rejects, and the process died (SIGSEGV) at the first token. In
    a child process, so that a crash fails this test rather than killing pytest."""
    done = subprocess.run(
        [sys.executable, "-c", CRASHED_BEFORE],
        capture_output=True,
        text=True,
        timeout=110,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    lines = done.stdout.splitlines()
    assert lines[0] == "[('weather', ['zip_code'])] 0"  # a call: the pattern is in the grammar
    assert lines[1] == "[('say\"hi', ['q'])] 0"
    assert lines[2] == "ConfigurationError True"


def spec(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": list(properties)}
    return {"type": "function", "function": {"name": name, "description": "x", "parameters": parameters}}


@pytest.mark.parametrize(
    ("tool", "follows"),
    [
        (
            spec("open_dir", {"path": {"enum": ["C:\\temp", "C:\\new"]}}),
            lambda a: a["path"] in ("C:\\temp", "C:\\new"),
        ),
        (spec("open_dir", {"a\\b": {"type": "integer"}}), lambda a: list(a) == ["a\\b"]),
        (spec("dir\\list", {"q": {"type": "string"}}), lambda a: list(a) == ["q"]),
    ],
)
def test_backslashes_in_names_and_values_give_the_calls_the_schema_means(
    tool: dict[str, Any], follows: Any
) -> None:
    """The grammar forced the enum value "C:\\temp" as C:<tab>emp, the argument a\\b as the key 'a\\x08',
    and a call to the tool dir\\list could never be read."""
    reply = gemma().bind_tools([tool], tool_choice="required").invoke("Call the tool.")
    assert reply.invalid_tool_calls == []
    [call] = reply.tool_calls
    assert call["name"] == tool["function"]["name"] and follows(call["args"]), call


def test_a_state_file_damaged_inside_is_not_used_and_is_replaced(tmp_path: Path) -> None:
    """4 KB overwritten in the middle of the KV data (size and header intact): llama.cpp loaded it as
    valid, and the damaged cache served every later process. A checksum now rejects it."""
    from langchain_core.messages import HumanMessage, SystemMessage

    question = [SystemMessage("You are a helpful assistant. " * 12), HumanMessage("Capital of France?")]
    settings = {"n_batch": 32, "max_tokens": 8, "prompt_state_dir": str(tmp_path)}
    gemma(**settings).invoke(question)
    (saved,) = tmp_path.glob("*.state")
    data = bytearray(saved.read_bytes())
    assert len(data) > 400_000
    data[300_000:304_000] = bytes([0x7B, 0x7F]) * 2000  # where llama.cpp's own checks see nothing
    saved.write_bytes(bytes(data))

    damaged = gemma(**settings).invoke(question)
    assert "input_token_details" not in (damaged.usage_metadata or {})  # read afresh, not from the file
    assert saved.read_bytes() != bytes(data)  # replaced by the state of the prompt read afresh
    again = gemma(**settings).invoke(question)
    assert again.usage_metadata["input_token_details"]["cache_read"] >= 32  # type: ignore[index]
    assert (
        again.content
        == damaged.content
        == gemma(**{**settings, "prompt_state_dir": None}).invoke(question).content
    )


def test_a_cancelled_ainvoke_stops_generating_at_the_next_token() -> None:
    """The caller went away (a timeout, a cancelled task): the model's thread used to write the whole
    reply anyway, holding the model from every other caller until ``max_tokens``."""
    import asyncio

    from explicit_react.llama_worker import in_turn

    model = gemma(max_tokens=200)
    client = model.client
    prompt = "Count from 1 to 500, one number per line."

    async def cancelled_early() -> int:
        task = asyncio.ensure_future(model.ainvoke(prompt))
        while client.completion_tokens < 3:  # it is writing
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # a job in the model's turn runs once the cancelled generation has ended: its token count
        return await in_turn(model._turns, lambda stopped: client.completion_tokens)

    written = asyncio.run(cancelled_early())
    assert 3 <= written < 50
    whole = model.invoke(prompt)  # uncut, the same prompt runs to max_tokens, on a model still sound
    assert whole.response_metadata["finish_reason"] == "length"
    assert whole.usage_metadata["output_tokens"] == 200  # type: ignore[index]


def test_a_call_cancelled_while_its_prompt_is_read_stops_reading_and_the_model_stays_sound() -> None:
    import asyncio

    from langchain_core.messages import HumanMessage, SystemMessage

    from explicit_react.llama_worker import in_turn

    prompt = [SystemMessage("You are a careful assistant who answers briefly. " * 40), HumanMessage("Hi?")]
    model = gemma(n_batch=8, max_tokens=8)
    client = model.client

    async def cancelled_while_reading() -> tuple[int, int]:
        task = asyncio.ensure_future(model.ainvoke(prompt))
        while client.prompt_tokens == 0:  # the generation began: its prompt is being read
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await in_turn(model._turns, lambda stopped: (client.n_tokens, client.prompt_tokens))

    read, length = asyncio.run(cancelled_while_reading())
    assert length > 300 and read < length  # it stopped reading part-way
    assert client.completion_tokens == 0
    # the next call reads on from the blocks already read and replies as a fresh model does
    again = model.invoke(prompt)
    assert again.content == gemma(n_batch=8, max_tokens=8).invoke(prompt).content


def test_ctrl_c_during_the_load_stops_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C that lands while llama.cpp calls the log callback (a load logs hundreds of lines) was
    dropped by ctypes: the load and the whole run went on (``explicit-react`` exited 0)."""
    from explicit_react import llama_log

    lines: list[str] = []

    def interrupted(line: str) -> bool:
        lines.append(line)
        if len(lines) == 20:
            raise KeyboardInterrupt
        return False

    monkeypatch.setattr(llama_log, "hear", interrupted)
    with pytest.raises(KeyboardInterrupt):
        gemma()
    assert len(lines) > 20  # the load went on in C; the interrupt came when it returned
    monkeypatch.undo()
    llama_log.raise_interrupt()  # nothing left pending


def test_a_forced_call_keeps_an_integer_argument_within_its_bounds() -> None:
    """llama-cpp-python's converter dropped ``minimum``/``maximum``: asked for 100, the model sent it,
    and the call could only be refused after it was written."""
    tool = spec("set_volume", {"level": {"type": "integer", "minimum": 3, "maximum": 7}})
    prompt = "Set the volume to 100. Call set_volume with level 100."
    reply = gemma(max_tokens=30).bind_tools([tool], tool_choice="required").invoke(prompt)
    assert reply.invalid_tool_calls == []
    [call] = reply.tool_calls
    assert 3 <= call["args"]["level"] <= 7, call


def test_a_saved_prompt_state_is_private_to_its_user(tmp_path: Path) -> None:
    """The state holds the first prompt's tokens, a question included: it was written 0644."""
    from langchain_core.messages import HumanMessage, SystemMessage

    folder = tmp_path / "prompt-states"
    question = [SystemMessage("You are a helpful assistant. " * 12), HumanMessage("My code is 4711. Why?")]
    gemma(n_batch=32, max_tokens=4, prompt_state_dir=str(folder)).invoke(question)
    (saved,) = folder.glob("*.state")
    assert (saved.stat().st_mode & 0o777, folder.stat().st_mode & 0o777) == (0o600, 0o700)
