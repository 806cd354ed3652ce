"""The knowledge-base tool: BM25 over user documents, chunked into passages, with sources."""

from __future__ import annotations

import asyncio
import codecs
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document

from explicit_react.tools import KnowledgeBaseTool
from explicit_react.tools.knowledge import MAX_QUERY_WORDS, split_passages, tokenize

DOCUMENTS = [
    {"content": "Refunds are issued within 14 days of the purchase date.", "source": "refund-policy.md"},
    {"page_content": "Standard shipping takes 3 to 5 business days.", "title": "Shipping"},
    Document(
        page_content="Our support team answers email within one day.", metadata={"source": "support.txt"}
    ),
    "The office is closed on public holidays.",
]


def test_ranked_results_with_sources() -> None:
    tool = KnowledgeBaseTool(DOCUMENTS, k=2)
    observation = tool.invoke("How many days until I get my refund?")
    first = observation.splitlines()[0]
    assert first == "1. [refund-policy.md] Refunds are issued within 14 days of the purchase date."
    assert observation.splitlines()[1].startswith("2. ")
    assert len(observation.splitlines()) == 2


@pytest.mark.parametrize(
    ("query", "source"),
    [
        ("shipping time", "[Shipping]"),
        ("support email", "[support.txt]"),
        ("holidays", "[document 4]"),
    ],
)
def test_each_document_kind_is_searchable(query: str, source: str) -> None:
    assert source in KnowledgeBaseTool(DOCUMENTS).invoke(query).splitlines()[0]


def test_no_match_is_a_clear_message() -> None:
    assert KnowledgeBaseTool(DOCUMENTS).invoke("zebra") == "No passages in the knowledge base match 'zebra'."


def test_stopword_only_query_has_no_results() -> None:
    assert KnowledgeBaseTool(DOCUMENTS).invoke("what is the").startswith("No passages")


def test_empty_knowledge_base_and_empty_query_are_errors() -> None:
    assert KnowledgeBaseTool().invoke("refund") == "Error: the knowledge base has no documents"
    assert KnowledgeBaseTool(DOCUMENTS).invoke(" ").startswith("Error: empty query")


def test_long_documents_are_chunked_into_passages() -> None:
    filler = " ".join(f"Filler sentence number {i} about nothing in particular." for i in range(200))
    text = filler + "\n\nThe secret launch code word is marmalade.\n\n" + filler
    tool = KnowledgeBaseTool([{"content": text, "source": "big.txt"}], passage_chars=300, k=1)
    assert len(tool.passages) > 20
    assert all(len(passage.text) <= 300 for passage in tool.passages)
    observation = tool.invoke("launch code word")
    assert observation.startswith("1. [big.txt] ")
    assert "marmalade" in observation
    assert len(observation) < 350


def test_from_folder_reads_txt_and_md_only(tmp_path: Path) -> None:
    (tmp_path / "guides").mkdir()
    (tmp_path / "guides" / "returns.md").write_text("# Returns\n\nReturns need a receipt.")
    (tmp_path / "faq.txt").write_text("Gift cards never expire.")
    (tmp_path / "data.csv").write_text("receipt,gift\n")
    tool = KnowledgeBaseTool.from_folder(tmp_path, k=5)
    assert sorted({p.source for p in tool.passages}) == ["faq.txt", "guides/returns.md"]
    assert tool.invoke("receipt").startswith("1. [guides/returns.md] # Returns Returns need a receipt.")


def test_from_documents_and_async() -> None:
    tool = KnowledgeBaseTool.from_documents(DOCUMENTS)
    assert asyncio.run(tool.ainvoke({"query": "refund"})).startswith("1. [refund-policy.md]")


def test_unsupported_documents_are_a_developer_error() -> None:
    with pytest.raises(TypeError, match="unsupported document type"):
        KnowledgeBaseTool([42])
    with pytest.raises(TypeError, match="no 'content'"):
        KnowledgeBaseTool([{"text": "x"}])
    with pytest.raises(ValueError, match="not a directory"):
        KnowledgeBaseTool.from_folder("/nonexistent/folder")


