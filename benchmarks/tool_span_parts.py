"""Where a tool span's instructions go in the processor's hooks, part by part (callgrind).

Usage::

    python benchmarks/tool_span_parts.py [--spans N]

Issue 32 asks for a tool span at no more than 1.6x the plain SDK span in the pure-Python
build; ``span_overhead.py --instructions`` gives the ratio, this script says which parts of
our hooks the instructions are in, so what would have to go is plain. The same pre-made
``execute_tool`` spans as ``span_overhead.py``'s (inside an open ``invoke_agent`` span,
arguments differing per call) are fed to ``on_start`` and ``on_end`` of one processor, in a
child process under ``valgrind --tool=callgrind``, once with the whole path and then with
one more part taken out each time:

1. ``no events``: the span is classified and followed, but no events are made from it (no
   monitor either): the processor's and the follower's plumbing;
2. ``no monitor, no signatures``: events are made, signed with a counter instead of the
   signatures (so no canonical text, no digest), and not observed;
3. ``no monitor``: events made and signed, not observed;
4. ``no detectors``: observed by a monitor with no detectors;
5. the whole path.

Each count is that child feeding N spans less the same child feeding none (imports, making
the spans, set-up and a warm-up of 200 spans cancel), divided by N; the differences between
neighbours are the parts. The parts are taken out by replacing module functions in the
child (the names are this repository's; the script says so and stops if one moved).
Whichever build is imported is measured: for the compiled one, run it with a venv's Python
that holds the compiled wheel, from outside the checkout. The compiled modules call each
other directly, so there the events and their signatures cannot be taken out: the compiled
build's table has three rows (everything before the monitor, the monitor, the detectors).
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from callgrind import collected
from span_overhead import premade_tool_spans, processor_in_agent

from otel_loopguard import COMPILED
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import CONTINUE
from otel_loopguard.processor import LoopGuardSpanProcessor

WARM_UP = 200
#: the variants whose parts can be taken out of the compiled build (the monitor is reached
#: through the guard, an attribute of a Python object; the rest are direct C calls)
COMPILED_VARIANTS = ("no monitor", "no detectors", "whole path")
#: variant -> the parts taken out (the order of the table: each takes out one more)
VARIANTS = {
    "no events": ("events",),
    "no monitor, no signatures": ("monitor", "signatures"),
    "no monitor": ("monitor",),
    "no detectors": ("detectors",),
    "whole path": (),
}


def _take_out(processor: LoopGuardSpanProcessor, parts: tuple[str, ...]) -> None:
    import otel_loopguard.spans.events as events
    import otel_loopguard.spans.follower as follower

    for module, name in ((events, "call_signature"), (events, "output_exact_signature")):
        if not hasattr(module, name):
            raise SystemExit(f"{module.__name__}.{name} moved: update this script")
    if not hasattr(follower, "span_to_events"):
        raise SystemExit("otel_loopguard.spans.follower.span_to_events moved: update this script")
    if "events" in parts:
        follower.span_to_events = lambda *args, **kwargs: []  # type: ignore[assignment]
    if "monitor" in parts:
        processor.guard.observe = lambda event: (CONTINUE, False)  # type: ignore[method-assign]
    if "signatures" in parts:
        counter = itertools.count()

        def call_signature(tool: str, arguments: Any, max_chars: int = 0) -> tuple[str, str]:
            unique = f"{next(counter):016x}"
            return unique, unique

        def output_signature(output: Any, max_chars: int = 0) -> str:
            return f"{next(counter):016x}"

        events.call_signature = call_signature  # type: ignore[assignment]
        events.output_exact_signature = output_signature  # type: ignore[assignment]


def child(variant: str, made_count: int, spans: int) -> None:
    """Make ``WARM_UP + made_count`` tool spans (the same in both runs of a count), then
    feed ``WARM_UP`` and then ``spans`` of them to one processor's hooks."""
    provider, made, agent_span = premade_tool_spans(WARM_UP + made_count)
    parts = VARIANTS[variant]
    detectors: list[Any] | None = [] if "detectors" in parts else None
    processor = processor_in_agent(provider, agent_span, LoopGuardConfig(), detectors)
    _take_out(processor, parts)
    for span in made[: WARM_UP + spans]:
        processor.on_start(span)  # type: ignore[arg-type]
        processor.on_end(span)


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=1_000, help="tool spans counted")
    args = parser.parse_args()
    if args.spans < 1:
        print("tool_span_parts.py: --spans must be at least 1", file=sys.stderr)
        return 2
    if shutil.which("valgrind") is None:
        print("tool_span_parts.py needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    variants = [v for v in VARIANTS if not COMPILED or v in COMPILED_VARIANTS]
    jobs = [(variant, n) for variant in variants for n in (args.spans, 0)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # one process each
        counts = list(
            pool.map(
                lambda job: collected(__file__, "--child", job[0], str(args.spans), str(job[1])),
                jobs,
            )
        )
    per_span = {
        variant: (counts[2 * index] - counts[2 * index + 1]) // args.spans
        for index, variant in enumerate(variants)
    }
    print(f"otel-loopguard build: {'compiled (mypyc)' if COMPILED else 'pure Python'}")
    print(f"instructions per tool span in the processor's hooks ({args.spans} spans, callgrind)")
    names = {
        "no events": "span classes, following, processor (no events made)",
        "no monitor, no signatures": "making the call and result events, unsigned",
        "no monitor": (
            "everything before the monitor (following, events, signatures)"
            if COMPILED
            else "their signatures (canonical text, digests)"
        ),
        "no detectors": "the monitor without detectors (run, counters, pairing)",
        "whole path": "the detectors and the policy",
    }
    before = 0
    for variant, count in per_span.items():
        print(f"  {names[variant]:<64}{count - before:>10,}   (cumulative {count:,})")
        before = count
    return 0


if __name__ == "__main__":
    sys.exit(main())
