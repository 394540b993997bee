"""What observing a ``model.stream()`` turn costs per chunk, and that it stays flat.

Usage (needs the LangChain suite's environment, made by ``python scripts/run_tests.py langchain``)::

    .venvs/langchain/bin/python benchmarks/langchain_stream.py [--repeats 7]

One streamed turn of the LangChain suite's token-streaming scripted model
(``instrumentation/langchain/tests/agents.py``: words, then each tool call's arguments in
pieces, the usage last) is read to its end with ``model.stream(...)`` inside an
``agent_run``, uninstrumented and with the real ``LangChainInstrumentor`` (guard in
``enforce`` mode, real SDK and span processor), alternating, in one process. Two shapes, at
two sizes each: a text answer (``text``) and a tool call whose one argument is long
(``tool-args``: what a coding agent's file-writing call looks like). For each it prints
langchain's own cost per chunk, what the instrumentation adds per chunk, and the ratio.

Per-chunk cost is O(1) when the added time per chunk does not grow with the size: the
last line compares the added cost per chunk of the larger size with the smaller one
(``growth``), which a cost that grows with the answer (re-reading the answer at every
chunk) would push to about 10. Exit status 1 when the growth passes ``--max-growth``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "instrumentation" / "langchain" / "tests"))

from agents import TokenStreamingChatModel, priced_turn  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402

from otel_loopguard.engine.config import LoopGuardConfig  # noqa: E402
from otel_loopguard.guard import LoopGuard, set_guard  # noqa: E402
from otel_loopguard.processor import LoopGuardSpanProcessor  # noqa: E402

CLOCK = time.process_time
QUESTION = [HumanMessage("Write the report.")]


def text_turn(words: int) -> Any:
    return priced_turn(" ".join(["word"] * words))


def tool_args_turn(pieces: int) -> Any:
    """A ``write_file`` call whose content (14 bytes a piece) is streamed in ``pieces``."""
    content = "line of code\n" * pieces
    return priced_turn(
        finish="tool_calls",
        tool_calls=[{"name": "write_file", "args": {"content": content}, "id": "call_1"}],
    )


def _stream_once(model: Any) -> int:
    chunks = 0
    for _chunk in model.stream(QUESTION):
        chunks += 1
    return chunks


def measure(
    make_turn: Callable[[], Any], pieces: int, guard: LoopGuard, instrumentor: Any, repeats: int
) -> tuple[float, float, int]:
    """Median CPU seconds of one streamed turn: (uninstrumented, instrumented, chunks)."""
    tracer = guard.tracer()
    plain: list[float] = []
    observed: list[float] = []
    chunks = 0
    for round_index in range(repeats + 1):  # the first round warms up, not counted
        for instrumented in (False, True):
            if instrumented:
                instrumentor.instrument(tracer_provider=guard.tracer_provider)
            model = TokenStreamingChatModel(messages=iter([make_turn()]), argument_pieces=pieces)
            gc.collect()
            with guard.agent_run(tracer, "benchmark_agent"):
                began = CLOCK()
                chunks = _stream_once(model)
                spent = CLOCK() - began
            if instrumented:
                instrumentor.uninstrument()
            if round_index:
                (observed if instrumented else plain).append(spent)
    return statistics.median(plain), statistics.median(observed), chunks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--small", type=int, default=500, help="chunks of the small turn")
    parser.add_argument("--max-growth", type=float, default=3.0)
    args = parser.parse_args(argv)
    from otel_loopguard_langchain import LangChainInstrumentor

    provider = TracerProvider()
    guard = LoopGuard(LoopGuardConfig(mode="enforce"), tracer_provider=provider)
    provider.add_span_processor(LoopGuardSpanProcessor(guard, tracer_provider=provider))
    set_guard(guard)
    instrumentor = LangChainInstrumentor()

    growth_ok = True
    for shape, make in (("text", text_turn), ("tool-args", tool_args_turn)):
        added_per_chunk: list[float] = []
        for size in (args.small, args.small * 10):
            # the text turn's words are chunks (and the spaces between them)
            count = size // 2 if shape == "text" else size
            plain, observed, chunks = measure(
                lambda count=count, make=make: make(count),  # type: ignore[misc]
                count,
                guard,
                instrumentor,
                args.repeats,
            )
            base, added = plain / chunks * 1e6, (observed - plain) / chunks * 1e6
            added_per_chunk.append(added)
            print(
                f"{shape:<9} {chunks:>6} chunks: langchain {base:6.1f} us/chunk, "
                f"instrumentation adds {added:+6.1f} us/chunk, ratio {observed / plain:5.2f}"
            )
        growth = added_per_chunk[1] / added_per_chunk[0] if added_per_chunk[0] > 0 else 1.0
        print(f"{shape:<9} growth of the added cost per chunk at 10x the size: {growth:.2f}")
        growth_ok = growth_ok and growth <= args.max_growth
    return 0 if growth_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