def test_tokenize_and_split() -> None:
    assert tokenize("What are the Refunds, in 2024?") == ["refund", "2024"]
    # English stems: the forms of a word match each other.
    assert tokenize("founding founded founder") == ["found", "found", "founder"]
    assert tokenize("Shipping ships; opening opened") == ["ship", "ship", "open", "open"]
    # Paragraphs stay apart (a passage never mixes two of them); sentences of one paragraph pack.
    assert split_passages("one.\n\ntwo.", 100) == ["one.", "two."]
    assert split_passages("First one. Second one. Third one.", 24) == ["First one. Second one.", "Third one."]
    # A heading stays with the paragraph under it, with or without a blank line between them; the
    # next section starts its own passage; a heading with nothing under it is a passage of its own
    # (dropping it lost its text: "# Zorblax warranty is 7 years" gave no passage).
    text = "# Prices\n\nThe Pellet costs 120 dollars.\n\n# Lumacrab\nThe Lumacrab costs 1270.\n\n# End"
    assert split_passages(text, 100) == [
        "# Prices The Pellet costs 120 dollars.",
        "# Lumacrab The Lumacrab costs 1270.",
        "# End",
    ]
    assert split_passages("# A\n\n# B\n\nText.", 100) == ["# A", "# B Text."]
    assert split_passages("a" * 250, 100) == ["a" * 100, "a" * 100, "a" * 50]


CATALOGUE = [
    {"content": "The Rover X2 is a garden robot. The Rover X2 costs 900 dollars.", "source": "products"},
    {"content": "In 2022 a school ordered 4 Rover X2 robots.", "source": "orders"},
    {"content": "The Rover X2 has a warranty of 3 years.", "source": "warranty"},
    {"content": "Shipping: a flat fee of 45 dollars per delivery.", "source": "shipping"},
    *(
        {"content": f"The {name} is a toy. It is sold in {place}.", "source": name}
        for name, place in [
            ("Pellet", "Tessaly"),
            ("Bolt", "Ostgard"),
            ("Kite", "Vantry"),
            ("Mote", "Hallam"),
        ]
    ),
]


def _plain_bm25(documents: list[dict[str, str]], query: str, k: int) -> list[str]:
    from rank_bm25 import BM25Plus

    words = [tokenize(d["content"]) for d in documents]
    scores = BM25Plus(words).get_scores(tokenize(query))
    matching = [i for i in range(len(documents)) if set(words[i]) & set(tokenize(query))]
    order = sorted(matching, key=lambda i: (-scores[i], i))
    return [documents[i]["source"] for i in order[:k]]


def test_a_rare_query_word_is_not_crowded_out_by_common_ones() -> None:
    query = "shipping cost for Rover X2 robots"
    assert "shipping" not in _plain_bm25(CATALOGUE, query, 3)  # what plain BM25 returns
    sources = [passage.source for _, passage in KnowledgeBaseTool(CATALOGUE, k=3).search(query)]
    assert sources == ["products", "orders", "shipping"]  # the lowest result, redundant, made room


def test_results_that_already_cover_the_query_are_plain_bm25() -> None:
    for query in ("Rover X2 warranty", "order shipping fee", "Rover X2 robots ordered in 2022"):
        sources = [passage.source for _, passage in KnowledgeBaseTool(CATALOGUE, k=2).search(query)]
        assert sources == _plain_bm25(CATALOGUE, query, 2)


def test_a_result_holding_a_query_word_no_other_result_has_stays() -> None:
    # k=2: "warranty" and "school" each appear in only one of the two results; "shipping" finds no room.
    sources = [
        passage.source for _, passage in KnowledgeBaseTool(CATALOGUE, k=2).search("warranty school shipping")
    ]
    assert sorted(sources) == ["orders", "warranty"]


