"""What our framework instrumentation adds to one tool call or one model call.

Usage (each framework in its own test venv, made by ``python scripts/run_tests.py NAME``)::

    .venvs/langchain/bin/python benchmarks/framework_overhead.py langchain
    .venvs/llamaindex/bin/python benchmarks/framework_overhead.py llamaindex
    .venvs/anthropic/bin/python benchmarks/framework_overhead.py anthropic

Measures, in one process, the same operation uninstrumented (the baseline) and
instrumented (``enforce`` mode: execute_tool / chat span, gate, monitor, span processor),
alternating blocks of calls so both see the same machine load:

* ``langchain``: ``tool.invoke(...)`` of a trivial ``@tool``;
* ``llamaindex``: ``FunctionTool.call(...)`` of a trivial function tool;
* ``anthropic``: ``client.messages.create(...)`` through the real SDK over an in-process
  ``httpx2.MockTransport`` (no network here), SDK tracing off, so our chat span is made.

Each call has distinct arguments and runs in one long agent run, as an agent's calls do
(a stopped run would skip its detectors). Three series, in alternating blocks so they see
the same machine load: the framework alone; the framework with our wrappers in front of a
do-nothing guard (a measurement device standing in for the core: what the wrapper code
itself costs); and the full instrumentation (wrapper, span, gate, monitor, processor).
Prints the median CPU time per call (``time.thread_time``, over blocks), what each adds and
the ratio. A real tool or model call takes milliseconds to seconds: the added time is what
matters; on this project's 2-core shared machine it is a few hundred microseconds, most of
it the OpenTelemetry SDK span and the core gate (for ``anthropic`` our chat span is made by
the wrapper itself). Exit status 1 when the full instrumentation adds more than
``--max-added-us`` (default 1000) per call.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.guard import LoopGuard, set_guard
from otel_loopguard.processor import LoopGuardSpanProcessor

CLOCK = getattr(time, "thread_time", time.process_time)


class _NullCall:
    span = None

    def __enter__(self) -> _NullCall:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def set_result(self, result: Any) -> None:
        return None

    def set_error(self, *args: Any, **kwargs: Any) -> None:
        return None


class NullGuard:
    """Answers the guard calls our wrappers make and does nothing: isolates the wrappers."""

    def __init__(self, guard: LoopGuard) -> None:
        self.config = guard.config
        self.telemetry = guard.telemetry

    def tool_call(self, *args: Any, **kwargs: Any) -> _NullCall:
        return _NullCall()

    def agent_run(self, *args: Any, **kwargs: Any) -> _NullCall:
        return _NullCall()

    def resolve_run(self, span: Any = None) -> Any:
        return _RUN

    def preflight_llm(self, **kwargs: Any) -> None:
        return None

    def observe_llm_response(self, **kwargs: Any) -> None:
        return None

    def observe_handoff(self, *args: Any, **kwargs: Any) -> None:
        return None

    def mark_managed(self, span: Any) -> None:
        return None


class _Run:
    run_id = "benchmark"


_RUN = _Run()


def langchain_case() -> tuple[Any, Callable[[int], Any]]:
    from langchain_core.tools import tool
    from otel_loopguard_langchain import LangChainInstrumentor

    @tool
    def lookup(topic: str) -> str:
        """Look up a topic."""
        return f"facts about {topic}"

    return LangChainInstrumentor(), lambda i: lookup.invoke({"topic": f"topic {i}"})


def llamaindex_case() -> tuple[Any, Callable[[int], Any]]:
    from llama_index.core.tools import FunctionTool
    from otel_loopguard_llamaindex import LlamaIndexInstrumentor

    def lookup(topic: str) -> str:
        """Look up a topic."""
        return f"facts about {topic}"

    tool = FunctionTool.from_defaults(fn=lookup)
    return LlamaIndexInstrumentor(), lambda i: tool.call(topic=f"topic {i}")


def anthropic_case() -> tuple[Any, Callable[[int], Any]]:
    import anthropic
    import httpx2
    from otel_loopguard_anthropic import AnthropicInstrumentor

    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": [{"type": "text", "text": "Twenty euros."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }
    client = anthropic.Anthropic(
        api_key="benchmark",
        http_client=httpx2.Client(
            transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json=body))
        ),
        open_telemetry=False,
        max_retries=0,
    )

    def call(i: int) -> Any:
        return client.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=64,
            messages=[{"role": "user", "content": f"question {i}"}],
        )

    return AnthropicInstrumentor(), call


CASES = {"langchain": langchain_case, "llamaindex": llamaindex_case, "anthropic": anthropic_case}


def block_time(call: Callable[[int], Any], start: int, size: int) -> float:
    gc.collect()  # each block starts from the same heap state
    began = CLOCK()
    for i in range(start, start + size):
        call(i)
    return (CLOCK() - began) / size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=sorted(CASES))
    parser.add_argument("--blocks", type=int, default=21)
    parser.add_argument("--block-size", type=int, default=200)
    parser.add_argument("--max-added-us", type=float, default=1000.0)
    args = parser.parse_args(argv)

    provider = TracerProvider()
    trace.set_tracer_provider(provider)
    guard = LoopGuard(LoopGuardConfig(mode="enforce"), tracer_provider=provider)
    set_guard(guard)
    provider.add_span_processor(LoopGuardSpanProcessor(guard, tracer_provider=provider))
    instrumentor, call = CASES[args.framework]()
    tracer = provider.get_tracer("benchmark")

    null_guard = NullGuard(guard)
    plain: list[float] = []
    wrapper_only: list[float] = []
    full: list[float] = []
    index = 0
    with guard.agent_run(tracer, "benchmark_agent"):
        for _ in range(2):  # warm both paths (imports, caches) before measuring
            block_time(call, index, args.block_size)
            index += args.block_size
        for _ in range(args.blocks):
            plain.append(block_time(call, index, args.block_size))
            index += args.block_size
            instrumentor.instrument(tracer_provider=provider)
            set_guard(null_guard)  # type: ignore[arg-type]
            wrapper_only.append(block_time(call, index, args.block_size))
            index += args.block_size
            set_guard(guard)
            full.append(block_time(call, index, args.block_size))
            index += args.block_size
            instrumentor.uninstrument()

    base = statistics.median(plain) * 1e6
    wrapper = statistics.median(wrapper_only) * 1e6 - base
    ours = statistics.median(full) * 1e6
    print(f"{args.framework}: {len(plain) * args.block_size} calls per series")
    print(f"  uninstrumented             {base:9.1f} us/call (CPU)")
    print(f"  wrappers, do-nothing guard {wrapper:+9.1f} us/call")
    print(f"  full instrumentation adds  {ours - base:9.1f} us/call   ratio {ours / base:5.2f}")
    if ours - base > args.max_added_us:
        print(f"  FAIL: the instrumentation adds more than {args.max_added_us:g} us per call")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
