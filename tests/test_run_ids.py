"""Run ids and names of any type through the direct-use API (docs/python-api.md, "The monitor").

Applications key sessions by what they have: a ``uuid.UUID``, a database integer. The pure
build always took those; the compiled one checks declared types at run time and raised
``TypeError`` in the application's own call, even from ``preflight``, which never raises.
Both builds now take any id and name the run by its text. This module runs in the ``core``
and the ``compiled`` suites.
"""

from __future__ import annotations

import uuid

from otel_loopguard import Action, Monitor
from otel_loopguard.engine import events
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.events import ErrorInfo


def _loop(monitor: Monitor, run_id: object, times: int = 3) -> list[Action]:
    actions = []
    for _ in range(times):
        monitor.observe(events.tool_call(run_id, "search", {"query": "pricing"}))
        actions.append(monitor.observe(events.tool_result(run_id, "search", "no results")).action)
    return actions


def test_a_uuid_session_id_is_one_run_through_every_method() -> None:
    monitor = Monitor(LoopGuardConfig())
    session = uuid.uuid4()

    assert monitor.preflight(session, "tool_call").action is Action.CONTINUE
    monitor.start_run(session, agent="researcher")
    assert _loop(monitor, session)[-1] is Action.STOP  # as with a str id (the docs' example)
    assert monitor.preflight(session, "tool_call").action is Action.STOP  # the same run

    snapshot = monitor.run_snapshot(session)
    assert snapshot is not None and snapshot.counters.tool_calls == 3 and snapshot.stopped
    saved = monitor.export_run(session)
    assert saved is not None and saved["run_id"] == str(session)
    assert saved["agent"] == "researcher"

    restored = Monitor(LoopGuardConfig())
    restored.restore_run(saved)
    assert restored.preflight(session, "tool_call").action is Action.STOP

    summary = monitor.end_run(session)
    assert summary is not None and summary.counters.tool_calls == 3
    assert monitor.run_snapshot(session) is None


def test_an_int_id_and_its_text_name_the_same_run() -> None:
    monitor = Monitor(LoopGuardConfig())
    monitor.observe(events.tool_call(42, "search", {"query": "pricing"}))
    monitor.observe(events.tool_call("42", "search", {"query": "pricing"}))
    decision = monitor.observe(events.tool_call(42, "search", {"query": "pricing"}))
    assert "repetition" in decision.detectors
    summary = monitor.end_run("42")
    assert summary is not None and summary.counters.tool_calls == 3


def test_builders_take_names_and_call_ids_of_any_type() -> None:
    monitor = Monitor(LoopGuardConfig())
    run = uuid.uuid4()
    call = events.tool_call(run, 7, {"q": 1}, actor=uuid.UUID(int=1), call_id=99)
    assert (call.run_id, call.tool_name, call.call_id) == (str(run), "7", "99")
    assert call.actor == str(uuid.UUID(int=1))
    nameless = events.tool_result(run, None, "ok", call_id=99)
    assert nameless.tool_name is None
    failed = events.tool_error(run, None, ErrorInfo("TimeoutError", "timed out"), call_id=99)
    for event in (call, nameless, failed):
        assert monitor.observe(event).action is Action.CONTINUE
    summary = monitor.end_run(run)
    assert summary is not None and summary.counters.tool_calls == 1


def test_an_id_whose_text_fails_still_names_a_run() -> None:
    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    monitor = Monitor(LoopGuardConfig())
    assert monitor.preflight(Hostile(), "tool_call").action is Action.CONTINUE
    event = events.tool_call(Hostile(), "search", {"q": 1})
    assert event.run_id == "<Hostile>"
    assert monitor.observe(event).action is Action.CONTINUE


def test_an_event_made_by_hand_with_an_int_id_is_the_run_of_its_text() -> None:
    """``Event`` itself is typed (the compiled build rejects an int there), but the pure
    build accepts one: the monitor still names that run by its text, as everywhere else."""
    from otel_loopguard.engine.events import Event, EventKind

    monitor = Monitor(LoopGuardConfig())
    try:
        event = Event(EventKind.TOOL_CALL, 7, tool_name="search", signature="s1")
    except TypeError:  # the compiled build: the builders are the way to pass an int id
        event = events.tool_call(7, "search", {"q": 1})
    monitor.observe(event)
    summary = monitor.end_run(7)
    assert summary is not None and summary.run_id == "7"
    assert summary.counters.tool_calls == 1
