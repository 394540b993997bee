"""Waits that hide a loop, and cycles across user messages (issue 28, families 2 and 8).

Family 2: the waiting rule (a sleep, a wait tool or 30 s between calls lifts the patience to
``POLL_PATIENCE``) is bounded where waiting cannot help: an identical poll answered with the
same error, the same file re-read minutes apart, waits with nothing pending. Its twins (CI
polls whose status moves, a long job that stays ``running`` within the patience, a timeout
retried into a success) pass.

Family 8: a new user message is new information for the action-cycle detector: an airline
agent that searches the same two flights again after the customer changed something is not
stopped; the same failing call with the same error after every user message still is.

Each case runs through the real span processor in two span dialects (OpenTelemetry GenAI
semantic conventions and OpenInference), with the monitor's clock driven by the test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from otel.helpers import make_stack
from scripted_runs import Driver, exchange

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action, Decision
from otel_loopguard.engine.detectors.action_cycle import ActionCycleDetector
from otel_loopguard.engine.detectors.no_progress import NoProgressDetector
from otel_loopguard.engine.events import Event
from otel_loopguard.engine.monitor import Monitor
from otel_loopguard.spans.events import last_user_message

DIALECTS = ["genai", "openinference"]


class Agent:
    """One agent run recorded as spans of one dialect, through the real span processor;
    ``tool`` and ``chat`` return the action decided on that span (``continue`` if none)."""

    def __init__(self, dialect: str, **config: Any) -> None:
        self.dialect = dialect
        self.stack = make_stack(**config)
        self.tracer = self.stack.tracer
        self.now = 1000.0
        self.stack.guard.monitor._clock = lambda: self.now
        self.messages: list[dict[str, Any]] = []  # the conversation the model sees
        self.decisions: list[tuple[Decision, Event]] = []
        self.seen = 0
        self.stack.guard.monitor.add_decision_listener(
            lambda decision, event: self.decisions.append((decision, event))
        )
        attributes = (
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}
            if dialect == "genai"
            else {"openinference.span.kind": "AGENT", "agent.name": "helper"}
        )
        self.root = self.tracer.start_span("invoke_agent helper", attributes=attributes)
        from opentelemetry import trace

        self.context = trace.set_span_in_context(self.root)

    def _decided(self) -> str:
        new, self.seen = self.decisions[self.seen :], len(self.decisions)
        return max((d.action.value for d, _ in new), key=_rank, default="continue")

    def wait(self, seconds: float) -> None:
        self.now += seconds

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "text": text})

    def chat(self, text: str = "", calls: list[tuple[str, dict]] | None = None) -> str:
        """A model turn: its request is the conversation so far, its answer ``text`` and
        ``calls``."""
        calls = calls or []
        if self.dialect == "genai":
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.response.finish_reasons": ("tool_calls" if calls else "stop",),
                "gen_ai.input.messages": json.dumps(
                    [
                        {"role": m["role"], "parts": [{"type": "text", "content": m["text"]}]}
                        for m in self.messages
                    ]
                ),
                "gen_ai.output.messages": json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": ([{"type": "text", "content": text}] if text else [])
                            + [
                                {"type": "tool_call", "name": n, "arguments": a, "id": "x"}
                                for n, a in calls
                            ],
                        }
                    ]
                ),
            }
        else:
            attributes = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o"}
            for i, message in enumerate(self.messages):
                attributes[f"llm.input_messages.{i}.message.role"] = message["role"]
                attributes[f"llm.input_messages.{i}.message.content"] = message["text"]
            attributes["llm.output_messages.0.message.role"] = "assistant"
            attributes["llm.output_messages.0.message.content"] = text
            for j, (name, arguments) in enumerate(calls):
                prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call.function."
                attributes[prefix + "name"] = name
                attributes[prefix + "arguments"] = json.dumps(arguments)
        with self.tracer.start_as_current_span("chat gpt-4o", context=self.context) as span:
            span.set_attributes(attributes)
        if text:
            self.messages.append({"role": "assistant", "text": text})
        return self._decided()

    def tool(self, name: str, arguments: dict, result: str) -> str:
        """A model turn asking for the call, then the tool span; the strongest action."""
        chat = self.chat(calls=[(name, arguments)])
        if self.dialect == "genai":
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": json.dumps(arguments),
                "gen_ai.tool.call.result": result,
            }
        else:
            attributes = {
                "openinference.span.kind": "TOOL",
                "tool.name": name,
                "input.value": json.dumps(arguments),
                "output.value": result,
            }
        with self.tracer.start_as_current_span(f"execute_tool {name}", context=self.context):
            trace_span = _current()
            trace_span.set_attributes(attributes)
        self.messages.append({"role": "tool", "text": result})
        return max(chat, self._decided(), key=_rank)

    def nudged_or_stopped_by(self, *detectors: str) -> list[Decision]:
        """Replans and stops that ``detectors`` (this issue's part) took part in."""
        return [
            d
            for d, _ in self.decisions
            if d.action in (Action.REPLAN, Action.STOP)
            and any(s.detector in detectors for s in d.reasons)
        ]

    def deliver(self, detector: str) -> None:
        """A framework package delivered ``detector``'s recommendation (enforce mode)."""
        (run,) = {event.run_id for _, event in self.decisions}
        self.stack.guard.monitor.note_delivered(run, detector)


def _current() -> Any:
    from opentelemetry import trace

    return trace.get_current_span()


_ORDER = ["continue", "warn", "replan", "pause", "stop"]


def _rank(action: str) -> int:
    return _ORDER.index(action)


# -- family 2a: an identical poll answered with the same error ---------------------------------

POD = ("bash", {"command": "kubectl get pod web-0 -o jsonpath={.status.phase}"})
POD_ERROR = 'Error from server (NotFound): pods "web-0" not found'
SLEEP = ("bash", {"command": "sleep 30"})


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_same_failing_poll_between_sleeps_is_stopped_at_the_third_poll(dialect: str) -> None:
    agent = Agent(dialect)
    actions = []
    for _ in range(4):
        agent.tool(*SLEEP, "")
        actions.append(agent.tool(*POD, POD_ERROR))
    assert "stop" not in actions[:2]
    assert actions[2] == "stop"  # the third identical error; before: the eleventh


@pytest.mark.parametrize("dialect", DIALECTS)
def test_ci_polls_whose_status_moves_between_sleeps_pass(dialect: str) -> None:
    agent = Agent(dialect)
    for status in ["pending", "pending", "running", "running", "running", "completed: success"]:
        agent.tool(*SLEEP, "")
        assert agent.tool("bash", {"command": "gh run view 4711 --json status"}, status) != "stop"
    assert agent.nudged_or_stopped_by("no_progress", "action_cycle") == []


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_long_job_running_for_poll_patience_polls_passes(dialect: str) -> None:
    agent = Agent(dialect)
    actions = []
    for _ in range(LoopGuardConfig().poll_patience):
        agent.tool(*SLEEP, "")
        actions.append(agent.tool("bash", {"command": "gh run view 4711"}, "status: running"))
    assert "stop" not in actions
    assert agent.nudged_or_stopped_by("no_progress", "action_cycle") == []


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_timeout_retried_after_a_wait_that_then_succeeds_passes(dialect: str) -> None:
    agent = Agent(dialect)
    fetch = ("http_get", {"url": "https://ci.example.com/api/runs/4711"})
    actions = []
    for answer in ["Error: request timed out", "Error: request timed out", '{"status": "done"}']:
        agent.tool("wait", {"seconds": 20}, "waited 20 s")
        actions.append(agent.tool(*fetch, answer))
    assert set(actions) <= {"continue", "warn", "pause"}


def test_a_non_zero_exit_code_after_waits_is_an_error_answer() -> None:
    run = Driver(NoProgressDetector)
    signals = []
    for _ in range(3):
        signals += run.feed(exchange(*SLEEP, ""))
        signals += run.feed(exchange("run_tests", {}, {"exit_code": 1, "stdout": "2 failed"}))
    assert [s.evidence["threshold"] for s in signals] == [2]


def test_the_error_patience_is_a_setting() -> None:
    run = Driver(NoProgressDetector, error_poll_patience=4)
    signals = []
    for _ in range(5):
        signals += run.feed(exchange(*SLEEP, ""))
        signals += run.feed(exchange(*POD, POD_ERROR))
    assert [s.evidence["repeats"] for s in signals] == [4]


# -- family 2b: the same local file re-read minutes apart ---------------------------------------

READ = ("read_file", {"path": "src/app/settings.py"})
CONTENT = "DEBUG = False\nALLOWED_HOSTS = ['example.com']\n"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_same_file_re_read_minutes_apart_is_stopped_at_the_third_read(dialect: str) -> None:
    agent = Agent(dialect)
    actions = []
    for _ in range(4):
        agent.wait(180)  # three minutes between reads, nothing else done
        actions.append(agent.tool(*READ, CONTENT))
    assert actions[:2] == ["continue", "continue"]
    assert actions[2] == "stop"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_log_tailed_between_explicit_sleeps_keeps_the_patience(dialect: str) -> None:
    agent = Agent(dialect)
    tail = ("bash", {"command": "tail -n 5 build.log"})
    actions = []
    for _ in range(6):
        agent.tool(*SLEEP, "")
        actions.append(agent.tool(*tail, "compiling module 12 of 40"))
    assert "stop" not in actions


def test_time_gaps_give_reads_the_patience_when_configured() -> None:
    monitor_actions = []
    clock = [0.0]
    monitor = Monitor(LoopGuardConfig(read_time_gap_patience=True), clock=lambda: clock[0])
    for _ in range(4):
        clock[0] += 180
        for event in exchange(*READ, CONTENT):
            monitor_actions.append(monitor.observe(event).action)
    assert Action.STOP not in monitor_actions


# -- family 2c: waits with nothing pending ------------------------------------------------------

IDLE = ("wait", {"seconds": 30})


@pytest.mark.parametrize("dialect", DIALECTS)
def test_idle_waits_get_a_nudge_at_the_third_and_a_stop_at_the_fourth_once_delivered(
    dialect: str,
) -> None:
    agent = Agent(dialect)
    actions = [agent.tool(*IDLE, "waited 30 seconds") for _ in range(2)]
    actions.append(agent.tool(*IDLE, "waited 30 seconds"))
    assert actions == ["continue", "continue", "replan"]
    (replan,) = [d for d, _ in agent.decisions if d.action is Action.REPLAN]
    assert "nothing you wait for is pending" in (replan.recommendation or "")
    agent.deliver("no_progress")
    assert agent.tool(*IDLE, "waited 30 seconds") == "stop"
    stop = agent.decisions[-1][0]
    assert "the nudge did not help" in stop.reasons[0].message


@pytest.mark.parametrize("dialect", DIALECTS)
def test_idle_waits_stop_at_twice_the_threshold_when_nothing_delivers(dialect: str) -> None:
    agent = Agent(dialect)
    actions = [agent.tool(*IDLE, "waited 30 seconds") for _ in range(6)]
    assert actions[2:5] == ["replan", "replan", "replan"]
    assert actions[5] == "stop"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_sleeps_between_polls_of_a_pending_job_are_not_idle(dialect: str) -> None:
    agent = Agent(dialect)
    actions = []
    for _ in range(8):
        actions.append(agent.tool(*IDLE, "waited 30 seconds"))
        actions.append(agent.tool("get_job", {"id": "build-77"}, '{"state": "running"}'))
    assert "stop" not in actions
    assert agent.nudged_or_stopped_by("no_progress", "action_cycle") == []


def test_a_wait_for_something_is_not_an_idle_wait() -> None:
    run = Driver(NoProgressDetector)
    signals = run.feed(
        [e for _ in range(5) for e in exchange("wait_for_run", {"run_id": 4711}, "running")]
    )
    assert signals == []


def test_idle_waits_whose_answer_changes_are_not_counted() -> None:
    run = Driver(NoProgressDetector)
    events = [
        e for n in range(6) for e in exchange("wait", {"seconds": 30}, f"new mail: {'x' * n}")
    ]
    assert [s.kind for s in run.feed(events)] == []


def test_idle_waits_survive_export_and_restore() -> None:
    run = Driver(NoProgressDetector)
    run.feed([e for _ in range(2) for e in exchange(*IDLE, "waited")])
    run.reload()
    (signal,) = run.feed(exchange(*IDLE, "waited"))
    assert signal.kind == "idle_wait" and signal.evidence["waits"] == 3


def test_idle_waits_off() -> None:
    run = Driver(NoProgressDetector, idle_wait_threshold=0)
    assert run.feed([e for _ in range(8) for e in exchange(*IDLE, "waited")]) == []


# -- family 8: two-period cycles across user messages -------------------------------------------

OUT = ("search_direct_flight", {"origin": "IAH", "destination": "SFO", "date": "2024-05-19"})
BACK = ("search_direct_flight", {"origin": "SFO", "destination": "IAH", "date": "2024-05-23"})
OUT_FLIGHTS = '[{"flight_number": "HAT072", "price": 130}]'
BACK_FLIGHTS = '[{"flight_number": "HAT082", "price": 180}]'


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_same_two_searches_after_the_customer_changed_something_pass(dialect: str) -> None:
    agent = Agent(dialect)
    agent.user("I'd like to move both flights by one day.")
    actions = []
    for wish in [
        "Could we look for flights after 8am? And business class, please.",
        "Actually, what would economy on the way back cost?",
    ]:
        actions.append(agent.tool(*OUT, OUT_FLIGHTS))
        actions.append(agent.tool(*BACK, BACK_FLIGHTS))
        actions.append(agent.chat("Here are the flights: HAT072 out, HAT082 back."))
        agent.user(wish)
    actions.append(agent.tool(*OUT, OUT_FLIGHTS))
    actions.append(agent.tool(*BACK, BACK_FLIGHTS))
    assert "stop" not in actions


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_same_two_searches_with_no_user_message_between_are_stopped(dialect: str) -> None:
    agent = Agent(dialect)
    agent.user("I'd like to move both flights by one day.")
    actions = [agent.tool(*step) for step in [(*OUT, OUT_FLIGHTS), (*BACK, BACK_FLIGHTS)] * 2]
    assert actions == ["continue", "continue", "continue", "stop"]


UPDATE = (
    "update_reservation_flights",
    {"reservation_id": "HXDUBJ", "cabin": "business", "payment_id": "gift_card_1646646"},
)
REFUSED = "Error: gift card balance is not enough"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_same_failing_call_after_each_user_message_is_still_stopped(dialect: str) -> None:
    agent = Agent(dialect)
    actions = []
    for wish in ["Please go ahead.", "Try again please.", "Once more, it must work."]:
        agent.user(wish)
        actions.append(agent.tool(*UPDATE, REFUSED))
        agent.chat("It seems the gift card balance is not enough.")
    assert actions == ["continue", "continue", "stop"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_failing_pair_after_each_user_message_is_still_stopped(dialect: str) -> None:
    agent = Agent(dialect)
    lookup = ("get_reservation_details", {"reservation_id": "HXDUBJ"})
    actions = []
    for wish in ["Please go ahead.", "Try again please.", "Once more, it must work."]:
        agent.user(wish)
        actions.append(agent.tool(*lookup, '{"reservation_id": "HXDUBJ", "cabin": "economy"}'))
        actions.append(agent.tool(*UPDATE, REFUSED))
        agent.chat("It seems the gift card balance is not enough.")
    assert actions[-1] == "stop" and "stop" not in actions[:-1]


def test_a_delivered_recommendation_after_tool_results_is_not_a_user_message() -> None:
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "Find my flights"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "name": "search"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "response": "[]"}]},
        {"role": "user", "parts": [{"type": "text", "content": "You are repeating yourself"}]},
    ]
    assert last_user_message({"gen_ai.input.messages": json.dumps(messages)}) is None
    anthropic = [
        *messages[:2],
        {
            "role": "user",
            "parts": [
                {"type": "tool_call_response", "response": "[]"},
                {"type": "text", "content": "You are repeating yourself"},
            ],
        },
    ]
    assert last_user_message({"gen_ai.input.messages": json.dumps(anthropic)}) is None
    assert last_user_message({"gen_ai.input.messages": json.dumps(messages[:1])}) is not None


