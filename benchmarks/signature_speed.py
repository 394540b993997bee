"""Cost of a signature on typical tool spans: this checkout vs the pre-optimisation code.

Usage::

    python benchmarks/signature_speed.py [--repeats K] [--inputs N] [--baseline REV]

Every tool span pays one :func:`call_signature` and one :func:`output_signature`, on the
host's hot path (span processor) and per span in ``otel-loopguard analyze``. This times
both on the shapes tool spans carry: arguments as the JSON string a model sends and as the
dict an instrumentation decodes, short outputs as text, JSON text and decoded JSON.

The baseline is ``otel_loopguard/engine/signatures.py`` at ``--baseline`` (default: the commit
before the speed work), read with ``git show`` and loaded as a private module in this
process, so both versions are timed side by side on the same inputs, on the same core, in
blocks that alternate. Each shape has ``--inputs`` distinct values (the numbers in them
differ, as in a healthy agent that does not repeat itself), each block signs all of them
once, and a figure is the median over ``--repeats`` blocks of the CPU time of this thread
per signature (time spent waiting for a core on a shared machine is not counted).

Before timing, every input is signed by both versions and the results must be equal: the
signatures are written into exported traces and compared with fresh ones on replay.
Exit status 1 when they differ or a target shape is less than 2x faster, 2 without the
git history (the baseline is read from it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from otel_loopguard.engine import signatures as current  # noqa: E402

CLOCK = getattr(time, "thread_time", time.process_time)
BASELINE = "605550e"  # main before the signature speed work
TARGET_SPEEDUP = 2.0


#: where the module lived: ``engine/`` since the package was split into rooms
MODULE_PATHS = ("otel_loopguard/engine/signatures.py", "otel_loopguard/signatures.py")


def git_source(revision: str) -> str:
    """The signatures module's source as of ``revision``, wherever it lived then."""
    for path in MODULE_PATHS:
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{revision}:{path}"],
            capture_output=True,
            text=True,
        )
        if shown.returncode == 0:
            return shown.stdout
    raise subprocess.CalledProcessError(128, ["git", "show", revision])


def load_baseline(revision: str) -> ModuleType:
    """``otel_loopguard/engine/signatures.py`` as of ``revision``, as a module of its own."""
    source = git_source(revision)
    spec = importlib.util.spec_from_loader("baseline_signatures", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclass-free, but annotations resolve through it
    exec(
        compile(source, f"{revision}:otel_loopguard/engine/signatures.py", "exec"), module.__dict__
    )
    return module


# (label, is a target, signature kind, input maker): the first five are what the speed
# target is about; the others show the paths that do more work
Shape = tuple[str, bool, str, Callable[[int], Any]]
SHAPES: list[Shape] = [
    ("call, JSON string", True, "call", lambda i: json.dumps({"query": f"topic {i}", "page": 1})),
    ("call, dict", True, "call", lambda i: {"query": f"topic {i}", "page": 1}),
    ("output, text", True, "output", lambda i: f"{i % 7} results for topic {i}"),
    ("output, 'no results'", True, "output", lambda i: "no results"),
    ("output, JSON string", True, "output", lambda i: json.dumps({"status": "ok", "count": i})),
    ("output, decoded JSON", False, "output", lambda i: {"status": "ok", "count": i}),
    (
        "call, capitalised text",
        False,
        "call",
        lambda i: {"query": f"Pricing Plans for Team {i}", "filters": {"lang": "en"}},
    ),
    ("output, a long number", False, "output", lambda i: f"result {i * 7919 + 10**14}"),
    (
        "output, with an id",
        False,
        "output",
        lambda i: f"no results (request {i:08x}) at 2026-11-30T10:00:{i % 60:02d}Z",
    ),
]


def signer(module: ModuleType, kind: str) -> Callable[[Any], tuple[str, str]]:
    if kind == "call":
        call_signature = module.call_signature
        return lambda value: call_signature("search", value)
    output_signature: Callable[[Any], tuple[str, str]] = module.output_signature
    return output_signature


def block_seconds(sign: Callable[[Any], Any], values: list[Any]) -> float:
    start = CLOCK()
    for value in values:
        sign(value)
    return (CLOCK() - start) / len(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--inputs", type=int, default=1_000)
    parser.add_argument("--baseline", default=BASELINE, help="git revision of the baseline")
    args = parser.parse_args(argv)

    try:
        baseline = load_baseline(args.baseline)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"cannot read the baseline from git ({args.baseline}): {exc}; run in a clone")
        return 2
    rows = []
    for label, target, kind, make in SHAPES:
        values = [make(i) for i in range(args.inputs)]
        new, old = signer(current, kind), signer(baseline, kind)
        differing = [value for value in values if new(value) != old(value)]
        if differing:
            print(f"{label}: signatures differ from the baseline, e.g. for {differing[0]!r}")
            return 1
        old_times, new_times = [], []
        for _ in range(args.repeats):
            old_times.append(block_seconds(old, values))
            new_times.append(block_seconds(new, values))
        rows.append((label, target, statistics.median(old_times), statistics.median(new_times)))

    print(
        f"time per signature, median of {args.repeats} blocks of {args.inputs} distinct inputs "
        f"(baseline: {args.baseline})"
    )
    print(f"{'input':<26}{'baseline':>11}{'now':>11}{'speed-up':>10}")
    worst = float("inf")
    for label, target, old_time, new_time in rows:
        speedup = old_time / new_time
        if target:
            worst = min(worst, speedup)
        mark = "" if target else "  (not a target)"
        print(f"{label:<26}{old_time * 1e6:>9.2f}µs{new_time * 1e6:>9.2f}µs{speedup:>9.2f}x{mark}")
    verdict = "ok" if worst >= TARGET_SPEEDUP else "FAIL"
    print(f"slowest target speed-up: {worst:.2f}x (target ≥ {TARGET_SPEEDUP:.0f}x): {verdict}")
    return 0 if worst >= TARGET_SPEEDUP else 1


if __name__ == "__main__":
    raise SystemExit(main())
