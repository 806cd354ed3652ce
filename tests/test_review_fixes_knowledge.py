"""Defects a review of the knowledge-base tool found, each with the input that showed it.

1. Searches at once (threads, ``abatch``) shared one Snowball stemmer, which keeps the word it works
   on in itself: stems came out garbled ("founded" -> "warranti"), the stem cache kept them for the
   whole process, and some calls raised ``IndexError`` out of the tool.
2. The index was built once: passages added or replaced later were never searched, and positions
   in the old index answered with unrelated passages.
3. Searches at once that found no index each built their own (8 builds for 8 threads).
4. Combining marks split words: "हिन्दी" was ह, न, द, Thai words broke apart, "İstanbul" was "stanbul".
5. Chinese and Japanese paragraphs were cut at a character count, parting a price ("九千四 | 百元").
6. "12kg" was one word, which "12 kg" never matched.
7. A Windows-1252 file read as UTF-8: "café" became "caf\ufffd" and was not found.
8. ``from_folder(suffixes="md")`` or ``(".MD",)`` matched nothing, and ``".md"`` (a string) matched
   "LICENSE", all without a word.
9. ``explicit-react --tools knowledge:FILE`` read the file as UTF-8 whatever it was, where a folder's
   files are read in their encoding: a UTF-16 file was indexed as text full of NULs.
"""

from __future__ import annotations

import copy
import pickle
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import snowballstemmer

from explicit_react import cli
from explicit_react.tools import KnowledgeBaseTool, knowledge
from explicit_react.tools.knowledge import passages_from, split_passages, tokenize


def test_stems_are_right_when_many_threads_search_at_once() -> None:
    rng = random.Random(3)
    syllables = ["war", "ran", "ty", "found", "ed", "ness", "ing", "de", "liv", "ery", "ful", "ize"]
    words = sorted({"".join(rng.choices(syllables, k=rng.randint(2, 5))) for _ in range(6000)})
    knowledge._stem.cache_clear()
    errors: list[BaseException] = []

    def stem_all(offset: int) -> None:
        try:
            for word in words[offset:] + words[:offset]:
                knowledge._stem(word)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=stem_all, args=(i * 500,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    own = snowballstemmer.stemmer("english")
    wrong = [word for word in words if knowledge._stem(word) != own.stemWord(word)]
    assert (errors, wrong) == ([], [])


def test_passages_added_or_replaced_after_a_search_are_searched() -> None:
    kb = KnowledgeBaseTool(["The Lumacrab costs 1270 dollars."])
    assert "1270" in kb.invoke("Lumacrab price")
    kb.passages.extend(passages_from(["The Tidewalker T9 costs 9400 dollars."], 800))
    assert "9400" in kb.invoke("Tidewalker price")
    kb.passages = passages_from(["Shipping takes 5 days."], 800)
    assert kb.invoke("Lumacrab price").startswith("No passages")
    assert "5 days" in kb.invoke("shipping")


def test_searches_at_once_build_one_index(monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[int] = []
    build = knowledge._Index.build.__func__  # type: ignore[attr-defined]

    def counted(cls: type, passages: list[knowledge.Passage]) -> knowledge._Index:
        builds.append(len(passages))
        return build(cls, passages)

    monkeypatch.setattr(knowledge._Index, "build", classmethod(counted))
    kb = KnowledgeBaseTool([f"Robot {i} weighs {i} kg." for i in range(3000)])
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(kb.invoke, [f"robot {i}" for i in range(8)]))
    assert builds == [3000] and all("Robot" in result for result in results)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),
        ("ราคาสินค้า", ["ราคาสินค้า"]),
        ("İstanbul", ["istanbul"]),
        ("cafe\u0301 résumé", ["café", "résumé"]),  # an accent written apart is the same letter
        ("15kg and 9.7 kg", ["15", "kg", "9.7", "kg"]),
        ("Sistguck Z5, mp3", ["sistguck", "z5", "mp3"]),  # a letter leads: one word
        ("1,270 or 1270", ["1270", "1270"]),
    ],
)
def test_words_keep_their_marks_and_numbers_part_from_units(text: str, words: list[str]) -> None:
    assert tokenize(text) == words


def test_a_hindi_word_finds_its_passage_not_one_sharing_its_letters() -> None:
    kb = KnowledgeBaseTool(["हिन्दी भारत की राजभाषा है।", "दिन में हिम गिरा।"], k=1)
    assert "राजभाषा" in kb.invoke("हिन्दी")
    turkish = KnowledgeBaseTool(["Ankara is the capital.", "İstanbul is the largest city."], k=1)
    assert "largest" in turkish.invoke("Istanbul")


def test_a_glued_unit_finds_the_spaced_one_and_back() -> None:
    glued = KnowledgeBaseTool(["The Brisk Arm weighs 15kg.", "The Sistguck Z5 weighs 12kg."], k=1)
    assert "Sistguck" in glued.invoke("which robot weighs 12 kg")
    spaced = KnowledgeBaseTool(["The Brisk Arm weighs 15 kg.", "The Sistguck Z5 weighs 12 kg."], k=1)
    assert "Sistguck" in spaced.invoke("12kg")


