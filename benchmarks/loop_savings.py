"""What a looping run costs with the loop guard in enforce mode vs without it.

Usage::

    python benchmarks/loop_savings.py

Runs the scripted agents of ``otel-loopguard demo`` (a support agent stuck on an empty
knowledge base, two agents handing a ticket back and forth, a 404 retried, and a healthy
run) through the real gate, span processor and SDK, twice each: with the loop guard
disabled (``OTEL_LOOPGUARD_ENABLED=false``: the same spans, no guard, so the script runs to
its turn limit as an unguarded agent would) and in ``enforce`` mode. Counts what each run
actually executed: tool calls and model tokens (the scripted model's usage, which grows
with the context each turn as a real agent's prompt does). The looping runs must spend far
less under enforcement; the healthy run must spend exactly the same.
"""

from __future__ import annotations

import argparse
import io
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent))  # installed package first

from opentelemetry.sdk.trace import TracerProvider

from otel_loopguard.demo.runner import DecisionFeed, run_scenario
from otel_loopguard.demo.scenarios import SCENARIOS
from otel_loopguard.demo.timeline import Timeline
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.guard import LoopGuard
from otel_loopguard.processor import LoopGuardSpanProcessor


@dataclass
class Spent:
    scenario: str
    tool_calls: int
    tokens: int
    stopped: bool


def run(name: str, config: LoopGuardConfig) -> Spent:
    provider = TracerProvider()
    guard = LoopGuard(config, tracer_provider=provider)
    provider.add_span_processor(LoopGuardSpanProcessor(guard, tracer_provider=provider))
    tracer = provider.get_tracer("bench.loop_savings")
    outcome = run_scenario(
        SCENARIOS[name](), guard, tracer, Timeline(io.StringIO()), DecisionFeed(guard), 0.0
    )
    provider.shutdown()
    return Spent(name, outcome.tool_calls, outcome.tokens, outcome.interrupted is not None)


def compare() -> list[tuple[Spent, Spent]]:
    """(without the guard, enforce mode) for every demo scenario."""
    return [
        (
            run(name, LoopGuardConfig(enabled=False)),
            run(name, LoopGuardConfig(mode="enforce")),
        )
        for name in SCENARIOS
    ]


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    print(f"{'scenario':<20}{'tool calls':>22}{'tokens':>26}")
    print(f"{'':<20}{'without -> enforce':>22}{'without -> enforce':>26}   stopped")
    ok = True
    for without, enforced in compare():
        print(
            f"{without.scenario:<20}{without.tool_calls:>10} -> {enforced.tool_calls:<8}"
            f"{without.tokens:>12,} -> {enforced.tokens:<10,}  {enforced.stopped}"
        )
        if without.scenario == "healthy":
            ok = ok and (without.tool_calls, without.tokens) == (
                enforced.tool_calls,
                enforced.tokens,
            )
        else:
            ok = ok and enforced.stopped and enforced.tool_calls < without.tool_calls
    print("looping runs stopped early, healthy run untouched" if ok else "UNEXPECTED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
