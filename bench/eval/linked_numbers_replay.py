"""How many saved runs sent the calculator a number taken only from results about something else: an
estimate of the reach of a check that would refuse such a call (not built). No model runs.

A number of a calculator call counts as linked when a result sentence that states it names nothing,
or names something ``name_links`` ties to a name of the question; the question's own numbers and the
common ones (``policy.COMMON_NUMBERS``) need no source. A run counts as flagged when one of its calls
has a number stated only in sentences about other things ("Pranermouth was founded in 1531." used
for the founding year of a product's maker).

    python bench/eval/linked_numbers_replay.py bench/results/generated_local_qwen_tuning_*.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from explicit_react.policy import COMMON_NUMBERS, numbers_in

sys.path.insert(0, str(Path(__file__).resolve().parent))
from name_links import sentences, unlinked_names


def unlinked_numbers(question: str, expression: str, results: Sequence[str]) -> list[float]:
    """The numbers of ``expression`` that ``results`` state only in sentences not linked to the question."""
    sources = "\n".join([question, *results])
    stated = [(numbers_in(sentence), names) for result in results for sentence, names in sentences(result)]
    unlinked = []
    for number in numbers_in(expression):
        if number in numbers_in(question) or number in COMMON_NUMBERS:
            continue
        holders = [names for numbers, names in stated if number in numbers]
        if holders and not any(
            not names or not unlinked_names(question, " ".join(n.title() for n in names), sources)
            for names in holders
        ):
            unlinked.append(number)
    return unlinked


def flagged(record: dict[str, Any]) -> bool:
    """Whether a calculator call of the run used an unlinked number."""
    results: list[str] = []
    for step in record.get("trace") or []:
        if step.get("error") is not None:
            continue
        if step["action"] == "calculator":
            if unlinked_numbers(record["question"], str(step["input"]), results):
                return True
        else:
            results.append(str(step["observation"]))
    return False


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="results files of generated.py")
    files = parser.parse_args(argv).files
    reports = [json.loads(path.read_text(encoding="utf-8"))["records"] for path in files]
    runs = [record for report in reports for records in report.values() for record in records]
    counts = Counter(("right" if run["correct"] else "wrong", flagged(run)) for run in runs)
    print("| runs | flagged | not flagged |\n|---|---|---|")
    for outcome in ("right", "wrong"):
        print(f"| {outcome} | {counts[outcome, True]} | {counts[outcome, False]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
