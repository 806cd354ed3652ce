"""Generated evaluation worlds: a made-up world from a seed, its knowledge files and its questions.

``World.generate(seed)`` invents towns, companies, people, products and two currencies, each with
attributes (years, amounts, units) and relations (a product's maker, a company's founder and
headquarters, where a person lives and works). ``world.files`` writes those facts as a few Markdown
files in varied prose: several sentence templates per fact, a thing's facts spread over paragraphs
in different files, products with near-identical names, and distractor facts (warranties, colours,
children, bridges) that no question asks about. ``world.questions`` are computed from the facts,
in seven ``KINDS``, each with its answer, the minimal tool calls an ideal agent needs
(``knowledge_search`` queries and ``calculator`` expressions) and the facts it needs.
``check(question, answer)`` scores an answer.

Everything is pure Python and deterministic from the seed: no model, no network, no clock.

    python bench/eval/worlds.py --seed 3                 # counts per kind, and one question of each
    python bench/eval/worlds.py --seed 3 --write DIR     # the knowledge files and questions.json

The protocol (docs/benchmarks.md): choose and tune on ``TUNING_SEEDS`` only; report on seeds never
used for a decision, drawn fresh for each report (``generated.py --fresh``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answers import contains, normalise, number_matches, says_not_found

TUNING_SEEDS: tuple[int, ...] = (1, 2, 3, 4, 5)
"""The only seeds any choice about the agent may be made on. Reports use fresh seeds."""

KINDS: tuple[str, ...] = (
    "lookup",  # one fact
    "two_lookups",  # two facts, then a difference, sum, ratio or percentage
    "chain",  # a relation followed to another thing (the founder of the company that makes X)
    "dates",  # ages and years between events
    "conversion",  # minutes to hours, kilograms to grams, a made-up currency to dollars
    "comparison",  # which of two is larger: a name
    "not_in_files",  # the files do not hold the fact: the right answer says so
)
QUESTIONS_PER_KIND = 50
"""At most this many questions of each kind per seed (fewer when the world has fewer)."""

NOT_IN_FILES_ANSWER = "The files do not say."

# --- made-up names ---------------------------------------------------------------------------------

_ONSETS = [
    "b",
    "br",
    "c",
    "cl",
    "d",
    "dr",
    "f",
    "fl",
    "g",
    "gr",
    "h",
    "k",
    "l",
    "m",
    "n",
    "p",
    "pr",
    "qu",
    "r",
    "s",
    "st",
    "t",
    "tr",
    "v",
    "w",
    "z",
    "sh",
    "th",
]
_VOWELS = ["a", "e", "i", "o", "u", "a", "e", "o", "ai", "ea", "io", "ou"]
_CODAS = ["", "", "n", "r", "l", "s", "nd", "rk", "m", "x", "ck", "ll", "th", "st"]
_TOWN_ENDINGS = ["mouth", "by", "ford", "holm", "wick", "stead", "bridge", "haven", "thorpe", "dale"]
_INDUSTRIES: dict[str, tuple[tuple[str, bool], ...]] = {
    # industry word -> product kinds, each with whether it runs on a battery
    "Robotics": (("floor-cleaning robot", True), ("warehouse drone", True), ("robotic arm", False)),
    "Audio": (("portable speaker", True), ("studio microphone", False), ("headphone set", True)),
    "Optics": (("field telescope", False), ("trail camera", True), ("camera lens", False)),
    "Motors": (("electric scooter", True), ("outboard motor", False), ("cargo bike", True)),
    "Instruments": (("weather station", True), ("soil sensor", True), ("tuning fork set", False)),
    "Tools": (("cordless drill", True), ("hedge trimmer", True), ("bench vice", False)),
    "Marine": (("sonar buoy", True), ("dinghy pump", True), ("mooring winch", False)),
    "Kitchens": (("bread oven", False), ("coffee grinder", True), ("ice cream churn", False)),
}
_CURRENCY_NOUNS = ("crown", "mark", "florin", "taler")
_ROLES = ("chief engineer", "head of sales")
_COLOURS = ("slate grey", "moss green", "harbour blue", "sand yellow", "brick red", "chalk white")
_BATTERY_KINDS = frozenset(kind for kinds in _INDUSTRIES.values() for kind, battery in kinds if battery)
_HOBBIES = ("sailing", "chess", "beekeeping", "rowing", "pottery", "birdwatching", "choir singing")


def _syllable(rng: random.Random) -> str:
    return rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)


class _Names:
    """Made-up words, each used once in a world, so a name's words point at one thing only."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def word(self, syllables: int, suffix: str = "") -> str:
        while True:
            word = ("".join(_syllable(self.rng) for _ in range(syllables)) + suffix).capitalize()
            if 4 <= len(word) <= 11 and word.lower() not in self.used:
                self.used.add(word.lower())
                return word


# --- the world -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """One thing the files state: ``subject``'s ``attribute`` is ``value`` (a number or a name).

    ``unit`` is how a number is measured ("dollars", "kg", "Orvan crowns"); ``other`` is the second
    thing of a relation that needs one (the company of a role or a joining year); ``owner`` is the
    thing whose paragraph states the fact (the subject, or a founder for "X founded Y"); ``asked`` is
    False for the distractors, which no question needs."""

    subject: str
    attribute: str
    value: int | float | str
    unit: str = ""
    other: str = ""
    owner: str = ""
    asked: bool = True

    @property
    def key(self) -> tuple[str, str]:
        """``(subject, attribute)``: a fact's identity."""
        return (self.subject, self.attribute)


