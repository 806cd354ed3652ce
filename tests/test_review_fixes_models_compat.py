"""Fixes from a review of model loading, the CLI's --model and the drop-in executor, each with the
case that went wrong before: options misspelled or of the wrong kind were dropped silently or blamed
the model file; a blank key or name was taken; a Final Answer lost a quiz or a plan it held; text after
a leading JSON value in an Action Input was dropped; the classic iterator loaded memory twice."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_classic.memory import ConversationBufferMemory
from langchain_core.prompts import PromptTemplate
from langchain_core.tools import tool

from explicit_react import AgentExecutor, ConfigurationError, cli, create_react_agent
from explicit_react.models import load_model
from explicit_react.parser import parse
from explicit_react.scanners import read_tool_input
from explicit_react.testing import ScriptedChatModel
from tests.test_models import LLAMA_CPP_INSTALLED

# -- load_model's options -----------------------------------------------------------------------------


@pytest.mark.skipif(not LLAMA_CPP_INSTALLED, reason="llama-cpp-python is not installed")
def test_an_option_of_the_wrong_kind_names_the_option_not_the_file(tmp_path: Path) -> None:
    file = tmp_path / "model.gguf"
    file.write_bytes(b"GGUF")
    with pytest.raises(ConfigurationError) as error:
        load_model(f"gguf:{file}", n_ctx="big", check_build=False)
    assert "n_ctx: Input should be a valid integer" in str(error.value)
    assert "could not load" not in str(error.value)


def test_a_scripted_models_options_are_checked(tmp_path: Path) -> None:
    file = tmp_path / "replies.txt"
    file.write_text("Final Answer: ok")
    with pytest.raises(ConfigurationError, match="no option 'dely'; did you mean 'delay'"):
        load_model(f"scripted:{file}", dely=5)
    with pytest.raises(ConfigurationError) as error:
        load_model(f"scripted:{file}", delay="slow")
    assert "delay: Input should be a valid number" in str(error.value)
    assert "Write a JSON list" not in str(error.value)  # the file is fine
    assert load_model(f"scripted:{file}", delay=0.0).invoke("q").content == "Final Answer: ok"


def test_a_missing_jsonschema_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # llama-cpp-python alone, without the [local] extra
    with pytest.raises(ConfigurationError, match=r"Local models need jsonschema.*explicit-react\[local"):
        load_model("local:gemma")


# -- Gemini's key and name ----------------------------------------------------------------------------


def test_gemini_refuses_a_model_option_and_a_key_that_is_not_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "from-env")
    with pytest.raises(ConfigurationError, match="not a 'model' option"):
        load_model("gemini-2.5-flash", model="gemini-pro")
    with pytest.raises(ConfigurationError, match="must be a string, not int"):
        load_model("gemini-2.5-flash", google_api_key=12345678901)


def test_a_blank_key_option_is_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="needs a Gemini API key"):
        load_model("gemini-2.5-flash", google_api_key="   ")
    monkeypatch.setenv("GOOGLE_API_KEY", "from-env")  # then the environment's key is used, as for none
    model = load_model("gemini-2.5-flash", google_api_key="   ")
    assert model.google_api_key.get_secret_value() == "from-env"  # type: ignore[attr-defined]


def test_an_empty_model_name_on_the_command_line_is_an_error(capsys: Any) -> None:
    assert cli.main(["--model", "", "--tools", "none", "hello"]) == 2
    assert "Unknown model ''" in capsys.readouterr().err


# -- the parser: what a Final Answer and an Action Input hold --------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Here is a quiz:\nQuestion: What is 2+2?\nAnswer: 4",
        "FAQ\n\nQuestion: Is it free?\nAnswer: Yes.",
        "Plan:\nAction: restart the server\nResult: fixed",
    ],
)
def test_a_final_answer_keeps_its_own_questions_and_steps(answer: str) -> None:
    result = parse(f"Thought: done\nFinal Answer: {answer}", tools=["search"])
    assert getattr(result, "answer", None) == answer


@pytest.mark.parametrize(
    "after",
    ["\nQuestion: What is 6*7?\nThought: I know this", "\nAction: search", "\nQuestion: And Italy?"],
)
def test_an_invented_turn_after_the_answer_is_still_cut(after: str) -> None:
    assert getattr(parse(f"Thought: done\nFinal Answer: 42{after}", tools=["search"]), "answer", None) == "42"


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("[1, 2], [3, 4]", "[1, 2], [3, 4]"),
        ('{"a": 1}, {"b": 2}', '{"a": 1}, {"b": 2}'),
        ('{"q": "x"} and more', '{"q": "x"} and more'),
        ('"hello" world', '"hello" world'),
        ('{"q": "x"}', {"q": "x"}),  # noise after a value is still dropped
        ('{"q": "x"} </s>', {"q": "x"}),
        ('{"q": "x"}}', {"q": "x"}),
        ('{"q": "x"} (a search)', {"q": "x"}),
    ],
)
def test_text_after_a_leading_json_value_is_passed_as_written(written: str, read: object) -> None:
    assert read_tool_input(written) == read


# -- the classic iterator ---------------------------------------------------------------------------


class CountingMemory(ConversationBufferMemory):
    loads: int = 0

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        self.loads += 1
        return super().load_memory_variables(inputs)


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return "nothing"


def test_the_iterator_loads_memory_once_per_run() -> None:
    memory = CountingMemory(memory_key="history", output_key="output")
    prompt = PromptTemplate.from_template("{history} {tools} [{tool_names}] {input} {agent_scratchpad}")
    agent = create_react_agent(ScriptedChatModel(["Final Answer: a"]), [lookup], prompt)
    executor = AgentExecutor(agent=agent, tools=[lookup], memory=memory)
    chunks = list(executor.iter({"input": "q"}))
    assert chunks[-1]["output"] == "a"
    assert memory.loads == 1  # as langchain_classic's iterator: the inputs were prepared once
