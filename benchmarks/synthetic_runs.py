"""The agent runs the throughput benchmarks generate, in no wire format yet.

``analyze_throughput.py`` writes them as OTLP JSON lines and ``serve_throughput.py`` as OTLP
protobuf requests; both measure the same workload, so it is made here once. A run is an
``invoke_agent`` root with 5 to 40 turns, each a ``chat`` span carrying token usage and an
``execute_tool`` span carrying its arguments and result; one run in ten loops (the same
search, the same empty answer each turn). Spans come in the order they end, the root last,
as an exporter sees them. Every random draw comes from the ``rng`` given, so a seed makes
the same workload each time.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

TOOLS = ("search", "read_file", "lookup_order", "fetch_url", "run_tests", "send_email")


@dataclass(frozen=True)
class SyntheticSpan:
    """One span of a run; ids are random integers (128 bits for the trace, 64 for spans)."""

    trace_id: int
    span_id: int
    parent_id: int | None  # the run's root span; None on the root itself
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, str | int]


class AgentRun:
    """One agent run being generated turn by turn (:meth:`next_spans`)."""

    def __init__(self, rng: random.Random, number: int, now_ns: int) -> None:
        self.rng = rng
        self.trace_id = rng.getrandbits(128)
        self.root_id = rng.getrandbits(64)
        self.agent = f"agent-{number % 50}"
        self.looping = number % 10 == 0
        self.turns = rng.randint(5, 40)
        self.turn = 0
        self.start_ns = self.clock_ns = now_ns

    def _span(
        self, name: str, start: int, end: int, attributes: dict[str, str | int], parent: int | None
    ) -> SyntheticSpan:
        span_id = self.rng.getrandbits(64)
        return SyntheticSpan(self.trace_id, span_id, parent, name, start, end, attributes)

    def next_spans(self) -> list[SyntheticSpan]:
        """The spans of the next turn (a model call, then a tool call); once every turn is
        made, the root alone."""
        if self.turn >= self.turns:
            attributes: dict[str, str | int] = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": self.agent,
            }
            name = f"invoke_agent {self.agent}"
            return [self._span(name, self.start_ns, self.clock_ns + 1000, attributes, None)]
        self.turn += 1
        rng = self.rng
        tool = "search" if self.looping else rng.choice(TOOLS)
        query = "pricing page" if self.looping else f"query {rng.getrandbits(32)}"
        result = "no results" if self.looping else f"result {rng.getrandbits(48)}"
        t0 = self.clock_ns
        chat: dict[str, str | int] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": rng.randint(200, 4000),
            "gen_ai.usage.output_tokens": rng.randint(10, 300),
        }
        chat_span = self._span("chat gpt-4o", t0, t0 + 800_000, chat, self.root_id)
        call: dict[str, str | int] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": f"call_{rng.getrandbits(40):x}",
            "gen_ai.tool.call.arguments": json.dumps({"query": query, "limit": 10}),
            "gen_ai.tool.call.result": result,
        }
        name = f"execute_tool {tool}"
        call_span = self._span(name, t0 + 900_000, t0 + 1_500_000, call, self.root_id)
        self.clock_ns = t0 + 2_000_000
        return [chat_span, call_span]
