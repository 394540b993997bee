"""The real-trajectory corpus, replayed with the shipped defaults (issue 18, "Done when").

Published runs of real agents (``benchmarks/trajectories/README.md``), labelled by rules
that never look at the detectors: on the clean runs the default policy must make no STOP
at all, and it must stop at least 90 % of the loop runs. The figures are the ones
``python benchmarks/real_trajectories.py`` prints.

The corpus is data from its sources, kept outside the repository's history: in
``shared/trajectories`` beside the repository (or ``$LOOPGUARD_TRAJECTORIES``). Without it
the test is skipped and says where it looked.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from real_trajectories import find_corpus, score  # noqa: E402

CORPUS = find_corpus()

pytestmark = pytest.mark.skipif(
    CORPUS is None,
    reason="no trajectory corpus in $LOOPGUARD_TRAJECTORIES or shared/trajectories "
    "(benchmarks/trajectories/README.md says how to make it)",
)


@pytest.fixture(scope="module")
def scored() -> dict:
    assert CORPUS is not None
    _status, summary, elapsed = score(CORPUS)
    assert elapsed < 60, f"the corpus took {elapsed:.1f} s to replay: keep the sample small"
    return summary["labels"]


def test_every_label_matched_one_replayed_run(scored) -> None:
    assert scored["labels_without_run"] == 0 and scored["unlabelled_runs"] == 0
    assert scored["loop_runs"] >= 1 and scored["clean_runs"] >= 1


def test_no_false_stop_on_any_clean_run_of_any_set(scored) -> None:
    for name, tally in scored["sets"].items():
        assert tally["false_stops"] == 0, f"{name}: {tally}"


def test_recall_on_the_loop_runs_is_at_least_90_percent(scored) -> None:
    assert scored["recall"] >= 0.9, {
        name: tally["recall"] for name, tally in scored["sets"].items()
    }
