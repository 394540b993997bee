"""A run's state as a small JSON-able dict and back: :meth:`Monitor.export_run` /
:meth:`Monitor.restore_run`, so a run can continue in another process.

The dict holds counters (time as elapsed seconds, since clocks differ between processes),
each detector's exported state, the pending tool calls, the signal window and the STOP
decision; never raw arguments or outputs (signals hold none unless content capture is on).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from otel_loopguard.engine.decisions import Action, Decision, RunEndState, Signal
from otel_loopguard.engine.detectors.base import Detector
from otel_loopguard.engine.detectors.call_tracking import PendingCalls
from otel_loopguard.engine.monitor.run_state import FirstDecision, RunState

EXPORT_VERSION = 1

ErrorSink = Callable[[str, BaseException], None]


def export_run_state(
    run: RunState, detectors: Sequence[Detector], now: float, on_error: ErrorSink
) -> dict[str, Any]:
    """The run as a dict; call with the run's lock held. A detector whose state does not
    export is left out (``on_error`` hears of it)."""
    counters = run.counters
    detector_states: dict[str, Any] = {}
    for detector, state in zip(detectors, run.states, strict=True):
        try:
            detector_states[detector.name] = detector.export_state(state)
        except Exception as exc:
            on_error(f"detector {detector.name} export", exc)
    return {
        "version": EXPORT_VERSION,
        "run_id": run.run_id,
        "agent": run.agent,
        "agent_replans": dict(run.agent_replans),
        "nudges": dict(run.nudges),
        "keyed_by": run.keyed_by,
        "counters": {
            "elapsed": max(now - counters.started_at, 0.0),
            "events": counters.events,
            "steps": counters.steps,
            "tool_calls": counters.tool_calls,
            "input_tokens": counters.input_tokens,
            "output_tokens": counters.output_tokens,
            "cost": counters.cost,
        },
        "detectors": detector_states,
        "pending": run.pending.to_json(),
        "signals": [_signal_to_dict(s) for s in run.window],
        "signal_count": run.signal_count,
        "max_risk": run.max_risk,
        "max_action": run.max_action.value,
        "stop": _decision_to_dict(run.stop) if run.stop is not None else None,
        "first_stop": _first_stop_to_dict(run.first_stop),
    }


def restore_run_state(
    data: dict[str, Any],
    detectors: Sequence[Detector],
    new_states: Callable[[], list[Any]],
    window_size: int,
    now: float,
    on_error: ErrorSink,
) -> RunState:
    """A run from :func:`export_run_state` output. Missing keys (older exports) get fresh
    values; a detector state that does not restore starts fresh (``on_error`` hears of it).
    Raises on unusable data (not a dict, no ``run_id``, wrong types): the monitor contains it.
    """
    run_id = str(data["run_id"])
    run = RunState(run_id, now, new_states())
    raw = data.get("counters") or {}
    counters = run.counters
    counters.started_at = now - float(raw.get("elapsed", 0.0))
    counters.events = int(raw.get("events", 0))
    counters.steps = int(raw.get("steps", 0))
    counters.tool_calls = int(raw.get("tool_calls", 0))
    counters.input_tokens = int(raw.get("input_tokens", 0))
    counters.output_tokens = int(raw.get("output_tokens", 0))
    cost = raw.get("cost", 0.0)
    counters.cost = None if cost is None else float(cost)
    states = data.get("detectors") or {}
    pending = data.get("pending")
    if pending is None:  # exports before pairing moved here kept it per detector
        pending = (states.get("no_progress") or {}).get("pending")
    run.pending = PendingCalls.from_json(pending)
    for index, detector in enumerate(detectors):
        if detector.name in states:
            try:
                run.states[index] = detector.restore_state(states[detector.name])
            except Exception as exc:
                on_error(f"detector {detector.name} restore", exc)
    signals = tuple(_signal_from_dict(s) for s in data.get("signals") or ())
    run.window = signals[-window_size:]
    run.signal_count = int(data.get("signal_count", len(signals)))
    run.max_risk = float(data.get("max_risk", 0.0))
    run.max_action = Action(data.get("max_action", Action.CONTINUE.value))
    run.agent = data.get("agent")
    run.agent_replans = _name_counts(data.get("agent_replans"))
    run.nudges = _name_counts(data.get("nudges"))
    run.keyed_by = data.get("keyed_by")
    stop = data.get("stop")
    if stop:
        run.stop = _decision_from_dict(stop, run_id)
        run.last_decision = run.stop
        where = data.get("first_stop") or {}
        run.first_stop = FirstDecision(
            run.stop,
            int(where.get("event_index", 0)),
            where.get("event_kind"),
            where.get("tool_name"),
            where.get("trace_id"),
            where.get("span_id"),
        )
    return run


def _name_counts(data: Any) -> dict[str, int]:
    """Sub-agent replans (or delivered nudges) of an export; what does not read as
    ``{name: count}`` is skipped."""
    replans: dict[str, int] = {}
    if isinstance(data, dict):
        for name, count in list(data.items())[:64]:
            if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
                replans[str(name)] = count
    return replans


def decision_to_dict(decision: Decision) -> dict[str, Any]:
    """A decision as JSON-able data (the run store's STOP record holds this)."""
    return _decision_to_dict(decision)


def decision_from_dict(data: dict[str, Any], run_id: str) -> Decision:
    """:func:`decision_to_dict` back; raises on unusable data (callers contain it)."""
    return _decision_from_dict(data, run_id)


def _signal_to_dict(signal: Signal) -> dict[str, Any]:
    data: dict[str, Any] = {
        "detector": signal.detector,
        "kind": signal.kind,
        "score": signal.score,
        "message": signal.message,
        "evidence": dict(signal.evidence),
    }
    if signal.recommendation is not None:
        data["recommendation"] = signal.recommendation
    return data


def _signal_from_dict(data: dict[str, Any]) -> Signal:
    return Signal(
        str(data.get("detector", "")),
        str(data.get("kind", "")),
        float(data.get("score", 0.0)),
        str(data.get("message", "")),
        dict(data.get("evidence") or {}),
        data.get("recommendation"),
    )


def _decision_to_dict(decision: Decision) -> dict[str, Any]:
    return {
        "action": decision.action.value,
        "risk": decision.risk,
        "reasons": [_signal_to_dict(s) for s in decision.reasons],
        "recommendation": decision.recommendation,
        "end_state": decision.end_state.value if decision.end_state else None,
    }


def _first_stop_to_dict(first: FirstDecision | None) -> dict[str, Any] | None:
    if first is None:
        return None
    return {
        "event_index": first.event_index,
        "event_kind": first.event_kind,
        "tool_name": first.tool_name,
        "trace_id": first.trace_id,
        "span_id": first.span_id,
    }


def _decision_from_dict(data: dict[str, Any], run_id: str) -> Decision:
    end_state = data.get("end_state")
    return Decision(
        Action(data.get("action", Action.STOP.value)),
        risk=float(data.get("risk", 0.0)),
        reasons=tuple(_signal_from_dict(s) for s in data.get("reasons") or ()),
        recommendation=data.get("recommendation"),
        run_id=run_id,
        end_state=RunEndState(end_state) if end_state else None,
    )
