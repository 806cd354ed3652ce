"""The knowledge-base tool: BM25 over user documents, chunked into passages, with sources."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.documents import Document

from explicit_react.tools import KnowledgeBaseTool
from explicit_react.tools.knowledge import split_passages, tokenize

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
