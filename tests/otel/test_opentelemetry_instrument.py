"""The real `opentelemetry-instrument` loads the processor through the `loopguard` entry point."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from otel_loopguard_testing import console_spans, run_under_opentelemetry_instrument

SCRIPT = Path(__file__).with_name("agent_script.py")


def run_instrumented(*flags: str, **env: str) -> tuple[dict[str, Any], list[dict], str]:
    """Run the agent script under opentelemetry-instrument; spans come back on stdout."""
    done = run_under_opentelemetry_instrument(
        SCRIPT, extra_args=flags, env={"OTEL_SERVICE_NAME": "agent-under-test", **env}
    )
    assert done.returncode == 0, done.stderr
    outcome: dict[str, Any] = {}
    spans: list[dict] = []
    for value in console_spans(done.stdout):
        if "outcome" in value:
            outcome = value
        elif "context" in value:
            spans.append(value)
    return outcome, spans, done.stderr


def decisions(spans: list[dict], span_name: str) -> list[dict]:
    return [
        event["attributes"]
        for span in spans
        if span["name"] == span_name
        for event in span["events"]
        if event["name"] == "loopguard.decision"
    ]


def test_entry_point_loads_processor_and_the_mode_flag_enforces() -> None:
    outcome, spans, stderr = run_instrumented("--loopguard_mode", "enforce")
    # foreign spans: only the processor, loaded through the entry point, can decide on them
    on_agent = decisions(spans, "invoke_agent researcher")
    assert [d["loopguard.action"] for d in on_agent][-1] == "stop"
    assert "repetition" in on_agent[-1]["loopguard.detectors"]
    (run,) = [s for s in spans if s["name"] == "loopguard.run"]
    # ...but nothing can interrupt a span-only agent: said once, and the state says so
    assert run["attributes"]["loopguard.run.state"] == "stop_not_enforced"
    assert stderr.count("but nothing can interrupt it") == 1
    assert "@loopguard_tool" in stderr
    # --loopguard_mode enforce reached the configuration: the hand-written agent was stopped
    assert outcome["outcome"] == "interrupted: stop"
    assert outcome["executed"] < 10
    helper = [s for s in spans if s["name"] == "invoke_agent helper"]
    assert helper[0]["attributes"]["loopguard.run.state"] == "stopped"


def test_observe_is_the_default_and_the_disable_variables_turn_it_off() -> None:
    outcome, spans, _ = run_instrumented()
    assert outcome == {"outcome": "finished", "executed": 10}  # observe mode never interrupts
    assert decisions(spans, "invoke_agent researcher")

    outcome, spans, _ = run_instrumented(OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="loopguard")
    assert spans and not decisions(spans, "invoke_agent researcher")
    assert not [s for s in spans if s["name"] == "loopguard.run"]

    outcome, spans, _ = run_instrumented(
        "--loopguard_enabled", "false", "--loopguard_mode", "enforce"
    )
    assert outcome == {"outcome": "finished", "executed": 10}
    assert not any(e["name"] == "loopguard.decision" for s in spans for e in s["events"])


def test_without_an_sdk_provider_one_warning_and_the_program_runs() -> None:
    # a configurator name that matches none: the distro sets up no SDK provider
    outcome, spans, stderr = run_instrumented(OTEL_PYTHON_CONFIGURATOR="nothing-matches")
    assert outcome["outcome"] == "finished" and not spans
    assert stderr.count("otel-loopguard: no OpenTelemetry SDK tracer provider") == 1


def test_a_provider_the_program_sets_itself_gets_the_processor() -> None:
    outcome, spans, _stderr = run_instrumented(
        OTEL_PYTHON_CONFIGURATOR="nothing-matches", AGENT_OWN_PROVIDER="1"
    )
    assert outcome["outcome"] == "finished"
    assert decisions(spans, "invoke_agent researcher")  # foreign spans: the processor decided
    assert [s for s in spans if s["name"] == "loopguard.run"]


def test_the_mode_is_read_in_any_case_and_spacing() -> None:
    """``OTEL_LOOPGUARD_MODE=ENFORCE`` (or `` Enforce ``, or the flag so written) enforces."""
    for written in ("ENFORCE", " Enforce "):
        outcome, _spans, stderr = run_instrumented(OTEL_LOOPGUARD_MODE=written)
        assert outcome["outcome"] == "interrupted: stop", stderr
        assert "ignoring OTEL_LOOPGUARD_MODE" not in stderr
    outcome, _spans, _stderr = run_instrumented("--loopguard_mode", "Enforce")
    assert outcome["outcome"] == "interrupted: stop"

    outcome, _spans, stderr = run_instrumented(OTEL_LOOPGUARD_MODE="enforcing")
    assert outcome == {"outcome": "finished", "executed": 10}
    warnings = [line for line in stderr.splitlines() if "'enforcing'" in line]
    assert len(warnings) == 1, stderr
    assert "one of: observe, enforce" in warnings[0]
    assert "did you mean 'enforce'?" in warnings[0]


def test_disabling_loopguard_turns_every_part_off_even_in_enforce_mode() -> None:
    """``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=loopguard`` is off as
    ``OTEL_LOOPGUARD_ENABLED=false`` is: no processor, and no gate interrupts (the gates and
    the framework packages share the one guard)."""
    for disabled in ("loopguard", "openai, loopguard", "*"):
        outcome, spans, stderr = run_instrumented(
            "--loopguard_mode", "enforce", OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=disabled
        )
        assert outcome == {"outcome": "finished", "executed": 10}, (disabled, stderr)
        assert not any(e["name"] == "loopguard.decision" for s in spans for e in s["events"])
        assert not [s for s in spans if s["name"] == "loopguard.run"]


def test_an_interrupt_is_said_in_one_warning_line() -> None:
    outcome, _spans, stderr = run_instrumented("--loopguard_mode", "enforce")
    assert outcome["outcome"] == "interrupted: stop"
    lines = [line for line in stderr.splitlines() if "STOP interrupted run" in line]
    assert len(lines) == 1, stderr
    assert "agent helper" in lines[0] and "tool lookup" in lines[0]
    assert "repetition" in lines[0] and "saved: " in lines[0]


def test_a_stop_no_gate_can_enforce_says_one_state_on_its_decision_and_its_run() -> None:
    _outcome, spans, _stderr = run_instrumented("--loopguard_mode", "enforce")
    stops = [
        d for d in decisions(spans, "invoke_agent researcher") if d["loopguard.action"] == "stop"
    ]
    assert stops and all(d["loopguard.run.state"] == "stop_not_enforced" for d in stops)
    (run,) = [s for s in spans if s["name"] == "loopguard.run"]
    assert run["attributes"]["loopguard.run.state"] == "stop_not_enforced"
    # the gated agent's STOP was enforced: its decision and its run say stopped
    helper = [s for s in spans if s["name"] == "execute_tool lookup"]
    helper_stops = [
        e["attributes"]
        for s in helper
        for e in s["events"]
        if e["name"] == "loopguard.decision" and e["attributes"]["loopguard.action"] == "stop"
    ]
    assert helper_stops and helper_stops[0]["loopguard.run.state"] == "stopped"
