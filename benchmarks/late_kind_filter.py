"""What the processor's look for late-kind spans costs a span that is not GenAI.

OpenInference's LangChain and LlamaIndex tracers start their spans with no attribute at all
and say what a span is only when it ends; the processor's filter therefore looks at the
instrumentation scope of a span that starts with no attribute (``processor.py``,
``Dialect.late_kind_scopes``). This measures that look where it costs most, on spans that
are not GenAI: a whole span (start and end, the real SDK with the processor) with no
attribute, and one with HTTP attributes, each beside the same processor with the look taken
out (its source, that block removed, compiled in this run), alternating rounds.

Run: ``python benchmarks/late_kind_filter.py [--spans N] [--rounds R]``. Prints medians
(thread CPU time per span) and the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time
import types
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider

import otel_loopguard.processor as processor
from otel_loopguard.guard import LoopGuard

_LOOK = """                if not attributes:  # it may say what it is only at its end (one look)
                    scope = getattr(span, "_instrumentation_scope", None)
                    if scope is not None and scope.name in LATE_KIND_SCOPES:
                        self._start_late(span, name)
"""


def _without_the_look() -> Any:
    source = Path(processor.__file__).read_text(encoding="utf-8")
    if _LOOK not in source:
        raise SystemExit("processor.py's late-kind look has changed: update this benchmark")
    module = types.ModuleType("processor_without_the_look")
    module.__file__ = processor.__file__
    exec(compile(source.replace(_LOOK, ""), module.__file__, "exec"), module.__dict__)
    return module.LoopGuardSpanProcessor


def _tracer(processor_class: Any) -> Any:
    provider = TracerProvider()
    provider.add_span_processor(processor_class(LoopGuard(), tracer_provider=provider))
    return provider.get_tracer("application")


def _per_span(tracer: Any, spans: int, attributes: dict[str, str] | None) -> float:
    start = time.thread_time_ns()
    for _ in range(spans):
        tracer.start_span("handle_request", attributes=attributes).end()
    return (time.thread_time_ns() - start) / spans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    with_look = _tracer(processor.LoopGuardSpanProcessor)
    without = _tracer(_without_the_look())
    for label, attributes in (
        ("span with no attribute", None),
        ("span with HTTP attributes", {"http.request.method": "GET", "url.path": "/x"}),
    ):
        ours, base = [], []
        for _ in range(args.rounds):
            ours.append(_per_span(with_look, args.spans, attributes))
            base.append(_per_span(without, args.spans, attributes))
        a, b = statistics.median(ours), statistics.median(base)
        print(f"{label}: {a:.0f} ns with the look, {b:.0f} ns without: {a / b:.3f}x")


if __name__ == "__main__":
    main()
