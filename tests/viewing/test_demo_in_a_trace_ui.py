"""What a user sees of the demo in a trace UI (Jaeger, Tempo, Phoenix, Langfuse).

The demo runs as a user runs it (all scenarios, enforce mode) and its trace file, the
spans as the SDK exported them, is read back as OTLP JSON. Trace UIs filter spans on
attributes, list spans by their status message cut short, and sort by numbers: so the
span where a STOP was decided carries it as attributes, the stopped agent span's status
message starts with the reason, every warn's risk is below every stop's, and the agents
of the ping-pong are named as they are (``billing-agent``). The demo runs with the resource
setting docs/view-it-in.md gives for Phoenix, which must reach the exported resource.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

VIEW_IT_IN = Path(__file__).resolve().parents[2] / "docs" / "view-it-in.md"
#: the project setting the page's Phoenix example gives (Phoenix reads this, not service.name)
PHOENIX_PROJECT = re.search(
    r"^OTEL_RESOURCE_ATTRIBUTES=(openinference\.project\.name=[\w-]+)",
    VIEW_IT_IN.read_text(encoding="utf-8"),
    re.MULTILINE,
)


def _value(value: dict[str, Any]) -> Any:
    if "arrayValue" in value:
        return [_value(v) for v in value["arrayValue"].get("values", [])]
    return next(iter(value.values()), None)


def _attrs(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {kv["key"]: _value(kv["value"]) for kv in items}


@pytest.fixture(scope="module")
def demo_spans(demo_run) -> list[dict[str, Any]]:
    return demo_run[1]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[dict[str, Any]]]:
    """The demo's console output and its exported spans."""
    tmp = tmp_path_factory.mktemp("demo")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_LOOPGUARD_", "OTEL_EXPORTER_OTLP"))
    }
    env["OTEL_LOOPGUARD_MODE"] = "enforce"
    assert PHOENIX_PROJECT, "docs/view-it-in.md lost its Phoenix example"
    env["OTEL_RESOURCE_ATTRIBUTES"] = PHOENIX_PROJECT.group(1)
    trace = tmp / "trace.json"
    command = ["demo", "--scenario", "all", "--pace", "0", "--trace-file", str(trace)]
    shown = subprocess.run(
        [sys.executable, "-m", "otel_loopguard.cli", *command],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    spans = []
    for resource in json.loads(trace.read_text())["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                span["resource"] = _attrs(resource["resource"].get("attributes", []))
                span["attrs"] = _attrs(span.get("attributes", []))
                span["decisions"] = [
                    _attrs(e.get("attributes", []))
                    for e in span.get("events", [])
                    if e["name"] == "loopguard.decision"
                ]
                spans.append(span)
    return shown, spans


def test_the_deciding_tool_span_says_stop_as_attributes(demo_spans) -> None:
    stopped = [s for s in demo_spans if s["attrs"].get("loopguard.action") == "stop"]
    # one attribute filter finds the four tool calls where the four loops were stopped,
    # and the four agent spans they interrupted (the roots a trace list shows)
    assert sorted(s["name"] for s in stopped) == [
        "execute_tool bash",
        "execute_tool fetch_order",
        "execute_tool search_kb",
        "execute_tool transfer_to_triage_agent",
        "invoke_agent coding-agent",
        "invoke_agent order-agent",
        "invoke_agent support-agent",
        "invoke_agent triage-agent",
    ]
    stops = {
        s["traceId"]: d for s in stopped for d in s["decisions"] if d["loopguard.action"] == "stop"
    }
    assert len(stops) == 4
    for span in stopped:  # each the same as the trace's STOP event
        for key in ("loopguard.risk_score", "loopguard.detectors", "loopguard.reason"):
            assert span["attrs"][key] == stops[span["traceId"]][key], key


def test_the_stopped_agent_span_status_starts_with_the_reason(demo_spans) -> None:
    stops = {
        s["traceId"]: d["loopguard.reason"]
        for s in demo_spans
        for d in s["decisions"]
        if d["loopguard.action"] == "stop"
    }
    agents = [
        s for s in demo_spans if s["name"].startswith("invoke_agent") and s["traceId"] in stops
    ]
    assert len(agents) == 4
    for agent in agents:
        message = agent["status"]["message"]
        assert message.startswith(stops[agent["traceId"]]), message
        assert message.endswith(
            f"(stopped by otel-loopguard, run {agent['attrs']['loopguard.run.id']})"
        )


def test_every_warn_scores_below_every_stop(demo_spans) -> None:
    risks: dict[str, list[float]] = {}
    for span in demo_spans:
        for decision in span["decisions"]:
            risks.setdefault(decision["loopguard.action"], []).append(
                decision["loopguard.risk_score"]
            )
    # the healthy run's two warns (polling, repeated model turns) among them; the two
    # replans (the shell hint of the nudge scenarios) between warns and stops
    assert len(risks["warn"]) == 4 and len(risks["stop"]) == 4 and len(risks["replan"]) == 2
    assert max(risks["warn"]) < min(risks["replan"]) <= max(risks["replan"]) < min(risks["stop"])


def test_the_ping_pong_names_the_agents_as_they_are_named(demo_spans) -> None:
    (stop,) = [
        d
        for s in demo_spans
        for d in s["decisions"]
        if d["loopguard.detectors"] == ["handoff_cycle"]
    ]
    assert stop["loopguard.reason"] == (
        "handoff cycle billing-agent → triage-agent → billing-agent closed 2 times"
    )
    assert stop["gen_ai.agent.name"] == "billing-agent"
    assert stop["gen_ai.tool.name"] == "transfer_to_triage_agent"  # the tool that looped


def test_the_phoenix_project_setting_of_the_docs_reaches_every_span(demo_spans) -> None:
    """Phoenix files spans by ``openinference.project.name``: without it, under "default"."""
    key, _, project = PHOENIX_PROJECT.group(1).partition("=")
    assert {s["resource"].get(key) for s in demo_spans} == {project}
    assert {s["resource"]["service.name"] for s in demo_spans} == {"otel-loopguard-demo"}
    viewing = (VIEW_IT_IN.parent / "viewing.md").read_text(encoding="utf-8")
    assert "(view-it-in.md)" in viewing  # found from the viewing page


def test_the_demo_shows_every_decision_it_records(demo_run) -> None:
    """What the console tells is what the trace holds: the healthy run's warn on its
    repeated model turns is printed too, not only found later by ``analyze``."""
    shown, spans = demo_run
    printed = sorted(
        (action.lower(), risk)
        for action, risk in re.findall(r"\[.\] (WARN|REPLAN|PAUSE|STOP)\s+risk (\d\.\d\d)", shown)
    )
    recorded = sorted(
        (d["loopguard.action"], f"{d['loopguard.risk_score']:.2f}")
        for s in spans
        for d in s["decisions"]
    )
    assert printed == recorded
    assert "repeated_tool_steps: 3 consecutive model turns" in shown