@dataclass(frozen=True)
class Thing:
    """An entity: a product, a company (``org``), a person, a town or a currency."""

    name: str
    type: str
    kind: str = ""  # a product's kind ("warehouse drone")


@dataclass(frozen=True)
class Call:
    """One tool call of a question's minimal plan, and the facts it brings into view."""

    tool: str
    input: str
    facts: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Question:
    """A generated question: its answer, the minimal plan that finds it, and the facts it needs.

    ``answer`` is a number, a name, or ``None`` when the files do not hold the fact; ``tolerance``
    is relative (0: exact, up to float noise); ``rival`` is the other candidate of a comparison;
    ``op`` names the variant of the kind ("difference", "founder_of_maker", ...)."""

    id: str
    kind: str
    op: str
    question: str
    answer: int | float | str | None
    unit: str
    plan: tuple[Call, ...]
    facts: tuple[tuple[str, str], ...]
    tolerance: float = 0.0
    rival: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass
class World:
    """A made-up world: its things, its facts, the files that state them and the questions."""

    seed: int
    region: str
    things: dict[str, Thing] = field(default_factory=dict)
    facts: dict[tuple[str, str], Fact] = field(default_factory=dict)
    distractors: list[Fact] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    paragraph_of: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    """Where each asked fact is stated: (file, paragraph number)."""
    questions: list[Question] = field(default_factory=list)

    @classmethod
    def generate(cls, seed: int) -> World:
        """The world of ``seed``, with its files and questions."""
        rng = random.Random(f"world-{seed}")
        names = _Names(rng)
        world = cls(seed=seed, region=f"the {names.word(2)} valley")
        _invent(world, rng, names)
        _write_files(world, random.Random(f"files-{seed}"))
        world.questions = _questions(world, random.Random(f"questions-{seed}"))
        return world

    def value(self, subject: str, attribute: str) -> Any:
        """A stated fact's value."""
        return self.facts[(subject, attribute)].value

    def has(self, subject: str, *attributes: str) -> bool:
        """Whether the files state every one of these facts of ``subject``."""
        return all((subject, attribute) in self.facts for attribute in attributes)

    def of_type(self, type_: str) -> list[str]:
        """The names of every thing of a type, in the order they were invented."""
        return [thing.name for thing in self.things.values() if thing.type == type_]

    def in_view(self, key: tuple[str, str], observation: str) -> bool:
        """Whether one line (passage) of a search result names the thing whose paragraph states the
        fact and states its value: the fact was there for the model to read."""
        fact = self.facts[key]
        for passage in observation.splitlines():
            if not contains(passage, fact.owner):
                continue
            if isinstance(fact.value, str) and contains(passage, fact.value):
                return True
            if not isinstance(fact.value, str) and number_matches(passage, float(fact.value)):
                return True
        return False

    def documents(self) -> list[dict[str, str]]:
        """The files as documents for ``KnowledgeBaseTool`` (``content`` and ``source``)."""
        return [{"content": text, "source": name} for name, text in self.files.items()]

    def write(self, folder: Path) -> None:
        """Write the knowledge files and ``questions.json`` into ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in self.files.items():
            (folder / name).write_text(text, encoding="utf-8")
        questions = [q.to_dict() for q in self.questions]
        (folder / "questions.json").write_text(json.dumps(questions, indent=1) + "\n", encoding="utf-8")


def _round_to(value: float, step: int) -> int:
    return int(round(value / step) * step)


def _invent(world: World, rng: random.Random, names: _Names) -> None:
    """Things and facts: 8 towns, 2 currencies, 7 companies with a founder and two staff each and a
    product line of two. Some facts are left out on purpose: ``not_in_files`` questions ask for them."""

    def add(fact: Fact) -> None:
        fact = fact if fact.owner else Fact(**{**asdict(fact), "owner": fact.subject})
        if fact.asked:
            world.facts[fact.key] = fact
        else:
            world.distractors.append(fact)

    def thing(name: str, type_: str, kind: str = "") -> str:
        world.things[name] = Thing(name, type_, kind)
        return name

    towns = [thing(names.word(2, rng.choice(_TOWN_ENDINGS)), "town") for _ in range(8)]
    for town in towns:
        add(Fact(town, "population", _round_to(rng.uniform(2_000, 400_000), 100)))
        add(Fact(town, "founded", rng.randrange(1150, 1900)))
        if rng.random() < 0.75:
            add(Fact(town, "area", rng.randrange(6, 400), "square kilometres"))
        add(Fact(town, "bridges", rng.randrange(2, 15), asked=False))

    currencies = [thing(f"{names.word(2)} {noun}", "currency") for noun in rng.sample(_CURRENCY_NOUNS, 2)]
    for currency in currencies:
        add(Fact(currency, "rate", round(rng.uniform(0.2, 3.0), 2), "dollars"))

    founding_years = rng.sample(range(1955, 2016), 7)  # distinct: "founded earlier" has one answer
    for industry, founded in zip(rng.sample(sorted(_INDUSTRIES), 7), founding_years, strict=True):
        org = thing(f"{names.word(2)} {industry}", "org")
        add(Fact(org, "founded", founded))
        add(Fact(org, "hq", rng.choice(towns)))
        if rng.random() < 0.8:
            add(Fact(org, "employees", rng.randrange(12, 4800)))
        add(Fact(org, "offices", rng.randrange(2, 9), asked=False))

        for role in ("founder", *_ROLES):
            person = thing(f"{names.word(1)} {names.word(2)}", "person")
            if role == "founder":
                add(Fact(org, "founder", person, owner=rng.choice([org, person])))
                born = founded - rng.randrange(23, 52)
            else:
                joined = rng.randrange(founded + 1, 2025)
                add(Fact(person, "role", role, other=org))
                add(Fact(person, "joined", joined, other=org))
                born = joined - rng.randrange(22, 50)
            if rng.random() < 0.85:
                add(Fact(person, "born", born))
            add(Fact(person, "lives", rng.choice(towns)))
            if rng.random() < 0.5:
                add(Fact(person, "children", rng.randrange(2, 5), asked=False))
            else:
                add(Fact(person, "hobby", rng.choice(_HOBBIES), asked=False))

        line = names.word(2)
        codes = rng.sample([f"{letter}{digit}" for letter in "HKTVXRMZ" for digit in range(2, 10)], 2)
        for code in codes:
            kind, battery = rng.choice(_INDUSTRIES[industry])
            product = thing(f"{line} {code}", "product", kind)
            add(Fact(product, "maker", org))
            if rng.random() < 0.2:
                add(Fact(product, "price", _round_to(rng.uniform(20, 9000), 5), f"{rng.choice(currencies)}s"))
            else:
                add(Fact(product, "price", _round_to(rng.uniform(20, 16000), 5), "dollars"))
            if rng.random() < 0.7:
                add(Fact(product, "weight", round(rng.uniform(0.3, 60), 1), "kg"))
            if battery and rng.random() < 0.75:
                add(Fact(product, "battery", rng.randrange(20, 600), "minutes"))
            add(Fact(product, "launch", rng.randrange(founded + 1, 2026)))
            add(Fact(product, "warranty", rng.randrange(1, 6), asked=False))
            add(Fact(product, "colour", rng.choice(_COLOURS), asked=False))
            add(Fact(product, "kind", kind, asked=False))


# --- the files -------------------------------------------------------------------------------------

# Each fact as several sentences. {S} starts a sentence with the paragraph's owner, {s} names it
# inside one: the first sentence of a paragraph uses the full name, later ones "It", "The company",
# a surname. {v} is the value, {o} the other thing of a relation. Every template of an asked
# attribute holds that attribute's search word (KEYWORDS), so "<name> <keyword>" finds it.
TEMPLATES: dict[str, tuple[str, ...]] = {
    "price": (
        "{S} is priced at {v}.",
        "{S} has a list price of {v}.",
        "The list price of {s} is {v}.",
        "{S} sells at a price of {v}.",
    ),
    "weight": ("{S} has a weight of {v}.", "The weight of {s} is {v}.", "{S} comes in at a weight of {v}."),
    "battery": (
        "{S} runs for {v} on a full battery.",
        "The battery of {s} lasts {v}.",
        "On one battery charge, {s} works for {v}.",
    ),
    "launch": ("{S} was launched in {v}.", "{S} first launched in {v}.", "The launch of {s} came in {v}."),
    "maker": ("{S} is made by {v}.", "{S} is made in the workshops of {v}.", "{v} is where {s} is made."),
    "founded": (
        "{S} was founded in {v}.",
        "{S} has existed since it was founded in {v}.",
        "{S} was founded back in {v}.",
    ),
    "founder": (
        "The founder of {s} is {v}.",
        "{v} is the founder of {s}.",
        "{S} was founded by its founder, {v}.",
    ),
    "founder@person": ("{S} is the founder of {o}.", "{S} is the founder who set up {o}."),
    "hq": (
        "{S} has its headquarters in {v}.",
        "{S} is headquartered in {v}.",
        "The headquarters of {s} are in {v}.",
    ),
    "employees": ("{S} has {v} employees.", "{v} employees work for {s}.", "{S} counts {v} employees."),
    "born": (
        "{S} was born in {v}.",
        "{S}, born in {v}, grew up far from here.",
        "Records say {s} was born in {v}.",
    ),
    "lives": ("{S} lives in {v}.", "{S} lives in the town of {v}.", "These days {s} lives in {v}."),
    "role": ("{S} is the {v} at {o}.", "{S} works at {o} as {v}.", "At {o}, {s} is the {v}."),
    "joined": ("{S} joined {o} in {v}.", "{S} has been with {o} since joining in {v}."),
    "population": (
        "{S} has a population of {v}.",
        "The population of {s} is {v}.",
        "{S} counts {v} people in its population.",
    ),
    "area": ("{S} covers an area of {v}.", "The area of {s} is {v}.", "{S} spreads over an area of {v}."),
    "rate": (
        "At the exchange rate used in these files, one {s} is worth {v}.",
        "The exchange rate is {v} for one {s}.",
        "One {s} buys {v} at the usual exchange rate.",
    ),
    # distractors
    "kind": ("{S} is {v}.", "{S} is {v} built for everyday use."),
    "warranty": ("{S} comes with a {v}-year warranty.", "A warranty of {v} years covers {s}."),
    "colour": ("{S} is sold in {v}.", "The usual colour of {s} is {v}."),
    "offices": ("{S} runs {v} offices.", "{S} has {v} offices in the region."),
    "children": ("{S} has {v} children.",),
    "hobby": ("{S} spends weekends on {v}.", "Outside work, {s} enjoys {v}."),
    "bridges": ("{S} has {v} bridges.", "{v} bridges cross the river in {s}."),
}

KEYWORDS: dict[str, str] = {
    "price": "price",
    "weight": "weight",
    "battery": "battery",
    "launch": "launched",
    "maker": "made by",
    "founded": "founded",
    "founder": "founder",
    "hq": "headquarters",
    "employees": "employees",
    "born": "born",
    "lives": "lives",
    "joined": "joined",
    "population": "population",
    "area": "area",
    "rate": "exchange rate",
}
"""The word(s) every sentence of an asked attribute holds; a minimal plan searches ``<name> <keyword>``.
A role is searched by its company and the role itself ("Quillfern Robotics head of sales")."""

_FILES = {
    "product": ("products.md", "catalogue.md", "news.md"),
    "org": ("companies.md", "news.md", "history.md"),
    "person": ("people.md", "news.md", "history.md"),
    "town": ("towns.md", "history.md"),
    "currency": ("money.md", "catalogue.md"),
}
PARAGRAPH_CHARS = 200
"""Paragraphs stay under this, so a knowledge search with ``passage_chars=220`` returns each whole."""


def _number(value: float) -> str:
    """A number as a calculator input or an answer: ``12`` for 12.0, at most four decimals."""
    return f"{round(value, 4):.12g}"


def _rendered(rng: random.Random, fact: Fact) -> str:
    value = fact.value
    if fact.attribute == "kind":
        return f"{'an' if str(value)[0] in 'aeiou' else 'a'} {value}"
    if isinstance(value, str):
        return value
    if fact.attribute in ("born", "founded", "launch", "joined"):
        return str(value)
    if value >= 1000 and rng.random() < 0.5:
        written = f"${value:,}" if fact.unit == "dollars" and rng.random() < 0.5 else f"{value:,} {fact.unit}"
        return written.strip()
    if fact.attribute == "weight":
        return f"{value} {rng.choice(['kg', 'kilograms'])}"
    return f"{value} {fact.unit}".strip()


def _references(world: World, name: str) -> tuple[str, str, str, str]:
    """How a paragraph names its owner: first mention (at a sentence start, inside a sentence),
    later mentions (at a start, inside)."""
    type_ = world.things[name].type
    if type_ == "product":
        return f"The {name}", f"the {name}", "It", "it"
    if type_ == "org":
        return name, name, "The company", "the company"
    if type_ == "person":
        surname = name.split()[-1]
        return name, name, surname, surname
    if type_ == "town":
        return name, name, "The town", "the town"
    return name, name, name, name


def _sentence(world: World, rng: random.Random, fact: Fact, first: bool) -> str:
    key, other = fact.attribute, fact.other
    if key == "founder" and fact.owner != fact.subject:  # told in the founder's paragraph
        key, other = "founder@person", fact.subject
    templates = TEMPLATES[key]
    later = tuple(t for t in templates if t.startswith("{S}"))  # "It has a weight of", not "The weight of it"
    references = _references(world, fact.owner)
    if first or not later:
        start, inside = references[:2]
    else:
        templates, (start, inside) = later, references[2:]
    text = rng.choice(templates).format(S=start, s=inside, v=_rendered(rng, fact), o=other)
    return text[0].upper() + text[1:]


def _paragraphs(world: World, rng: random.Random, facts: list[Fact]) -> Iterator[tuple[str, list[Fact]]]:
    """The facts cut into paragraphs of one to three sentences, each under ``PARAGRAPH_CHARS``."""
    sentences: list[str] = []
    stated: list[Fact] = []
    size = rng.randint(1, 3)
    for fact in facts:
        sentence = _sentence(world, rng, fact, first=not sentences)
        if sentences and (len(sentences) >= size or len(" ".join([*sentences, sentence])) > PARAGRAPH_CHARS):
            yield " ".join(sentences), stated
            sentences, stated, size = [], [], rng.randint(1, 3)
            sentence = _sentence(world, rng, fact, first=True)
        sentences.append(sentence)
        stated.append(fact)
    if sentences:
        yield " ".join(sentences), stated


def _write_files(world: World, rng: random.Random) -> None:
    """Every fact as a sentence in a paragraph of its owner, the paragraphs spread over the files."""
    by_owner: dict[str, list[Fact]] = {name: [] for name in world.things}
    for fact in [*world.facts.values(), *world.distractors]:
        by_owner[fact.owner].append(fact)
    placed: dict[str, list[tuple[str, list[Fact]]]] = {}
    for owner, facts in by_owner.items():
        rng.shuffle(facts)
        for paragraph in _paragraphs(world, rng, facts):
            placed.setdefault(rng.choice(_FILES[world.things[owner].type]), []).append(paragraph)
    for file in sorted(placed):
        paragraphs = placed[file]
        rng.shuffle(paragraphs)
        title = f"# {world.region[0].upper()}{world.region[1:]}: {file.removesuffix('.md')}"
        world.files[file] = title + "\n\n" + "\n\n".join(text for text, _ in paragraphs) + "\n"
        for number, (_, stated) in enumerate(paragraphs):
            for fact in stated:
                if fact.asked:
                    world.paragraph_of[fact.key] = (file, number)


# --- the questions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Draft:
    """A question before its plan: the facts to look up, in order, and the calculation if any."""

    kind: str
    op: str
    question: str
    answer: int | float | str | None
    unit: str = ""
    lookups: tuple[tuple[str, str], ...] = ()
    calculation: str = ""
    tolerance: float = 0.0
    rival: str = ""
    missing_query: str = ""  # for not_in_files: what an ideal agent searches


def _query(world: World, key: tuple[str, str]) -> str:
    """What an ideal agent searches to find a fact, knowing only what the question and the earlier
    look-ups told it: a role by its company ("X Robotics head of sales"), others by their subject."""
    subject, attribute = key
    if attribute == "role":
        fact = world.facts[key]
        return f"{fact.other} {fact.value}"
    return f"{subject} {KEYWORDS[attribute]}"


def _plan(world: World, draft: _Draft) -> tuple[Call, ...]:
    """The minimal calls: one search per paragraph the needed facts are in (facts that share a
    paragraph are found by one search naming them all), then the calculation, if any."""
    calls: list[Call] = []
    seen: dict[tuple[str, int], int] = {}
    for key in draft.lookups:
        where = world.paragraph_of[key]
        if where in seen:
            index = seen[where]
            call = calls[index]
            extra = KEYWORDS.get(key[1], "")
            query = call.input if extra in call.input else f"{call.input} {extra}"
            calls[index] = Call(call.tool, query, (*call.facts, key))
            continue
        seen[where] = len(calls)
        calls.append(Call("knowledge_search", _query(world, key), (key,)))
    if draft.missing_query:
        calls.append(Call("knowledge_search", draft.missing_query))
    if draft.calculation:
        calls.append(Call("calculator", draft.calculation))
    return tuple(calls)


def _pairs(items: Sequence[str], rng: random.Random, limit: int) -> list[tuple[str, str]]:
    """Up to ``limit`` ordered pairs of different items, drawn at random."""
    pairs = [(a, b) for a in items for b in items if a != b]
    return rng.sample(pairs, min(limit, len(pairs)))


def _dollar_products(world: World, *attributes: str) -> list[str]:
    return [
        p
        for p in world.of_type("product")
        if world.has(p, "price", *attributes) and world.facts[(p, "price")].unit == "dollars"
    ]


def _lookups(world: World, rng: random.Random) -> Iterator[_Draft]:
    """One fact."""
    v = world.value
    for p in world.of_type("product"):
        unit = world.facts[(p, "price")].unit
        yield _Draft(
            "lookup",
            "price",
            f"What is the price of the {p}, in {unit}?",
            v(p, "price"),
            unit,
            ((p, "price"),),
        )
        if world.has(p, "weight"):
            q = rng.choice(
                [f"What is the weight of the {p}, in kilograms?", f"How much does the {p} weigh, in kg?"]
            )
            yield _Draft("lookup", "weight", q, v(p, "weight"), "kg", ((p, "weight"),))
        if world.has(p, "battery"):
            q = f"How many minutes does the battery of the {p} last?"
            yield _Draft("lookup", "battery", q, v(p, "battery"), "minutes", ((p, "battery"),))
        yield _Draft(
            "lookup", "launch", f"In which year was the {p} launched?", v(p, "launch"), "", ((p, "launch"),)
        )
        q = rng.choice([f"Which company makes the {p}?", f"Who makes the {p}?"])
        yield _Draft("lookup", "maker", q, v(p, "maker"), "", ((p, "maker"),))
    for o in world.of_type("org"):
        yield _Draft(
            "lookup", "founded", f"In which year was {o} founded?", v(o, "founded"), "", ((o, "founded"),)
        )
        yield _Draft("lookup", "founder", f"Who founded {o}?", v(o, "founder"), "", ((o, "founder"),))
        q = rng.choice([f"In which town does {o} have its headquarters?", f"Where is {o} headquartered?"])
        yield _Draft("lookup", "hq", q, v(o, "hq"), "", ((o, "hq"),))
        if world.has(o, "employees"):
            yield _Draft(
                "lookup",
                "employees",
                f"How many employees does {o} have?",
                v(o, "employees"),
                "",
                ((o, "employees"),),
            )
    for x in world.of_type("person"):
        if world.has(x, "born"):
            yield _Draft("lookup", "born", f"In which year was {x} born?", v(x, "born"), "", ((x, "born"),))
        q = rng.choice([f"In which town does {x} live?", f"Where does {x} live?"])
        yield _Draft("lookup", "lives", q, v(x, "lives"), "", ((x, "lives"),))
        if world.has(x, "role"):
            fact = world.facts[(x, "role")]
            q = f"Who is the {fact.value} at {fact.other}?"
            yield _Draft("lookup", "role", q, x, "", ((x, "role"),))
            q = f"In which year did {x} join {fact.other}?"
            yield _Draft("lookup", "joined", q, v(x, "joined"), "", ((x, "joined"),))
    for t in world.of_type("town"):
        q = rng.choice([f"What is the population of {t}?", f"How many people live in {t}?"])
        yield _Draft("lookup", "population", q, v(t, "population"), "", ((t, "population"),))
        yield _Draft(
            "lookup", "founded", f"In which year was {t} founded?", v(t, "founded"), "", ((t, "founded"),)
        )
        if world.has(t, "area"):
            q = f"What is the area of {t}, in square kilometres?"
            yield _Draft("lookup", "area", q, v(t, "area"), "square kilometres", ((t, "area"),))
    for c in world.of_type("currency"):
        yield _Draft(
            "lookup", "rate", f"How many dollars is one {c} worth?", v(c, "rate"), "dollars", ((c, "rate"),)
        )


def _two_lookups(world: World, rng: random.Random) -> Iterator[_Draft]:
    """Two facts, then a difference, sum, ratio or percentage."""
    v = world.value
    priced = _dollar_products(world)
    for a, b in _pairs(priced, rng, 10):
        x, y = v(a, "price"), v(b, "price")
        keys = ((a, "price"), (b, "price"))
        if x > y:
            q = f"How much more does the {a} cost than the {b}, in dollars?"
            yield _Draft("two_lookups", "difference", q, x - y, "dollars", keys, f"{x} - {y}")
            q = f"By what percentage is the price of the {a} higher than the price of the {b}?"
            yield _Draft(
                "two_lookups", "percentage", q, (x - y) / y * 100, "%", keys, f"({x} - {y}) / {y} * 100", 0.01
            )
        q = f"What do one {a} and one {b} cost together, in dollars?"
        yield _Draft("two_lookups", "sum", q, x + y, "dollars", keys, f"{x} + {y}")
    weighed = [p for p in world.of_type("product") if world.has(p, "weight")]
    for a, b in _pairs(weighed, rng, 6):
        x, y = v(a, "weight"), v(b, "weight")
        keys = ((a, "weight"), (b, "weight"))
        q = f"What is the combined weight of the {a} and the {b}, in kilograms?"
        yield _Draft("two_lookups", "sum", q, x + y, "kg", keys, f"{_number(x)} + {_number(y)}", 0.01)
        if x > y:
            q = f"How many times as heavy as the {b} is the {a}?"
            yield _Draft("two_lookups", "ratio", q, x / y, "", keys, f"{_number(x)} / {_number(y)}", 0.01)
    staffed = [o for o in world.of_type("org") if world.has(o, "employees")]
    for a, b in _pairs(staffed, rng, 8):
        x, y = v(a, "employees"), v(b, "employees")
        keys = ((a, "employees"), (b, "employees"))
        if x > y:
            q = f"How many more employees does {a} have than {b}?"
            yield _Draft("two_lookups", "difference", q, x - y, "", keys, f"{x} - {y}")
            q = f"How many times as many employees as {b} does {a} have?"
            yield _Draft("two_lookups", "ratio", q, x / y, "", keys, f"{x} / {y}", 0.01)
        q = f"What percentage of the employees of {a} and {b} together work for {a}?"
        yield _Draft(
            "two_lookups", "percentage", q, x / (x + y) * 100, "%", keys, f"{x} / ({x} + {y}) * 100", 0.01
        )
    for a, b in _pairs(world.of_type("town"), rng, 6):
        x, y = v(a, "population"), v(b, "population")
        keys = ((a, "population"), (b, "population"))
        if x > y:
            q = f"How many more people live in {a} than in {b}?"
            yield _Draft("two_lookups", "difference", q, x - y, "", keys, f"{x} - {y}")
    powered = [p for p in world.of_type("product") if world.has(p, "battery")]
    for a, b in _pairs(powered, rng, 4):
        x, y = v(a, "battery"), v(b, "battery")
        if x > y:
            q = f"How many minutes longer does the battery of the {a} last than that of the {b}?"
            keys = ((a, "battery"), (b, "battery"))
            yield _Draft("two_lookups", "difference", q, x - y, "minutes", keys, f"{x} - {y}")


def _holder(world: World, org: str, role: str) -> str:
    """The person who holds ``role`` at ``org``."""
    return next(
        x
        for x in world.of_type("person")
        if (fact := world.facts.get((x, "role"))) and (fact.value, fact.other) == (role, org)
    )


def _chains(world: World, rng: random.Random) -> Iterator[_Draft]:
    """A relation followed to another thing, and a fact of that thing."""
    v = world.value
    for p in world.of_type("product"):
        o = v(p, "maker")
        yield _Draft(
            "chain",
            "founder_of_maker",
            f"Who founded the company that makes the {p}?",
            v(o, "founder"),
            "",
            ((p, "maker"), (o, "founder")),
        )
        q = f"In which town does the company that makes the {p} have its headquarters?"
        yield _Draft("chain", "hq_of_maker", q, v(o, "hq"), "", ((p, "maker"), (o, "hq")))
        if world.has(o, "employees"):
            q = f"How many employees does the company that makes the {p} have?"
            yield _Draft(
                "chain", "employees_of_maker", q, v(o, "employees"), "", ((p, "maker"), (o, "employees"))
            )
        role = rng.choice(_ROLES)
        x = _holder(world, o, role)
        yield _Draft(
            "chain",
            "role_of_maker",
            f"Who is the {role} of the company that makes the {p}?",
            x,
            "",
            ((p, "maker"), (x, "role")),
        )
    for o in world.of_type("org"):
        f = v(o, "founder")
        yield _Draft(
            "chain",
            "home_of_founder",
            f"In which town does the founder of {o} live?",
            v(f, "lives"),
            "",
            ((o, "founder"), (f, "lives")),
        )
        t = v(o, "hq")
        q = f"What is the population of the town where {o} has its headquarters?"
        yield _Draft("chain", "population_of_hq", q, v(t, "population"), "", ((o, "hq"), (t, "population")))
        if world.has(f, "born"):
            yield _Draft(
                "chain",
                "birth_of_founder",
                f"In which year was the founder of {o} born?",
                v(f, "born"),
                "",
                ((o, "founder"), (f, "born")),
            )
    for x in world.of_type("person"):
        if world.has(x, "role"):
            fact = world.facts[(x, "role")]
            t = v(x, "lives")
            q = f"What is the population of the town where the {fact.value} of {fact.other} lives?"
            yield _Draft(
                "chain",
                "population_of_home",
                q,
                v(t, "population"),
                "",
                ((x, "role"), (x, "lives"), (t, "population")),
            )


def _dates(world: World, rng: random.Random) -> Iterator[_Draft]:
    """Ages and years between events."""
    v = world.value
    for o in world.of_type("org"):
        f = v(o, "founder")
        if world.has(f, "born"):
            b, y = v(f, "born"), v(o, "founded")
            q = f"How old was the founder of {o} in the year the company was founded?"
            yield _Draft(
                "dates",
                "age_at_founding",
                q,
                y - b,
                "years",
                ((o, "founder"), (f, "born"), (o, "founded")),
                f"{y} - {b}",
            )
    for p in world.of_type("product"):
        o = v(p, "maker")
        y, launched = v(o, "founded"), v(p, "launch")
        q = f"How many years after its maker was founded was the {p} launched?"
        yield _Draft(
            "dates",
            "years_between",
            q,
            launched - y,
            "years",
            ((p, "maker"), (o, "founded"), (p, "launch")),
            f"{launched} - {y}",
        )
    for x in world.of_type("person"):
        if world.has(x, "born"):
            b = v(x, "born")
            year = rng.randrange(2030, 2046)
            q = f"How old will {x} turn in {year}?"
            yield _Draft("dates", "age_in_year", q, year - b, "years", ((x, "born"),), f"{year} - {b}")
            age = rng.randrange(30, 71)
            yield _Draft(
                "dates",
                "year_of_age",
                f"In which year {'did' if b + age <= 2025 else 'will'} {x} turn {age}?",
                b + age,
                "",
                ((x, "born"),),
                f"{b} + {age}",
            )
            if world.has(x, "joined"):
                j, o = v(x, "joined"), world.facts[(x, "joined")].other
                q = f"How old was {x} when joining {o}?"
                yield _Draft(
                    "dates", "age_at_joining", q, j - b, "years", ((x, "born"), (x, "joined")), f"{j} - {b}"
                )
        if world.has(x, "joined"):
            j, o = v(x, "joined"), world.facts[(x, "joined")].other
            year = rng.randrange(2026, 2036)
            q = f"By {year}, how many years will {x} have been with {o}?"
            yield _Draft("dates", "years_with", q, year - j, "years", ((x, "joined"),), f"{year} - {j}")


def _conversions(world: World, rng: random.Random) -> Iterator[_Draft]:
    """A unit or a currency converted: minutes to hours, kg to grams, dollars to cents, currencies."""
    v = world.value
    currencies = world.of_type("currency")
    for p in world.of_type("product"):
        if world.has(p, "battery"):
            m = v(p, "battery")
            q = f"How many hours does the battery of the {p} last?"
            yield _Draft(
                "conversion", "minutes_to_hours", q, m / 60, "hours", ((p, "battery"),), f"{m} / 60", 0.01
            )
        if world.has(p, "weight"):
            w = v(p, "weight")
            q = f"What is the weight of the {p} in grams?"
            yield _Draft(
                "conversion",
                "kg_to_grams",
                q,
                w * 1000,
                "grams",
                ((p, "weight"),),
                f"{_number(w)} * 1000",
                0.01,
            )
        price = world.facts[(p, "price")]
        if price.unit == "dollars":
            x = int(price.value)
            yield _Draft(
                "conversion",
                "dollars_to_cents",
                f"What is the price of the {p} in cents?",
                x * 100,
                "cents",
                ((p, "price"),),
                f"{x} * 100",
            )
            c = rng.choice(currencies)
            r = v(c, "rate")
            q = f"What is the price of the {p} in {c}s?"
            yield _Draft(
                "conversion",
                "dollars_to_currency",
                q,
                x / r,
                f"{c}s",
                ((p, "price"), (c, "rate")),
                f"{x} / {r}",
                0.01,
            )
        else:
            c, x = price.unit.removesuffix("s"), int(price.value)
            r = v(c, "rate")
            q = f"What is the price of the {p} in dollars?"
            yield _Draft(
                "conversion",
                "currency_to_dollars",
                q,
                x * r,
                "dollars",
                ((p, "price"), (c, "rate")),
                f"{x} * {r}",
                0.01,
            )
            n = rng.randrange(2, 7)
            q = f"What do {n} {p} units cost in dollars?"
            yield _Draft(
                "conversion",
                "currency_to_dollars",
                q,
                n * x * r,
                "dollars",
                ((p, "price"), (c, "rate")),
                f"{n} * {x} * {r}",
                0.01,
            )


def _comparisons(world: World, rng: random.Random) -> Iterator[_Draft]:
    """Which of two is larger (or earlier): a name."""
    v = world.value
    specs = [
        ("price", _dollar_products(world), "Which costs more, the {a} or the {b}?", max),
        (
            "weight",
            [p for p in world.of_type("product") if world.has(p, "weight")],
            "Which is heavier, the {a} or the {b}?",
            max,
        ),
        (
            "battery",
            [p for p in world.of_type("product") if world.has(p, "battery")],
            "Which has the longer battery life, the {a} or the {b}?",
            max,
        ),
        ("founded", world.of_type("org"), "Which was founded earlier, {a} or {b}?", min),
        ("population", world.of_type("town"), "Which town has the larger population, {a} or {b}?", max),
        (
            "born",
            [x for x in world.of_type("person") if world.has(x, "born")],
            "Who was born first, {a} or {b}?",
            min,
        ),
    ]
    for attribute, items, template, pick in specs:
        for a, b in _pairs(items, rng, 6):
            x, y = v(a, attribute), v(b, attribute)
            if x == y:
                continue
            winner = a if pick(x, y) == x else b
            loser = b if winner == a else a
            q = template.format(a=a, b=b)
            yield _Draft(
                "comparison", attribute, q, winner, "", ((a, attribute), (b, attribute)), rival=loser
            )


def _not_in_files(world: World, rng: random.Random) -> Iterator[_Draft]:
    """The files do not hold the fact: left out for this thing, never recorded, or no such thing."""
    for p in world.of_type("product"):
        if not world.has(p, "weight"):
            yield _Draft(
                "not_in_files",
                "left_out",
                f"What is the weight of the {p}, in kilograms?",
                None,
                missing_query=f"{p} weight",
            )
        kind = world.things[p].kind
        if not world.has(p, "battery") and kind in _BATTERY_KINDS:
            yield _Draft(
                "not_in_files",
                "left_out",
                f"How many minutes does the battery of the {p} last?",
                None,
                missing_query=f"{p} battery",
            )
        yield _Draft(
            "not_in_files",
            "never_recorded",
            f"What is the top speed of the {p}?",
            None,
            missing_query=f"{p} top speed",
        )
    for o in world.of_type("org"):
        if not world.has(o, "employees"):
            yield _Draft(
                "not_in_files",
                "left_out",
                f"How many employees does {o} have?",
                None,
                missing_query=f"{o} employees",
            )
        yield _Draft(
            "not_in_files",
            "never_recorded",
            f"What was the annual revenue of {o}?",
            None,
            missing_query=f"{o} annual revenue",
        )
    for x in world.of_type("person"):
        if not world.has(x, "born"):
            yield _Draft(
                "not_in_files", "left_out", f"In which year was {x} born?", None, missing_query=f"{x} born"
            )
        yield _Draft(
            "not_in_files",
            "never_recorded",
            f"How tall is {x}, in centimetres?",
            None,
            missing_query=f"{x} height",
        )
    for t in world.of_type("town"):
        if not world.has(t, "area"):
            yield _Draft(
                "not_in_files",
                "left_out",
                f"What is the area of {t}, in square kilometres?",
                None,
                missing_query=f"{t} area",
            )
    codes = {p.split()[-1] for p in world.of_type("product")}
    for p in world.of_type("product")[::2]:
        line = p.split()[0]
        ghost = next(
            f"{line} {c}"
            for c in rng.sample(sorted(_GHOST_CODES - codes), 3)
            if f"{line} {c}" not in world.things
        )
        yield _Draft(
            "not_in_files",
            "no_such_thing",
            f"What is the price of the {ghost}, in dollars?",
            None,
            missing_query=f"{ghost} price",
        )


_GHOST_CODES = frozenset(f"{letter}{digit}" for letter in "HKTVXRMZ" for digit in range(2, 10))


def _questions(world: World, rng: random.Random) -> list[Question]:
    """Every kind's drafts, deduplicated, up to ``QUESTIONS_PER_KIND`` of each drawn at random,
    each with its minimal plan."""
    drafts: dict[str, dict[str, _Draft]] = {kind: {} for kind in KINDS}
    for make in (_lookups, _two_lookups, _chains, _dates, _conversions, _comparisons, _not_in_files):
        for draft in make(world, rng):
            drafts[draft.kind].setdefault(draft.question, draft)
    questions = []
    for kind in KINDS:
        pool = list(drafts[kind].values())
        for number, draft in enumerate(rng.sample(pool, min(QUESTIONS_PER_KIND, len(pool))), start=1):
            answer = draft.answer
            if isinstance(answer, float) and not draft.tolerance:
                answer = round(answer, 6)
            questions.append(
                Question(
                    id=f"s{world.seed}-{kind}-{number:02}",
                    kind=kind,
                    op=draft.op,
                    question=draft.question,
                    answer=answer,
                    unit=draft.unit,
                    plan=_plan(world, draft),
                    facts=draft.lookups,
                    tolerance=draft.tolerance,
                    rival=draft.rival,
                )
            )
    return questions


# --- answers ---------------------------------------------------------------------------------------


def check(question: Question, answer: str) -> bool:
    """Whether ``answer`` is right: the number within the question's tolerance, the name (for a
    comparison, named before the other candidate, or alone), or, when the files do not hold the
    fact, a plain statement that they do not."""
    expected = question.answer
    if expected is None:
        return says_not_found(answer)
    if isinstance(expected, str):
        if not contains(answer, expected):
            return False
        if question.rival and contains(answer, question.rival):
            text = f" {normalise(answer)} "
            return text.index(f" {normalise(expected)} ") < text.index(f" {normalise(question.rival)} ")
        return True
    return number_matches(answer, float(expected), question.tolerance)


def answer_text(question: Question) -> str:
    """The answer as an ideal agent states it."""
    if question.answer is None:
        return NOT_IN_FILES_ANSWER
    if isinstance(question.answer, str):
        return question.answer
    return f"{_number(question.answer)} {question.unit}".strip()


def ideal_replies(question: Question) -> list[str]:
    """An ideal model's replies in the ReAct text format: the minimal plan's calls, then the answer."""
    replies = []
    for call in question.plan:
        thought = "I need to look this up." if call.tool == "knowledge_search" else "Now I compute it."
        replies.append(f"Thought: {thought}\nAction: {call.tool}\nAction Input: {call.input}")
    replies.append(f"Thought: I now know the final answer\nFinal Answer: {answer_text(question)}")
    return replies


def sample(questions: Sequence[Question], per_kind: int, seed: int) -> list[Question]:
    """``per_kind`` questions of each kind (all when fewer), drawn with a generator of their own so
    that the same call always gives the same questions; kinds in ``KINDS`` order."""
    rng = random.Random(f"sample-{seed}-{per_kind}")
    chosen: list[Question] = []
    for kind in KINDS:
        pool = [q for q in questions if q.kind == kind]
        chosen += sorted(rng.sample(pool, min(per_kind, len(pool))), key=lambda q: q.id)
    return chosen


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=TUNING_SEEDS[0])
    parser.add_argument("--write", type=Path, default=None, help="write the files and questions.json here")
    args = parser.parse_args(argv)
    world = World.generate(args.seed)
    print(
        f"seed {args.seed}: {len(world.files)} files, {len(world.facts)} facts, {len(world.questions)} questions"
    )
    for kind in KINDS:
        of_kind = [q for q in world.questions if q.kind == kind]
        print(f"  {kind:13} {len(of_kind):3}  e.g. {of_kind[0].question}  ->  {answer_text(of_kind[0])}")
    if args.write:
        world.write(args.write)
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
