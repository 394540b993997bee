"""Cost of a signature for small, large and huge values, and of a typical call vs before.

Usage::

    python benchmarks/signature_cost.py [--repeats K] [--baseline REV]

Two tables, both measured in this run:

1. **Size.** A signature's readable prefix is capped (``OTEL_LOOPGUARD_SIGNATURE_MAX_CHARS``,
   default 200), and a longer string carries a hash of the whole value (up to 1 M
   characters, then its first and last 512 K and its length: issue 18, point 1), so a
   cost that grows with the size is expected, up to a bound: an agent that passes a 10 MB
   file to a tool must pay a few milliseconds, not 10 MB of canonicalisation. For each
   shape of value (a plain string, a dict holding the string, a JSON string as models send
   it, a list, a tool output) this prints the time per signature at 100 B, 10 KB and
   10 MB and the ratios between them.
2. **Typical calls vs before.** The shapes tool spans usually carry (``signature_speed.py``'s
   targets: short JSON-string and dict arguments, short text and JSON outputs), signed by
   this checkout and by ``otel_loopguard/engine/signatures.py`` as of ``--baseline``
   (default: the commit before the issue-18 change), loaded from git as a module of its
   own and timed side by side in alternating blocks.

Each figure is the median of ``--repeats`` blocks (CPU time of this thread, so time spent
waiting for a core on a shared machine is not counted). The values are built before timing.
Exit status 1 when a 10 MB signature costs more than :data:`MAX_HUGE_MS` or a typical shape
more than :data:`MAX_TYPICAL_RATIO` times the baseline's; 2 without the git history.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # installed package first

sys.path.insert(0, str(Path(__file__).resolve().parent))  # signature_speed, beside us

from signature_speed import SHAPES, load_baseline, signer

from otel_loopguard.engine import signatures as current
from otel_loopguard.engine.signatures import call_signature, output_signature

CLOCK = getattr(time, "thread_time", time.process_time)
SIZES = {"100 B": 100, "10 KB": 10_000, "10 MB": 10_000_000}
CALLS_PER_BLOCK = 200
HUGE_CALLS_PER_BLOCK = 5  # 10 MB values cost milliseconds: fewer per block
MAX_HUGE_MS = 5.0  # "at most a few ms" for a 10 MB value
MAX_TYPICAL_RATIO = 1.2  # a typical call's cost vs the baseline's
BASELINE = "4b32e46"  # main before issue 18's signature change (whole-value digests)
TYPICAL_INPUTS = 500


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


def _block_seconds(
    function: Callable[[Any], Any], value: Any, calls: int = CALLS_PER_BLOCK
) -> float:
    start = CLOCK()
    for _ in range(calls):
        function(value)
    return (CLOCK() - start) / calls


def _median_seconds(function: Callable[[Any], Any], value: Any, repeats: int) -> float:
    """Median time per signature over ``repeats`` blocks (also used by ``run_all.py``)."""
    return statistics.median(_block_seconds(function, value) for _ in range(repeats))


def _values_seconds(sign: Callable[[Any], Any], values: list[Any]) -> float:
    start = CLOCK()
    for value in values:
        sign(value)
    return (CLOCK() - start) / len(values)


def typical_rows(baseline: Any, repeats: int) -> list[tuple[str, float, float]]:
    """(shape, baseline seconds, current seconds) for signature_speed's target shapes."""
    rows = []
    for label, target, kind, make in SHAPES:
        if not target:
            continue
        values = [make(i) for i in range(TYPICAL_INPUTS)]
        old, new = signer(baseline, kind), signer(current, kind)
        old_times, new_times = [], []
        for _ in range(repeats):
            old_times.append(_values_seconds(old, values))
            new_times.append(_values_seconds(new, values))
        rows.append((label, statistics.median(old_times), statistics.median(new_times)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--baseline", default=BASELINE, help="git revision of the baseline")
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
            calls = HUGE_CALLS_PER_BLOCK if SIZES[label] >= 1_000_000 else CALLS_PER_BLOCK
            for shape, (function, value) in by_shape.items():
                timing = _block_seconds(function, value, calls)
                blocks.setdefault(shape, {}).setdefault(label, []).append(timing)
    results = {
        shape: {label: statistics.median(times) for label, times in by_label.items()}
        for shape, by_label in blocks.items()
    }

    header = f"{'value':<22}" + "".join(f"{label:>12}" for label in SIZES)
    print(f"time per signature (median of {args.repeats} blocks)")
    print(header + f"{'10KB/100B':>12}{'10MB/100B':>12}{'10MB/10KB':>12}")
    worst_huge = 0.0
    for shape, timings in results.items():
        small = timings["100 B"]
        medium_ratio, huge_ratio = timings["10 KB"] / small, timings["10 MB"] / small
        worst_huge = max(worst_huge, timings["10 MB"])
        cells = "".join(f"{timings[label] * 1e6:>10.1f}µs" for label in SIZES)
        flat = timings["10 MB"] / timings["10 KB"]
        ratios = f"{medium_ratio:>11.2f}x{huge_ratio:>11.2f}x{flat:>11.2f}x"
        print(f"{shape:<22}{cells}{ratios}")
    huge_ok = worst_huge * 1e3 <= MAX_HUGE_MS
    print(
        f"slowest 10 MB signature: {worst_huge * 1e3:.2f} ms (target ≤ {MAX_HUGE_MS:.0f} ms): "
        f"{'ok' if huge_ok else 'FAIL'}"
    )

    try:
        baseline = load_baseline(args.baseline)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"cannot read the baseline from git ({args.baseline}): {exc}; run in a clone")
        return 2
    rows = typical_rows(baseline, args.repeats)
    print()
    print(
        f"typical values, median of {args.repeats} blocks of {TYPICAL_INPUTS} distinct inputs "
        f"(baseline: {args.baseline})"
    )
    print(f"{'input':<26}{'baseline':>11}{'now':>11}{'now/base':>10}")
    worst_ratio = 0.0
    for label, old_time, new_time in rows:
        ratio = new_time / old_time
        worst_ratio = max(worst_ratio, ratio)
        print(f"{label:<26}{old_time * 1e6:>9.2f}µs{new_time * 1e6:>9.2f}µs{ratio:>9.2f}x")
    typical_ok = worst_ratio <= MAX_TYPICAL_RATIO
    print(
        f"worst typical now / baseline: {worst_ratio:.2f}x (target ≤ {MAX_TYPICAL_RATIO}x): "
        f"{'ok' if typical_ok else 'FAIL'}"
    )
    return 0 if huge_ok and typical_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
