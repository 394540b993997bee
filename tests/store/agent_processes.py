"""Agent processes for the store tests: ``programs/agent_turns.py`` run as real separate
Python processes (each its own guard, monitor and connection to the store)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PROGRAM = Path(__file__).parent / "programs" / "agent_turns.py"


def agent_env(store: str, **settings: str) -> dict[str, str]:
    """The process environment: enforce mode, the store, extra ``OTEL_LOOPGUARD_*`` or
    ``LOOPGUARD_TEST_*`` settings (``TOKEN_BUDGET="1000"``, ``LOOPGUARD_TEST_USER="alice"``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_LOOPGUARD_")}
    env.update(OTEL_LOOPGUARD_MODE="enforce", OTEL_LOOPGUARD_STORE=store)
    env.pop("LOOPGUARD_TEST_TOKENS", None)
    for name, value in settings.items():
        env[name if name.startswith("LOOPGUARD_TEST_") else f"OTEL_LOOPGUARD_{name}"] = value
    return env


def run_turns(conversation: str, turns: int, env: dict[str, str]) -> list[dict[str, Any]]:
    """``turns`` turns in one fresh process; the turns' outcomes."""
    done = subprocess.run(
        [sys.executable, str(PROGRAM), conversation, str(turns)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def turns_in_fresh_processes(
    conversation: str, turns: int, env: dict[str, str]
) -> list[dict[str, Any]]:
    """Each turn of the conversation in a process of its own, one after the other."""
    return [run_turns(conversation, 1, env)[0] for _ in range(turns)]


class AgentProcess:
    """A live agent process taking one turn per :meth:`turn` (a line on its stdin)."""

    def __init__(self, conversation: str, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(PROGRAM), conversation, "-"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def turn(self, query: str = "order 1234") -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(query + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, self.finish()
        return dict(json.loads(line))

    def finish(self) -> str:
        """End the process; its stderr (the warnings it logged)."""
        _, stderr = self.process.communicate("\n", timeout=60)
        assert self.process.returncode == 0, stderr[-3000:]
        return stderr

    def __enter__(self) -> AgentProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
