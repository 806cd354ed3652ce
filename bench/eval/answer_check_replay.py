"""Replay the answer check (``check_answer=True``) over saved results: which finished answers it would
have sent back, right ones and wrong ones, by check. No model runs: it reads results files.

It is an estimate of the check's reach and cost, not of its effect: whether a model sent back then
answers better is measured by running it (``generated.py --systems explicit,explicit_answer_check``).
The sources are the question and the successful steps' observations as saved (the hand-written
sets' runner keeps 300 characters of each, so ``unsourced`` may fire more here than in a run).

    python bench/eval/answer_check_replay.py bench/results/eval_local_*.json bench/results/generated_local_*.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from explicit_react.answer_check import find_problem


def replay(
    records: Iterable[dict[str, Any]], calculator: str | None = "calculator"
) -> Counter[tuple[str, str]]:
    """``(right|wrong, check or "-")`` counts over the records that finished with an answer of their own."""
    counts: Counter[tuple[str, str]] = Counter()
    for record in records:
        if "trace" not in record or record.get("limit_reached"):
            continue
        seen = [str(step["observation"]) for step in record["trace"] if step.get("error") is None]
        sources = "\n".join([record["question"], *seen])
        problem = find_problem(record["question"], record["answer"], sources, calculator=calculator)
        counts["right" if record["correct"] else "wrong", problem.check if problem else "-"] += 1
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="results files of run.py or generated.py")
    args = parser.parse_args(argv)
    total: Counter[tuple[str, str]] = Counter()
    for path in args.files:
        report = json.loads(path.read_text(encoding="utf-8"))
        for records in report.get("records", {}).values():
            total += replay(records)
    checks = sorted({check for _, check in total} - {"-"})
    print("| answers | " + " | ".join(["sent back", *checks, "accepted"]) + " |")
    print("|---|" + "---|" * (len(checks) + 2))
    for label in ("right", "wrong"):
        sent = sum(n for (kind, check), n in total.items() if kind == label and check != "-")
        cells = [str(sent), *(str(total[label, c]) for c in checks), str(total[label, "-"])]
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
