"""The demo's live timeline: each call, each decision, the stop and what it saved.

Plain ASCII (a CI log or a C locale must not trip on it), colour only on a terminal that
wants it (``NO_COLOR`` is honoured).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from otel_loopguard.engine.decisions import Action, Decision, LoopGuardInterrupt

if TYPE_CHECKING:
    from otel_loopguard.demo.runner import Outcome
    from otel_loopguard.demo.scenarios import Scenario, Turn

_COLOURS = {
    Action.WARN: "33",
    Action.REPLAN: "36",
    Action.PAUSE: "35",
    Action.STOP: "31;1",
    "dim": "2",
    "ok": "32",
    "bold": "1",
}
_MARKS = {Action.WARN: "!", Action.REPLAN: "~", Action.PAUSE: "=", Action.STOP: "X"}


class Timeline:
    def __init__(self, out: TextIO | None = None, colour: bool | None = None) -> None:
        self.out = out or sys.stdout
        if colour is None:
            colour = self.out.isatty() and "NO_COLOR" not in os.environ
        self.colour = colour

    def _paint(self, key: Any, text: str) -> str:
        if not self.colour:
            return text
        return f"\x1b[{_COLOURS[key]}m{text}\x1b[0m"

    def _print(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def scenario(self, scenario: Scenario, mode: str) -> None:
        self._print()
        self._print(self._paint("bold", f"== {scenario.name}: {scenario.title} ({mode} mode)"))
        self._print(self._paint("dim", f"   {scenario.story}"))
        self._print()

    def call(self, number: int, turn: Turn) -> None:
        arguments = ", ".join(f"{key}={value!r}" for key, value in turn.arguments.items())
        self._print(f"  #{number:<3} {turn.agent:<14} {turn.tool}({arguments})")

    def result(self, text: str) -> None:
        self._print(self._paint("dim", f"        -> {text}"))

    def failure(self, text: str) -> None:
        self._print(self._paint("dim", f"        -> error: {text}"))

    def vetoed(self) -> None:
        self._print(self._paint(Action.STOP, "        -> vetoed: the tool never ran"))

    def answer(self, text: str) -> None:
        self._print(self._paint("ok", f"  answer: {text}"))

    def decisions(self, decisions: list[Decision]) -> None:
        for decision in decisions:
            action = decision.action
            detectors = ", ".join(decision.detectors) or "policy"
            line = (
                f"        [{_MARKS.get(action, '?')}] {action.value.upper():<6} "
                f"risk {decision.risk:.2f}  {detectors}: {decision.reason}"
            )
            self._print(self._paint(action, line))
            if decision.recommendation:
                self._print(self._paint("dim", f"            recommend: {decision.recommendation}"))

    def nudged(self, text: str) -> None:
        """A recommendation went into the model's next request (its text was shown with
        the replan that made it)."""
        self._print(
            self._paint("ok", "  nudge: the recommendation went into the model's next request")
        )

    def interrupted(self, interrupt: LoopGuardInterrupt, outcome: Outcome, *, vetoed: bool) -> None:
        how = (
            "the next call was vetoed before it ran"
            if vetoed
            else "raised right after the call that decided STOP"
        )
        self._print(
            self._paint(
                Action.STOP,
                f"  LoopGuardInterrupt reached the agent's caller after {outcome.tool_calls} "
                f"executed tool call{'' if outcome.tool_calls == 1 else 's'}: {how}.",
            )
        )
        self._print(
            f"  saved: {_calls(outcome.saved_tool_calls, 'more tool')} and "
            f"{outcome.saved_tokens:,} tokens the script would still have spent."
        )

    def finished(self, outcome: Outcome, *, stopped_in_observe: bool) -> None:
        if stopped_in_observe:
            self._print(
                self._paint(
                    Action.STOP,
                    "  observe mode: STOP was decided and recorded on the spans, "
                    "but the run was not interrupted.",
                )
            )
            self._print(
                f"  enforce would have saved: {_calls(outcome.saved_tool_calls)} and "
                f"{outcome.saved_tokens:,} tokens this run spent after the STOP."
            )
        elif outcome.nudges:
            self._print(
                self._paint(
                    "ok",
                    f"  recovered after the nudge: completed, {_calls(outcome.tool_calls)}, "
                    f"{outcome.tokens:,} tokens.",
                )
            )
        else:
            self._print(
                self._paint(
                    "ok",
                    f"  completed untouched: {_calls(outcome.tool_calls)}, "
                    f"{outcome.tokens:,} tokens.",
                )
            )

    def summary(self, outcomes: list[Outcome], trace_file: str | None) -> None:
        self._print()
        self._print(self._paint("bold", "== summary"))
        for outcome in outcomes:
            if outcome.interrupted is not None:
                verdict = (
                    f"stopped at call {outcome.tool_calls}, saved "
                    f"{_calls(outcome.saved_tool_calls, '')} / {outcome.saved_tokens:,} tokens"
                )
            elif any(d.action is Action.STOP for d in outcome.decisions):
                verdict = (
                    f"STOP recorded (observe mode), ran to the end; enforce would have saved "
                    f"{_calls(outcome.saved_tool_calls, '')} / {outcome.saved_tokens:,} tokens"
                )
            elif outcome.nudges:
                verdict = f"recovered after the nudge, {_calls(outcome.tool_calls, '')}"
            else:
                verdict = f"completed, {_calls(outcome.tool_calls, '')}"
            self._print(f"  {outcome.scenario.name:<18} {verdict}")
        if trace_file:
            self._print()
            self._print(f"trace written to {trace_file} (OTLP JSON); replay it with:")
            self._print(f"  otel-loopguard analyze {trace_file}")


def _calls(count: int, kind: str = "tool") -> str:
    """``1 tool call``, ``3 tool calls``; ``kind`` '' gives ``1 call``."""
    words = f"{kind} call" if kind else "call"
    return f"{count} {words}{'' if count == 1 else 's'}"
