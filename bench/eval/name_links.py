"""Which names the tool results link together: the diagnostics ``extraction_replay.py --prompt choice``
and ``linked_numbers_replay.py``, and the answer check ``unlinked`` that was tried and not kept
(docs/benchmarks.md, "names and the links between them").

A name is a run of capitalised words (a person, a town, a company, a product with its model code).
Two names are linked when one sentence of a result holds both; links chain, so "The Randcoth H5 is
made by Vionlio Optics." and "Vionlio Optics was founded by Nessa Quorb." link the product to its
maker's founder. An answer naming someone the results tie only to other things took the name from
a result about something else. Plain text reading, no model call. Written for the generated worlds'
prose: on web or Wikipedia text (initials, possessives, wrapped lines, "Page:" titles) it misses links.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# Names: runs of capitalised words and model codes ("Gourdound Marine", "Huslel K4"), without the
# function words a sentence or question starts with ("In which town ...", "The Huslel K4 ...").
_NAME = re.compile(r"(?<![\w'’-])[A-Z][\w'’-]*(?:[ \t]+(?:[A-Z][\w'’-]*))*")
_NOT_NAME_WORDS = (
    "the a an at in on of it he she they this that these those its his her their who what which how"
    " when where why is was are were does did do by for from with and or but so as if to after before"
    " since during based according yes no final answer thought observation action input"
)
_NOT_NAMES = frozenset(_NOT_NAME_WORDS.split())
# A sentence that names its subject by a pronoun or "the company" speaks of what its paragraph began with.
_REFERS_BACK = re.compile(r"(?:(?:it|he|she|they|its|his|her|their|this|that)\b|the\s+[a-z])", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'A-Z0-9])")
_RESULT_HEAD = re.compile(r"^\s*(?:\d+\.\s*)?(?:\[[^\]\n]*\]\s*)?")


def names_in(text: str) -> list[str]:
    """The capitalised names in ``text``, lowercased, leading function words dropped, in order."""
    found = []
    for match in _NAME.finditer(text):
        words = match[0].split()
        while words and words[0].lower() in _NOT_NAMES:
            del words[0]
        if words and not words[0][0].isdigit():
            found.append(" ".join(words).lower())
    return found


def sentences(text: str) -> Iterator[tuple[str, list[str]]]:
    """Each sentence of each line of ``text`` (a result's "1. [file.md]" head dropped) with the names
    it holds; a sentence opening with a pronoun or "the <noun>" also holds the first name of its
    line's first sentence (the one it speaks of)."""
    for line in text.splitlines():
        first: list[str] = []
        for number, sentence in enumerate(_SENTENCE_END.split(_RESULT_HEAD.sub("", line).replace("#", " "))):
            names = names_in(sentence)
            if number == 0:
                first = names
            elif _REFERS_BACK.match(sentence.strip()):
                names = names + first[:1]  # the first sentence's names are linked already
            if sentence.strip():
                yield sentence.strip(), names


def unlinked_names(question: str, answer: str, sources: str) -> list[str]:
    """The names in ``answer`` (not in ``question``) that ``sources`` states but never links to a name
    of the question, as written in the answer's lowercase form.

    Two names are linked when one sentence of a line of ``sources`` holds both; a sentence opening
    with a pronoun or "the <noun>" also holds the names of its line's first sentence, and a one-word
    name stands for a longer one of its line that has that word ("Flemmark", "Stiol Flemmark")."""
    asked = set(names_in(question))
    wanted = [n for n in dict.fromkeys(names_in(answer)) if not any(n in a or a in n for a in asked)]
    if not asked or not wanted:
        return []
    parent: dict[str, str] = {}  # the names linked so far, as a union-find forest

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    def link(names: list[str]) -> None:
        for name in names:
            parent.setdefault(name, name)
        for name in names[1:]:
            parent[root(name)] = root(names[0])

    for line in sources.splitlines():
        longer: dict[str, list[str]] = {}  # a word of a longer name on this line -> those names
        on_line: set[str] = set()
        for _, names in sentences(line):
            link(names)
            on_line.update(names)
        for name in on_line:
            for word in name.split() if " " in name else ():
                longer.setdefault(word, []).append(name)
        for short in on_line & longer.keys():
            link([short, *longer[short]])
    reached = {root(name) for name in asked if name in parent}
    return [name for name in wanted if name in parent and root(name) not in reached]
