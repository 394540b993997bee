"""The README's example (README.md, "What it records and when it interrupts") runs as
written against a looping agent in enforce mode, and does what its comment says: the
STOP reaches ``except LoopGuardInterrupt`` after the third identical search at the latest,
and ``print(stop.decision.reason)`` says why. The block is read from the README, so the
two cannot drift apart (tests/test_doc_examples.py checks the README points here)."""

from __future__ import annotations

import asyncio
import re
import textwrap
from pathlib import Path

from agents import ToolCounter, build_agent, looping_script

from otel_loopguard import LoopGuardInterrupt

README = Path(__file__).resolve().parent.parent / "README.md"


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    (block,) = [b for b in blocks if "stream_events()" in b]
    return block


async def test_the_readme_example_stops_the_loop_and_prints_why(make_loopguard) -> None:
    make_loopguard(mode="enforce")
    counter = ToolCounter()
    printed: list[str] = []
    scope = {
        "agent": build_agent(looping_script(), counter),
        "LoopGuardInterrupt": LoopGuardInterrupt,
        "print": lambda *values: printed.append(" ".join(map(str, values))),
    }
    source = "async def example():\n" + textwrap.indent(_example(), "    ")
    exec(compile(source, str(README), "exec"), scope)

    await asyncio.wait_for(scope["example"](), timeout=30)

    assert counter["search"] <= 3, "after the third identical search at the latest"
    assert len(printed) == 1
    assert "search called 3 times with identical arguments" in printed[0]
