"""What the LiteLLM instrumentation adds to one model call and to one streamed chunk.

Usage (in the venv the test runner makes for the suite)::

    .venvs/litellm/bin/python benchmarks/litellm_call_overhead.py [--calls N] [--repeats K]

Drives the real ``litellm.completion`` offline with LiteLLM's own ``mock_response`` (its
request handling, response building and, for a stream, its chunk wrapper run; nothing is
sent), so the cost measured is CPU in this process. LiteLLM alone is the baseline; the
same calls with ``LiteLLMInstrumentor`` (a ``chat`` span, the pre-flight check, the
monitor, a model turn around each chunk read, on a real SDK tracer provider with the
loopguard span processor and a no-op exporter) are the subject. Both run in alternating
blocks of ``N`` calls inside one agent run, so both see the same machine load; the median
of ``K`` blocks is reported per call (thread CPU time) with the ratio and the absolute
microseconds added, once for whole answers and once for streamed ones (added per chunk).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
from guarded_pipeline import observe_mode_pipeline
from otel_loopguard_litellm import LiteLLMInstrumentor

CLOCK = getattr(time, "thread_time", time.process_time)
# LiteLLM's mock stream sends the answer in chunks of a few characters
ANSWER = " ".join(f"word{i}" for i in range(60))


def _whole(step: int) -> int:
    litellm.completion(
        model="openai/gpt-test",
        messages=[{"role": "user", "content": f"summarise ({step})"}],
        mock_response=ANSWER,
    )
    return 1


def _streamed(step: int) -> int:
    stream = litellm.completion(
        model="openai/gpt-test",
        messages=[{"role": "user", "content": f"summarise ({step})"}],
        mock_response=ANSWER,
        stream=True,
    )
    return sum(1 for _chunk in stream)


def _block(call: Callable[[int], int], calls: int) -> tuple[float, int]:
    chunks = 0
    start = CLOCK()
    for step in range(calls):
        chunks += call(step)
    return (CLOCK() - start) / calls, chunks // calls


def _compare(name: str, call: Callable[[int], int], args: Any, setup: Any) -> None:
    instrumentor, provider = setup
    plain: list[float] = []
    instrumented: list[float] = []
    chunks = 1
    _block(call, 10)  # warm up LiteLLM
    for _ in range(args.repeats):
        plain.append(_block(call, args.calls)[0])
        instrumentor.instrument(tracer_provider=provider)
        try:
            seconds, chunks = _block(call, args.calls)
            instrumented.append(seconds)
        finally:
            instrumentor.uninstrument()
    base, subject = statistics.median(plain), statistics.median(instrumented)
    print(f"{name}: LiteLLM alone          {base * 1e6:9.1f} µs CPU per call")
    print(f"{name}: LiteLLM, instrumented  {subject * 1e6:9.1f} µs CPU per call")
    print(f"{name}: added                  {(subject - base) * 1e6:9.1f} µs per call")
    if chunks > 1:
        per_chunk = (subject - base) * 1e6 / chunks
        print(f"{name}: added per chunk        {per_chunk:9.2f} µs ({chunks} chunks)")
    print(f"{name}: ratio                  {subject / base:9.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="calls per block")
    parser.add_argument("--repeats", type=int, default=7, help="blocks per side")
    args = parser.parse_args(argv)

    provider, guard = observe_mode_pipeline()
    setup = (LiteLLMInstrumentor(), provider)
    with guard.agent_run(provider.get_tracer("benchmark"), "benchmark"):
        _compare("whole   ", _whole, args, setup)
        _compare("streamed", _streamed, args, setup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
