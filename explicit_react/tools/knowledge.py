"""The knowledge-base tool: offline BM25 search over passages of documents the user supplies."""

from __future__ import annotations

import os
import re
import threading
import unicodedata
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForToolRun
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field, PrivateAttr

from explicit_react.tools._errors import Text, checked_query, tool_error, validation_error_observation
from explicit_react.tools._file_io import file_text

STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has", "have",
        "how", "i", "in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "was",
        "were", "what", "when", "where", "which", "who", "why", "will", "with", "you", "your",
    }
)  # fmt: skip
FOLDER_SUFFIXES = (".txt", ".md")
MAX_QUERY_WORDS = 32
"""A query is scored on its 32 rarest distinct words: each costs a pass over every passage, in the
agent's process (a 1,000-character query of distinct words took seconds over 20,000 passages)."""


@dataclass(frozen=True)
class Passage:
    """A piece of one document: where it came from and its text."""

    source: str
    text: str


# A number written with separators is one word: "9.7" is not "7.9", and "1,270" is "1270". Other
# digits are a word of their own ("12kg" is "12 kg"), unless a letter leads ("T9", "mp3"). A word
# holds the combining marks written on its letters: Devanagari's vowel signs, Thai's, an accent
# written apart ("e" + U+0301); \w alone split "हिन्दी" into ह, न, द.
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)+|\d+"


_MARKED_PLANES = (range(0x0300, 0x20000), range(0xE0100, 0xE01F0))
"""Where Unicode has combining marks: after ASCII and Latin-1, through the SMP, and the variation
selectors of plane 14."""


@cache
def _word() -> re.Pattern[str]:
    """A word or a number (built at the first search: listing the marks takes about 0.1 s)."""
    ranges: list[list[int]] = []
    for code in (code for plane in _MARKED_PLANES for code in plane):
        if unicodedata.category(chr(code)).startswith("M"):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    marks = "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges)
    return re.compile(rf"{_NUMBER}|[^\W\d_](?:[^\W_]|[{marks}])*")


# Chinese and Japanese are written without spaces: each ideograph or kana counts as a word.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_STEMMING = threading.Lock()
# The tail of a possessive or a contraction ("Lumacrab's", "don't", "we'll"): read as a word of its
# own, an "s" in a question counted against every passage without one.
_CONTRACTION = re.compile(r"(?<=[^\W\d_])['\u2019](?:s|t|d|ll|re|ve|m)(?![^\W_])")


