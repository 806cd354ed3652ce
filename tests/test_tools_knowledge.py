"""The knowledge-base tool: BM25 over user documents, chunked into passages, with sources."""

from __future__ import annotations

import asyncio
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
    # next section starts its own passage; a heading with nothing under it is no passage.
    text = "# Prices\n\nThe Pellet costs 120 dollars.\n\n# Lumacrab\nThe Lumacrab costs 1270.\n\n# End"
    assert split_passages(text, 100) == [
        "# Prices The Pellet costs 120 dollars.",
        "# Lumacrab The Lumacrab costs 1270.",
    ]
    assert split_passages("# A\n\n# B\n\nText.", 100) == ["# B Text."]
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
    ranked = sorted(
        (i for i, held in enumerate(tool._passage_words) if words & held),
        key=lambda i: (-len(words & tool._passage_words[i]), i),
    )
    assert [tool.passages[i].source for i in tool._cover(ranked, words, rarer_than_held=False)][-1] == "w1"


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
    real_read_text = Path.read_text

    def read_text(path: Path, *args, **kwargs) -> str:
        if path.name == "private.txt":
            raise PermissionError(13, "Permission denied", str(path))
        return real_read_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
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
    score = tool._index.get_scores

    def counted(query: list[str]) -> Any:
        calls.append(query)
        return score(query)

    tool._index.get_scores = counted
    results = tool.search(f"{common} vault")
    assert len(calls) <= MAX_QUERY_WORDS + 1
    assert "The vault code is 4711." in [passage.text for _, passage in results]  # the rarest word is kept
