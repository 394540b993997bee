"""Cost of a signature for small, large and huge tool arguments and outputs.

Usage::

    python benchmarks/signature_cost.py [--repeats K]

A signature must cost O(cap) (``OTEL_LOOPGUARD_SIGNATURE_MAX_CHARS``, default 200), never
O(size of the argument): an agent that passes a 10 MB file to a tool must not pay 10 MB of
hashing per call. For each shape of value (a plain string, a dict holding the string, a
JSON string as models send it, a list, a tool output) this prints the time per signature
at 100 B, 10 KB and 10 MB, side by side, and the ratios 10 KB / 100 B and 10 MB / 100 B
measured in the same run. Flat ratios (≈ 1) mean the cost does not grow with the size;
linear cost would show ratios of ~100 and ~100,000.

Each figure is the median of ``--repeats`` blocks (CPU time of this thread, so time spent
waiting for a core on a shared machine is not counted), the sizes interleaved. The values
are built before timing. 100 B is below the cap, so it is cheaper than the capped sizes;
10 MB / 10 KB (both capped) shows that nothing past the cap is read.
Exit status 1 when a 10 MB signature costs more than 10x the 100 B one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # installed package first

from otel_loopguard.engine.signatures import call_signature, output_signature

CLOCK = getattr(time, "thread_time", time.process_time)
SIZES = {"100 B": 100, "10 KB": 10_000, "10 MB": 10_000_000}
CALLS_PER_BLOCK = 200
MAX_RATIO = 10.0


def _text(size: int) -> str:
    words = "Searching pricing plans for team 42 at 2026-11-30T10:00:00Z request 8f3a91c2 "
    return (words * (size // len(words) + 1))[:size]


def _shapes(size: int) -> dict[str, tuple[Callable[[Any], Any], Any]]:
    text = _text(size)
    items = max(1, size // 10)
    document = {"path": "a.txt", "body": text}
    return {
        "string argument": (lambda v: call_signature("write_file", v), text),
        "dict argument": (lambda v: call_signature("write_file", v), document),
        "JSON string argument": (lambda v: call_signature("write_file", v), json.dumps(document)),
        "list argument": (lambda v: call_signature("insert", v), list(range(items))),
        "tool output": (output_signature, text),
    }


def _block_seconds(function: Callable[[Any], Any], value: Any) -> float:
    start = CLOCK()
    for _ in range(CALLS_PER_BLOCK):
        function(value)
    return (CLOCK() - start) / CALLS_PER_BLOCK


def _median_seconds(function: Callable[[Any], Any], value: Any, repeats: int) -> float:
    """Median time per signature over ``repeats`` blocks (also used by ``run_all.py``)."""
    return statistics.median(_block_seconds(function, value) for _ in range(repeats))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)

    shapes = {label: _shapes(size) for label, size in SIZES.items()}
    blocks: dict[str, dict[str, list[float]]] = {}
    for by_shape in shapes.values():
        for function, value in by_shape.values():
            function(value)  # warm up (regex compilation, caches)
    # sizes interleaved within each repeat, so a neighbour's burst on a shared machine
    # hits every size alike instead of skewing one column
    for _ in range(args.repeats):
        for label, by_shape in shapes.items():
            for shape, (function, value) in by_shape.items():
                timing = _block_seconds(function, value)
                blocks.setdefault(shape, {}).setdefault(label, []).append(timing)
    results = {
        shape: {label: statistics.median(times) for label, times in by_label.items()}
        for shape, by_label in blocks.items()
    }

    header = f"{'value':<22}" + "".join(f"{label:>12}" for label in SIZES)
    print(f"time per signature (median of {args.repeats} blocks of {CALLS_PER_BLOCK})")
    print(header + f"{'10KB/100B':>12}{'10MB/100B':>12}{'10MB/10KB':>12}")
    worst = 0.0
    for shape, timings in results.items():
        small = timings["100 B"]
        medium_ratio, huge_ratio = timings["10 KB"] / small, timings["10 MB"] / small
        worst = max(worst, huge_ratio)
        cells = "".join(f"{timings[label] * 1e6:>10.1f}µs" for label in SIZES)
        flat = timings["10 MB"] / timings["10 KB"]
        ratios = f"{medium_ratio:>11.2f}x{huge_ratio:>11.2f}x{flat:>11.2f}x"
        print(f"{shape:<22}{cells}{ratios}")
    verdict = "ok" if worst <= MAX_RATIO else "FAIL"
    print(f"worst 10 MB / 100 B ratio: {worst:.2f}x (target ≤ {MAX_RATIO:.0f}x): {verdict}")
    return 0 if worst <= MAX_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
