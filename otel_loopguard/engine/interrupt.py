"""``LoopGuardInterrupt``: how enforcement stops an agent run.

Kept out of the modules the compiled build compiles: there an exception class is native,
and its compiled ``__init__`` rejects an interpreted subclass that has another base too,
such as the llamaindex package's ``LoopGuardWorkflowInterrupt(LoopGuardInterrupt,
Exception)`` (a workflow step only fails on an ``Exception``). Users subclass it as well, so
it stays a plain Python class in both builds. Only Python code raises it (enforcement and
the framework wrappers); :mod:`otel_loopguard.engine.decisions` re-exports it.
"""

from __future__ import annotations

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
            reason = decision.reason or decision.action.value
            message = f"{reason} (stopped by otel-loopguard{run})"
        super().__init__(message)
