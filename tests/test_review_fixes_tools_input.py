"""Inputs a review of the built-in tools found misread, each with the input that showed it.

1. The calculator read "200*15%+5" as 200*15 % +5 and answered 0 without a word (only "15% + 5",
   with a space after the sign, was refused); "15% * 200" and "12% of 4,850" got a bare syntax or
   words error with no word about the percent sign.
2. ``knowledge_search`` read "Lumacrab's" as two words, "lumacrab" and "s": the "s" counted against
   every passage without a possessive, and pushed the one answering the question down.
3. The file tools read a backslash as part of a file name: "notes\\a.txt" wrote a file of that
   name at the top instead of a.txt in notes, and "..\\x" passed the check for "..".
4. ``search_files("**/*.txt")`` missed the top folder's .txt files.
5. ``write_file("notes/", ...)`` wrote a file named "notes"; "~notes.txt" was refused as a home
   folder.
6. The calculator refused the signs of arithmetic as they are printed ("3 × 4", "12 ÷ 4", "3 − 1"
   with U+2212, "5²", "4 x 12.50") and a closing "=" ("2+2=", "2 + 2 = ?"): each an "invalid
   character" or "invalid syntax" error that cost the model a step.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.tools import BaseTool

from explicit_react.tools import KnowledgeBaseTool, file_tools
from explicit_react.tools.calculator import calculator
from explicit_react.tools.knowledge import tokenize


@pytest.mark.parametrize(
    "expression",
    ["200*15%+5", "100-20%-5", "200 * 15%+ 5", "15% * 200", "12%*4850", "12% of 4,850", "15 % x 200", "7%-2"],
)
def test_a_percentage_is_refused_with_how_to_write_it(expression: str) -> None:
    observation = calculator.invoke(expression)
    assert observation.startswith("Error: % is the remainder of a division here"), observation
    assert repr(expression) in observation and "15/100*200" in observation
    assert "7 % (-2)" in observation  # and how to write a remainder by a negative number


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("7 % 3", "1"),
        ("10 % -3", "-2"),
        ("7%(-2)", "-1"),
        ("7 % (-2)", "-1"),
        ("(7%3)*2", "2"),
        ("2**3 % 5", "3"),
    ],
)
def test_a_remainder_is_still_computed(expression: str, result: str) -> None:
    assert calculator.invoke(expression) == result


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Lumacrab's price", ["lumacrab", "price"]),
        ("the crab\u2019s shell", ["crab", "shell"]),
        ("we'll see, don't wait", ["we", "see", "don", "wait"]),
        ("O'Brien", ["o", "brien"]),  # an apostrophe inside a name is not a contraction's
    ],
)
def test_the_tail_of_a_possessive_or_contraction_is_not_a_word(text: str, words: list[str]) -> None:
    assert tokenize(text) == words


def test_a_possessive_question_finds_its_passage_first() -> None:
    kb = KnowledgeBaseTool(
        [
            "Lumacrab price list: 1270 dollars.",
            "It's the Lumacrab's rival's shell that's studied: the crab's colour is blue.",
        ],
        k=1,
    )
    assert "1270 dollars" in kb.invoke("What is the Lumacrab's price?")


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("3 × 4", "12"),
        ("12 ÷ 4", "3"),
        ("3 \u2212 1", "2"),
        ("2·3", "6"),
        ("5²", "25"),
        ("(2+3)³", "125"),
        ("4 x 12.50", "50"),
        ("3x4", "12"),
        ("10 X (2+1)", "30"),
        ("2+2=", "4"),
        ("2 + 2 = ?", "4"),
        ("0x1F", "31"),  # a hex number keeps its x
    ],
)
def test_printed_signs_of_arithmetic_are_read(expression: str, result: str) -> None:
    assert calculator.invoke(expression) == result


def test_an_error_after_the_signs_are_read_names_the_expression_as_written() -> None:
    observation = calculator.invoke("3 × (4 =")
    assert observation.startswith("Error: invalid expression") and "'3 × (4 ='" in observation


def tools(root: Path) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in file_tools(root)}


def test_a_backslash_is_a_folder_separator(tmp_path: Path) -> None:
    files = tools(tmp_path)
    assert files["write_file"].invoke({"path": "notes\\a.txt", "content": "hello\n"}) == (
        "Wrote 6 characters (1 lines) to notes/a.txt."
    )
    assert (tmp_path / "notes" / "a.txt").read_text() == "hello\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes"]
    assert "hello" in files["read_file"].invoke({"path": "notes\\a.txt"})


@pytest.mark.parametrize("path", ["..\\outside.txt", "notes\\..\\..\\outside.txt"])
def test_a_backslashed_parent_is_refused(tmp_path: Path, path: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    observation = tools(root)["write_file"].invoke({"path": path, "content": "x"})
    assert observation.startswith("Error:") and "contains '..'" in observation
    assert sorted(p.name for p in tmp_path.iterdir()) == ["root"] and not any(root.iterdir())


def test_a_glob_with_two_stars_includes_the_top_folder(tmp_path: Path) -> None:
    for name in ("top.txt", "sub/inner.txt", "sub/deeper/low.txt", "sub/skip.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    found = tools(tmp_path)["search_files"].invoke({"glob": "**/*.txt"})
    assert sorted(found.splitlines()) == ["sub/deeper/low.txt", "sub/inner.txt", "top.txt"]
    assert sorted(tools(tmp_path)["search_files"].invoke({"glob": "sub/**/*.txt"}).splitlines()) == [
        "sub/deeper/low.txt",
        "sub/inner.txt",
    ]


def test_writing_to_a_folder_path_is_refused(tmp_path: Path) -> None:
    observation = tools(tmp_path)["write_file"].invoke({"path": "notes/", "content": "x"})
    assert observation.startswith("Error: 'notes/' names a folder; give a file name")
    assert not (tmp_path / "notes").exists()


def test_a_file_name_starting_with_a_tilde_is_a_file_and_a_home_folder_is_refused(tmp_path: Path) -> None:
    files = tools(tmp_path)
    assert files["write_file"].invoke({"path": "~notes.txt", "content": "x"}).startswith("Wrote 1 characters")
    assert (tmp_path / "~notes.txt").read_text() == "x"
    for home in ("~", "~/notes.txt", "~root/notes.txt"):
        assert "is an absolute path" in files["write_file"].invoke({"path": home, "content": "x"})


def test_a_search_that_finds_nothing_names_where_it_looked_without_reading_as_dot_dot(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("hello\n")
    files = tools(tmp_path)
    assert files["grep"].invoke({"pattern": "absent"}) == "No matches for 'absent' in the workspace root."
    assert files["grep"].invoke({"pattern": "absent", "path": "sub\\"}) == "No matches for 'absent' in sub."
    assert files["search_files"].invoke({"glob": "*.md", "dir": "sub"}) == "No files match '*.md' in sub."
