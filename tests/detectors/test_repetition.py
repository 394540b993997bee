"""Repetition: the Nth identical (or paraphrased) call fires; other iteration does not."""

from __future__ import annotations

import json
import logging
import sys
import types

import pytest
from scripted_runs import Driver, call

from otel_loopguard.engine.detectors.repetition import RepetitionDetector


def test_third_identical_call_fires_with_a_human_message() -> None:
    run = Driver(RepetitionDetector)
    assert run.feed([call("search", {"query": "pricing"})] * 2) == []
    (signal,) = run.feed([call("search", {"query": "pricing"})])
    assert (signal.detector, signal.kind) == ("repetition", "exact")
    assert signal.message == "search called 3 times with identical arguments"
    assert signal.evidence["count"] == 3 and signal.evidence["tool"] == "search"


def test_score_grows_with_the_count() -> None:
    run = Driver(RepetitionDetector)
    scores = [s.score for s in run.feed([call("search", {"q": "x"})] * 8)]
    assert len(scores) == 6
    assert scores == sorted(scores) and scores[0] < scores[-1] <= 1.0


def test_threshold_comes_from_config() -> None:
    run = Driver(RepetitionDetector, repetition_threshold=5)
    assert run.feed([call("search", {"q": "x"})] * 4) == []
    assert len(run.feed([call("search", {"q": "x"})])) == 1


def test_same_tool_over_different_arguments_does_not_fire() -> None:
    run = Driver(RepetitionDetector)
    assert run.feed([call("read_file", {"path": f"src/module_{i}.py"}) for i in range(50)]) == []


def test_paraphrased_calls_fire_as_near_duplicates() -> None:
    run = Driver(RepetitionDetector)
    signals = run.feed(
        [
            call("search", {"query": "pricing plans"}),
            call("search", {"query": "Plans, pricing?"}),
            call("search", {"query": "please find the pricing plan"}),
        ]
    )
    assert [(s.kind, s.evidence["count"]) for s in signals] == [("near_duplicate", 3)]
    assert "near-identical" in signals[0].message


def test_near_duplicates_can_be_switched_off() -> None:
    run = Driver(RepetitionDetector, near_duplicate=False)
    queries = ["pricing plans", "Plans, pricing?", "please find the pricing plan"]
    assert run.feed([call("search", {"query": q}) for q in queries]) == []


def test_edit_then_test_loop_only_counts_the_test_command() -> None:
    """Iteration: distinct edits between identical test runs; at most the test run repeats."""
    run = Driver(RepetitionDetector)
    events = []
    for i in range(4):
        events.append(call("edit_file", {"path": "app.py", "patch": f"change number {i}"}))
        events.append(call("bash", {"command": "pytest -q"}))
    signals = run.feed(events)
    assert {s.evidence["tool"] for s in signals} == {"bash"}
    assert all(s.evidence["consecutive"] == 1 for s in signals)  # never back to back


def test_evidence_has_no_raw_arguments_unless_capture_is_on() -> None:
    secret = {"query": "customer 4471 salary"}
    run = Driver(RepetitionDetector)
    (signal,) = run.feed([call("search", secret)] * 3)
    assert "salary" not in repr(signal)
    captured = Driver(RepetitionDetector, capture_content=True)
    (signal,) = captured.feed([call("search", secret)] * 3)
    assert "salary" in signal.evidence["call"]


def test_export_restore_mid_run_continues_counts() -> None:
    run = Driver(RepetitionDetector)
    run.feed([call("search", {"q": "x"})] * 2)
    run.reload()
    (signal,) = run.feed([call("search", {"q": "x"})])
    assert signal.evidence["count"] == 3


def test_state_stays_bounded_after_100k_distinct_calls() -> None:
    run = Driver(RepetitionDetector, history_size=64)
    assert run.feed(call("search", {"q": f"query {i}"}) for i in range(100_000)) == []
    assert len(run.state.exact) <= 64 and len(run.state.near) <= 64
    assert len(run.detector.export_state(run.state)["exact"]) <= 64


@pytest.fixture
def similarity_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A user similarity hook module (word-overlap), importable by path like a real one."""
    module = types.ModuleType("user_similarity")

    def jaccard(a: str, b: str) -> float:
        left, right = set(a.split()), set(b.split())
        return len(left & right) / max(1, len(left | right))

    def broken(a: str, b: str) -> float:
        raise RuntimeError("model server down")

    module.jaccard = jaccard  # type: ignore[attr-defined]
    module.broken = broken  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "user_similarity", module)
    return module


def test_similarity_hook_catches_what_the_near_key_misses(similarity_module: object) -> None:
    run = Driver(RepetitionDetector, similarity="user_similarity:jaccard", similarity_threshold=0.5)
    signals = run.feed(
        [
            call("search", {"query": "pricing plans for teams"}),
            call("search", {"query": "pricing plans for companies"}),
            call("search", {"query": "pricing plans for enterprises"}),
        ]
    )
    assert [s.kind for s in signals] == ["similar"]
    # the hook's recent texts are raw arguments: exported run state leaves them out
    assert "pricing" not in json.dumps(run.detector.export_state(run.state))


def test_similarity_hook_sees_only_capped_text(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    module = types.ModuleType("measuring_similarity")

    def measure(a: str, b: str) -> float:
        seen.extend((len(a), len(b)))
        return 0.0

    module.measure = measure  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "measuring_similarity", module)
    run = Driver(RepetitionDetector, similarity="measuring_similarity:measure")
    run.feed(call("write_file", {"body": f"version {i} " + "x" * 10_000_000}) for i in range(3))
    assert seen and max(seen) <= 2 * run.config.signature_max_chars


def test_failing_similarity_hook_is_disabled_once_and_never_raises(
    similarity_module: object, caplog: pytest.LogCaptureFixture
) -> None:
    run = Driver(RepetitionDetector, similarity="user_similarity:broken")
    with caplog.at_level(logging.WARNING):
        assert run.feed([call("search", {"query": f"q {i}"}) for i in range(5)]) == []
    assert sum("similarity hook" in r.getMessage() for r in caplog.records) == 1
    assert run.detector.similarity is None


def test_unimportable_similarity_hook_warns_and_is_off(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        run = Driver(RepetitionDetector, similarity="no_such_module_xyz:score")
    assert run.detector.similarity is None
    assert "OTEL_LOOPGUARD_SIMILARITY" in caplog.text
