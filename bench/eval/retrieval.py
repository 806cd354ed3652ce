"""How often the knowledge search misses a fact that a generated question's minimal plan searches for.

For every planned ``knowledge_search`` of every question of the given seeds, the search (with the
evaluation's settings) must return a passage that names the thing and states the value
(``World.in_view``). Counted twice: with ``KnowledgeBaseTool`` as it is, and with a proposed ranking
that orders passages by how many distinct query words they hold before their BM25 score (tried
here, by subclassing; the package is unchanged).

    python bench/eval/retrieval.py --seeds 1-10
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from explicit_react.tools import KnowledgeBaseTool
from explicit_react.tools.knowledge import Passage, tokenize

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import KNOWLEDGE_SETTINGS
from worlds import World


class CoordinationFirst(KnowledgeBaseTool):
    """The proposal: passages holding more of the query's distinct words rank first, BM25 breaks ties."""

    def search(self, query: str) -> list[tuple[float, Passage]]:
        """Like ``KnowledgeBaseTool.search``, ranked by matched query words, then BM25."""
        if not super().search(query):  # builds the index; nothing matches
            return []
        words = tokenize(query)
        scores, wanted = self._index.get_scores(words), set(words)
        ranked = sorted(
            (i for i, passage_words in enumerate(self._passage_words) if wanted & passage_words),
            key=lambda i: (-len(wanted & self._passage_words[i]), -scores[i], i),
        )
        return [(float(scores[i]), self.passages[i]) for i in self._cover(ranked, wanted)]


def misses(world: World, tool: KnowledgeBaseTool) -> tuple[list[str], int]:
    """The planned searches whose results do not show a fact they were planned to find, and the
    number of planned searches."""
    missed, searches = [], 0
    for question in world.questions:
        for call in question.plan:
            if call.tool == "knowledge_search" and call.facts:
                searches += 1
                result = tool.invoke(call.input)
                if not all(world.in_view(key, result) for key in call.facts):
                    missed.append(f"{question.id}: {call.input}")
    return missed, searches


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-5", help="a range (1-10) or a comma-separated list")
    args = parser.parse_args(argv)
    if "-" in args.seeds:
        low, high = map(int, args.seeds.split("-"))
        seeds = list(range(low, high + 1))
    else:
        seeds = [int(s) for s in args.seeds.split(",")]
    print("| seed | planned searches | missed, knowledge_search | missed, coordination first |")
    print("|---|---|---|---|")
    totals = [0, 0, 0]
    for seed in seeds:
        world = World.generate(seed)
        as_is, searches = misses(
            world, KnowledgeBaseTool.from_documents(world.documents(), **KNOWLEDGE_SETTINGS)
        )
        proposed, _ = misses(world, CoordinationFirst.from_documents(world.documents(), **KNOWLEDGE_SETTINGS))
        print(f"| {seed} | {searches} | {len(as_is)} | {len(proposed)} |")
        for miss in as_is:
            print(f"|  | {miss} | | |")
        totals = [totals[0] + searches, totals[1] + len(as_is), totals[2] + len(proposed)]
    print(f"| **all** | {totals[0]} | {totals[1]} | {totals[2]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
