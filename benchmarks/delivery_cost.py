"""What delivery adds to a model call when no recommendation is waiting: one test per call.

In ``enforce`` mode every model call a framework package wraps asks the run's mailbox for a
waiting recommendation (``kit/recommendations.py``). With nothing waiting in any run, that
is one truthiness test of a dict, before any run is resolved. This benchmark runs the same
model step through the kit's model-turn wrapper, inside an agent run, side by side in one
process:

- ``without delivery``: ``model_turn_wrapper(read)``, as before this feature;
- ``with delivery``: ``model_turn_wrapper(read, deliver=..., again=..., join=...)``;

and prints CPU time per call (median of repeats) and the ratio. ``--instructions`` counts
instructions per call with callgrind instead (needs valgrind), the figure the machine's
load cannot move: a child process makes N and N/6 calls of each kind, and the difference
divided by 5N/6 is the cost of one call.

    python benchmarks/delivery_cost.py [--calls 20000] [--repeats 7] [--instructions]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))


def _make(with_delivery: bool) -> Any:
    """A wrapped model step in an enforcing guard (no exporter: the kit's own cost)."""
    from otel_loopguard import LoopGuard, set_guard
    from otel_loopguard.engine.config import LoopGuardConfig
    from otel_loopguard.kit import ModelCall, model_turn_wrapper

    set_guard(LoopGuard(LoopGuardConfig(mode="enforce")))

    def read(call: ModelCall) -> dict[str, Any]:
        return {"model": "m", "finish_reason": "tool_calls", "output_tokens": 5}

    def deliver(call: ModelCall, message: str) -> bool:  # never called: nothing waits
        call.args = ([*call.args[0], message],)
        return True

    def again(call: ModelCall, detector: str) -> Any:
        return None

    hooks: dict[str, Any] = {}
    if with_delivery:
        hooks = {"deliver": deliver, "again": again, "join": lambda a, b: b}
    wrapper = model_turn_wrapper(read, package="bench", **hooks)

    def step(messages: list[str]) -> str:
        return "answer"

    return wrapper, step


def _time(with_delivery: bool, calls: int) -> float:
    """CPU seconds per call, ``calls`` model calls in one agent run."""
    from otel_loopguard import agent_run

    wrapper, step = _make(with_delivery)
    messages = ["hello"]
    with agent_run("bench"):
        started = time.process_time()
        for _ in range(calls):
            wrapper(step, None, (messages,), {})
        return (time.process_time() - started) / calls


def _child(kind: str, calls: int) -> None:
    from otel_loopguard import agent_run

    wrapper, step = _make(kind == "with")
    messages = ["hello"]
    with agent_run("bench"):
        for _ in range(calls):
            wrapper(step, None, (messages,), {})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--child", choices=("with", "without"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.calls)
        return 0
    if args.instructions:
        from callgrind import collected

        many, few = 1_200, 200
        per_call = {}
        for kind in ("without", "with"):
            big = collected(__file__, "--child", kind, "--calls", str(many))
            small = collected(__file__, "--child", kind, "--calls", str(few))
            per_call[kind] = (big - small) / (many - few)
        print(f"instructions per model call, nothing waiting (callgrind, {many} - {few} calls):")
        print(f"  without delivery  {per_call['without']:>10,.0f}")
        print(f"  with delivery     {per_call['with']:>10,.0f}")
        added = per_call["with"] - per_call["without"]
        print(
            f"  added             {added:>10,.0f}  ({per_call['with'] / per_call['without']:.3f}x)"
        )
        return 0
    _time(False, 500)  # warm up imports and caches
    _time(True, 500)
    without, with_ = [], []
    for _ in range(args.repeats):  # interleaved, so drift in the machine hits both alike
        without.append(_time(False, args.calls))
        with_.append(_time(True, args.calls))
    a, b = statistics.median(without), statistics.median(with_)
    print("model calls through the kit's model-turn wrapper, enforce mode, nothing waiting")
    print(f"  ({args.calls:,} calls x {args.repeats} repeats, CPU time, medians)")
    print(f"  without delivery  {a * 1e6:8.2f} us/call")
    print(f"  with delivery     {b * 1e6:8.2f} us/call")
    print(f"  ratio             {b / a:8.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
