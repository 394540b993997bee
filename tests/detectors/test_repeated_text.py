"""Loops in the model's own text (issue 18, point 11).

A model that answers with the same, or nearly the same, text turn after turn is looping,
with or without tool calls. Read from ``gen_ai.output.messages`` (real SDK spans through the
span processor) and from our wrappers' model turns (the OpenAI-format answer reader and
``report_answer``, what the openai and litellm packages run); only hashes leave the process.
Twins: a conversation whose answers differ, and the same short preamble before each of
many different tool calls.
"""

from __future__ import annotations

import json

from otel.helpers import make_stack
from sdk_stack import AGENT, chat_span, sdk_stack, tool_span

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action
from otel_loopguard.engine.detectors import DEFAULT_DETECTORS
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.detectors.repeated_text import RepeatedTextDetector
from otel_loopguard.engine.events import Event, EventKind
from otel_loopguard.engine.monitor import Monitor
from otel_loopguard.engine.signatures import text_signature, text_sketch
from otel_loopguard.kit.model_call_span import report_answer
from otel_loopguard.kit.openai_format import read_chat_completion

RUN = "chat-1"
APOLOGY = "I apologize for the confusion. Let me look at the order history again and check."
REWORDED = [
    APOLOGY,
    "I apologize for the confusion! Let me look at the order history again, and check.",
    "Apologies for the confusion. Let me look at the order history again and check it.",
    "I apologize for the confusion; let me check the order history again.",
    "I apologize for the confusion. Let me look at the order history again and check.",
    "Sorry for the confusion. Let me look at the order history again and check.",
]


def _turn(text: str | None, calls: tuple[str, ...] | None = None) -> Event:
    event = Event(EventKind.LLM_RESPONSE, RUN, finish_reason="stop", requested_tool_calls=calls)
    if text:
        event.signature, event.near_key = text_signature(text)
        event.details["text_sketch"] = text_sketch(text)
    return event


def _actions(events: list[Event]) -> list[Action]:
    monitor = Monitor(LoopGuardConfig())
    return [monitor.observe(event).action for event in events]


def test_registered_with_the_default_detectors() -> None:
    assert "repeated_text" in [f(LoopGuardConfig()).name for f in DEFAULT_DETECTORS]


def test_the_same_answer_turn_after_turn_replans_then_stops() -> None:
    actions = _actions([_turn(APOLOGY) for _ in range(6)])
    assert actions == [Action.CONTINUE] * 2 + [Action.REPLAN] * 3 + [Action.STOP]


def test_nearly_the_same_answer_counts_too() -> None:
    actions = _actions([_turn(text) for text in REWORDED])
    assert actions[2] is Action.REPLAN and actions[-1] is Action.STOP


def test_answers_that_differ_are_not_a_loop() -> None:
    answers = [
        "Your order 1182 shipped on Monday and should arrive by Thursday.",
        "The refund for order 1175 was issued to your card ending in 4242.",
        "I updated the delivery address to 12 Rue de la Paix, Paris.",
        "Your subscription renews on the 3rd; the plan is Team, 12 seats.",
        "I could not find an order under that email; could you check it?",
        "Done: the invoice for March is attached to your account page.",
    ]
    assert set(_actions([_turn(a) for a in answers])) == {Action.CONTINUE}


def test_the_same_preamble_before_different_tool_calls_is_not_a_loop() -> None:
    turns = [_turn("Let me check the next file.", (f"sig-{i}",)) for i in range(10)]
    assert set(_actions(turns)) == {Action.CONTINUE}


def test_short_answers_that_repeat_are_not_a_loop() -> None:
    turns = [_turn(text) for text in ["ok", "Done.", "ok", "Thanks!", "ok", "ok", "ok", "ok"]]
    assert set(_actions(turns)) == {Action.CONTINUE}


def test_only_hashes_are_kept() -> None:
    signature, near = text_signature(APOLOGY)
    assert len(signature) == len(near) == 16 and "apolog" not in signature + near
    detector = RepeatedTextDetector(LoopGuardConfig())
    state = detector.new_state()
    for _ in range(2):
        detector.observe(_turn(APOLOGY), state, RunCounters())
    exported = detector.export_state(state)
    assert exported["streak"] == 2 and "sketch" not in exported
    assert "apolog" not in json.dumps(exported).lower()


def _messages(text: str) -> str:
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])


def test_genai_spans_the_same_answer_gets_a_replan_then_a_stop() -> None:
    """Real SDK spans in the GenAI semantic conventions, fed through the span processor."""
    stack = sdk_stack()
    with stack.tracer.start_as_current_span("invoke_agent support", attributes=AGENT):
        for text in REWORDED:
            chat_span(stack, "stop", output_tokens=20, output_messages=_messages(text))
    stack.provider.shutdown()
    actions = [
        d["loopguard.action"]
        for d in stack.decisions()
        if "repeated_text" in d["loopguard.detectors"]
    ]
    assert actions[0] == "replan" and actions[-1] == "stop"
    for decision in stack.decisions():  # no text in what leaves the process
        assert "confusion" not in json.dumps(decision, default=str)


def test_genai_spans_a_working_agent_is_quiet() -> None:
    stack = sdk_stack()
    with stack.tracer.start_as_current_span("invoke_agent support", attributes=AGENT):
        for i in range(6):
            chat_span(stack, "tool_calls", output_messages=_messages(f"Reading part {i}."))
            tool_span(stack, "read_file", json.dumps({"path": f"doc{i}.md"}), f"part {i}")
        chat_span(stack, "stop", output_messages=_messages("Here is the summary you asked."))
    stack.provider.shutdown()
    assert not [d for d in stack.decisions() if "repeated_text" in d["loopguard.detectors"]]


def test_our_wrappers_model_turns_are_read_too() -> None:
    """The OpenAI-format answer and report_answer, as the openai and litellm packages run them."""
    stack = make_stack()
    with stack.tracer.start_as_current_span("invoke_agent support", attributes=AGENT):
        for number, text in enumerate(REWORDED):
            completion = {
                "id": f"chatcmpl-{number}",
                "model": "gpt-4o",
                "choices": [
                    {"finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                ],
                "usage": {"prompt_tokens": 50, "completion_tokens": 20},
            }
            answer = read_chat_completion(completion)
            with stack.tracer.start_as_current_span("chat gpt-4o") as span:
                report_answer(stack.guard, span, answer, "gpt-4o")  # observe mode: no raise
    stack.provider.shutdown()
    decided = [
        dict(event.attributes or {})
        for span in stack.exporter.get_finished_spans()
        for event in span.events
        if event.name == "loopguard.decision"
    ]
    actions = [
        d["loopguard.action"] for d in decided if "repeated_text" in d["loopguard.detectors"]
    ]
    assert actions and actions[0] == "replan", decided
    assert "stop" in actions
