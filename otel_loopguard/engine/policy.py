"""Policies: turn a run's signals into one decision.

A policy is any callable ``PolicyInput -> Decision``. The monitor calls it after every
event, with the signals that event produced (``new_signals``) and the run's last
``OTEL_LOOPGUARD_SIGNAL_WINDOW`` signals (``window``, oldest first, the new ones included).
Policies are pure: all run state lives in the monitor, so the same policy object serves
every run and every thread.

Presets (``OTEL_LOOPGUARD_POLICY``):

``default``: evidence-based. A signal only stops the run when the evidence says the agent
is stuck, not merely busy:

- ``repetition``, ``action_cycle`` and ``repeated_tool_steps`` alone **warn** (polling, the
  same tool over new arguments and edit/test iterations repeat calls too); together with
  ``no_progress`` evidence in the window about the same tool (evidence ``tool`` /
  ``tools``; a signal naming no tool matches any) they **stop**: the calls return
  unchanged output. ``no_progress`` alone warns, and stops when a matching loop signal is
  in the window, so the order in which the two arrive does not matter. A loop signal that
  carries its own no-progress evidence (``unchanged_outputs`` in its evidence: an action
  cycle's full periods with unchanged answers and no waiting; reworded or cosmetically
  varied calls of one tool answered alike) **stops** by itself.
- ``permanent_failure`` of kind ``permanent`` (the same 404 / permission denied / invalid
  argument again) **stops**; of kind ``retryable`` (the same timeout / 429 / 5xx repeated)
  or ``unclassified`` (an error nothing classifies) it **pauses**: the agent should back
  off, it is not looping yet, and enforcement does not interrupt on ``pause``; of kind
  ``persistent`` (that same failure still repeating at twice the retryable threshold) it
  **stops**: retrying the same call into the same error that often is a loop.
- ``handoff_cycle`` **stops**; of kind ``delegation`` (a manager's delegations bringing back
  only answers it already had) it answers **replan** with its recommendation for the
  manager (the ladder stops a manager that goes on), of kind ``delegation_persistent``
  (twice as many) it **stops**.
- ``no_progress`` of kind ``idle_wait`` (waits with nothing else done, answered alike)
  answers **replan** with its recommendation and is no support for a loop signal; of kind
  ``idle_wait_persistent`` (twice ``OTEL_LOOPGUARD_IDLE_WAIT_THRESHOLD``) it **stops**.
- ``no_new_information`` (changing calls of one tool, or reads of one resource, whose
  results bring nothing the run has not seen) of kind ``stale`` answers **replan** with its
  recommendation (the ladder stops a loop that goes on after it); of kind ``persistent``
  (``OTEL_LOOPGUARD_NO_NEW_INFORMATION_STOP`` stale results, off by default) it **stops**.
- ``budget`` **stops** with ``end_state`` ``max_steps`` (kinds ``steps`` and ``tool_calls``),
  ``timed_out`` (``time``) or ``budget_exceeded`` (``tokens``, ``cost``).
- ``budget_proximity`` **warns**.
- ``repeated_text`` (the model saying the same thing turn after turn) of kind
  ``repeating`` answers **replan** with its recommendation; of kind ``persistent`` (twice
  ``OTEL_LOOPGUARD_REPEATED_TEXT_THRESHOLD`` turns) it **stops**.
- ``read_only_loop``, ``shell_failure`` and ``truncation`` / ``premature_end`` of kind
  ``recovery`` answer **replan** with the signal's ``recommendation`` (the read-only nudge,
  the shell hint, the continuation prompt); ``truncation`` of kind ``ended`` (the
  continuations used up, the answer taken as the end of the turn) **warns**: truncation
  alone never stops a run; ``premature_end`` of kind ``exhausted`` (recoveries used up),
  and ``truncation`` of that kind (``OTEL_LOOPGUARD_TRUNCATION_STOPS=true``), **stop**.
- a signal from a detector the policy does not know (a user plug-in) **warns**.

Sub-agents: a STOP the presets would make (``default`` only; ``strict`` stops) on loop
evidence alone (repetition, cycles, identical tool steps, no progress, the same failure:
counted per agent within a run) about a *sub-agent* (the event's agent is not the run's own
agent) is answered with **replan** instead, with a message for the manager naming the
sub-agent, the first ``OTEL_LOOPGUARD_SUB_AGENT_REPLANS`` (1) times for that sub-agent;
the next one stops the run: a sub-agent that keeps looping is stopped one decision later,
before its next call runs; one that hands back after its loop leaves the run to its
manager. A handoff cycle, a budget and a truncation or premature end are run-level and
stop as above.

The ladder: a ``replan`` is a nudge the agent's model receives (in ``enforce`` mode a
framework package adds the recommendation to the run's next model request). A detector
whose recommendation was delivered ``OTEL_LOOPGUARD_MAX_NUDGES`` (1) times and that fires
again, the loop going on after its nudge, **stops**, with a reason that says the nudge did
not help (kind ``after_nudge``). Only delivered nudges count (:attr:`PolicyInput.nudges`):
in ``observe`` mode, and where nothing delivers, a replan stays a replan. ``truncation``
and ``premature_end`` count their own recoveries and are not on the ladder; nor are the
sub-agent replans below, counted per sub-agent.

When several signals arrive at once the most severe action wins; its ``reasons`` are the
signals that drove it (for a stop on a loop: the loop signal and the no-progress evidence).

Risk score: it ranks severity first, evidence second. The evidence is
``1 - Π(1 - score·0.8^age)`` over the window, newest signal age 0, so fresh and agreeing
evidence adds up and old evidence fades; never below the strongest reason's score. That
0..1 evidence is placed in its action's band (:data:`RISK_BANDS`): a warn scores 0.10-0.50,
a replan 0.55-0.60, a pause 0.65-0.70, a stop 0.75-1.00, so every warn ranks below every
stop of the same policy however strong its evidence (a healthy run's polling warn is never
as risky as a stuck run's stop). ``observe`` keeps the ``default`` verdict's risk: its warn
for what would have stopped still scores in the stop band.
An event with no new signal brings no new evidence: the policies answer the shared
``CONTINUE`` decision (risk 0.0) without computing anything, which keeps the monitor's hot
path allocation-free.

``strict``: the hard guards of an agent loop. Every repetition (exact or near duplicate),
``repeated_tool_steps`` (≥ ``OTEL_LOOPGUARD_MAX_REPEATED_TOOL_STEPS`` identical tool-call
sets) and ``action_cycle`` stops regardless of output; everything that stops under
``default`` stops too.

``observe``: the ``default`` verdict capped at ``warn``: every signal and risk is recorded,
nothing is ever enforced.

``package.module:callable``: a user policy, called with a :class:`PolicyInput` and
returning a :class:`~otel_loopguard.engine.decisions.Decision`. If it raises, the monitor catches
it, counts it as an internal error, logs it once and continues the run.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import CONTINUE, Action, Decision, RunEndState, Signal
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.events import Event

logger = logging.getLogger("otel_loopguard.engine.policy")

POLICY_VARIABLE = LoopGuardConfig.env_name("policy")

#: signals of an agent doing the same thing again
LOOP_DETECTORS = frozenset({"repetition", "action_cycle", "repeated_tool_steps"})
NO_PROGRESS = "no_progress"
#: evidence key of a loop signal that saw its own calls answered unchanged, with nothing new
#: in between (an action cycle's full periods; near-duplicate calls of one tool answered
#: alike): no-progress evidence of its own, so the default policy stops on it
UNCHANGED_OUTPUTS = "unchanged_outputs"
#: loop evidence counted per agent within a run: a STOP on it alone, about a sub-agent,
#: is first answered with replan (``OTEL_LOOPGUARD_SUB_AGENT_REPLANS`` times)
PER_AGENT_DETECTORS = LOOP_DETECTORS | {NO_PROGRESS, "permanent_failure"}
#: weight lost per older signal in the risk score
RISK_DECAY = 0.8
#: (lowest, highest) risk score of each action: the evidence (0..1) is placed in its band
RISK_BANDS: dict[Action, tuple[float, float]] = {
    Action.CONTINUE: (0.0, 0.0),
    Action.WARN: (0.1, 0.5),
    Action.REPLAN: (0.55, 0.6),
    Action.PAUSE: (0.65, 0.7),
    Action.STOP: (0.75, 1.0),
}

_BUDGET_END_STATES = {
    "steps": RunEndState.MAX_STEPS,
    "tool_calls": RunEndState.MAX_STEPS,
    "time": RunEndState.TIMED_OUT,
    "tokens": RunEndState.BUDGET_EXCEEDED,
    "cost": RunEndState.BUDGET_EXCEEDED,
}
_REPLAN_DETECTORS = frozenset({"read_only_loop", "shell_failure"})
#: permanent_failure kinds that pause (back off); ``permanent`` and ``persistent`` stop
_BACK_OFF_KINDS = frozenset({"retryable", "unclassified"})
_RECOVERY_DETECTORS = frozenset({"truncation", "premature_end"})
#: no_progress kinds of waits with nothing pending (replan, then stop); not loop support
_IDLE_WAIT_KINDS = ("idle_wait", "idle_wait_persistent")
#: the kind of the signal that turns a replan whose nudge did not help into a stop
AFTER_NUDGE = "after_nudge"


@dataclass(slots=True, init=False)
class PolicyInput:
    """What a policy sees after one event of one run."""

    run_id: str
    event: Event
    new_signals: tuple[Signal, ...]
    window: tuple[Signal, ...]
    counters: RunCounters
    config: LoopGuardConfig
    #: the sub-agent the event is about (an actor other than the run's own agent), else None
    agent: str | None = None
    #: loop decisions about that sub-agent already answered with replan in this run
    agent_replans: int = 0
    #: detector -> its recommendations delivered to the agent's model in this run
    nudges: Mapping[str, int] = field(default_factory=dict)

    # Written out for mypyc (see Event.__init__): a custom policy gets one per event
    def __init__(
        self,
        run_id: str,
        event: Event,
        new_signals: tuple[Signal, ...],
        window: tuple[Signal, ...],
        counters: RunCounters,
        config: LoopGuardConfig,
        agent: str | None = None,
        agent_replans: int = 0,
        nudges: Mapping[str, int] | None = None,
    ) -> None:
        self.run_id = run_id
        self.event = event
        self.new_signals = new_signals
        self.window = window
        self.counters = counters
        self.config = config
        self.agent = agent
        self.agent_replans = agent_replans
        self.nudges = nudges if nudges is not None else {}


Policy = Callable[[PolicyInput], Decision]


def risk_score(window: tuple[Signal, ...]) -> float:
    """Combined evidence of the window: ``1 - Π(1 - score·decay^age)``, newest age 0."""
    keep = 1.0
    weight = 1.0
    for signal in reversed(window):
        score = signal.score
        if score > 0.0:
            keep *= 1.0 - min(score, 1.0) * weight
        weight *= RISK_DECAY
    return min(max(1.0 - keep, 0.0), 1.0)


def _tools(signal: Signal) -> frozenset[str]:
    evidence = signal.evidence
    tool = evidence.get("tool")
    tools = evidence.get("tools")
    found = {str(t) for t in tools} if isinstance(tools, (list, tuple)) else set()
    if tool:
        found.add(str(tool))
    return frozenset(found)


def _same_work(loop: Signal, no_progress: Signal) -> bool:
    """Do a loop signal and a no-progress signal speak of the same tools?

    Unchanged output from one tool is no evidence that another tool's repeats are stuck
    (polling ``status`` while ``search`` returns the same page). Signals that name no tool
    (a step of requested calls) are taken as related.
    """
    loop_tools, stuck_tools = _tools(loop), _tools(no_progress)
    return not loop_tools or not stuck_tools or not loop_tools.isdisjoint(stuck_tools)


def _verdict(
    signal: Signal, window: tuple[Signal, ...], strict: bool
) -> tuple[Action, RunEndState | None, tuple[Signal, ...]]:
    """The action one new signal calls for, its end state, and the evidence behind it."""
    detector = signal.detector
    if detector in LOOP_DETECTORS:
        if strict or signal.evidence.get(UNCHANGED_OUTPUTS):
            return Action.STOP, RunEndState.STOPPED, (signal,)
        support = tuple(
            s
            for s in window
            if s.detector == NO_PROGRESS
            and s.kind not in _IDLE_WAIT_KINDS
            and _same_work(signal, s)
        )
        if support:
            return Action.STOP, RunEndState.STOPPED, (signal, *support)
        return Action.WARN, None, (signal,)
    if detector == NO_PROGRESS:
        if signal.kind in _IDLE_WAIT_KINDS:  # waits with nothing pending: nudge, then stop
            if signal.kind == _IDLE_WAIT_KINDS[1]:
                return Action.STOP, RunEndState.STOPPED, (signal,)
            return Action.REPLAN, None, (signal,)
        support = tuple(s for s in window if s.detector in LOOP_DETECTORS and _same_work(signal, s))
        if support:
            return Action.STOP, RunEndState.STOPPED, (*support, signal)
        return Action.WARN, None, (signal,)
    if detector == "permanent_failure":
        if signal.kind in _BACK_OFF_KINDS:
            return Action.PAUSE, None, (signal,)
        return Action.STOP, RunEndState.STOPPED, (signal,)
    if detector == "handoff_cycle":
        if signal.kind == "delegation":  # delegations answered as before: tell the manager
            return Action.REPLAN, None, (signal,)
        return Action.STOP, RunEndState.STOPPED, (signal,)
    if detector == "budget":
        return (
            Action.STOP,
            _BUDGET_END_STATES.get(signal.kind, RunEndState.BUDGET_EXCEEDED),
            (signal,),
        )
    if detector in _RECOVERY_DETECTORS:
        if signal.kind == "exhausted":
            return Action.STOP, RunEndState.STOPPED, (signal,)
        if signal.kind == "ended":  # a truncation taken as the end of the turn
            return Action.WARN, None, (signal,)
        return Action.REPLAN, None, (signal,)
    if detector in _REPLAN_DETECTORS:
        return Action.REPLAN, None, (signal,)
    if detector == "no_new_information":  # fuzzy loops: nudge (the ladder stops), or stop
        if signal.kind == "persistent":
            return Action.STOP, RunEndState.STOPPED, (signal,)
        return Action.REPLAN, None, (signal,)
    if detector == "repeated_text":
        if signal.kind == "persistent":
            return Action.STOP, RunEndState.STOPPED, (signal,)
        return Action.REPLAN, None, (signal,)
    return Action.WARN, None, (signal,)


def _decide(policy_input: PolicyInput, strict: bool) -> Decision:
    window = policy_input.window or policy_input.new_signals
    best_action = Action.CONTINUE
    best_end: RunEndState | None = None
    reasons: dict[int, Signal] = {}
    recommendation: str | None = None
    for signal in policy_input.new_signals:
        action, end_state, evidence = _verdict(signal, window, strict)
        if action > best_action:
            best_action, best_end, reasons = action, end_state, {}
            recommendation = None
        if action == best_action:
            for item in evidence:
                reasons.setdefault(id(item), item)
            if recommendation is None and signal.recommendation:
                recommendation = signal.recommendation
    chosen = tuple(reasons.values())
    if best_action is Action.REPLAN and policy_input.nudges:
        ignored = _nudge_ignored(chosen, policy_input)
        if ignored is not None:
            best_action, best_end, chosen, recommendation = (
                Action.STOP,
                RunEndState.STOPPED,
                ignored,
                None,
            )
    agent = policy_input.agent
    if (
        best_action is Action.STOP
        and not strict
        and agent
        and policy_input.agent_replans < policy_input.config.sub_agent_replans
        and all(s.detector in PER_AGENT_DETECTORS for s in chosen)
    ):
        # a looping sub-agent: its manager may recover (hand it new instructions, use
        # another agent) before the whole run is stopped
        best_action, best_end = Action.REPLAN, None
        recommendation = _sub_agent_prompt(agent, chosen)
    strongest = max((s.score for s in chosen), default=0.0)
    weight = max(risk_score(window), min(max(strongest, 0.0), 1.0))
    low, high = RISK_BANDS[best_action]
    return Decision(
        best_action,
        risk=low + (high - low) * weight,
        reasons=chosen,
        recommendation=recommendation if best_action is Action.REPLAN else None,
        end_state=best_end,
    )


def _nudge_ignored(
    reasons: tuple[Signal, ...], policy_input: PolicyInput
) -> tuple[Signal, ...] | None:
    """The ladder: the reasons of a STOP when a replan's detector already had its nudges
    delivered (``max_nudges``) and fires again; None while nudges are left."""
    limit = policy_input.config.max_nudges
    if limit <= 0:
        return None
    nudges = policy_input.nudges
    for signal in reasons:
        detector = signal.detector
        delivered = nudges.get(detector, 0)
        if detector in _RECOVERY_DETECTORS or delivered < limit:
            continue
        times = "once" if delivered == 1 else f"{delivered} times"
        return (
            Signal(
                detector,
                AFTER_NUDGE,
                max(signal.score, 0.9),
                f"{signal.message}, after its recommendation was delivered {times}: "
                "the nudge did not help",
                {**signal.evidence, "nudges": delivered},
            ),
        )
    return None


def _sub_agent_prompt(agent: str, reasons: tuple[Signal, ...]) -> str:
    what = "; ".join(s.message for s in reasons[:2])
    return (
        f"The sub-agent {agent[:80]} is repeating itself without progress ({what[:300]}). "
        "Do not hand it the same task again as it is: give it new instructions, use "
        "another agent or approach, or finish with what you have."
    )


def is_sub_agent_replan(decision: Decision) -> bool:
    """A ``replan`` the presets gave instead of stopping a looping sub-agent: its reasons
    are all loop evidence (those detectors never ask for a replan themselves). The monitor
    counts these per sub-agent (:attr:`PolicyInput.agent_replans`)."""
    return (
        decision.action is Action.REPLAN
        and all(s.detector in PER_AGENT_DETECTORS for s in decision.reasons)
        and bool(decision.reasons)
    )


def default(policy_input: PolicyInput) -> Decision:
    """Evidence-based: loops stop only with no-progress evidence (see the module doc)."""
    if not policy_input.new_signals:
        return CONTINUE
    return _decide(policy_input, strict=False)


def strict(policy_input: PolicyInput) -> Decision:
    """Hard guards: any repetition, identical tool steps or action cycle stops."""
    if not policy_input.new_signals:
        return CONTINUE
    return _decide(policy_input, strict=True)


def observe(policy_input: PolicyInput) -> Decision:
    """The default verdict, never above ``warn``: records everything, enforces nothing."""
    if not policy_input.new_signals:
        return CONTINUE
    decision = _decide(policy_input, strict=False)
    if decision.action <= Action.WARN:
        return decision
    return Decision(
        Action.WARN,
        risk=decision.risk,
        reasons=decision.reasons,
        recommendation=decision.recommendation,
    )


PRESETS: dict[str, Policy] = {"default": default, "strict": strict, "observe": observe}


def only_on_signals(policy: Policy) -> bool:
    """The policy answers the shared CONTINUE to an event that brought no new signal, so the
    monitor may skip calling it (and building its PolicyInput) on the hot path.

    The presets do; a user policy says so with the attribute ``only_on_signals = True``.
    The presets are known by identity rather than by that attribute because a compiled
    build's functions take no attributes.
    """
    return any(policy is preset for preset in PRESETS.values()) or bool(
        getattr(policy, "only_on_signals", False)
    )


def load_policy(spec: str | None) -> Policy:
    """A preset by name, or a user callable by ``package.module:callable``.

    Never raises: an unusable value gets one warning naming ``OTEL_LOOPGUARD_POLICY``, the
    value and what is accepted, and the default policy is used.
    """
    name = (spec or "default").strip()
    preset = PRESETS.get(name.lower())
    if preset is not None:
        return preset
    try:
        module_name, sep, attribute = name.partition(":")
        if not sep or not module_name or not attribute:
            raise ValueError("not a preset and not of the form package.module:callable")
        target: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
        if not callable(target):
            raise TypeError(f"{attribute} is not callable")
    except Exception as exc:  # an import path can fail in any way; never crash the host
        logger.warning(
            "otel-loopguard: ignoring %s=%r: %s: %s; expected default, strict, observe or "
            "package.module:callable; using the default policy",
            POLICY_VARIABLE,
            spec,
            type(exc).__name__,
            exc,
        )
        return default
    return target  # type: ignore[return-value]


__all__ = [
    "AFTER_NUDGE",
    "LOOP_DETECTORS",
    "PER_AGENT_DETECTORS",
    "PRESETS",
    "RISK_BANDS",
    "Policy",
    "PolicyInput",
    "default",
    "is_sub_agent_replan",
    "load_policy",
    "observe",
    "risk_score",
    "strict",
]
