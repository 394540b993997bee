"""Replay: runs are identified, ordered and indexed as the on-line processor would see them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_loopguard.analyze.readers import read_spans
from otel_loopguard.analyze.replay import Replayer, RunRecord
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action
from otel_loopguard.spans.otlp_json import spans_to_otlp_json

from . import replay_policies
from .traces import Recorder, agent_run, batches, jsonl_text, write_otlp

LOOP = [("search", {"q": "pricing"}, "")] * 3


def _replay(paths, policy=None, buffer_spans: int = 100_000, **config) -> list[RunRecord]:
    runs: list[RunRecord] = []
    replayer = Replayer(
        LoopGuardConfig(**config), runs.append, policy=policy, buffer_spans=buffer_spans
    )
    replayer.feed(read_spans([str(p) for p in paths]))
    replayer.finish()
    _replay.last = replayer  # type: ignore[attr-defined]
    return runs


def _hex(span_id: int) -> str:
    return format(span_id, "016x")


def _tool_spans(spans):
    return [s for s in spans if s.name.startswith("execute_tool")]


def test_interleaved_runs_are_kept_apart(tmp_path: Path) -> None:
    recorder = Recorder()
    looping = agent_run(recorder, "looper", [("search", {"q": "x"}, "")] * 5)
    calm = agent_run(recorder, "helper", [("lookup", {"id": 1}, "found"), ("reply", {}, "ok")])
    # the exporter's batches mix the two traces
    mixed = []
    for i in range(max(len(looping), len(calm))):
        mixed += looping[i : i + 1] + calm[i : i + 1]
    path = tmp_path / "mixed.jsonl"
    path.write_text(jsonl_text(batches(mixed, 3)))

    runs = {r.agent: r for r in _replay([path], replay_policies.stop_at_third_tool_call)}

    assert set(runs) == {"looper", "helper"}
    loop, ok = runs["looper"], runs["helper"]
    assert list(loop.trace_ids) == [format(looping[0].context.trace_id, "032x")]
    assert list(ok.trace_ids) == [format(calm[0].context.trace_id, "032x")]
    assert (loop.tool_calls, loop.spans, ok.tool_calls, ok.spans) == (5, 6, 2, 3)
    assert loop.keyed_by == "root" and loop.run_id.endswith(_hex(looping[-1].context.span_id))
    assert loop.final_action is Action.STOP and loop.first_stop.tool_call_index == 3
    assert loop.first_stop.span_id == _hex(_tool_spans(looping)[2].context.span_id)
    assert loop.after_stop_tool_calls == 2
    assert ok.final_action is Action.CONTINUE and ok.first_stop is None


def test_spans_are_replayed_in_end_time_order_whatever_the_file_order(tmp_path: Path) -> None:
    recorder = Recorder()
    spans = agent_run(recorder, "looper", [("search", {"q": str(i)}, "r") for i in range(4)])
    path = write_otlp(tmp_path / "reversed.json", list(reversed(spans)))
    (run,) = _replay([path], replay_policies.stop_at_third_tool_call)
    assert run.first_stop.span_id == _hex(_tool_spans(spans)[2].context.span_id)


def test_a_conversation_over_two_traces_is_one_run(tmp_path: Path) -> None:
    recorder = Recorder()
    first = agent_run(recorder, "support", [("search", {"q": "a"}, "r")] * 2, conversation="c-42")
    second = agent_run(recorder, "support", [("search", {"q": "b"}, "r")] * 2, conversation="c-42")
    other = agent_run(recorder, "support", [("search", {"q": "c"}, "r")] * 2, conversation="c-7")
    path = tmp_path / "conversation.jsonl"
    path.write_text(jsonl_text([first, other, second]))

    runs = {r.run_id: r for r in _replay([path], replay_policies.stop_at_third_tool_call)}

    assert set(runs) == {"c-42", "c-7"}
    run = runs["c-42"]
    trace_ids = [format(spans[0].context.trace_id, "032x") for spans in (first, second)]
    assert run.keyed_by == "conversation" and list(run.trace_ids) == trace_ids
    assert run.tool_calls == 4
    assert run.first_stop.tool_call_index == 3 and run.first_stop.trace_id == trace_ids[1]
    assert runs["c-7"].first_stop is None


def test_model_turn_decisions_count_the_tool_calls_before_them(tmp_path: Path) -> None:
    recorder = Recorder()
    spans = agent_run(
        recorder, "a", [("s", {"n": 1}, "r"), ("s", {"n": 2}, "r")], tokens_per_turn=50
    )
    path = write_otlp(tmp_path / "turns.json", spans)
    (run,) = _replay([path], replay_policies.warn_on_model_turns)
    assert [(d.action, d.tool_call_index, d.event_kind) for d in run.decisions] == [
        (Action.WARN, 0, "llm_response"),
        (Action.WARN, 1, "llm_response"),
    ]
    assert run.final_action is Action.WARN and run.max_risk == pytest.approx(0.3)


def test_what_came_after_stop_is_counted(tmp_path: Path) -> None:
    recorder = Recorder()
    calls = [("search", {"q": str(i)}, "r") for i in range(5)]
    spans = agent_run(recorder, "a", calls, tokens_per_turn=100)
    path = write_otlp(tmp_path / "run.json", spans)
    (run,) = _replay([path], replay_policies.stop_at_third_tool_call)
    assert run.first_stop.tool_call_index == 3
    assert (run.after_stop_tool_calls, run.after_stop_llm_calls) == (2, 2)
    assert run.after_stop_tokens == 2 * (100 + 10)
    assert run.decisions == [run.first_stop]  # the standing STOP is not repeated


def test_the_buffer_cap_bounds_held_spans_and_loses_none(tmp_path: Path) -> None:
    recorder = Recorder()
    for n in range(6):
        agent_run(recorder, f"agent{n}", [("t", {"n": i}, "r") for i in range(3)])
    spans = recorder.spans()
    orphans = [s for s in spans if s.parent is not None]  # no roots: only the cap flushes
    path = tmp_path / "orphans.jsonl"
    path.write_text(jsonl_text(batches(orphans, 4)))
    runs = _replay([path], buffer_spans=5)
    assert _replay.last.buffer.peak_buffered <= 6  # type: ignore[attr-defined]
    assert sum(r.spans for r in runs) == len(orphans)
    assert all(r.keyed_by == "trace" for r in runs)


def test_trace_without_agent_span_is_keyed_by_trace(tmp_path: Path) -> None:
    recorder = Recorder()
    with recorder.tracer.start_as_current_span("request"):
        for _ in range(3):
            with recorder.tracer.start_as_current_span(
                "execute_tool t", attributes={"gen_ai.operation.name": "execute_tool"}
            ):
                pass
    spans = recorder.spans()
    (run,) = _replay(
        [write_otlp(tmp_path / "t.json", spans)], replay_policies.stop_at_third_tool_call
    )
    assert run.run_id == format(spans[0].context.trace_id, "032x") and run.keyed_by == "trace"
    assert run.first_stop.tool_call_index == 3


def test_default_detectors_stop_the_third_identical_call_with_the_same_empty_result(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    spans = agent_run(recorder, "looper", [*LOOP, ("search", {"q": "pricing"}, ""), ("x", {}, "")])
    (run,) = _replay([write_otlp(tmp_path / "loop.json", spans)])
    assert run.final_action is Action.STOP
    assert run.first_stop.tool_call_index == 3
    assert "repetition" in run.first_stop.detectors
    assert run.after_stop_tool_calls == 2


def test_json_report_is_valid_with_many_runs(tmp_path: Path) -> None:
    from otel_loopguard.analyze.report import run_json

    recorder = Recorder()
    spans = agent_run(recorder, "a", [("search", {"q": "secret-token"}, "")] * 4)
    (run,) = _replay(
        [write_otlp(tmp_path / "r.json", spans)], replay_policies.stop_at_third_tool_call
    )
    data = json.loads(json.dumps(run_json(run, capture=False, prices_configured=False)))
    assert data["first_stop"]["tool_call_index"] == 3
    assert "secret-token" not in json.dumps(data)


def test_cost_after_stop_uses_the_price_table(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-test": {"input": 1.0, "output": 2.0}}))
    recorder = Recorder()
    calls = [("search", {"q": str(i)}, "r") for i in range(5)]
    spans = agent_run(recorder, "a", calls, tokens_per_turn=100)
    path = write_otlp(tmp_path / "run.json", spans)
    (run,) = _replay([path], replay_policies.stop_at_third_tool_call, prices=str(prices))
    # two model turns after the stop, each 100 input and 10 output tokens, per 1M tokens
    assert run.after_stop_cost == pytest.approx(2 * (100 * 1.0 + 10 * 2.0) / 1e6)
    assert run.cost == pytest.approx(5 * (100 * 1.0 + 10 * 2.0) / 1e6)


def test_a_conversation_idle_past_the_ttl_in_trace_time_starts_a_new_run(tmp_path: Path) -> None:
    """Timestamps are the spans' own: two visits of one conversation two hours apart."""
    from opentelemetry import trace as trace_api

    recorder = Recorder()
    tracer = recorder.tracer
    hour = 3600 * 10**9
    base = 1_700_000_000 * 10**9
    for visit in range(2):
        start = base + visit * 2 * hour
        agent = tracer.start_span(
            "invoke_agent support",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "support",
                "gen_ai.conversation.id": "c-1",
            },
            start_time=start,
        )
        context = trace_api.set_span_in_context(agent)
        for n in range(2):
            tool = tracer.start_span(
                "execute_tool search",
                context=context,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.arguments": json.dumps({"n": n}),
                    "gen_ai.tool.call.result": "r",
                },
                start_time=start + (n + 1) * 10**9,
            )
            tool.end(end_time=start + (n + 1) * 10**9 + 10**6)
        agent.end(end_time=start + 10 * 10**9)
    path = write_otlp(tmp_path / "visits.json", recorder.spans())

    runs = _replay([path], replay_policies.stop_at_third_tool_call)
    assert [(r.run_id, r.tool_calls, r.first_stop) for r in runs] == [
        ("c-1", 2, None),
        ("c-1", 2, None),
    ]
    (joined,) = _replay([path], replay_policies.stop_at_third_tool_call, run_ttl=3 * 3600)
    assert joined.tool_calls == 4 and joined.first_stop.tool_call_index == 3
    assert len(joined.trace_ids) == 2


