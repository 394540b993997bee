"""Permanent failure: the same non-retryable error again fires; retries that succeed do not."""

from __future__ import annotations

import pytest
from scripted_runs import Driver, call, exchange, failing, result

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.detectors.permanent_failure import (
    PermanentFailureDetector,
    classify_error,
)
from otel_loopguard.engine.events import ErrorInfo


@pytest.mark.parametrize(
    "error",
    [
        ErrorInfo(status_code=404),
        ErrorInfo(status_code=403, message="whatever"),
        ErrorInfo(status_code=422),
        ErrorInfo(message="404 Client Error: Not Found for url"),
        ErrorInfo(message="Permission denied: /etc/shadow"),
        ErrorInfo(message="Invalid argument: limit must be positive"),
        ErrorInfo(message="Unknown tool: serach"),
        ErrorInfo(message="1 validation error for SearchArgs"),
        ErrorInfo(type="FileNotFoundError", message="[Errno 2] No such file or directory: 'x'"),
    ],
)
def test_permanent_errors(error: ErrorInfo) -> None:
    assert classify_error(error) == "permanent"


@pytest.mark.parametrize(
    "error",
    [
        # a permanent-sounding type name alone is not trusted (issue 18, point 2)
        ErrorInfo(type="FileNotFoundError", message="[Errno 2] x"),
        ErrorInfo(type="PermissionError"),
        ErrorInfo(type="ValueError", message="bad date"),
        ErrorInfo(type="EditValidationError", message="edit rejected"),
        ErrorInfo(type="WeirdError", message="something odd happened"),
        ErrorInfo(type="error"),  # a span with status ERROR and nothing else
    ],
)
def test_unclassified_errors(error: ErrorInfo) -> None:
    assert classify_error(error) == "unclassified"


@pytest.mark.parametrize(
    "error",
    [
        ErrorInfo(status_code=429),
        ErrorInfo(status_code=503, message="not found"),  # the status decides
        ErrorInfo(message="Error code: 429 - rate limit exceeded"),
        ErrorInfo(message="Read timed out. (read timeout=10)"),
        ErrorInfo(message="Connection reset by peer"),
        ErrorInfo(message="Service temporarily unavailable"),
        ErrorInfo(type="TimeoutError"),
        ErrorInfo(type="RateLimitError"),
    ],
)
def test_retryable_errors(error: ErrorInfo) -> None:
    assert classify_error(error) == "retryable"


def test_same_permanent_error_twice_fires_strongly() -> None:
    run = Driver(PermanentFailureDetector)
    assert run.feed(failing("fetch", {"url": "/a"}, "Not Found", status=404)) == []
    (signal,) = run.feed(failing("fetch", {"url": "/a"}, "Not Found", status=404))
    assert (signal.detector, signal.kind) == ("permanent_failure", "permanent")
    assert signal.score >= 0.8
    assert signal.message == "fetch failed 2 times with the same permanent error (404)"


def test_retryable_errors_fire_later_and_weaker() -> None:
    run = Driver(PermanentFailureDetector)
    assert run.feed(failing("fetch", {"url": "/a"}, "timed out") * 3) == []
    (signal,) = run.feed(failing("fetch", {"url": "/a"}, "timed out"))
    assert signal.kind == "retryable" and signal.score < 0.5


def test_thresholds_come_from_config() -> None:
    run = Driver(
        PermanentFailureDetector, permanent_failure_threshold=3, retryable_failure_threshold=2
    )
    assert run.feed(failing("fetch", {"url": "/a"}, "forbidden") * 2) == []
    assert run.feed(failing("fetch", {"url": "/a"}, "forbidden"))
    assert run.feed(failing("fetch", {"url": "/b"}, "timeout") * 2)


def test_retry_then_success_resets_the_call() -> None:
    run = Driver(PermanentFailureDetector)
    events = failing("fetch", {"url": "/a"}, "Not Found", status=404)
    events += exchange("fetch", {"url": "/a"}, "page")
    events += failing("fetch", {"url": "/a"}, "Not Found", status=404)
    assert run.feed(events) == []
    events = failing("fetch", {"url": "/b"}, "timeout") * 3 + exchange("fetch", {"url": "/b"}, "ok")
    events += failing("fetch", {"url": "/b"}, "timeout") * 3
    assert run.feed(events) == []


def test_same_tool_over_different_arguments_does_not_fire() -> None:
    run = Driver(PermanentFailureDetector)
    events = [e for i in range(10) for e in failing("read_file", {"path": f"f{i}.py"}, "not found")]
    assert run.feed(events) == []


def test_unknown_tool_counts_per_tool_whatever_the_arguments() -> None:
    run = Driver(PermanentFailureDetector)
    events = failing("serach", {"q": "a"}, "Unknown tool: serach")
    events += failing("serach", {"q": "b"}, "Unknown tool: serach")
    (signal,) = run.feed(events)
    assert signal.kind == "permanent"


