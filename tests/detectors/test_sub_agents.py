"""Sub-agents (issue 18, point 4): repetition is counted per agent within a run, a decision
names the agent it is about, and a looping sub-agent is first answered with ``replan``
(its manager may recover) before the whole run is stopped. Handoff cycles stay run-level.
"""

from __future__ import annotations

import json

from sdk_stack import SdkStack, sdk_stack

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action, RunEndState
from otel_loopguard.engine.events import Event, EventKind, tool_call, tool_result
from otel_loopguard.engine.monitor import Monitor

RUN = "swe-1"
GOTO = {"line": 120, "path": "src/calc.py"}
PAGE = "[File: src/calc.py (400 lines)] 120: def add(a, b):"


def goto(agent: str, n: int) -> list[Event]:
    call_id = f"{agent}-{n}"
    return [
        tool_call(RUN, "goto", GOTO, actor=agent, call_id=call_id),
        tool_result(RUN, "goto", PAGE, actor=agent, call_id=call_id),
    ]


def handoff(source: str, target: str) -> Event:
    return Event(EventKind.HANDOFF, RUN, actor=source, target_agent=target)


def manager_monitor(**settings) -> Monitor:
    monitor = Monitor(LoopGuardConfig(**settings))
    monitor.start_run(RUN, agent="manager")
    return monitor


def test_a_sub_agent_reopening_what_the_previous_one_found_is_not_a_repeat() -> None:
    monitor = manager_monitor()
    events = [handoff("manager", "finder"), *goto("finder", 1), *goto("finder", 2)]
    events += [handoff("finder", "manager"), handoff("manager", "fixer"), *goto("fixer", 1)]
    events += [handoff("fixer", "manager"), handoff("manager", "tester"), *goto("tester", 1)]
    decided = [monitor.observe(e) for e in events]
    assert Action.STOP not in {d.action for d in decided}
    assert not monitor.run_snapshot(RUN).stopped


def test_one_agent_repeating_itself_is_still_caught_and_its_own_agent_stops_at_once() -> None:
    monitor = manager_monitor()
    decided = [monitor.observe(e) for n in range(3) for e in goto("manager", n)]
    assert decided[-1].action is Action.STOP  # the run's own agent: no replan first
    assert set(decided[-1].detectors) == {"repetition", "no_progress"}


def test_a_looping_sub_agent_is_answered_with_replan_then_the_run_stops() -> None:
    monitor = manager_monitor()
    monitor.observe(handoff("manager", "coder"))
    decided = [monitor.observe(e) for n in range(4) for e in goto("coder", n)]
    loud = [d for d in decided if d.action >= Action.REPLAN]
    # the third unchanged answer: replan; the fourth identical call: stop, before it runs
    assert [d.action for d in loud] == [Action.REPLAN] + [Action.STOP] * (len(loud) - 1)
    assert decided.index(loud[1]) == 6  # the fourth call's tool_call event
    replan = loud[0]
    assert replan.recommendation and "The sub-agent coder is repeating itself" in (
        replan.recommendation
    )
    assert replan.end_state is None and loud[1].end_state is RunEndState.STOPPED
    assert monitor.end_run(RUN).end_state is RunEndState.STOPPED


def test_more_sub_agent_replans_from_config() -> None:
    monitor = manager_monitor(sub_agent_replans=3)
    monitor.observe(handoff("manager", "coder"))
    decided = [monitor.observe(e) for n in range(5) for e in goto("coder", n)]
    loud = [d.action for d in decided if d.action >= Action.REPLAN]
    assert loud == [Action.REPLAN] * 3 + [Action.STOP] * (len(loud) - 3)


