"""The bench's name-link diagnostics (bench/eval/name_links.py): which names a search's results tie
together, the choice re-read's sentences, the calculator numbers taken from results about other
things, and perfect_steps' --values-first send-back."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

EVAL = Path(__file__).resolve().parents[1] / "bench" / "eval"
sys.path.insert(0, str(EVAL))

import extraction_replay  # noqa: E402
import linked_numbers_replay  # noqa: E402
import perfect_steps  # noqa: E402
from name_links import names_in, sentences, unlinked_names  # noqa: E402

CHAIN = "Who founded the company that makes the Randcoth H5?"
ELSEWHERE = (
    "1. [news.md] Tusk Aldmere founded Kabu Robotics in 1990.\n2. [products.md] The Randcoth H5 weighs 3 kg."
)


def test_names_drop_the_words_a_sentence_starts_with() -> None:
    assert names_in("In which town does Maithex Kitchens have its headquarters?") == ["maithex kitchens"]
    assert names_in("The Huslel K4 is made by Gourdound Marine in 1990.") == ["huslel k4", "gourdound marine"]


def test_a_pronoun_sentence_speaks_of_what_its_line_began_with() -> None:
    found = list(sentences("1. [p.md] The Colpros X6 weighs 3 kg. It is made by Mealltos Robotics."))
    assert found == [
        ("The Colpros X6 weighs 3 kg.", ["colpros x6"]),
        ("It is made by Mealltos Robotics.", ["mealltos robotics", "colpros x6"]),
    ]


@pytest.mark.parametrize(
    ("answer", "sources", "unlinked"),
    [
        ("Tusk Aldmere", ELSEWHERE, ["tusk aldmere"]),  # from a result about another company
        ("Nessa Quorb", "The Randcoth H5 is made by Vionlio Optics.\nVionlio Optics was founded by Nessa Quorb.", []),
        ("Nessa Quorb", "The Randcoth H5 weighs 3 kg. It is made by Vionlio Optics.\nQuorb founded Vionlio Optics. Nessa Quorb lives in Pell.", []),
        ("Ada Lovelace", ELSEWHERE, []),  # a name no result states is not looked at
        ("1990", ELSEWHERE, []),
    ],
)  # fmt: skip
def test_a_name_is_unlinked_when_no_chain_of_sentences_ties_it_to_the_question(
    answer: str, sources: str, unlinked: list[str]
) -> None:
    assert unlinked_names(CHAIN, answer, f"{CHAIN}\n{sources}") == unlinked


def test_a_choice_question_is_re_read_from_the_sentences_naming_its_options() -> None:
    question = "Which is heavier, the Hirron H5 or the Maxlur M7?"
    results = [
        "1. [p.md] The Hirron H5 weighs 4 kg. It is sold in red.\n2. [p.md] The Vost T1 weighs 9 kg.",
        "1. [n.md] A Maxlur M7 weighs 7 kg.",
    ]
    assert extraction_replay.option_sentences(question, results) == [
        "The Hirron H5 weighs 4 kg.",
        "It is sold in red.",
        "A Maxlur M7 weighs 7 kg.",
    ]
    assert extraction_replay.option_sentences("How heavy is the Hirron H5?", results) is None


def test_a_calculator_number_from_a_result_about_something_else_is_flagged(
    tmp_path: Path, capsys: Any
) -> None:
    question = "How many years after its maker was founded was the Lastnul R7 launched?"
    results = [
        "1. [n.md] The Lastnul R7 is made by Ciosclond Instruments.\n2. [t.md] Pranermouth was founded in 1531."
    ]
    assert linked_numbers_replay.unlinked_numbers(question, "2019 - 1531", results) == [1531.0]
    linked = [*results, "1. [h.md] Ciosclond Instruments was founded in 1985."]
    assert linked_numbers_replay.unlinked_numbers(question, "2019 - 1985", linked) == []

    steps = [
        {"action": "knowledge_search", "input": "x", "observation": results[0], "error": None},
        {"action": "calculator", "input": "2019 - 1531", "observation": "488", "error": None},
    ]
    record = {"question": question, "correct": False, "trace": steps}
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"records": {"explicit": [record, {**record, "trace": steps[:1]}]}}))
    assert linked_numbers_replay.main([str(path)]) == 0
    assert "| wrong | 1 | 1 |" in capsys.readouterr().out


def test_values_first_sends_a_choice_answer_back_once(tmp_path: Path) -> None:
    out = tmp_path / "values.json"
    argv = ["--seeds", "1", "--per-kind", "2", "--kinds", "comparison", "--values-first", "--model", "ideal"]
    assert perfect_steps.main([*argv, "--out", str(out)]) == 0
    records = json.loads(out.read_text(encoding="utf-8"))["records"]
    assert {r["kind"] for r in records} == {"comparison"} and len(records) == 2
    assert all(r["first_correct"] and r["correct"] for r in records)  # the ideal answer, given twice
