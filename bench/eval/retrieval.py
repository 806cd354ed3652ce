"""How often the knowledge search misses a fact that a generated question's minimal plan searches for.

For every planned ``knowledge_search`` of every question of the given seeds, the search (with the
evaluation's settings) must return a passage that names the thing and states the value
(``World.in_view``). Counted twice: with ``KnowledgeBaseTool`` as it is (passages holding more
distinct query words first, BM25 among equals), and with BM25 alone, the ranking it had before.

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


class BM25First(KnowledgeBaseTool):
    """The ranking before coverage came first: BM25 score alone, and any query word missing from the
    results brought in, as the tool did then (kept here to measure against)."""

    def search(self, query: str) -> list[tuple[float, Passage]]:
        """Like ``KnowledgeBaseTool.search``, ranked by BM25 alone."""
        if not super().search(query):  # builds the index; nothing matches
            return []
        words = tokenize(query)
        index = self._current_index()
        scores, wanted = index.bm25.get_scores(words), set(words)
        ranked = sorted(
            (i for i, passage_words in enumerate(index.words) if wanted & passage_words),
            key=lambda i: (-scores[i], i),
        )
        return [
            (float(scores[i]), self.passages[i])
            for i in self._cover(index, ranked, wanted, rarer_than_held=False)
        ]


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
    print("| seed | planned searches | missed, BM25 alone | missed, knowledge_search |")
    print("|---|---|---|---|")
    totals = [0, 0, 0]
    for seed in seeds:
        world = World.generate(seed)
        before, searches = misses(world, BM25First.from_documents(world.documents(), **KNOWLEDGE_SETTINGS))
        now, _ = misses(world, KnowledgeBaseTool.from_documents(world.documents(), **KNOWLEDGE_SETTINGS))
        print(f"| {seed} | {searches} | {len(before)} | {len(now)} |")
        for miss in now:
            print(f"|  | {miss} | | |")
        totals = [totals[0] + searches, totals[1] + len(before), totals[2] + len(now)]
    print(f"| **all** | {totals[0]} | {totals[1]} | {totals[2]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
