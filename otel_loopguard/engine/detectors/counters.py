"""``RunCounters``: the run-wide counts every detector and the policy read.

Part of the detector contract (:mod:`otel_loopguard.engine.detectors.base` re-exports it). A
module of its own so that the compiled build compiles it: the contract's ``Protocol``
cannot be compiled, and the counters are read on every event.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, init=False)
class RunCounters:
    """Run-wide counters the monitor maintains before detectors see an event.

    ``steps`` counts model turns (``llm_response`` events), ``tool_calls`` counts
    ``tool_call`` events. ``cost`` is ``None`` once any model's price is unknown.

    The last three fields describe the event being observed, worked out once by the monitor
    (:func:`~otel_loopguard.engine.detectors.call_tracking.pair_tool_event`) so that the detectors
    that reason about calls and their answers do not each redo it: ``call_key`` is the
    fingerprint of a ``tool_call``'s signature, or for a ``tool_result`` / ``tool_error``
    that of the call it answers (0 when no call is known); ``outcome_key`` the fingerprint
    of a result's or error's signature (0 for other events); ``failed`` whether the outcome
    is a failure (a ``tool_error``, or a result flagged as an error, e.g. MCP ``isError``);
    ``agent_key`` the key a sub-agent's tool events are counted under (0 for the run's own
    agent): ``call_key`` is already mixed with it, a detector keying on other fingerprints
    (a near-duplicate key) mixes it in itself to count per agent.
    """

    started_at: float = 0.0
    last_seen: float = 0.0
    now: float = 0.0
    events: int = 0
    steps: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = 0.0
    call_key: int = 0
    outcome_key: int = 0
    failed: bool = False
    agent_key: int = 0

    # Written out for mypyc (see Event.__init__): one per run, and runs start often
    def __init__(
        self,
        started_at: float = 0.0,
        last_seen: float = 0.0,
        now: float = 0.0,
        events: int = 0,
        steps: int = 0,
        tool_calls: int = 0,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost: float | None = 0.0,
        call_key: int = 0,
        outcome_key: int = 0,
        failed: bool = False,
        agent_key: int = 0,
    ) -> None:
        self.started_at = started_at
        self.last_seen = last_seen
        self.now = now
        self.events = events
        self.steps = steps
        self.tool_calls = tool_calls
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.cost = cost
        self.call_key = call_key
        self.outcome_key = outcome_key
        self.failed = failed
        self.agent_key = agent_key

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens
