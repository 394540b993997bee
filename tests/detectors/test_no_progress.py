"""No progress: identical calls answered identically fire; polling and iteration do not."""

from __future__ import annotations

from scripted_runs import Driver, call, edit_then_test, exchange, failing, result

from otel_loopguard.engine.detectors.no_progress import NoProgressDetector


def test_same_call_same_output_fires_on_the_second_repeat() -> None:
    run = Driver(NoProgressDetector)
    events = exchange("search", {"q": "pricing"}, "no results")
    assert run.feed(events * 2) == []
    (signal,) = run.feed(exchange("search", {"q": "pricing"}, "no results"))
    assert (signal.detector, signal.kind) == ("no_progress", "no_progress")
    assert signal.evidence["repeats"] == 2
    assert signal.message == "search returned the same result 3 times for the same call"


def test_volatile_tokens_in_the_output_do_not_hide_the_repeat() -> None:
    run = Driver(NoProgressDetector)
    outputs = [
        "No results (request 8f3a91c2e4) at 2026-11-30T10:00:01Z",
        "no results (request 77be01d5aa) at 2026-11-30T10:00:09Z",
        "No  results (request 0c1d2e3f4a) at 2026-11-30T10:00:17Z",
    ]
    signals = run.feed(e for out in outputs for e in exchange("search", {"q": "x"}, out))
    assert len(signals) == 1


def test_edits_that_differ_only_in_an_operator_are_still_new_work() -> None:
    """Near-duplicate keys fold punctuation and word order; an operator tweak is real work,
    so no_progress compares exact calls (paraphrased searches are repetition's job)."""
    run = Driver(NoProgressDetector)
    events = []
    for new in ("x = a + b", "x = a - b", "x = a * b", "x = b - a"):
        events += exchange("edit_file", {"path": "calc.py", "new": new}, "ok")
        events += exchange("bash", {"command": "pytest -q"}, "1 failed, 3 passed")
    assert run.feed(events) == []


def test_threshold_comes_from_config() -> None:
    run = Driver(NoProgressDetector, no_progress_threshold=4)
    assert run.feed(e for _ in range(4) for e in exchange("status", {"job": 7}, "pending")) == []
    assert len(run.feed(exchange("status", {"job": 7}, "pending"))) == 1


def test_polling_with_changing_output_never_fires() -> None:
    run = Driver(NoProgressDetector)
    events = [e for pct in range(0, 100, 5) for e in exchange("status", {"job": 7}, f"{pct}% done")]
    assert run.feed(events) == []


def test_polling_that_stalls_fires() -> None:
    run = Driver(NoProgressDetector)
    progress = ["10% done", "20% done", "30% done", "30% done", "30% done"]
    signals = run.feed(e for out in progress for e in exchange("status", {"job": 7}, out))
    assert len(signals) == 1


def test_edit_run_tests_iteration_never_fires_even_with_identical_test_output() -> None:
    run = Driver(NoProgressDetector)
    events = edit_then_test([f"attempt {i}" for i in range(10)], "1 failed, 3 passed")
    assert run.feed(events) == []


def test_repeating_the_same_edit_and_test_is_no_progress() -> None:
    run = Driver(NoProgressDetector)
    assert run.feed(edit_then_test(["same"] * 4, "1 failed, 3 passed"))


def test_retry_then_success_does_not_fire() -> None:
    run = Driver(NoProgressDetector)
    events = failing("fetch", {"url": "/a"}, "timeout") * 3
    events += exchange("fetch", {"url": "/a"}, "<html>page</html>")
    events += exchange("read_file", {"path": "notes.md"}, "notes")
    assert run.feed(events) == []


def test_results_pair_with_calls_without_call_ids() -> None:
    run = Driver(NoProgressDetector)
    events = [call("search", {"q": "x"}), result("search", "nothing")] * 3
    assert len(run.feed(events)) == 1


def test_the_same_error_result_again_is_no_progress() -> None:
    run = Driver(NoProgressDetector)
    events = [call("mcp_tool", {"a": 1}), result("mcp_tool", {"isError": True, "content": "x"})]
    (signal,) = run.feed(events * 3)
    assert signal.evidence["failed"] is True
    assert signal.message == "mcp_tool failed the same way 3 times for the same call"


def test_retryable_error_results_are_left_to_the_permanent_failure_detector() -> None:
    run = Driver(NoProgressDetector)
    events = [
        call("mcp_tool", {"a": 1}),
        result("mcp_tool", {"isError": True, "content": "Read timed out"}),
    ]
    assert run.feed(events * 5) == []


def test_the_same_call_failing_with_the_same_message_is_no_progress_whatever_the_type() -> None:
    """Span errors: no result, the error is the outcome; an unknown type is no excuse."""
    run = Driver(NoProgressDetector)
    events = failing("apply_patch", {"patch": "@@ -1 +1 @@"}, "hunk 1 FAILED", type="PatchErr")
    assert run.feed(events * 2) == []
    (signal,) = run.feed(events)
    assert signal.evidence["repeats"] == 2 and signal.evidence["failed"] is True


def test_distinct_calls_failing_or_one_call_failing_differently_are_not_repeats() -> None:
    run = Driver(NoProgressDetector)
    events = []
    for i in range(6):  # distinct edits, each rejected the same way
        events += failing("edit_file", {"path": "a.py", "new": f"v{i}"}, "rejected", type="E")
    for i in range(6):  # one call, a different failure each time
        events += failing("run_tests", {"k": "calc"}, f"{i + 1} of 7 tests failed", type="E")
    assert run.feed(events) == []


def test_retried_timeouts_do_not_count_and_do_not_hide_real_repeats() -> None:
    run = Driver(NoProgressDetector)
    assert run.feed(failing("fetch", {"url": "/a"}, "timed out") * 6) == []
    assert len(run.feed(exchange("fetch", {"url": "/b"}, "same page") * 3)) == 1


def test_export_restore_mid_run_continues_counts() -> None:
    run = Driver(NoProgressDetector)
    run.feed(exchange("search", {"q": "x"}, "none") * 2)
    run.reload()
    assert len(run.feed(exchange("search", {"q": "x"}, "none"))) == 1


def test_state_stays_bounded_after_100k_distinct_calls() -> None:
    run = Driver(NoProgressDetector, history_size=32)
    events = (e for i in range(50_000) for e in exchange("search", {"q": i}, "none"))
    assert run.feed(events) == []
    assert len(run.state.calls) <= 32
    assert len(run.pending.by_id) == 0 and len(run.pending.by_tool) <= 64
