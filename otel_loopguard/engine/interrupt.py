"""``LoopGuardInterrupt``: how enforcement stops an agent run.

Kept out of the modules the compiled build compiles: there an exception class is native,
and its compiled ``__init__`` rejects an interpreted subclass that has another base too,
such as the llamaindex package's ``LoopGuardWorkflowInterrupt(LoopGuardInterrupt,
Exception)`` (a workflow step only fails on an ``Exception``). Users subclass it as well, so
it stays a plain Python class in both builds. Only Python code raises it (enforcement and
the framework wrappers); :mod:`otel_loopguard.engine.decisions` re-exports it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from otel_loopguard.engine.decisions import Decision


class LoopGuardInterrupt(BaseException):
    """Raised by enforcement to interrupt an agent run.

    Derives from ``BaseException`` on purpose: agent frameworks catch ``Exception`` around
    tool calls and hand it to the model as an error message, which would let the loop go on.
    """

    def __init__(self, decision: Decision, message: str | None = None) -> None:
        self.decision = decision
        # the reason first: trace UIs and logs cut a long status message, and a run id
        # (up to 50 characters) in front would leave no room for why the run was stopped
        if not message:
            run = f", run {decision.run_id}" if decision.run_id else ""
            reason = readable(decision.reason or decision.action.value)
            message = f"{reason} (stopped by otel-loopguard{run})"
        super().__init__(message)


#: a count of one before a plural noun, as detectors' messages may say it ("1 calls")
_ONE_OF_PLURAL = re.compile(
    r"(?<![\d.,])\b1 (model turns|tool calls|calls|steps|turns|tokens|seconds|cycles|periods"
    r"|repeats|occurrences|errors|failures)\b"
)
_ONE_TIMES = re.compile(r"(?<![\d.,])\b1 times\b")


def readable(text: str) -> str:
    """A decision's reason as a person reads it: ``1 calls`` is ``1 call``, ``1 times`` is
    ``once`` (a threshold or a limit of one makes detectors' counts singular)."""
    if "1 " not in text:
        return text
    text = _ONE_TIMES.sub("once", text)
    return _ONE_OF_PLURAL.sub(lambda match: "1 " + match.group(1)[:-1], text)


def counted(amount: int, noun: str) -> str:
    """``1 tool call``, ``3 tool calls``, ``12,400 tokens``."""
    return f"{amount:,} {noun}{'' if amount == 1 else 's'}"


def stop_summary(
    decision: Decision,
    *,
    agent: str | None = None,
    tool: str | None = None,
    tool_calls: int = 0,
    model_turns: int = 0,
    tokens: int = 0,
) -> str:
    """Which run a STOP ended and why, as one clause: ``run R (agent A, tool T, after 3 tool
    calls): repetition, no_progress: search called 3 times ...``. The interrupt's WARNING
    line and ``otel-loopguard serve``'s line per STOP both say it this way, so a user who
    knows one reads the other."""
    amounts = ((tool_calls, "tool call"), (model_turns, "model turn"), (tokens, "token"))
    spent = ", ".join(counted(amount, noun) for amount, noun in amounts if amount)
    return "run {} (agent {}, tool {}{}): {}: {}".format(
        decision.run_id or "-",
        agent or "-",
        tool or "-",
        f", after {spent}" if spent else "",
        ", ".join(decision.detectors) or "policy",
        readable(decision.reason or "stop"),
    )
