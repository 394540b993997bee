"""An agent process of the store tests: hand-written agent turns over our public API.

``python agent_turns.py <conversation> <turns>`` runs that many turns; ``python
agent_turns.py <conversation> -`` runs one turn per line read from stdin (so a test can
interleave two live processes) and stops at an empty line or EOF. A turn is one
``agent_run`` of the conversation that reports ``LOOPGUARD_TEST_TOKENS`` model tokens (of
model ``LOOPGUARD_TEST_MODEL``) when set, then calls the scripted ``lookup`` tool, which
returns the same empty result; its argument is the same every turn unless a stdin line
gives one. The store, mode and budgets come from the ``OTEL_LOOPGUARD_*`` variables; the
user of the fleet budgets from W3C baggage ``enduser.id`` (``LOOPGUARD_TEST_USER``). One
JSON line per turn: whether the tool executed, what interrupted the turn, and how long each
gate call (the model pre-flight, the tool call) took in ms.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator

from opentelemetry import baggage, context, trace
from opentelemetry.sdk.trace import TracerProvider

from otel_loopguard import (
    LoopGuardInterrupt,
    LoopGuardSpanProcessor,
    agent_run,
    get_guard,
    loopguard_tool,
)

provider = TracerProvider()
provider.add_span_processor(LoopGuardSpanProcessor())
trace.set_tracer_provider(provider)

executed: list[str] = []


@loopguard_tool
def lookup(query: str) -> str:
    executed.append(query)
    return ""


def turns(count: str) -> Iterator[str]:
    if count != "-":
        yield from ["order 1234"] * int(count)
        return
    for line in sys.stdin:
        if not line.strip():
            return
        yield line.strip()


def one_turn(conversation: str, query: str) -> dict[str, object]:
    guard = get_guard()
    tokens = int(os.environ.get("LOOPGUARD_TEST_TOKENS", "0"))
    before = len(executed)
    outcome: dict[str, object] = {"interrupted": None}
    gate_ms: list[float] = []
    try:
        with agent_run("support", conversation_id=conversation):
            if tokens:
                started = time.perf_counter()
                try:
                    guard.preflight_llm()
                finally:
                    gate_ms.append((time.perf_counter() - started) * 1000)
                guard.observe_llm_response(
                    model=os.environ.get("LOOPGUARD_TEST_MODEL"),
                    input_tokens=tokens,
                    output_tokens=0,
                    finish_reason="tool_calls",
                )
            started = time.perf_counter()
            try:
                lookup(query)
            finally:
                gate_ms.append((time.perf_counter() - started) * 1000)
    except LoopGuardInterrupt as exc:
        reason = exc.decision.reasons[0] if exc.decision.reasons else None
        outcome["interrupted"] = reason.detector if reason else "stop"
        outcome["kind"] = reason.kind if reason else None
        outcome["scope"] = reason.evidence.get("scope") if reason else None
    outcome["executed"] = len(executed) > before
    outcome["gate_ms"] = gate_ms
    return outcome


def main() -> None:
    conversation = sys.argv[1]
    user = os.environ.get("LOOPGUARD_TEST_USER")
    if user:
        context.attach(baggage.set_baggage("enduser.id", user))
    for query in turns(sys.argv[2]):
        print(json.dumps(one_turn(conversation, query)), flush=True)
    provider.shutdown()


if __name__ == "__main__":
    main()