def test_the_last_of_many_indexed_input_messages_is_found() -> None:
    attributes: dict[str, Any] = {}
    for i in range(300):
        role = "user" if i == 299 else ("assistant" if i % 2 else "tool")
        attributes[f"llm.input_messages.{i}.message.role"] = role
        attributes[f"llm.input_messages.{i}.message.content"] = f"message {i}"
    assert last_user_message(attributes) is None  # a user message right after a tool's
    attributes["llm.input_messages.298.message.role"] = "assistant"
    first = last_user_message(attributes)
    attributes["llm.input_messages.299.message.content"] = "another wish"
    assert first is not None and last_user_message(attributes) not in (None, first)


def test_cycles_count_across_user_messages_when_the_reset_is_off() -> None:
    run = Driver(ActionCycleDetector, cycle_user_message_resets=False)
    from scripted_runs import llm

    answer = llm()
    answer.details["user_message"] = 7
    events = exchange(*OUT, OUT_FLIGHTS) + exchange(*BACK, BACK_FLIGHTS) + [answer]
    events += exchange(*OUT, OUT_FLIGHTS) + exchange(*BACK, BACK_FLIGHTS)
    assert len(run.feed(events)) == 1
    assert Driver(ActionCycleDetector).feed(events) == []


def test_the_user_message_seen_survives_export_and_restore() -> None:
    run = Driver(ActionCycleDetector)
    from scripted_runs import llm

    answer = llm()
    answer.details["user_message"] = 7
    run.feed([*exchange(*OUT, OUT_FLIGHTS), answer])
    run.reload()
    again = llm(exchange(*OUT, OUT_FLIGHTS)[:1])  # a model turn asking for the next call
    again.details["user_message"] = 7  # the request still ends with that message: not new
    events = exchange(*OUT, OUT_FLIGHTS) + exchange(*BACK, BACK_FLIGHTS) + [again]
    events += exchange(*OUT, OUT_FLIGHTS) + exchange(*BACK, BACK_FLIGHTS)
    assert len(run.feed(events)) == 1
