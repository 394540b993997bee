"""Reports of a replay: readable text for people, JSON for machines; both streamed.

Runs are written as they finish, so a report of a huge input never holds more than the
live runs. The JSON report has the shape documented in the README ("Replay saved traces"):
``{"runs": [...], "summary": {...}}``; extra keys may be added, none removed.

Raw tool arguments and results never appear unless content capture is on
(``OTEL_LOOPGUARD_CAPTURE_CONTENT=true``): reasons are the detectors' messages, which
carry tool names, counts and hashes only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from otel_loopguard.analyze.replay import DecisionRecord, RunRecord
from otel_loopguard.engine.decisions import Action

if TYPE_CHECKING:
    from otel_loopguard.analyze.labels import LabelScore

#: characters of captured content shown per value in the text report
CONTENT_PREVIEW_CHARS = 200


@dataclass
class Totals:
    """Counts over all runs, for the summary line and the exit code."""

    runs: int = 0
    stopped: int = 0
    by_action: dict[str, int] = field(default_factory=dict)
    failing: int = 0  # runs that reached the --fail-on action
    saved_tool_calls: int = 0
    saved_tokens: int = 0
    saved_cost: float | None = None

    def add(self, record: RunRecord, fail_on: Action | None) -> None:
        self.runs += 1
        action = record.final_action.value
        self.by_action[action] = self.by_action.get(action, 0) + 1
        if record.stopped:
            self.stopped += 1
            self.saved_tool_calls += record.after_stop_tool_calls
            self.saved_tokens += record.after_stop_tokens
            if record.after_stop_cost is not None:
                self.saved_cost = (self.saved_cost or 0.0) + record.after_stop_cost
        if fail_on is not None and record.final_action >= fail_on:
            self.failing += 1


@dataclass
class InputSummary:
    """What the readers and the replay saw, for the summary."""

    spans: int = 0
    skipped_spans: int = 0
    peak_buffered_spans: int = 0
    forced_flushes: int = 0
    peak_live_runs: int = 0


@dataclass
class ReportContext:
    """What the report header and summary say about the analysis itself."""

    inputs: list[str]
    mode: str
    policy: str
    fail_on: Action | None
    capture_content: bool
    prices_configured: bool
    labels: LabelScore | None = None  # scoring against --labels, fed every finished run


class Report:
    """Base: collects totals; subclasses write runs as they come and the summary at the end."""

    def __init__(self, out: TextIO, context: ReportContext) -> None:
        self.out = out
        self.context = context
        self.totals = Totals()

    _begun = False

    def begin(self) -> None:
        """Write the header once; deferred to the first run so that an input rejected at its
        first bytes leaves stdout empty."""
        if not self._begun:
            self._begun = True
            self.write_header()

    def write_header(self) -> None:
        raise NotImplementedError

    def run(self, record: RunRecord) -> None:
        self.begin()
        self.totals.add(record, self.context.fail_on)
        if self.context.labels is not None:
            self.context.labels.add(record)
        self.write_run(record)

    def end(self, seen: InputSummary) -> None:
        self.begin()
        self.write_summary(seen)

    def write_run(self, record: RunRecord) -> None:
        raise NotImplementedError

    def write_summary(self, seen: InputSummary) -> None:
        raise NotImplementedError


# -- JSON -------------------------------------------------------------------------------------


def _decision_json(item: DecisionRecord, capture: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "action": item.action.value,
        "risk": round(item.risk, 6),
        "tool_call_index": item.tool_call_index,
        "span_id": item.span_id,
        "detectors": list(item.detectors),
        "reason": "; ".join(item.reasons),
        "trace_id": item.trace_id,
        "event": item.event_kind,
        "tool": item.tool_name,
    }
    if item.recommendation:
        out["recommendation"] = item.recommendation
    if capture:
        out["content"] = {"arguments": item.arguments, "output": item.output}
    return out


def deliveries(record: RunRecord) -> list[DecisionRecord]:
    """The run's replans with a recommendation: what an enforcing plugin, with a framework
    package around the agent, would have added to the run's next model request."""
    return [
        item for item in record.decisions if item.action is Action.REPLAN and item.recommendation
    ]