def test_chinese_paragraphs_are_cut_at_sentence_ends() -> None:
    sentence = "潮行者T9机器人是一款水下清洁设备，它的价格是九千四百元。"
    pieces = split_passages(sentence * 6, 100)
    assert "".join(pieces).replace(" ", "") == sentence * 6  # nothing lost
    assert all(piece.endswith("。") for piece in pieces)


def test_a_windows_1252_file_is_read_as_such(tmp_path: Path) -> None:
    (tmp_path / "menu.txt").write_bytes("Le café crème coûte 3 euros. « Spécial » – 5 €.".encode("cp1252"))
    # A UTF-8 file with one pasted Windows-1252 line keeps its UTF-8: only the bad bytes are read so.
    utf8 = "Our refund policy — “no questions asked” — costs €5.\n\n"
    (tmp_path / "notes.md").write_bytes(utf8.encode() + "Menu: thé vert.".encode("cp1252"))
    kb = KnowledgeBaseTool.from_folder(tmp_path)
    texts = {passage.source: passage.text for passage in kb.passages if passage.source == "menu.txt"}
    assert texts["menu.txt"] == "Le café crème coûte 3 euros. « Spécial » – 5 €."
    assert [p.text for p in kb.passages if p.source == "notes.md"] == [utf8.strip(), "Menu: thé vert."]
    assert "[menu.txt]" in kb.invoke("café crème")


@pytest.mark.parametrize("suffixes", ["md", ".MD", ("md",), [".md"], {"MD"}])
def test_suffixes_are_read_with_or_without_their_dot_in_any_case(tmp_path: Path, suffixes: object) -> None:
    (tmp_path / "notes.md").write_text("The vault code is 4711.")
    (tmp_path / "LICENSE").write_text("The vault licence.")
    (tmp_path / "a.txt").write_text("The vault door is red.")
    kb = KnowledgeBaseTool.from_folder(tmp_path, suffixes=suffixes)  # type: ignore[arg-type]
    assert [passage.source for passage in kb.passages] == ["notes.md"]


@pytest.mark.parametrize("suffixes", [(), "", (".",), (None,)])
def test_suffixes_that_name_no_ending_are_refused(tmp_path: Path, suffixes: object) -> None:
    with pytest.raises(ValueError, match="file name endings"):
        KnowledgeBaseTool.from_folder(tmp_path, suffixes=suffixes)  # type: ignore[arg-type]


def test_the_cli_reads_a_single_knowledge_file_as_a_folders_files(tmp_path: Path) -> None:
    (tmp_path / "u16.txt").write_text("The vault code is 4711.", encoding="utf-16")
    (one,) = cli.build_tools(f"knowledge:{tmp_path / 'u16.txt'}")
    assert "4711" in one.invoke({"query": "vault code"})
    (tmp_path / "bom.md").write_bytes("\ufeff# Vault\nThe code is 4711.".encode())
    (bom,) = cli.build_tools(f"knowledge:{tmp_path / 'bom.md'}")
    assert bom.passages[0].text == "# Vault The code is 4711."  # the heading seen: no mark before it
    (tmp_path / "data.bin").write_bytes(b"\x00\x01binary")
    with pytest.raises(cli.UsageError, match="binary file"):
        cli.build_tools(f"knowledge:{tmp_path / 'data.bin'}")


def test_a_tool_building_its_index_does_not_hold_up_another_tools_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by a review of the service path: one lock for every tool's index build, so a request with
    a big context held up the searches of every other request (the small one timed out behind it)."""
    started, release = threading.Event(), threading.Event()
    build = knowledge._Index.build

    def slow_build(passages: list[knowledge.Passage]) -> knowledge._Index:
        if any("slow" in passage.text for passage in passages):
            started.set()
            release.wait(30)
        return build(passages)

    monkeypatch.setattr(knowledge._Index, "build", staticmethod(slow_build))
    big, small = KnowledgeBaseTool(["a slow document"]), KnowledgeBaseTool(["Paris is in France."])
    building = threading.Thread(target=big.invoke, args=("document",))
    building.start()
    try:
        assert started.wait(10)
        answered: list[str] = []
        other = threading.Thread(target=lambda: answered.append(small.invoke("Paris")))
        other.start()
        other.join(10)
        assert answered and "Paris is in France." in answered[0]
    finally:
        release.set()
        building.join(30)


def test_a_copied_or_pickled_tool_has_a_build_lock_of_its_own() -> None:
    tool = KnowledgeBaseTool(["Paris is in France."])
    for copy_of in (pickle.loads(pickle.dumps(tool)), copy.deepcopy(tool)):
        assert copy_of._building is not tool._building
        assert "Paris is in France." in copy_of.invoke("Paris")
