"""A looping LangGraph agent: tool calls and tokens, guard in enforce mode vs without.

Usage (needs the LangChain suite's environment, made by ``python scripts/run_tests.py langchain``)::

    .venvs/langchain/bin/python benchmarks/langchain_loop.py [--turns 30]

The agent is the LangChain suite's own ReAct ``StateGraph`` (model node, ``ToolNode``, back
to the model; ``instrumentation/langchain/tests/agents.py``) driven by langchain-core's
``GenericFakeChatModel``: a model that asks for the same search again and again, ignoring
the empty result, and gives up after ``--turns`` calls. Each scripted model turn reports
token usage that grows with the context, as a real agent's prompt does. Run twice through
the real ``LangChainInstrumentor``, SDK and span processor: with the guard disabled and in
``enforce`` mode. Prints one line per set-up (model turns, tool executions, tokens) and the
ratio; ``run_all.py`` shows it as a row when this environment exists.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "instrumentation" / "langchain" / "tests"))

from agents import ToolCounter, build_react_graph, looping_script  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402

from otel_loopguard.engine.config import LoopGuardConfig  # noqa: E402
from otel_loopguard.engine.decisions import LoopGuardInterrupt  # noqa: E402
from otel_loopguard.guard import LoopGuard, set_guard  # noqa: E402
from otel_loopguard.processor import LoopGuardSpanProcessor  # noqa: E402


def _with_usage(script: Iterator[Any], spent: dict[str, int]) -> Iterator[Any]:
    """The scripted turns, each reporting usage; counts what was actually generated."""
    for index, message in enumerate(script):
        usage = {"input_tokens": 1_400 + 380 * index, "output_tokens": 90}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        message.usage_metadata = usage
        spent["turns"] += 1
        spent["tokens"] += usage["total_tokens"]
        yield message


def run(enabled: bool, turns: int, provider: TracerProvider) -> dict[str, Any]:
    guard = LoopGuard(LoopGuardConfig(mode="enforce", enabled=enabled), tracer_provider=provider)
    processor = LoopGuardSpanProcessor(guard)
    provider.add_span_processor(processor)
    previous = set_guard(guard)
    counter = ToolCounter()
    spent = {"turns": 0, "tokens": 0}
    graph = build_react_graph(_with_usage(looping_script(give_up_after=turns), spent), counter)
    stopped = False
    try:
        graph.invoke(
            {"messages": [("user", "What does the Pro plan cost?")]},
            {"recursion_limit": 4 * turns + 10},
        )
    except LoopGuardInterrupt:
        stopped = True
    finally:
        set_guard(previous)
        processor.enabled = False  # a provider cannot drop a processor: switch it off
    return {"turns": spent["turns"], "tool_calls": counter["search"], **spent, "stopped": stopped}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30, help="calls before the model gives up")
    parser.add_argument("--json", action="store_true", help="one JSON line for run_all.py")
    args = parser.parse_args(argv)
    from otel_loopguard_langchain import LangChainInstrumentor

    provider = TracerProvider()
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        without = run(False, args.turns, provider)
        enforced = run(True, args.turns, provider)
    finally:
        instrumentor.uninstrument()
    if args.json:
        print(json.dumps({"without": without, "enforce": enforced}))
    else:
        for label, spent in (("without the guard", without), ("enforce mode", enforced)):
            print(
                f"{label:<18} {spent['turns']:>3} model turns, {spent['tool_calls']:>3} tool "
                f"executions, {spent['tokens']:>8,} tokens, stopped: {spent['stopped']}"
            )
        print(f"tokens ratio {enforced['tokens'] / without['tokens']:.2f}")
    ok = enforced["stopped"] and enforced["tool_calls"] < without["tool_calls"]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