def run_json(record: RunRecord, capture: bool, prices_configured: bool) -> dict[str, Any]:
    """One run in the documented JSON shape (plus extra keys)."""
    first_stop = None
    if record.first_stop is not None:
        stop = record.first_stop
        first_stop = {
            "tool_call_index": stop.tool_call_index,
            "trace_id": stop.trace_id,
            "span_id": stop.span_id,
            "risk": round(stop.risk, 6),
            "detectors": list(stop.detectors),
            "reasons": list(stop.reasons),
            "tool": stop.tool_name,
            "after_stop": {
                "tool_calls": record.after_stop_tool_calls,
                "llm_calls": record.after_stop_llm_calls,
                "tokens": record.after_stop_tokens,
                "cost": record.after_stop_cost if prices_configured else None,
            },
        }
        if capture:
            first_stop["content"] = {"arguments": stop.arguments, "output": stop.output}
    return {
        "run_id": record.run_id,
        "trace_ids": list(record.trace_ids),
        "agent": record.agent,
        "tool_calls": record.tool_calls,
        "events": record.events,
        "final_action": record.final_action.value,
        "max_risk": round(record.max_risk, 6),
        "first_stop": first_stop,
        "decisions": [_decision_json(item, capture) for item in record.decisions],
        "decisions_dropped": record.decisions_dropped,
        "deliveries": [
            {
                "tool_call_index": item.tool_call_index,
                "detectors": list(item.detectors),
                "recommendation": item.recommendation,
            }
            for item in deliveries(record)
        ],
        "keyed_by": record.keyed_by,
        "end_state": record.end_state,
        "spans": record.spans,
        "tokens": record.input_tokens + record.output_tokens,
        "cost": record.cost if prices_configured else None,
    }


class JsonReport(Report):
    """``{"runs": [one run per line], "summary": {...}}``, written incrementally."""

    def write_header(self) -> None:
        self.out.write('{"runs": [')
        self._first = True

    def write_run(self, record: RunRecord) -> None:
        data = run_json(record, self.context.capture_content, self.context.prices_configured)
        self.out.write("\n  " if self._first else ",\n  ")
        self._first = False
        self.out.write(json.dumps(data, default=_json_default, ensure_ascii=False))

    def write_summary(self, seen: InputSummary) -> None:
        totals = self.totals
        summary = {
            "runs": totals.runs,
            "stopped": totals.stopped,
            "spans": seen.spans,
            "skipped_spans": seen.skipped_spans,
            "peak_buffered_spans": seen.peak_buffered_spans,
            "buffer_full_flushes": seen.forced_flushes,
            "peak_live_runs": seen.peak_live_runs,
            "by_final_action": totals.by_action,
            "failing_runs": totals.failing,
            "fail_on": self.context.fail_on.value if self.context.fail_on else None,
            "mode": self.context.mode,
            "policy": self.context.policy,
            "saved_after_stop": {
                "tool_calls": totals.saved_tool_calls,
                "tokens": totals.saved_tokens,
                "cost": totals.saved_cost if self.context.prices_configured else None,
            },
        }
        if self.context.labels is not None:
            summary["labels"] = self.context.labels.to_json()
        self.out.write("\n" if not self._first else "")
        self.out.write('], "summary": ')
        self.out.write(json.dumps(summary))
        self.out.write("}\n")


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)


# -- text -------------------------------------------------------------------------------------


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=_json_default)
    if len(text) > CONTENT_PREVIEW_CHARS:
        return text[:CONTENT_PREVIEW_CHARS] + "…"
    return text


def _short(ident: str | None) -> str:
    return ident if ident else "?"


