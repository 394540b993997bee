"""Permanent failure: the same non-retryable error again fires; retries that succeed do not."""

from __future__ import annotations

import pytest
from scripted_runs import Driver, call, exchange, failing, result

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
        ErrorInfo(type="FileNotFoundError", message="[Errno 2] x"),
        ErrorInfo(type="PermissionError"),
        ErrorInfo(type="ValueError", message="bad date"),
    ],
)
def test_permanent_errors(error: ErrorInfo) -> None:
    assert classify_error(error) == "permanent"


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
        ErrorInfo(type="WeirdError", message="something odd happened"),  # unknown: weaker
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