def test_a_full_buffer_is_reported(tmp_path: Path, capsys) -> None:
    from otel_loopguard.cli import main

    recorder = Recorder()
    for n in range(3):
        agent_run(recorder, f"agent{n}", [("t", {"n": i}, "r") for i in range(3)])
    path = tmp_path / "export.jsonl"
    path.write_text(jsonl_text(batches(recorder.spans(), 4)))

    assert main(["analyze", str(path), "--format", "json"]) == 0
    roomy = json.loads(capsys.readouterr().out)["summary"]
    assert roomy["buffer_full_flushes"] == 0 and roomy["runs"] == 3
    assert 1 <= roomy["peak_live_runs"] <= 3 and roomy["peak_buffered_spans"] >= 4

    assert main(["analyze", str(path), "--buffer-spans", "2"]) == 0
    text = capsys.readouterr().out
    assert "note: the trace buffer was full" in text and "raise --buffer-spans" in text


def test_spans_with_equal_times_replay_parents_around_their_children(tmp_path: Path) -> None:
    """Coarse clocks (or microsecond exports) give a parent and its children the same start
    and end times; the parent must still start first and end last, whatever the file order."""
    recorder = Recorder()
    spans = agent_run(recorder, "a", LOOP + LOOP[:1], tokens_per_turn=5)
    document = spans_to_otlp_json(list(reversed(spans)))  # the root first in the file
    for block in document["resourceSpans"]:
        for scope in block["scopeSpans"]:
            for span in scope["spans"]:
                span["startTimeUnixNano"] = span["endTimeUnixNano"] = "1700000000000000000"
    path = tmp_path / "ties.json"
    path.write_text(json.dumps(document))
    (run,) = _replay([path], replay_policies.stop_at_third_tool_call)
    assert run.keyed_by == "root" and run.spans == len(spans)
    assert (run.tool_calls, run.first_stop.tool_call_index, run.after_stop_tool_calls) == (4, 3, 1)
