"""The labelling rules: which published runs are loops, from which tool call, and which
are clean. Written from the trajectories alone, never from the loop guard's detectors or
decisions, so the corpus measures the guard instead of agreeing with it.

A *call* is (tool name, arguments as canonical JSON, output text), compared exactly.
τ-bench's ``think`` tool is left out of the sequence: it only records the model's
thought, changes nothing and returns nothing, so it cannot be progress.

* **Loop** (rule ``repeated-block``): a block of 1, 2 or 3 consecutive calls occurs three
  times in a row, identical each time (the same tools, the same arguments, the same
  outputs): the agent did the same thing three times and learnt nothing new. The loop is
  labelled from the first call of the block's second occurrence (the first call that
  repeated the block); the run is a loop only once the third occurrence is complete.
* **Clean**: the run succeeded (SWE-bench instance resolved, τ-bench reward 1.0, SWE-agent
  run submitted) and no block repeats as above.
* Any other run (failed, no loop by the rule) is not labelled and not in the sample: its
  right answer is not known from the data.

Edit → test → edit → test with distinct edits is not a loop by this rule (the edits
differ), nor is reading the same file again after editing it (the output differs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sources import ToolCall, Trajectory

#: tools that record a thought and nothing else (τ-bench)
NO_EFFECT_TOOLS = frozenset({"think"})
MAX_PERIOD = 3
REPEATS = 3


@dataclass(frozen=True)
class Verdict:
    loop: bool
    #: 1-based, counting every tool call of the run (the ones left out too), as
    #: ``otel-loopguard analyze`` numbers them
    from_tool_call: int | None = None
    rule: str = ""


def canonical(call: ToolCall) -> tuple[str, str, str]:
    return (call.name, json.dumps(call.arguments, sort_keys=True), call.output)


def loop_start(trajectory: Trajectory) -> tuple[int, int] | None:
    """(1-based tool call where the loop begins, period) of the earliest repeated block."""
    indexed = [
        (number, canonical(call))
        for number, call in enumerate(trajectory.tool_calls, 1)
        if call.name not in NO_EFFECT_TOOLS
    ]
    calls = [call for _, call in indexed]
    best: tuple[int, int, int] | None = None  # (completed at, starts at, period)
    for period in range(1, MAX_PERIOD + 1):
        span = period * REPEATS
        for end in range(span, len(calls) + 1):
            window = calls[end - span : end]
            block = window[:period]
            if all(window[i] == block[i % period] for i in range(span)):
                if period > 1 and len(set(block)) == 1:
                    break  # the same call repeated: period 1 says it already
                start = indexed[end - span + period][0]
                completed = indexed[end - 1][0]
                if best is None or completed < best[0]:
                    best = (completed, start, period)
                break
    return None if best is None else (best[1], best[2])


def judge(trajectory: Trajectory) -> Verdict | None:
    """The label of a run, or ``None`` when the rules give none (failed, no loop)."""
    found = loop_start(trajectory)
    if found is not None:
        start, period = found
        return Verdict(True, start, f"repeated-block (period {period}, three times)")
    if trajectory.success:
        return Verdict(False, None, "clean (succeeded, no repeated block)")
    return None
