"""Langfuse's client and our span processor in a process of their own, as an application
has them: either one added to the provider first, and the process exits by itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "either_order.py"


@pytest.mark.parametrize("order", ["langfuse-first", "ours-first"])
def test_in_either_order_nothing_raises_into_the_agent_and_the_process_exits(order) -> None:
    """The looping agent gets its STOP, the productive one none, both answer (nothing
    raised into them), and the process exits within seconds through Langfuse's ``atexit``
    shutdown (its exporter in memory: no server is waited for)."""
    done = subprocess.run(
        [sys.executable, "-W", "ignore", str(PROGRAM), order],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["looping"] == "I could not find the price."
    assert outcome["looping_stops"] >= 1
    assert outcome["productive"].startswith("Answer: Pro plan costs 20 EUR")
    assert outcome["productive_stops"] == 0
    assert outcome["internal_errors"] == 0