def test_a_sub_agent_that_loops_then_hands_back_leaves_the_run_to_its_manager() -> None:
    """The manager may recover, as real runs did: no STOP for the sub-agent's one loop."""
    monitor = manager_monitor()
    events = [handoff("manager", "coder"), *[e for n in range(3) for e in goto("coder", n)]]
    events += [handoff("coder", "manager"), handoff("manager", "reviewer")]
    events += [
        e
        for n in range(4)
        for e in (
            tool_call(RUN, "read_file", {"path": f"f{n}.py"}, actor="reviewer", call_id=f"r{n}"),
            tool_result(RUN, "read_file", f"contents {n}", actor="reviewer", call_id=f"r{n}"),
        )
    ]
    decided = [monitor.observe(e).action for e in events]
    assert Action.REPLAN in decided and Action.STOP not in decided
    assert monitor.end_run(RUN).end_state is RunEndState.COMPLETED


def test_sub_agent_replans_come_from_config_and_zero_stops_at_once() -> None:
    monitor = manager_monitor(sub_agent_replans=0)
    monitor.observe(handoff("manager", "coder"))
    decided = [monitor.observe(e).action for n in range(3) for e in goto("coder", n)]
    assert Action.REPLAN not in decided and decided[-1] is Action.STOP


def test_handoff_cycles_stay_run_level() -> None:
    monitor = manager_monitor()
    decided = [
        monitor.observe(handoff(a, b)).action
        for a, b in [("triage", "billing"), ("billing", "triage")] * 3
    ]
    assert Action.STOP in decided and Action.REPLAN not in decided


def test_replans_given_survive_export_and_restore() -> None:
    monitor = manager_monitor()
    monitor.observe(handoff("manager", "coder"))
    for n in range(3):
        for event in goto("coder", n):
            monitor.observe(event)
    data = json.loads(json.dumps(monitor.export_run(RUN)))
    assert data["agent_replans"] == {"coder": 1}
    restored = Monitor(LoopGuardConfig())
    restored.restore_run(data)
    decided = [restored.observe(e).action for e in goto("coder", 3)]
    assert decided[0] is Action.STOP  # its one replan was used before the export


# -- through the real SDK: invoke_agent spans nested in the manager's --------------------


def agent_span(stack: SdkStack, name: str):
    return stack.tracer.start_as_current_span(
        f"invoke_agent {name}",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
    )


def goto_span(stack: SdkStack) -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "goto",
        "gen_ai.tool.call.arguments": json.dumps(GOTO),
        "gen_ai.tool.call.result": PAGE,
    }
    with stack.tracer.start_as_current_span("execute_tool goto", attributes=attributes):
        pass


def test_sdk_handovers_between_sub_agents_opening_the_same_place_are_not_stopped() -> None:
    stack = sdk_stack()
    with agent_span(stack, "manager"):
        for name in ("finder", "fixer", "tester"):
            with agent_span(stack, name):
                goto_span(stack)
                goto_span(stack) if name == "finder" else None
    stack.provider.shutdown()
    assert stack.decisions() == []
    (run,) = stack.spans("loopguard.run")
    assert run.attributes["loopguard.run.state"] == "completed"


def test_sdk_a_looping_sub_agent_gets_replan_decisions_that_name_it() -> None:
    stack = sdk_stack()
    with agent_span(stack, "manager"), agent_span(stack, "coder"):
        for _ in range(4):
            goto_span(stack)
    stack.provider.shutdown()
    replans = [d for d in stack.decisions() if d["loopguard.action"] == "replan"]
    assert replans, stack.decisions()
    assert {d["gen_ai.agent.name"] for d in replans} == {"coder"}
    assert "The sub-agent coder" in replans[0]["loopguard.recommendation"]


def test_unusable_replan_counts_in_an_export_restore_as_none() -> None:
    monitor = manager_monitor()
    monitor.observe(handoff("manager", "coder"))
    data = json.loads(json.dumps(monitor.export_run(RUN)))
    data["agent_replans"] = {"coder": "many", "tester": -1, "fixer": 2}
    restored = Monitor(LoopGuardConfig())
    restored.restore_run(data)
    assert restored.internal_errors == 0
    assert restored.export_run(RUN)["agent_replans"] == {"fixer": 2}
    data["agent_replans"] = ["not", "a", "dict"]
    restored.restore_run(data)
    assert restored.internal_errors == 0 and restored.export_run(RUN)["agent_replans"] == {}