class TextReport(Report):
    """One block per run, a summary line at the end."""

    def write_header(self) -> None:
        context = self.context
        fail_on = context.fail_on.value if context.fail_on else "never"
        self.out.write(
            f"otel-loopguard analyze: {', '.join(context.inputs)} "
            f"(mode {context.mode}, policy {context.policy}, fail on {fail_on})\n"
        )

    def write_run(self, record: RunRecord) -> None:
        write = self.out.write
        agent = record.agent or "unknown agent"
        head = f"\nrun {record.run_id} ({agent})"
        traces = list(record.trace_ids)
        if record.final_action is Action.CONTINUE:
            write(
                f"{head}: ok, {record.tool_calls} tool calls, {record.events} events, "
                f"max risk {record.max_risk:.2f}\n"
            )
            return
        write(f"{head}: {record.final_action.value.upper()}\n")
        shown = ", ".join(traces[:5]) + (f" (+{len(traces) - 5} more)" if len(traces) > 5 else "")
        write(f"  trace{'s' if len(traces) != 1 else ''}: {shown}\n")
        write(
            f"  {record.tool_calls} tool calls, {record.events} events, final action "
            f"{record.final_action.value}, max risk {record.max_risk:.2f}\n"
        )
        write("  decisions (tool call #, action, risk, detectors: reason):\n")
        for item in record.decisions:
            where = f"#{item.tool_call_index}"
            tool = f" [{item.tool_name}]" if item.tool_name else ""
            write(
                f"    {where:>6}  {item.action.value:<7} {item.risk:.2f}  "
                f"{', '.join(item.detectors) or '-'}: {'; '.join(item.reasons) or '-'}{tool}\n"
            )
            if item.recommendation:
                write(f"            suggests: {item.recommendation}\n")
        if record.decisions_dropped:
            write(f"    … {record.decisions_dropped} more decisions not shown\n")
        nudges = deliveries(record)
        if nudges:
            shown = ", ".join(f"{item.detectors[0]} at #{item.tool_call_index}" for item in nudges)
            write(
                f"  In enforce mode {len(nudges)} recommendation{'s' if len(nudges) != 1 else ''}"
                f" would have gone to the model's next request: {shown}.\n"
            )
        stop = record.first_stop
        if stop is not None:
            write(
                f"  STOP would have fired at tool call #{stop.tool_call_index} "
                f"(span {_short(stop.span_id)}, trace {_short(stop.trace_id)}).\n"
            )
            if self.context.capture_content and stop.arguments is not None:
                write(f"    arguments: {_preview(stop.arguments)}\n")
            if self.context.capture_content and stop.output is not None:
                write(f"    output: {_preview(stop.output)}\n")
            write(f"  {self._saved(record)}\n")

    def _saved(self, record: RunRecord) -> str:
        calls = record.after_stop_tool_calls
        if not (calls or record.after_stop_llm_calls or record.after_stop_tokens):
            return "Nothing ran after it: the run ended there anyway."
        parts = [f"{calls} tool call{'s' if calls != 1 else ''}"]
        if record.after_stop_llm_calls:
            parts.append(f"{record.after_stop_llm_calls} model calls")
        if record.after_stop_tokens:
            parts.append(f"{record.after_stop_tokens:,} tokens")
        if self.context.prices_configured and record.after_stop_cost is not None:
            parts.append(f"cost {record.after_stop_cost:.4f}")
        verb = "saved" if self.context.mode == "enforce" else "would have saved (enforce mode)"
        return f"After it the run made {', '.join(parts)}: what stopping it {verb}."

    def write_summary(self, seen: InputSummary) -> None:
        spans, skipped_spans = seen.spans, seen.skipped_spans
        totals = self.totals
        actions = ", ".join(
            f"{count} {action}"
            for action, count in sorted(
                totals.by_action.items(), key=lambda item: -Action(item[0]).severity
            )
        )
        saved = ""
        if totals.stopped:
            saved = f"; after STOP: {totals.saved_tool_calls} tool calls"
            if totals.saved_tokens:
                saved += f", {totals.saved_tokens:,} tokens"
            if self.context.prices_configured and totals.saved_cost is not None:
                saved += f", cost {totals.saved_cost:.4f}"
        skipped = f" ({skipped_spans} without usable ids skipped)" if skipped_spans else ""
        fail_on = self.context.fail_on
        verdict = (
            f"{totals.failing} run{'s' if totals.failing != 1 else ''} reached {fail_on.value}"
            if fail_on
            else "no --fail-on"
        )
        self.out.write(
            f"\nsummary: {totals.runs} run{'s' if totals.runs != 1 else ''} "
            f"({actions or 'none'}), {totals.stopped} would have "
            f"stopped{saved}; {spans:,} spans{skipped}; {verdict}\n"
        )
        if seen.forced_flushes:
            self.out.write(
                f"note: the trace buffer was full {seen.forced_flushes:,} times, so some traces "
                "were replayed before their agent span arrived (their spans may form runs of "
                "their own); raise --buffer-spans\n"
            )
        if self.context.labels is not None:
            self.out.write(self.context.labels.text())
