"""What the suites check alike on a program run under the real ``opentelemetry-instrument``
(:mod:`.instrument_runner`): its outcome (the program's last JSON line) and the spans the
console exporter printed, or the process and the spans an :class:`~.receiver.OTLPReceiver`
received.

``pick(spans, name)`` is how a suite finds *our* spans of a name among the spans of the
framework's own instrumentation, which makes spans of the same names (the console exporter
prints no instrumentation scope): :func:`console_named` by default, or
``console_named(..., without=...)`` / a suite's own function.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .instrument_runner import console_decisions, printed_count, run_under_opentelemetry_instrument
from .receiver import OTLPReceiver, ReceivedSpan

Spans = list[dict[str, Any]]
Pick = Callable[[Spans, str], Spans]


def console_named(spans: Spans, name: str, without: Iterable[str] = ()) -> Spans:
    """The console spans called ``name`` that carry none of the attributes ``without`` (the
    ones only the framework's own spans of that name carry)."""
    others = set(without)
    return [s for s in spans if s["name"] == name and others.isdisjoint(s["attributes"])]


def console_actions(spans: Spans) -> list[str]:
    """The action of every ``loopguard.decision`` event on the console spans."""
    return [
        e["attributes"]["loopguard.action"]
        for s in spans
        for e in s["events"]
        if e["name"] == "loopguard.decision"
    ]


def assert_console_usage(
    run: dict[str, Any], calls: int, input_tokens: int, output_tokens: int
) -> None:
    """The run's span sums the usage of its ``calls`` model calls, each counted once."""
    assert run["attributes"]["gen_ai.usage.input_tokens"] == calls * input_tokens
    assert run["attributes"]["gen_ai.usage.output_tokens"] == calls * output_tokens


def assert_console_loop_stopped(
    outcome: Mapping[str, Any],
    spans: Spans,
    agent: str,
    *,
    detector: str = "repetition",
    executions: int = 3,
    pick: Pick = console_named,
) -> tuple[dict[str, Any], Spans]:
    """A looping agent's program, stopped: interrupted by ``detector`` after
    ``executions`` searches, our one ``invoke_agent {agent}`` span ``stopped``, one
    ``execute_tool search`` span of ours per execution, all in the agent's trace, a STOP
    decision on one of them. Returns the agent's span and the tool spans."""
    assert outcome["interrupted"] is True
    assert detector in outcome["detectors"]
    assert outcome["executions"] == executions
    (run,) = pick(spans, f"invoke_agent {agent}")
    assert run["attributes"]["loopguard.run.state"] == "stopped"
    tools = pick(spans, "execute_tool search")
    assert len(tools) == executions
    assert {s["context"]["trace_id"] for s in tools} == {run["context"]["trace_id"]}
    assert any(console_decisions(s, "stop") for s in tools)
    return run, tools


def assert_console_streamed_run_completed(
    outcome: Mapping[str, Any],
    spans: Spans,
    agent: str,
    input_tokens: int,
    output_tokens: int,
    *,
    pick: Pick = console_named,
) -> None:
    """A productive streamed run's program: three searches and four model calls, our one
    ``invoke_agent {agent}`` span ``completed`` with each turn's usage counted once."""
    assert outcome == {"interrupted": False, "executions": 3, "model_calls": 4}
    (run,) = pick(spans, f"invoke_agent {agent}")
    assert run["attributes"]["loopguard.run.state"] == "completed"
    assert_console_usage(run, 4, input_tokens, output_tokens)


def assert_console_handoff_cycle_stopped(
    outcome: Mapping[str, Any], spans: Spans, agent: str, *, pick: Pick = console_named
) -> None:
    """Agents handing off to each other, stopped by the handoff-cycle detector: our
    ``invoke_agent {agent}`` span (the team's or the first agent's) is ``stopped``."""
    assert outcome["interrupted"] is True
    assert outcome["detectors"] == ["handoff_cycle"]
    (run,) = pick(spans, f"invoke_agent {agent}")
    assert run["attributes"]["loopguard.run.state"] == "stopped"


def assert_console_search_loop_stopped(
    outcome: Mapping[str, Any], spans: Spans, agent: str
) -> None:
    """A search loop's program (the agent's tool spans may be vetoed before their call
    runs): a STOP after one to four executions, one executed tool span per execution, a
    STOP decision on the tool spans, the one ``invoke_agent {agent}`` span ``stopped`` and
    its tool spans in its trace."""
    assert outcome["interrupted"] is True
    assert outcome["action"] == "stop"
    assert 1 <= outcome["executions"] <= 4
    tools = console_named(spans, "execute_tool search")
    ran = [s for s in tools if s["attributes"].get("error.type") != "LoopGuardInterrupt"]
    assert len(ran) == outcome["executions"]
    assert any(console_decisions(s, "stop") for s in tools)
    (run,) = console_named(spans, f"invoke_agent {agent}")
    assert run["attributes"]["loopguard.run.state"] == "stopped"
    assert all(s["context"]["trace_id"] == run["context"]["trace_id"] for s in tools)


def assert_console_search_loop_observed(
    outcome: Mapping[str, Any], spans: Spans, executions: int
) -> None:
    """The same search loop in observe mode: not interrupted, all ``executions`` ran, each
    its tool span, and the STOP recorded on them, not enforced."""
    assert outcome["interrupted"] is False
    assert outcome["executions"] == executions
    tools = console_named(spans, "execute_tool search")
    assert len(tools) == executions
    assert any(console_decisions(s, "stop") for s in tools)


def assert_console_loop_observed(outcome: Mapping[str, Any], spans: Spans, executions: int) -> None:
    """A looping agent's program in observe mode: not interrupted, ended by itself or by the
    framework after ``executions`` tool executions, the STOP recorded on its spans, not
    enforced."""
    assert outcome["interrupted"] is False
    assert outcome["executions"] == executions
    assert "stop" in console_actions(spans)


def assert_console_budget_stopped(outcome: Mapping[str, Any], spans: Spans) -> Spans:
    """The chat-loop ``budget_agent`` app under a 45-token budget: two requests answered,
    the third ``chat gpt-test`` call vetoed before it was sent, the run
    ``budget_exceeded``. Returns the chat spans."""
    assert outcome == {"interrupted": True, "detectors": ["budget"], "requests": 2}
    chats = console_named(spans, "chat gpt-test")
    assert len(chats) == 3  # two answered, the third vetoed before it was sent
    assert chats[-1]["attributes"]["error.type"] == "LoopGuardInterrupt"
    (run,) = console_named(spans, "invoke_agent assistant")
    assert run["attributes"]["loopguard.run.state"] == "budget_exceeded"
    return chats


# -- a script under opentelemetry-instrument, its spans sent to a receiver -----------------


def run_script_with_receiver(
    tmp_path: Path,
    source: str,
    *,
    extra_args: tuple[str, ...] = (),
    script_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], list[ReceivedSpan]]:
    """``source`` written to ``tmp_path/agent.py`` and run under the real
    ``opentelemetry-instrument``, its spans sent over OTLP/HTTP to an
    :class:`OTLPReceiver`: the completed process and the spans received."""
    script = tmp_path / "agent.py"
    script.write_text(source, encoding="utf-8")
    with OTLPReceiver() as receiver:
        completed = run_under_opentelemetry_instrument(
            script, receiver, extra_args=extra_args, script_args=script_args, env=env
        )
        return completed, receiver.spans()


def assert_interrupted_process(
    completed: subprocess.CompletedProcess[str], label: str = "EXECUTIONS"
) -> int:
    """The process ended on a ``LoopGuardInterrupt`` after one to four executions (the
    count it printed as ``label``). Returns that count."""
    assert completed.returncode != 0
    assert "LoopGuardInterrupt" in completed.stderr, completed.stderr[-2000:]
    executions = printed_count(completed.stdout, label)
    assert 1 <= executions <= 4
    return executions