def test_mcp_error_results_count_as_errors() -> None:
    run = Driver(PermanentFailureDetector)
    events = [
        call("db_query", {"sql": "select 1"}),
        result("db_query", {"isError": True, "content": [{"text": "permission denied"}]}),
    ]
    (signal,) = run.feed(events * 2)
    assert signal.kind == "permanent"


def test_error_message_only_in_evidence_with_capture_on() -> None:
    events = failing("fetch", {"url": "/a"}, "Not Found: /home/alice/secret") * 2
    (signal,) = Driver(PermanentFailureDetector).feed(events)
    assert "alice" not in repr(signal)
    (signal,) = Driver(PermanentFailureDetector, capture_content=True).feed(events)
    assert "alice" in signal.evidence["error_message"]


def test_export_restore_mid_run_continues_counts() -> None:
    run = Driver(PermanentFailureDetector)
    run.feed(failing("fetch", {"url": "/a"}, "forbidden"))
    run.reload()
    assert run.feed(failing("fetch", {"url": "/a"}, "forbidden"))


def test_state_stays_bounded_after_100k_distinct_failures() -> None:
    run = Driver(PermanentFailureDetector, history_size=16)
    events = (e for i in range(50_000) for e in failing("fetch", {"url": f"/{i}"}, "timeout"))
    assert run.feed(events) == []
    assert len(run.state.failures) <= 16


def test_a_permanent_sounding_type_alone_does_not_stop_distinct_edits() -> None:
    """Span errors carry ``error.type`` only: distinct edits failing with it are not stuck."""
    run = Driver(PermanentFailureDetector)
    events = []
    for i in range(6):
        events += failing("edit_file", {"path": "a.py", "new": f"v{i}"}, "", type="EditError")
    assert run.feed(events) == []


def test_a_type_only_failure_of_the_same_call_pauses_late_then_persists_into_a_stop() -> None:
    run = Driver(PermanentFailureDetector)
    events = failing("edit_file", {"path": "a.py"}, "rejected", type="ValidationError")
    signals = run.feed(events * 8)
    assert [(s.kind, s.evidence["count"]) for s in signals] == [
        ("unclassified", 4),
        ("unclassified", 5),
        ("unclassified", 6),
        ("unclassified", 7),
        ("persistent", 8),
    ]
    assert signals[-1].score >= 0.8


def test_retryable_failures_of_the_same_call_escalate_to_persistent() -> None:
    """30 PAUSEs and never a STOP was the bug: the 8th identical timeout is a loop."""
    run = Driver(PermanentFailureDetector)
    kinds = [s.kind for s in run.feed(failing("fetch", {"url": "/a"}, "timed out") * 9)]
    assert kinds == ["retryable"] * 4 + ["persistent"] * 2


def test_a_permanent_failure_far_apart_with_progress_in_between_is_not_counted_twice() -> None:
    """401 -> refresh -> fifty successful calls -> 401 -> refresh -> success: no signal."""
    run = Driver(PermanentFailureDetector)
    events = failing("get_repo", {"name": "app"}, "401 Unauthorized", status=401)
    events += exchange("refresh_token", {}, "token refreshed")
    events += [e for i in range(50) for e in exchange("read_issue", {"n": i}, f"issue {i}")]
    events += failing("get_repo", {"name": "app"}, "401 Unauthorized", status=401)
    events += exchange("refresh_token", {}, "token refreshed")
    events += exchange("get_repo", {"name": "app"}, "repo app")
    assert run.feed(events) == []


def test_the_same_failure_around_an_unchanged_step_still_counts() -> None:
    """The twin: a refresh that does not help (same call, same answer each time) is no
    progress, so 401 -> refresh -> 401 -> refresh -> 401 fires."""
    run = Driver(PermanentFailureDetector)
    unauthorized = failing("get_repo", {"name": "app"}, "401 Unauthorized", status=401)
    refresh = exchange("refresh_token", {}, "token refreshed")
    assert run.feed(unauthorized + refresh + unauthorized) == []  # the first refresh is news
    (signal,) = run.feed(refresh + unauthorized)
    assert (signal.kind, signal.evidence["count"]) == ("permanent", 2)


def test_progress_marks_survive_export_and_restore() -> None:
    run = Driver(PermanentFailureDetector)
    run.feed(failing("get_repo", {"name": "app"}, "Forbidden", status=403))
    run.feed(exchange("refresh_token", {}, "ok"))
    run.reload()
    assert run.feed(failing("get_repo", {"name": "app"}, "Forbidden", status=403)) == []
    run.reload()
    assert run.feed(failing("get_repo", {"name": "app"}, "Forbidden", status=403))


def test_an_older_export_without_progress_marks_restores() -> None:
    detector = PermanentFailureDetector(LoopGuardConfig())
    run = Driver(PermanentFailureDetector)
    run.feed(failing("fetch", {"url": "/a"}, "Forbidden", status=403))
    (key, error_key, count, _mark) = run.detector.export_state(run.state)["failures"][0]
    run.state = detector.restore_state({"failures": [[key, error_key, count]]})
    assert run.feed(failing("fetch", {"url": "/a"}, "Forbidden", status=403))