def test_a_common_query_word_does_not_push_out_a_result_about_the_subject() -> None:
    documents = [
        {"content": "Brun Bithshirk works at Treathcaick Kitchens as chief engineer.", "source": "a"},
        {"content": "Brun Bithshirk has been with Treathcaick Kitchens since 1987.", "source": "b"},
        {
            "content": "Outside work, Brun Bithshirk sings. Bithshirk, born in 1940, grew up far from here.",
            "source": "c",
        },
        *({"content": f"The {n} comes with a {n}-year warranty.", "source": f"w{n}"} for n in range(1, 6)),
    ]
    tool = KnowledgeBaseTool(documents, k=3)
    # "birth" is in no passage; "year" is in five, all about other things: it brings none of them in.
    assert sorted(passage.source for _, passage in tool.search("Brun Bithshirk birth year")) == [
        "a",
        "b",
        "c",
    ]
    # The old rule, which brought in any missing word, put a warranty in place of the birth year.
    words = set(tokenize("Brun Bithshirk birth year"))
    index = tool._current_index()
    ranked = sorted(
        (i for i, held in enumerate(index.words) if words & held),
        key=lambda i: (-len(words & index.words[i]), i),
    )
    chosen = tool._cover(index, ranked, words, rarer_than_held=False)
    assert [tool.passages[i].source for i in chosen][-1] == "w1"


def test_a_query_finds_another_form_of_its_words() -> None:
    documents = [
        {"content": "The Quillfern warranty lasts 2 years.", "source": "policies"},
        {"content": "Quillfern was founded in 2011 by Mara Ostrander.", "source": "company"},
    ]
    tool = KnowledgeBaseTool(documents, k=1)
    # Without stems only "quillfern" would match, in both, and the first passage would win the tie.
    assert (
        tool.invoke("Quillfern founding") == "1. [company] Quillfern was founded in 2011 by Mara Ostrander."
    )


def test_numbers_with_separators_are_one_word() -> None:
    assert tokenize("It weighs 9.7 kg and costs 1,270 dollars (v1.2.3).") == [
        "weigh", "9.7", "kg", "cost", "1270", "dollar", "v1", "2.3",
    ]  # fmt: skip
    documents = ["The Sistguck Z5 weighs 9.7 kg.", "The Brisk Arm weighs 7.9 kg."]
    assert KnowledgeBaseTool(documents, k=1).invoke("product weighing 9.7 kg") == (
        "1. [document 1] The Sistguck Z5 weighs 9.7 kg."
    )
    assert (
        KnowledgeBaseTool(["The Lumacrab costs 1,270 dollars.", "The Pellet costs 1 dollar."], k=1)
        .invoke("1270 dollars")
        .startswith("1. [document 1]")
    )


def test_words_in_any_script_are_searchable() -> None:
    documents = [
        "巴黎是法国的首都。",
        "باريس هي عاصمة فرنسا",
        "Москва — столица России.",
        "The sum of 2 and 3 is 5.",
    ]
    tool = KnowledgeBaseTool(documents, k=1)
    assert tool.invoke("法国的首都") == "1. [document 1] 巴黎是法国的首都。"
    assert tool.invoke("عاصمة فرنسا") == "1. [document 2] باريس هي عاصمة فرنسا"
    assert tool.invoke("столица России") == "1. [document 3] Москва — столица России."
    assert tool.invoke("résumé").startswith("No passages")  # not "r" + "sum" + "e"
    assert tokenize("Café CAFÉ") == ["café", "café"]  # composed and decomposed é match


def test_long_words_are_cut_without_losing_characters() -> None:
    text = "a" * 100 + " b " + "c" * 250 + " dd"
    assert split_passages(text, 100) == ["a" * 100, "b", "c" * 100, "c" * 100, "c" * 50 + " dd"]
    assert "".join(split_passages("x" * 1_000_000, 800)) == "x" * 1_000_000


