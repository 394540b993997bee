"""kit.held_back: an interrupt held back where it cannot be raised, raised again later."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from otel_loopguard import Action, Decision, LoopGuardInterrupt
from otel_loopguard.kit import HeldInterrupts, exception_flavour, interrupt_again


def _interrupt(reason: str = "repetition") -> LoopGuardInterrupt:
    return LoopGuardInterrupt(Decision(Action.STOP, run_id=reason), f"stopped: {reason}")


class WorkflowInterrupt(LoopGuardInterrupt, Exception):
    """A framework step fails only on an ``Exception``."""


def test_held_in_a_task_raised_again_by_the_run_as_the_same_decision() -> None:
    held = HeldInterrupts("tests_held")
    stop = _interrupt()

    async def tool_task() -> str:
        try:
            raise stop
        except LoopGuardInterrupt as interrupt:
            assert held.hold(interrupt)  # the task's consumer would hang on a BaseException
        return "error result the model never reads"

    async def run() -> None:
        with held.opened():
            await asyncio.gather(tool_task(), tool_task())
            held.raise_held()

    with pytest.raises(LoopGuardInterrupt) as raised:
        asyncio.run(run())
    assert raised.value is not stop and raised.value.decision is stop.decision
    assert str(raised.value) == str(stop)


def test_a_thread_with_the_context_shares_the_mailbox_and_the_same_object_can_be_raised() -> None:
    import contextvars

    held = HeldInterrupts("tests_thread")
    mailbox: list[LoopGuardInterrupt] = []
    stop = _interrupt()

    def worker() -> None:
        assert held.hold(stop)

    with held.opened(mailbox):
        thread = threading.Thread(target=contextvars.copy_context().run, args=(worker,))
        thread.start()
        thread.join()
    assert held.held() is None  # the block is left: nothing open in this context
    assert mailbox == [stop]
    with pytest.raises(LoopGuardInterrupt) as raised:
        held.raise_held(same=True, mailbox=mailbox)
    assert raised.value is stop and mailbox == []


def test_nothing_open_means_raise_it_yourself_and_nothing_held_raises_nothing() -> None:
    held = HeldInterrupts("tests_none")
    assert held.hold(_interrupt()) is False
    held.raise_held()  # nothing held: no-op
    with held.opened():
        assert held.held() is None
        held.raise_held()


def test_a_nested_run_inherits_the_enclosing_mailbox_unless_asked_not_to() -> None:
    held = HeldInterrupts("tests_nested")
    stop = _interrupt()
    with held.opened():
        outer = held.mailbox()
        with held.opened(held.mailbox()):
            held.hold(stop)
        assert held.held() is stop and outer == [stop]
        assert held.mailbox(inherit=False) == []
        with pytest.raises(LoopGuardInterrupt) as raised:
            cause = ValueError("where it was held")
            held.raise_held(cause)
        assert raised.value.__cause__ is cause


def test_the_exception_flavour_keeps_decision_message_and_cause() -> None:
    stop = _interrupt("budget")
    stop.__cause__ = KeyError("x")
    carried = exception_flavour(stop, WorkflowInterrupt)
    assert isinstance(carried, Exception) and isinstance(carried, LoopGuardInterrupt)
    assert carried.decision is stop.decision and str(carried) == str(stop)
    assert carried.__cause__ is stop.__cause__
    assert exception_flavour(carried, WorkflowInterrupt) is carried
    again: Any = interrupt_again(carried)
    assert type(again) is LoopGuardInterrupt and again.decision is stop.decision
