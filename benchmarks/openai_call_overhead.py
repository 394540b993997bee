"""What the OpenAI instrumentation adds to one model call, next to the SDK's own cost.

Usage (in a venv with ``openai`` and both packages, e.g. the one the test runner makes)::

    .venvs/openai/bin/python benchmarks/openai_call_overhead.py [--calls N] [--repeats K]

Drives the real SDK (request building, parsing) against an in-process ``httpx2``
transport that answers at once (a productive run: a different tool call each turn), so the measured
cost is CPU in this process: the SDK alone
is the baseline, the same calls with ``OpenAIInstrumentor`` (a ``chat`` span, the
pre-flight check, the monitor, on a real SDK tracer provider with the loopguard span
processor and a no-op exporter) the subject. Both run in alternating blocks of ``N`` calls
inside one agent run, so both see the same machine load; the median of ``K`` blocks is
reported per call (thread CPU time), with the ratio and the absolute microseconds added.
A real request spends tens of milliseconds on the network; the added microseconds are
what matters, the ratio shows they stay a small multiple of the SDK's own parsing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import httpx2
import openai

sys.path.append(str(Path(__file__).resolve().parent.parent))  # installed package first

from guarded_pipeline import observe_mode_pipeline
from otel_loopguard_openai import OpenAIInstrumentor

CLOCK = getattr(time, "thread_time", time.process_time)


def _client() -> openai.OpenAI:
    turn = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "search", "arguments": '{"query": "pricing"}'},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132},
    }
    calls = iter(range(10**9))

    def answer(request: httpx2.Request) -> httpx2.Response:
        # a productive run: each turn asks for a different search, as most turns do
        call = turn["choices"][0]["message"]["tool_calls"][0]  # type: ignore[index]
        call["function"]["arguments"] = json.dumps({"query": f"pricing {next(calls)}"})
        return httpx2.Response(
            200, content=json.dumps(turn).encode(), headers={"content-type": "application/json"}
        )

    return openai.OpenAI(
        api_key="k",
        base_url="http://llm.test/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(answer)),
        max_retries=0,
    )


def _block(client: openai.OpenAI, calls: int, step: int) -> float:
    messages = [{"role": "user", "content": f"find the pricing page ({step})"}]
    start = CLOCK()
    for _ in range(calls):
        client.chat.completions.create(model="gpt-test", messages=messages)
    return (CLOCK() - start) / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per block")
    parser.add_argument("--repeats", type=int, default=9, help="blocks per side")
    args = parser.parse_args(argv)

    provider, guard = observe_mode_pipeline()
    instrumentor = OpenAIInstrumentor()
    client = _client()
    tracer = provider.get_tracer("benchmark")

    plain: list[float] = []
    instrumented: list[float] = []
    with guard.agent_run(tracer, "benchmark"):
        _block(client, 20, 0)  # warm up the SDK
        for step in range(args.repeats):
            plain.append(_block(client, args.calls, step))
            instrumentor.instrument(tracer_provider=provider)
            try:
                instrumented.append(_block(client, args.calls, step))
            finally:
                instrumentor.uninstrument()

    base, subject = statistics.median(plain), statistics.median(instrumented)
    print(f"SDK call alone            {base * 1e6:9.1f} µs CPU per call")
    print(f"SDK call, instrumented    {subject * 1e6:9.1f} µs CPU per call")
    print(f"added                     {(subject - base) * 1e6:9.1f} µs per call")
    print(f"ratio                     {subject / base:9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