def test_a_long_query_scores_as_plain_bm25() -> None:
    from rank_bm25 import BM25Plus

    # Repeated words count as often as they appear; unknown ones add nothing.
    tool = KnowledgeBaseTool(CATALOGUE, k=3)
    query = "Rover robots cost cost cost shipping unknownword " * 20
    plain = BM25Plus([tokenize(p.text) for p in tool.passages]).get_scores(tokenize(query))
    results = tool.search(query)
    assert len(results) == 3
    for score, passage in results:
        assert score == pytest.approx(plain[tool.passages.index(passage)], rel=1e-12)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "kb"
    (folder / "locked").mkdir(parents=True)
    (folder / "notes.md").write_text("The vault code is 4711.")
    (folder / "locked" / "hidden.md").write_text("The shipping fee is 45 dollars.")
    (tmp_path / "outside.txt").write_text("The outside secret is 99.")
    return folder


def test_from_folder_skips_unreadable_files_with_a_warning(tmp_path: Path, monkeypatch) -> None:
    folder = _folder(tmp_path)
    (folder / "private.txt").write_text("The payroll total is 5 dollars.")
    real_read_bytes = Path.read_bytes

    def read_bytes(path: Path) -> bytes:
        if path.name == "private.txt":
            raise PermissionError(13, "Permission denied", str(path))
        return real_read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    with pytest.warns(UserWarning, match=r"skipped .*private\.txt \(Permission denied\)"):
        tool = KnowledgeBaseTool.from_folder(folder)
    assert sorted({p.source for p in tool.passages}) == ["locked/hidden.md", "notes.md"]


def test_from_folder_reports_a_folder_it_cannot_list(tmp_path: Path, monkeypatch) -> None:
    import os

    folder = _folder(tmp_path)
    real_scandir = os.scandir

    def scandir(path):  # what an unreadable folder does for a user who is not root
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.warns(UserWarning, match=r"locked \(cannot list: Permission denied\)"):
        tool = KnowledgeBaseTool.from_folder(folder)
    assert [p.source for p in tool.passages] == ["notes.md"]


def test_from_folder_does_not_follow_a_link_out_of_the_folder(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "escape.txt").symlink_to(tmp_path / "outside.txt")
    (folder / "alias.md").symlink_to(folder / "notes.md")
    with pytest.warns(UserWarning, match=r"escape\.txt \(a link to a file outside the folder\)"):
        tool = KnowledgeBaseTool.from_folder(folder)
    assert sorted({p.source for p in tool.passages}) == ["alias.md", "locked/hidden.md", "notes.md"]
    assert tool.invoke("outside secret").startswith("No passages")


def test_a_file_name_that_is_not_utf8_is_a_printable_source(tmp_path: Path) -> None:
    import os

    folder = tmp_path / "kb"
    folder.mkdir()
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.txt"), "wb") as file:
        file.write(b"The robot weighs 9 kg.")
    observation = KnowledgeBaseTool.from_folder(folder).invoke("robot")
    assert observation == "1. [caf\ufffd.txt] The robot weighs 9 kg."
    observation.encode("utf-8")


def test_a_query_of_many_words_scores_only_its_rarest_few() -> None:
    # Each scored word costs a pass over every passage, in the agent's process: a 1,000-character
    # query of distinct words took seconds over 20,000 passages. The rarest words say the most.
    common = " ".join(f"word{i}" for i in range(400))
    passages = [f"{common} filler {i}" for i in range(50)] + ["The vault code is 4711."]
    tool = KnowledgeBaseTool(passages, k=3, passage_chars=10_000)
    tool.search("warm up")  # builds the index
    calls = []
    bm25 = tool._current_index().bm25
    score = bm25.get_scores

    def counted(query: list[str]) -> Any:
        calls.append(query)
        return score(query)

    bm25.get_scores = counted
    results = tool.search(f"{common} vault")
    assert len(calls) <= MAX_QUERY_WORDS + 1
    assert "The vault code is 4711." in [passage.text for _, passage in results]  # the rarest word is kept


