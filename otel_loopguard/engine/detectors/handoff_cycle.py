"""Handoff cycle: agents handing a task around in a closed circle, again and again.

``handoff`` events (``actor`` → ``target_agent``) are chained while each handoff starts
where the previous one ended. When a handoff leads back to an agent already on the chain,
the circle from that agent to here is a *closed cycle* (A → B → A, A → B → C → A); the chain
is cut back to that agent and the cycle, in a rotation-independent form, is counted. The
signal fires when the same closed cycle has occurred ``handoff_cycle_threshold`` (2) times.

Agents are matched by :func:`agent_key` (``billing-agent`` and the ``billing_agent`` of a
``transfer_to_billing_agent`` tool are one agent) but named as the agent names itself: the
spelling seen as a handoff's ``actor`` wins over the one a handoff tool derived from its
own name, so the signal says ``billing-agent → triage-agent``.

One-way repeated handoffs (A → B, A → B, A → B: the task never comes back through a
handoff) never close a cycle: each starts a new chain. A handoff to oneself is ignored.
The chain keeps at most :data:`MAX_CHAIN` agents and the counts at most
:data:`MAX_CYCLES` distinct cycles.

Delegations (kind ``delegation``): a delegation tool (``OTEL_LOOPGUARD_DELEGATION_TOOLS``,
CrewAI's "Delegate work to coworker" / "Ask question to coworker") hands a task to a
coworker and returns its answer: manager → coworker → manager, a closed circle every time,
so delegations never feed the chain above (asking the same coworker twice is no loop).
Their handoff events (``details["delegation"]``) carry the answer's signature instead, and
the loop is the answers: a delegation whose answer the same manager already got from an
earlier delegation (from any coworker; the task may be reworded, it usually is) brings
nothing new. ``delegation_repeat_threshold`` (2) such delegations in a row, with no new
answer in between, fire ``delegation`` (the policy: replan, with a recommendation for the
manager; the ladder stops a manager that goes on after it); twice as many fire
``delegation_persistent`` (stop). An acknowledgement (``details["answer_words"]`` under
``delegation_ack_words`` (4) content words: "Done.", ``{"success": true}``) is neither new
nor the same: distinct work answered alike is no loop.
At most :data:`MAX_ANSWERS` answers are remembered per run.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.call_tracking import (
    bump,
    growing_score,
    table_from_json,
    table_to_json,
)
from otel_loopguard.engine.events import Event, EventKind

_NON_WORD = re.compile(r"[^0-9a-z]+")


def agent_key(name: str) -> str:
    """One key for an agent however a framework spells it: a handoff tool names
    "Billing Agent" as ``transfer_to_billing_agent``, so case and separators are folded."""
    return _NON_WORD.sub("_", name[:_NAME_CAP].lower()).strip("_")


MAX_CHAIN = 16
MAX_CYCLES = 64
MAX_ANSWERS = 64
MAX_STREAK_AGENTS = 8
_NAME_CAP = 128


def _canonical_cycle(agents: list[str]) -> str:
    """Same cycle whichever agent it is seen from: rotated to start at the smallest name."""
    start = agents.index(min(agents))
    return " → ".join(agents[start:] + agents[:start])


# Enum members as module constants for the per-event comparisons (see call_tracking).
_HANDOFF = EventKind.HANDOFF


class HandoffCycleState:
    __slots__ = ("answers", "chain", "cycles", "names", "stale", "stale_agents")

    def __init__(self) -> None:
        self.chain: list[str] = []
        self.cycles: dict[str, int] = {}  # canonical cycle -> closures, LRU
        # agent key -> the name to show: as the agent itself is named (an actor), else as
        # a handoff named its target; kept for the agents on the chain only
        self.names: dict[str, str] = {}
        # delegations: "manager|answer signature" -> times given, LRU
        self.answers: dict[str, int] = {}
        # delegations in a row whose answer was already given, and their coworkers
        self.stale = 0
        self.stale_agents: list[str] = []


@mypyc_attr(allow_interpreted_subclasses=True)
class HandoffCycleDetector:
    """The same closed handoff cycle repeating."""

    name: ClassVar[str] = "handoff_cycle"
    # the monitor calls us for these only
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset({EventKind.HANDOFF})

    def __init__(self, config: LoopGuardConfig) -> None:
        self.threshold = config.handoff_cycle_threshold
        self.delegation_threshold = config.delegation_repeat_threshold
        self.ack_words = config.delegation_ack_words

    def new_state(self) -> HandoffCycleState:
        return HandoffCycleState()

    def observe(
        self, event: Event, state: HandoffCycleState, counters: RunCounters
    ) -> Signal | None:
        if event.kind != _HANDOFF or not event.target_agent:
            return None
        if "delegation" in event.details:
            return self._delegation(event, state)
        chain = state.chain
        names = state.names
        source = agent_key(event.actor) if event.actor else (chain[-1] if chain else "")
        target = agent_key(event.target_agent)
        if not source or source == target:
            return None
        if event.actor:
            names[source] = event.actor[:_NAME_CAP]
        if target not in names:
            names[target] = event.target_agent[:_NAME_CAP]
        if len(names) > 2 * MAX_CHAIN:
            state.names = names = {k: names[k] for k in (*chain, source, target) if k in names}
        if not chain or chain[-1] != source:
            chain[:] = [source]
        if target not in chain:
            chain.append(target)
            del chain[:-MAX_CHAIN]
            return None
        start = chain.index(target)
        cycle = _canonical_cycle(chain[start:])
        del chain[start + 1 :]
        count = bump(state.cycles, cycle, MAX_CYCLES)
        if count < self.threshold:
            return None
        agents = [names.get(key, key) for key in cycle.split(" → ")]
        shown = " → ".join(agents)
        return Signal(
            detector=self.name,
            kind=self.name,
            score=growing_score(count, self.threshold, 0.7),
            message=f"handoff cycle {shown} → {agents[0]} closed {count} times",
            evidence={"agents": agents, "cycles": count, "threshold": self.threshold},
        )

    def _delegation(self, event: Event, state: HandoffCycleState) -> Signal | None:
        """A delegation and its answer: see the module docstring."""
        details = event.details
        answer = details.get("answer")
        words = details.get("answer_words")
        if (
            not isinstance(answer, str)
            or not answer
            or (isinstance(words, int) and words < self.ack_words)
        ):
            return None  # an acknowledgement, or no answer: neither new nor the same
        manager = event.actor or ""
        seen = bump(state.answers, f"{agent_key(manager)}|{answer}", MAX_ANSWERS) > 1
        if not seen:  # a new answer: progress
            state.stale = 0
            state.stale_agents = []
            return None
        state.stale += 1
        coworker = str(event.target_agent)[:_NAME_CAP]
        agents = state.stale_agents
        if coworker not in agents:
            agents.append(coworker)
            del agents[:-MAX_STREAK_AGENTS]
        stale = state.stale
        threshold = self.delegation_threshold
        if stale < threshold:
            return None
        persistent = stale >= 2 * threshold
        who = manager[:_NAME_CAP] or "the manager"
        shown = ", ".join(agents)
        tool = details.get("delegation")
        return Signal(
            detector=self.name,
            kind="delegation_persistent" if persistent else "delegation",
            score=growing_score(stale, threshold, 0.6),
            message=(
                f"the last {stale} delegations of {who} (to {shown}) brought back only "
                "answers it already had"
            ),
            evidence={
                "agent": who,
                "agents": list(agents),
                "delegations": stale,
                "threshold": threshold,
                "tool": str(tool) if tool else None,
                "answer": answer,
            },
            recommendation=(
                f"You delegated the same task {stale} more times (to {shown}) and got the "
                "same answers back each time. Do not delegate it again as it is: decide "
                "with the answers you have, or change the task (a different question, "
                "another coworker, a smaller step)."
            ),
        )

    def export_state(self, state: HandoffCycleState) -> dict[str, Any]:
        return {
            "chain": list(state.chain),
            "cycles": table_to_json(state.cycles),
            "names": dict(state.names),
            "answers": table_to_json(state.answers),
            "stale": state.stale,
            "stale_agents": list(state.stale_agents),
        }

    def restore_state(self, data: dict[str, Any]) -> HandoffCycleState:
        state = HandoffCycleState()
        state.chain = [str(agent) for agent in data.get("chain") or []][-MAX_CHAIN:]
        state.cycles = table_from_json(data.get("cycles"), MAX_CYCLES)
        names = data.get("names")
        if isinstance(names, dict):
            kept = list(names.items())[-2 * MAX_CHAIN :]
            state.names = {str(key): str(name)[:_NAME_CAP] for key, name in kept}
        answers = table_from_json(data.get("answers"), MAX_ANSWERS)
        state.answers = {key: n for key, n in answers.items() if isinstance(n, int) and n > 0}
        stale = data.get("stale")
        state.stale = stale if isinstance(stale, int) and stale > 0 else 0
        agents = data.get("stale_agents") or []
        if isinstance(agents, list):
            state.stale_agents = [str(name)[:_NAME_CAP] for name in agents][-MAX_STREAK_AGENTS:]
        return state