def tokenize(text: str) -> list[str]:
    """Lowercase words and numbers in any script, without stopwords, each cut to its English stem by
    the Snowball stemmer, so that the forms of a word match: refunds -> refund, founding and founded
    -> found. "résumé" stays one word, and "9.7" one number; "İstanbul" is "istanbul" (casefolded,
    the dotted capital I leaves a dot above that no one types)."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("i\u0307", "i")
    text = _CONTRACTION.sub("", text)
    words = (word.replace(",", "") for word in _word().findall(_UNSPACED.sub(r" \g<0> ", text)))
    return [_stem(word) for word in words if word not in STOPWORDS]


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    # The Snowball stemmer keeps the word it works on in itself: two threads at once garbled each
    # other's stems ("founded" -> "warranti"), which this cache then served to the whole process.
    stemmer = _english_stemmer()
    with _STEMMING:
        return str(stemmer.stemWord(word))


@cache
def _english_stemmer() -> Any:
    import snowballstemmer  # imported here: only a search needs it

    return snowballstemmer.stemmer("english")


_HEADING = re.compile(r"\A#{1,6}\s[^\n]*")
MARKDOWN_SUFFIXES = (".md", ".markdown")
# A file name's suffix: a dot, a letter, then letters or digits ("notes.txt"; not "v1.2" or "faq").
_SUFFIX = re.compile(r"\.[^\W\d_]\w{0,9}\Z")


def split_passages(text: str, max_chars: int, markdown: bool = True) -> list[str]:
    """Split text into passages of at most ``max_chars``: one per paragraph, long ones cut at sentences.

    Paragraphs are never packed together (neighbouring paragraphs are often about different
    things, and a passage that mixes them misleads a small model: "The Lumacrab costs 1270
    dollars. The Tidewalker T9 costs 9400 dollars."). A long paragraph is cut at sentence breaks
    (then at word breaks), and its sentences are packed back up to ``max_chars``. No text is lost.

    In Markdown (``markdown``) a heading line is kept with the paragraph after it (the latest
    heading only), so a passage still says what it is about: it starts every passage of that
    paragraph (see ``_under_heading``). A heading with no paragraph under it (another heading or
    the end follows) is a passage of its own. In plain text a line starting with ``#`` is ordinary
    text ("# of units sold in 2023: 5120").
    """
    passages: list[str] = []
    heading = ""
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if markdown and (match := _HEADING.match(block)):
            passages += _alone(heading, max_chars)
            heading = " ".join(match.group().split())
            block = block[match.end() :]
        paragraph = " ".join(block.split())
        if not paragraph:
            continue
        passages += _under_heading(heading, paragraph, max_chars)
        heading = ""
    return passages + _alone(heading, max_chars)


def _alone(heading: str, max_chars: int) -> list[str]:
    """A heading with nothing under it as passages of its own (none for a bare "#")."""
    return _pack_sentences(heading, max_chars) if heading.strip("# ") else []


def _under_heading(heading: str, paragraph: str, max_chars: int) -> list[str]:
    """``paragraph`` in passages, starting with ``heading`` where that costs no cut.

    A heading and a paragraph that fit together are one passage. A paragraph that fits alone is
    not cut to make room for its heading: the heading is then a passage of its own, before it (a
    cut would part facts that the paragraph states together). A longer paragraph, cut anyway, is
    cut into pieces that leave room for the heading, and each piece starts with it, so that the
    second piece about "# Tidewalker T9" still names it; unless the heading is longer than half a
    passage, which would leave too little room: it is then a passage of its own."""
    if not heading:
        return _pack_sentences(paragraph, max_chars)
    if len(heading) + 1 + len(paragraph) <= max_chars:
        return [f"{heading} {paragraph}"]
    if len(paragraph) <= max_chars or len(heading) > max_chars // 2:
        return _pack_sentences(heading, max_chars) + _pack_sentences(paragraph, max_chars)
    return [f"{heading} {piece}" for piece in _pack_sentences(paragraph, max_chars - len(heading) - 1)]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
"""Where a sentence ends: a full stop, question or exclamation mark and a space, or the ideographic
ones, which no space follows in Chinese or Japanese."""


def _pack_sentences(paragraph: str, max_chars: int) -> list[str]:
    if len(paragraph) <= max_chars:
        return [paragraph]
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(paragraph):
        pieces += _cut_at_spaces(sentence, max_chars)
    packed: list[str] = []
    for piece in filter(None, pieces):
        if packed and len(packed[-1]) + 1 + len(piece) <= max_chars:
            packed[-1] += " " + piece
        else:
            packed.append(piece)
    return packed


def _cut_at_spaces(sentence: str, max_chars: int) -> list[str]:
    """``sentence`` (single-spaced) in pieces of at most ``max_chars``, cut at the last space that
    fits, or anywhere in a longer word. It walks an offset: cutting the rest off again and again
    copied a long paragraph once per piece (a 50 MB CSV file took minutes)."""
    pieces = []
    start = 0
    while len(sentence) - start > max_chars:
        cut = sentence.rfind(" ", start, start + max_chars)
        cut = cut if cut > start else start + max_chars
        pieces.append(sentence[start:cut])
        start = cut + 1 if sentence.startswith(" ", cut) else cut
    pieces.append(sentence[start:])
    return pieces


def _source_and_text(document: Any, number: int) -> tuple[str, str, bool]:
    """Accept a string, a mapping with content/page_content, or anything with ``page_content``:
    its label (title and source), its text, and whether it is Markdown (``_is_markdown``)."""
    fallback = f"document {number}"
    if isinstance(document, str):
        return fallback, document, True
    if isinstance(document, Mapping):
        text = document.get("content", document.get("page_content"))
        metadata = document.get("metadata") or {}
    elif hasattr(document, "page_content"):  # a LangChain Document
        text = document.page_content
        metadata = getattr(document, "metadata", None) or {}
    else:
        raise TypeError(f"unsupported document type {type(document).__name__}: use str, dict or Document")
    if not isinstance(metadata, Mapping):
        raise TypeError(
            f"document {number} has 'metadata' that is not a mapping ({type(metadata).__name__}): "
            "use a dict such as {'source': 'faq.md'}"
        )
    if not isinstance(text, str):
        raise TypeError(f"document {number} has no 'content' or 'page_content' text")
    source = document.get("source") if isinstance(document, Mapping) else None
    source = source or metadata.get("source")
    title = (document.get("title") if isinstance(document, Mapping) else None) or metadata.get("title")
    markdown = _is_markdown(str(source or ""))
    if title and source:
        return f"{title} ({source})", text, markdown
    return str(title or source or fallback), text, markdown


def _is_markdown(source: str) -> bool:
    """Whether a document from ``source`` is read as Markdown (its ``#`` lines are headings).

    Only a file name's suffix says what a document is: ".md" and ".markdown" are Markdown, any
    other ("notes.txt", "data.csv") is plain text. A document without a source, or whose source
    has no suffix ("faq", a title), is Markdown, as every document was before: a heading there
    joins the paragraph under it, where in plain text it would be a passage of its own."""
    suffix = _SUFFIX.search(source)
    return suffix is None or suffix.group().lower() in MARKDOWN_SUFFIXES


def passages_from(documents: Iterable[Any], max_chars: int) -> list[Passage]:
    """Every document cut into passages, each labelled with its source.

    A single document (a str, a mapping or a Document) is one document, not an iterable of them:
    iterated, a string gave one passage per character."""
    if isinstance(documents, str | Mapping) or hasattr(documents, "page_content"):
        documents = [documents]
    passages = []
    for number, document in enumerate(documents, start=1):
        source, text, markdown = _source_and_text(document, number)
        passages += [Passage(source, piece) for piece in split_passages(text, max_chars, markdown)]
    return passages


@dataclass(frozen=True)
class _Index:
    """The search index of a list of passages: BM25 over their words, each passage's words, and
    for each passage the position of the first passage with the same text."""

    passages: list[Passage]
    bm25: Any
    words: list[frozenset[str]]
    first_copy: list[int]

    @classmethod
    def build(cls, passages: list[Passage]) -> _Index:
        from rank_bm25 import BM25Plus  # imported here: only a search needs it

        # BM25Plus rather than BM25Okapi: its IDF stays positive, so tiny corpora still rank.
        tokenized = [tokenize(passage.text) for passage in passages]
        first: dict[str, int] = {}
        first_copy = [first.setdefault(p.text, i) for i, p in enumerate(passages)]
        return cls(passages, BM25Plus(tokenized), [frozenset(tokens) for tokens in tokenized], first_copy)


class _BuildLock:
    """Held while a tool's index is built: its searches that find none wait for it rather than build
    their own, and other tools' searches do not wait at all. A copy of the tool (pickled, deep-copied)
    gets a lock of its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def __reduce__(self) -> tuple[type[_BuildLock], tuple[()]]:
        return (_BuildLock, ())


class KnowledgeQuery(BaseModel):
    """Arguments of the knowledge-base tool."""

    query: Text = Field(description="what to look up")


class KnowledgeBaseTool(BaseTool):
    """Ranked offline search (BM25) over your documents; returns the best passages with sources."""

    name: str = "knowledge_search"
    description: str = (
        "Search the local knowledge base. Input: a search query. Returns the best passages with sources."
    )
    args_schema: type[BaseModel] = KnowledgeQuery
    handle_tool_error: bool = True
    handle_validation_error: Any = validation_error_observation

    k: int = Field(default=3, ge=1, description="how many passages to return")
    passage_chars: int = Field(default=800, ge=100, description="longer documents are cut into passages")
    max_query_chars: int = Field(default=1_000, ge=1, description="longer queries are refused")
    passages: list[Passage] = Field(default_factory=list)
    _index: _Index | None = PrivateAttr(default=None)
    _building: _BuildLock = PrivateAttr(default_factory=_BuildLock)

    def __init__(self, documents: Iterable[Any] = (), **kwargs: Any) -> None:
        """``documents``: strings, dicts (``content``/``page_content``, ``source``, ``title``) or
        Documents; a single one of them is one document."""
        super().__init__(**kwargs)
        self.passages = self.passages + passages_from(documents, self.passage_chars)

    @classmethod
    def from_documents(cls, documents: Iterable[Any], **kwargs: Any) -> KnowledgeBaseTool:
        """Same as ``KnowledgeBaseTool(documents, **kwargs)``, named like LangChain's vector stores."""
        return cls(documents, **kwargs)

    @classmethod
    def from_folder(
        cls, folder: str | os.PathLike[str], suffixes: str | Iterable[str] = FOLDER_SUFFIXES, **kwargs: Any
    ) -> KnowledgeBaseTool:
        """Index every .txt/.md file under ``folder``; a passage's source is the file's relative path.
        ``suffixes``: the file name endings to read, with or without their dot, in any case
        (``"md"``, ``".MD"``, ``(".txt", "rst")``)."""
        root = Path(folder)
        if not root.is_dir():
            raise ValueError(f"knowledge folder is not a directory: {folder}")
        suffixes = _suffixes(suffixes)
        documents, skipped = [], []
        for path, problem in _folder_files(root, suffixes):
            text = None
            if not problem:
                try:
                    text = file_text(path.read_bytes())
                except OSError as error:
                    problem = error.strerror or str(error)
            if text is None:
                skipped.append(f"{_readable_name(path)} ({problem or 'a binary file: it holds NUL bytes'})")
            else:
                documents.append({"content": text, "source": _readable_name(path.relative_to(root))})
        if skipped:
            warnings.warn(f"knowledge folder {root}: skipped {'; '.join(skipped)}", stacklevel=2)
        return cls(documents, **kwargs)

    def search(self, query: str) -> list[tuple[float, Passage]]:
        """The best ``k`` passages sharing at least one word with the query, best first.

        A passage holding more of the query's distinct words ranks first; BM25 orders passages that
        hold as many. BM25 alone favours short passages: "Sistguck Z5 weight" ranked the Z5's
        colour and warranty sentences and another product's weight above the one sentence holding
        all three words (``bench/eval/retrieval.py --seeds 1-10``: 4 of 4,583 planned searches over ten
        generated worlds missed their fact with BM25 alone, none with this order).

        The results cover the query: a query word that some passage holds but none of the top ``k``
        does brings in its best passage, in place of the lowest-ranked result whose query words all
        appear in other results (see ``_cover``). A passage whose text repeats a better one's is left
        out (a link and its target in a folder, repeated boilerplate): it would take a result's place
        and add nothing."""
        words = tokenize(query)
        if not words or not self.passages:
            return []
        index = self._current_index()
        # Each distinct word is scored once, times its count (a word no passage holds scores 0):
        # scoring the query word by word took seconds for a long query over 100,000 passages.
        counts = _rarest(Counter(words), index.bm25.idf)
        scores = index.bm25.get_scores([])
        for word, count in counts.items():
            scores += count * index.bm25.get_scores([word])
        wanted = set(counts)
        ranked = sorted(
            (number for number, passage_words in enumerate(index.words) if wanted & passage_words),
            key=lambda number: (-len(wanted & index.words[number]), -scores[number], number),
        )
        chosen = self._cover(index, ranked, wanted)
        return [(float(scores[number]), index.passages[number]) for number in chosen]

    def _current_index(self) -> _Index:
        """The index of ``passages`` as they are now: built at the first search, and again when
        they were changed or replaced (an index of the old list answered from the wrong passages).
        Searches at once wait for one build instead of each building its own."""
        index = self._index
        if index is not None and index.passages == self.passages:
            return index
        with self._building:
            if self._index is None or self._index.passages != self.passages:
                self._index = _Index.build(list(self.passages))
            return self._index

    def _cover(
        self, index: _Index, ranked: list[int], wanted: set[str], rarer_than_held: bool = True
    ) -> list[int]:
        """The top ``k`` of ``ranked``, changed so that each query word found in any passage is in
        some result, rarest word first, while a result can make room without losing a word.

        Plain BM25 lets the words that many passages share crowd out a rarer one: "shipping cost
        for Tidewalker T9 robots" gave three passages about the Tidewalker and none about shipping
        (bench/eval, docs/benchmarks.md).

        Only a word rarer than every query word the results already hold is brought in: the best
        passage for a common word is one of many and says little about the query. "Brun Bithshirk
        birth year" found three passages naming him (his birth year among them, written "born in
        1940"), and "year" swapped the one with the answer for another product's warranty.
        ``rarer_than_held=False`` brings in any missing word, as before that was seen.

        Of passages with the same text only the first copy counts (the same text scores the same, so
        it is also the first in ``ranked``): the others would fill places with what a result says."""
        ranked = [number for number in ranked if index.first_copy[number] == number]
        words_of = [index.words[number] for number in ranked]
        chosen = list(range(min(self.k, len(ranked))))  # positions in ``ranked``, so sorted is best first
        idf = index.bm25.idf
        held = wanted & set().union(*(words_of[position] for position in chosen))
        commonest_held = min((idf.get(word, 0.0) for word in held), default=0.0) if rarer_than_held else 0.0
        for word in sorted(wanted, key=lambda w: (-idf.get(w, 0.0), w)):
            if idf.get(word, 0.0) <= commonest_held:
                break  # this word and every later one are no rarer than a word the results hold
            if any(word in words_of[position] for position in chosen):
                continue
            carrier = next((p for p, words in enumerate(words_of) if word in words), None)
            if carrier is None:  # no passage holds the word
                continue
            spare = [
                position
                for position in chosen
                if wanted & words_of[position]
                <= set().union(*(words_of[other] for other in chosen if other != position))
            ]
            if not spare:
                break
            chosen = sorted([position for position in chosen if position != spare[-1]] + [carrier])
        return [ranked[position] for position in chosen]

    def _run(self, query: str, run_manager: CallbackManagerForToolRun | None = None) -> str:
        query = checked_query(query, self.max_query_chars, "look up")
        if not self.passages:
            raise tool_error("the knowledge base has no documents")
        results = self.search(query)
        if not results:
            return f"No passages in the knowledge base match {query.strip()!r}."
        return "\n".join(
            f"{number}. [{passage.source}] {passage.text}"
            for number, (_, passage) in enumerate(results, start=1)
        )


def _rarest(counts: Counter[str], idf: Mapping[str, float]) -> Counter[str]:
    """The words of ``counts`` (a query's) that some passage holds (``idf``), and only the
    ``MAX_QUERY_WORDS`` rarest of them: a word no passage holds scores nothing and matches nothing."""
    known = [word for word in counts if word in idf]
    kept = known if len(known) <= MAX_QUERY_WORDS else sorted(known, key=lambda w: -idf[w])[:MAX_QUERY_WORDS]
    return Counter({word: counts[word] for word in kept})


def _suffixes(suffixes: str | Iterable[str]) -> frozenset[str]:
    """File name endings as ``Path.suffix`` gives them, lowercased: ".md" from "md", ".MD" or ".md"
    (a string is one suffix: checked with ``in``, ".md" also matched a file named "LICENSE")."""
    listed = [suffixes] if isinstance(suffixes, str) else list(suffixes)
    if not listed or not all(isinstance(suffix, str) and suffix.strip(".") for suffix in listed):
        raise ValueError(f"suffixes must be file name endings such as '.md' or 'txt', not {suffixes!r}")
    return frozenset("." + suffix.lstrip(".").lower() for suffix in listed)


def _folder_files(root: Path, suffixes: frozenset[str]) -> Iterable[tuple[Path, str]]:
    """Each file under ``root`` with one of ``suffixes``, sorted, with a reason to skip it or "".

    A folder that cannot be listed and a link to a file outside ``root`` are skipped with their
    reason (the folder is what the user chose to share; a link out of it is not)."""
    found: list[tuple[Path, str]] = []
    inside = root.resolve()

    def unlisted(error: OSError) -> None:
        found.append((Path(error.filename or root), f"cannot list: {error.strerror or error}"))

    for folder, _, names in os.walk(root, onerror=unlisted):
        for name in names:
            path = Path(folder, name)
            if path.suffix.lower() not in suffixes or not path.is_file():
                continue
            outside = path.is_symlink() and not path.resolve().is_relative_to(inside)
            found.append((path, "a link to a file outside the folder" if outside else ""))
    return sorted(found)


def _readable_name(relative: Path) -> str:
    """The path as text that can be printed: bytes of a name that are not UTF-8 become U+FFFD."""
    return os.fsencode(relative.as_posix()).decode("utf-8", errors="replace")