# --- no text is lost in passages; a heading is Markdown only in Markdown documents ------------------

LONG_PARAGRAPH = " ".join(
    f"Sentence {i} says the robot has a feature numbered {i} that helps in the field." for i in range(14)
)


def _words(texts: list[str]) -> set[str]:
    return {word for text in texts for word in text.split()}


def test_a_heading_with_nothing_under_it_is_its_own_passage() -> None:
    assert split_passages("# Zorblax warranty is 7 years", 100) == ["# Zorblax warranty is 7 years"]
    assert split_passages("# A\n\n# B\n\nText.", 100) == ["# A", "# B Text."]
    tool = KnowledgeBaseTool([{"content": "# Zorblax warranty is 7 years", "source": "w.md"}])
    assert tool.invoke("Zorblax warranty") == "1. [w.md] # Zorblax warranty is 7 years"
    # A heading too long for one passage is cut like a paragraph, not dropped.
    long_heading = "# " + "word " * 60
    assert _words(split_passages(long_heading + "\n\n# Next", 100)) == _words([long_heading, "# Next"])


def test_a_hash_line_in_plain_text_is_ordinary_text() -> None:
    notes = "Inventory notes for 2023.\n\n# of units sold in 2023: 5120"
    tool = KnowledgeBaseTool([{"content": notes, "source": "notes.txt"}])
    assert [p.text for p in tool.passages] == ["Inventory notes for 2023.", "# of units sold in 2023: 5120"]
    assert "5120" in tool.invoke("units sold in 2023")
    notes += "\n\nThe warehouse is in Ostgard."
    assert [p.text for p in KnowledgeBaseTool([{"content": notes, "source": "notes.txt"}]).passages] == [
        "Inventory notes for 2023.",
        "# of units sold in 2023: 5120",
        "The warehouse is in Ostgard.",
    ]
    assert split_passages("# of units: 5\n\nMore.", 100, markdown=False) == ["# of units: 5", "More."]


@pytest.mark.parametrize(
    ("document", "markdown"),
    [
        ({"content": "", "source": "guide.md"}, True),
        ({"content": "", "source": "guide.markdown"}, True),
        ({"content": "", "source": "GUIDE.MD"}, True),
        ({"content": ""}, True),  # no source: Markdown, as before
        ({"content": "", "source": "faq"}, True),  # no file suffix says otherwise
        ({"content": "", "metadata": {"source": "docs/faq.md"}}, True),
        ({"content": "", "source": "notes.txt"}, False),
        ({"content": "", "title": "Notes", "source": "notes.txt"}, False),
        (Document(page_content="", metadata={"source": "log.TXT"}), False),
        ({"content": "", "source": "data.csv"}, False),
    ],
)
def test_which_documents_are_markdown(document: Any, markdown: bool) -> None:
    text = "# Heading\n\nBody."
    if isinstance(document, Document):
        document = Document(page_content=text, metadata=document.metadata)
    else:
        document = {**document, "content": text}
    expected = ["# Heading Body."] if markdown else ["# Heading", "Body."]
    assert [p.text for p in KnowledgeBaseTool([document]).passages] == expected


def test_from_folder_reads_hash_lines_of_txt_files_as_text(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("Inventory notes for 2023.\n\n# of units sold in 2023: 5120\n")
    (tmp_path / "guide.md").write_text("# Returns\n\nReturns need a receipt.\n\n# Gift cards\n")
    tool = KnowledgeBaseTool.from_folder(tmp_path, k=5)
    assert [(p.source, p.text) for p in tool.passages] == [
        ("guide.md", "# Returns Returns need a receipt."),
        ("guide.md", "# Gift cards"),
        ("notes.txt", "Inventory notes for 2023."),
        ("notes.txt", "# of units sold in 2023: 5120"),
    ]


def test_a_heading_stays_with_a_long_paragraph() -> None:
    assert len(LONG_PARAGRAPH) > 1_000
    passages = split_passages("# Tidewalker T9\n\n" + LONG_PARAGRAPH, 800)
    assert len(passages) == 2
    assert all(len(passage) <= 800 for passage in passages)
    assert all(passage.startswith("# Tidewalker T9 Sentence ") for passage in passages)
    assert _words(passages) == _words(["# Tidewalker T9", LONG_PARAGRAPH])
    tool = KnowledgeBaseTool([{"content": "# Tidewalker T9\n\n" + LONG_PARAGRAPH, "source": "t.md"}], k=1)
    assert "Tidewalker" in tool.invoke("feature numbered 13")
    # A heading longer than half a passage cannot share one with the paragraph: it is its own.
    heading = "# " + "Tidewalker " * 10
    passages = split_passages(heading + "\n\n" + LONG_PARAGRAPH[:150], 150)
    assert passages[0] == heading.strip()
    assert all(len(passage) <= 150 for passage in passages)
    assert _words(passages) == _words([heading, LONG_PARAGRAPH[:150]])


def test_a_paragraph_that_fits_alone_is_not_cut_for_its_heading() -> None:
    paragraph = "The Rover X2 was first sold in 2019. It is made in Ostgard. It weighs 4 kg."
    assert split_passages(f"# The Rover X2\n\n{paragraph}", len(paragraph) + 5) == [
        "# The Rover X2",
        paragraph,
    ]


def test_a_long_heading_is_kept_whole_when_its_short_paragraph_fits_with_it() -> None:
    heading = "# The long heading of the section about the robots and their fine prices"
    assert len(heading) > 50
    assert split_passages(f"{heading}\n\nThey cost 5.", 100) == [f"{heading} They cost 5."]


@pytest.mark.parametrize("seed", range(30))
def test_split_passages_never_loses_a_word(seed: int) -> None:
    import random

    rng = random.Random(seed)
    blocks = []
    for _ in range(rng.randint(1, 8)):
        kind = rng.choice(["heading", "heading+text", "text", "long"])
        heading = (
            "#" * rng.randint(1, 3)
            + " "
            + " ".join(f"h{rng.randint(0, 99)}" for _ in range(rng.randint(1, 30)))
        )
        text = " ".join(
            f"w{rng.randint(0, 999)}" + rng.choice(["", ".", ","]) for _ in range(rng.randint(1, 80))
        )
        blocks.append(
            {"heading": heading, "heading+text": f"{heading}\n{text}", "text": text, "long": text * 3}[kind]
        )
    document = "\n\n".join(blocks)
    for max_chars in (100, 220, 800):
        for markdown in (True, False):
            passages = split_passages(document, max_chars, markdown=markdown)
            assert all(len(passage) <= max_chars for passage in passages)
            assert _words(passages) == _words([document])


# --- a single document is one document -------------------------------------------------------------


@pytest.mark.parametrize(
    "document",
    [
        "The Quillfern warranty lasts 2 years.",
        {"content": "The Quillfern warranty lasts 2 years.", "source": "document 1"},
        Document(page_content="The Quillfern warranty lasts 2 years.", metadata={"source": "document 1"}),
    ],
)
def test_a_single_document_is_one_document_not_its_characters(document: Any) -> None:
    for tool in (KnowledgeBaseTool(document), KnowledgeBaseTool.from_documents(document)):
        assert [(p.source, p.text) for p in tool.passages] == [
            ("document 1", "The Quillfern warranty lasts 2 years.")
        ]


# --- a repeated passage is shown once ---------------------------------------------------------------


def test_identical_passages_take_one_result_slot() -> None:
    documents = [
        {"content": "alpha secret content", "source": "a.txt"},
        {"content": "alpha secret content", "source": "in.txt"},
        {"content": "other content here", "source": "b.txt"},
        {"content": "more content there", "source": "c.txt"},
    ]
    assert KnowledgeBaseTool(documents, k=2).invoke("content") == (
        "1. [a.txt] alpha secret content\n2. [b.txt] other content here"
    )
    assert len(KnowledgeBaseTool(documents, k=5).search("content")) == 3


def test_a_link_inside_the_folder_does_not_repeat_its_target(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "alias.md").symlink_to(folder / "notes.md")
    assert (
        KnowledgeBaseTool.from_folder(folder).invoke("vault code") == "1. [alias.md] The vault code is 4711."
    )


def test_coverage_does_not_count_a_repeated_passage() -> None:
    # Without the copy of "products": ["products", "orders", "shipping"] (see above).
    documents = [CATALOGUE[0], {**CATALOGUE[0], "source": "copy"}, *CATALOGUE[1:]]
    query = "shipping cost for Rover X2 robots"
    sources = [passage.source for _, passage in KnowledgeBaseTool(documents, k=3).search(query)]
    assert sources == ["products", "orders", "shipping"]
    # A query the results cover at once: the copy does not take the place of a third passage.
    sources = [passage.source for _, passage in KnowledgeBaseTool(documents, k=3).search("Rover X2")]
    assert len(sources) == 3 and "copy" not in sources


def test_from_folder_drops_a_utf8_byte_order_mark(tmp_path: Path) -> None:
    """Windows Notepad saves UTF-8 with a BOM: the first line is still a heading."""
    (tmp_path / "with_bom.md").write_text(
        "# Zorblax warranty\n\nThe period is five years.\n", encoding="utf-8-sig"
    )
    tool = KnowledgeBaseTool.from_folder(tmp_path)
    assert [p.text for p in tool.passages] == ["# Zorblax warranty The period is five years."]
    assert tool.invoke("zorblax period") == "1. [with_bom.md] # Zorblax warranty The period is five years."


@pytest.mark.parametrize(
    ("mark", "encoding"),
    [
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
        (codecs.BOM_UTF32_LE, "utf-32-le"),
    ],
    ids=["utf-16-le", "utf-16-be", "utf-32-le"],
)
def test_from_folder_reads_a_file_that_starts_with_a_utf16_or_utf32_byte_order_mark(
    tmp_path: Path, mark: bytes, encoding: str
) -> None:
    """As Windows tools (PowerShell's Out-File, Notepad's "Unicode") save text: not mojibake."""
    text = "# Kumquats\n\nThe kumquat ships in M\u00e4rz.\n"
    (tmp_path / "wide.md").write_bytes(mark + text.encode(encoding))
    tool = KnowledgeBaseTool.from_folder(tmp_path)
    assert [p.text for p in tool.passages] == ["# Kumquats The kumquat ships in M\u00e4rz."]
    assert tool.invoke("kumquat").startswith("1. [wide.md] # Kumquats")


def test_from_folder_skips_a_binary_file_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("The robot weighs 9 kg.")
    (tmp_path / "blob.md").write_bytes(b"robot\x00\x01\x02" * 100)
    with pytest.warns(UserWarning, match=r"skipped .*blob\.md \(a binary file: it holds NUL bytes\)"):
        tool = KnowledgeBaseTool.from_folder(tmp_path)
    assert [p.source for p in tool.passages] == ["notes.md"]


@pytest.mark.parametrize("metadata", ["faq.md", ["source", "faq.md"], 7])
def test_metadata_that_is_not_a_mapping_is_a_developer_error(metadata: Any) -> None:
    class Page:  # anything with page_content counts as a Document
        page_content = "text"

    page = Page()
    page.metadata = metadata  # type: ignore[attr-defined]
    for document in ({"content": "text", "metadata": metadata}, page):
        with pytest.raises(TypeError, match=r"document 2 has 'metadata' that is not a mapping"):
            KnowledgeBaseTool(["first", document])
