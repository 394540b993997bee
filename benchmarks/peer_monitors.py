"""Our Monitor beside every loop guard on PyPI that can be driven the same way, in one run.

Usage::

    python benchmarks/peer_monitors.py [--events N] [--budget SECONDS] [--json]

Issue 32 asks for the Monitor to be ahead of every bounded-memory loop guard on PyPI, so
this measures, side by side in one process:

1. our ``Monitor`` (all default detectors, policy ``observe`` so the run is never
   stopped) through its public API for a tool call and its result: ``tool_call`` /
   ``tool_result`` / ``tool_error`` from raw arguments and outputs (the signature is
   computed per event, as the peers fingerprint theirs), then ``Monitor.observe``; and,
   as a reference, ``Monitor.observe`` of events whose signatures were computed before
   the run (monitor_throughput.py's path);
2. each peer in ``benchmarks/peers/requirements.txt`` (exact versions) through its own
   public API for recording a tool call and its result (``PEERS`` below says which).

Every implementation gets the same sequence of N tool events (default 100,000: N/2
calls, each followed by its result) of a healthy agent: the tools, the arguments that
differ per call, the ~15 % of calls repeating one of the last 8, the 10 % "no results"
outputs and 4 % errors of monitor_throughput.py's mix. A guard that raises or stops on a
loop is fed on; what it flagged is counted.

Speed: each block of 1,000 events is fed to every implementation in turn (the order
rotating per block), so all see the same machine load; the figure is CPU time of this
thread (``time.thread_time``, the machine is shared), the median over blocks; wall clock
over the whole run is printed too. An implementation whose CPU time passes the budget
(``--budget``, default 20 s) is stopped there: its cost per event grows with the run.

Memory: a second pass per implementation, traced by ``tracemalloc``: the bytes it holds
after 10,000 and after N events (after a ``gc.collect()``), beyond what it held when
made, and the peak. It is bounded
when what it holds at N is at most 1.25x what it held at 10,000 events plus 64 KiB;
a guard whose memory grows with the run is listed but marked unbounded.

The peers live in their own venv, ``.venvs/bench-peers`` (made with ``uv`` when it is
there, else ``venv`` and pip, and reused while the requirements are unchanged), with this
repository's core installed editable; the script re-executes itself there. A peer that
cannot be installed, imported or driven is skipped with one line saying why. Exit status
1 when the target (ours at least 150,000 events/s and ahead of every bounded peer) is
missed, as the other benchmarks do.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import io
import json
import logging
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REQUIREMENTS = HERE / "peers" / "requirements.txt"
VENV = ROOT / ".venvs" / "bench-peers"
OWN_DIRS = VENV / "own"
STAMP = VENV / ".requirements-sha256"
FAILURES = VENV / "install-failures.txt"
REEXEC_MARK = "LOOPGUARD_PEERS_VENV"

BLOCK = 1_000
EARLY = 10_000  # the memory held here is compared with the memory held at the end
CLOCK = getattr(time, "thread_time", time.process_time)
TARGET_EVENTS_PER_SECOND = 150_000
GROWTH_FACTOR, GROWTH_SLACK = 1.25, 64 * 1024

Step = tuple[str, dict[str, Any], str, Any]  # tool, arguments, output text, ErrorInfo | None
Feed = Callable[[int], int]  # feed step i's call (or result); how many loops it flagged


# ---------------------------------------------------------------------------- the venv


def requirement_lines() -> list[tuple[str, bool]]:
    """(requirement, own directory?) per line of the requirements file."""
    lines = []
    for raw in REQUIREMENTS.read_text().splitlines():
        spec, _, comment = raw.partition("#")
        if spec.strip():
            lines.append((spec.strip(), comment.strip() == "own-dir"))
    return lines


def own_dir(requirement: str) -> Path:
    return OWN_DIRS / requirement.split("==")[0]


def _install(python: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    if shutil.which("uv"):
        command = ["uv", "pip", "install", "-q", "-p", str(python), *args]
    else:
        command = [str(python), "-m", "pip", "install", "-q", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900)


def make_venv() -> Path:
    """The peers' venv, made or reused; its interpreter. Raises RuntimeError if impossible."""
    python = VENV / "bin" / "python"
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if python.exists() and STAMP.exists() and STAMP.read_text().strip() == digest:
        return python
    print(f"making {VENV.relative_to(ROOT)} (peers from {REQUIREMENTS.relative_to(ROOT)})")
    if shutil.which("uv"):
        made = subprocess.run(
            ["uv", "venv", "-q", "--allow-existing", "-p", sys.executable, str(VENV)],
            capture_output=True,
            text=True,
        )
    else:
        made = subprocess.run([sys.executable, "-m", "venv", str(VENV)], capture_output=True)
    if made.returncode != 0 or not python.exists():
        raise RuntimeError(f"cannot create {VENV}: {str(made.stderr).strip()[-200:]}")
    core = _install(python, ["-e", str(ROOT)])
    if core.returncode != 0:
        raise RuntimeError(f"cannot install the core in {VENV}: {core.stderr.strip()[-200:]}")
    failures = []
    for requirement, own in requirement_lines():
        extra = ["--no-deps", "--target", str(own_dir(requirement))] if own else []
        if own:
            shutil.rmtree(own_dir(requirement), ignore_errors=True)
        done = _install(python, [*extra, requirement])
        if done.returncode != 0:
            reason = (done.stderr.strip().splitlines() or ["no output"])[-1][:120]
            failures.append(f"{requirement}\t{reason}")
    FAILURES.write_text("".join(line + "\n" for line in failures))
    STAMP.write_text(digest)
    return python


def reexec_in_venv(argv: list[str]) -> None:
    """Run this script again in the peers' venv, unless already there."""
    if os.environ.get(REEXEC_MARK) or Path(sys.prefix).resolve() == VENV.resolve():
        return
    try:
        python = make_venv()
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        print(f"peers venv unavailable, measuring ours alone: {error}")
        return
    os.environ[REEXEC_MARK] = "1"
    os.execv(str(python), [str(python), str(Path(__file__).resolve()), *argv])


# ---------------------------------------------------------------------------- the events


def build_steps(pairs: int, seed: int = 7) -> list[Step]:
    """``pairs`` tool calls with their outputs, in monitor_throughput.py's proportions.

    Arguments differ per call (``{"q": "topic N"}``, N < 50,000); about 15 % of calls
    repeat one of the last 8 calls; 10 % of outputs are the same "no results"; 4 % of
    calls fail with one of monitor_throughput's errors.
    """
    import monitor_throughput as mt

    rng = random.Random(seed)
    steps: list[Step] = []
    recent: list[tuple[str, dict[str, Any]]] = []
    for _ in range(pairs):
        if recent and rng.random() < 0.15:
            tool, arguments = recent[rng.randrange(len(recent))]
        else:
            tool = mt.TOOLS[rng.randrange(len(mt.TOOLS))]
            arguments = {"q": f"topic {rng.randrange(50_000)}"}
            recent = [*recent[-7:], (tool, arguments)]
        roll = rng.random()
        if roll < 0.04:
            error = mt.ERRORS[rng.randrange(len(mt.ERRORS))]
            steps.append((tool, dict(arguments), f"{error.type}: {error.message}", error))
        else:
            text = "no results" if roll < 0.14 else f"result {rng.randrange(100_000)}"
            steps.append((tool, dict(arguments), text, None))
    return steps


# ---------------------------------------------------------------------------- implementations


@dataclass
class Implementation:
    name: str
    distribution: str  # whose version is printed
    detects: str  # one line: what it checks per event
    make: Callable[[list[Step]], tuple[Feed, Feed]]  # fresh state -> (on call, on result)
    reads: str = "args+out"  # what of an event it looks at: args+out, args, names
    own: str = ""  # requirement installed in a directory of its own
    version: str = ""
    note: str = ""


@contextlib.contextmanager
def isolated_import(requirement: str, *packages: str) -> Iterator[None]:
    """Import ``packages`` from ``requirement``'s own directory, then hide them again.

    Several distributions ship a module of the same name; each is imported alone, its
    modules dropped from ``sys.modules`` afterwards (the objects made from them keep
    working), so the next can be imported from its own directory.
    """
    path = str(own_dir(requirement))

    def drop() -> None:
        for name in list(sys.modules):
            if name.split(".")[0] in packages:
                del sys.modules[name]

    drop()
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)
        drop()


def ours(steps: list[Step]) -> tuple[Feed, Feed]:
    from otel_loopguard.engine.config import LoopGuardConfig
    from otel_loopguard.engine.decisions import Action
    from otel_loopguard.engine.events import tool_call, tool_error, tool_result
    from otel_loopguard.engine.monitor import Monitor

    observe = Monitor(LoopGuardConfig(policy="observe")).observe
    proceed = Action.CONTINUE

    def on_call(i: int) -> int:
        tool, arguments, _, _ = steps[i]
        return observe(tool_call("run", tool, arguments)).action is not proceed

    def on_result(i: int) -> int:
        tool, _, output, error = steps[i]
        if error is None:
            return observe(tool_result("run", tool, output)).action is not proceed
        return observe(tool_error("run", tool, error)).action is not proceed

    return on_call, on_result


def ours_presigned(steps: list[Step]) -> tuple[Feed, Feed]:
    from otel_loopguard.engine.config import LoopGuardConfig
    from otel_loopguard.engine.decisions import Action
    from otel_loopguard.engine.events import Event, EventKind
    from otel_loopguard.engine.monitor import Monitor
    from otel_loopguard.engine.signatures import call_signature, output_signature

    observe = Monitor(LoopGuardConfig(policy="observe")).observe
    proceed = Action.CONTINUE
    call, result, failed = EventKind.TOOL_CALL, EventKind.TOOL_RESULT, EventKind.TOOL_ERROR
    calls = [call_signature(tool, arguments) for tool, arguments, _, _ in steps]
    outputs = [
        output_signature(
            output if error is None else f"{error.type}:{error.status_code}:{error.message}"
        )
        for _, _, output, error in steps
    ]

    def on_call(i: int) -> int:
        exact, near = calls[i]
        return observe(Event(call, "run", None, steps[i][0], exact, near)).action is not proceed

    def on_result(i: int) -> int:
        tool, _, _, error = steps[i]
        exact, near = outputs[i]
        kind = result if error is None else failed
        event = Event(kind, "run", None, tool, exact, near, None, error)
        return observe(event).action is not proceed

    return on_call, on_result


def _no_call(_: int) -> int:
    return 0


def _raised(method: Callable[..., Any], error: type[BaseException], *args: Any) -> int:
    """1 when ``method(*args)`` raised ``error`` (a guard that raises on a loop), else 0."""
    try:
        method(*args)
    except error:
        return 1
    return 0


def agentbelt(steps: list[Step]) -> tuple[Feed, Feed]:
    from agentbelt_loop import LoopDetected, LoopDetector

    detector = LoopDetector()

    def on_result(i: int) -> int:  # record(call + its result), then check
        tool, arguments, output, _ = steps[i]
        detector.record("run", tool=tool, args=arguments, result=output)
        return _raised(detector.check, LoopDetected, "run")

    return _no_call, on_result


def agent_loop_guard(steps: list[Step]) -> tuple[Feed, Feed]:
    from loop_guard import Action, LoopGuard

    guard = LoopGuard()
    proceed = Action.CONTINUE

    def on_result(i: int) -> int:
        tool, arguments, output, _ = steps[i]
        return guard.check(tool, arguments, output).action is not proceed

    return _no_call, on_result


def agent_loop_breaker(steps: list[Step]) -> tuple[Feed, Feed]:
    from collections import deque

    from agent_loop_breaker import detect_loop

    # a stateless function over a history the caller keeps: the last window x threshold
    # calls (4 x 3), the fewest that can show a loop to it
    history: deque[dict[str, Any]] = deque(maxlen=12)

    def on_call(i: int) -> int:
        tool, arguments, _, _ = steps[i]
        history.append({"tool": tool, "args": arguments})
        return detect_loop(history).looping

    return on_call, _no_call


def agent_loop_detector(steps: list[Step]) -> tuple[Feed, Feed]:
    from agent_loop_detector import LoopDetector

    detector = LoopDetector()

    def on_call(i: int) -> int:
        tool, arguments, _, _ = steps[i]
        return detector.check(f"{tool} {arguments}") is not None

    def on_result(i: int) -> int:
        return detector.check(steps[i][2]) is not None

    return on_call, on_result


def agent_watchdog(steps: list[Step]) -> tuple[Feed, Feed]:
    from agent_watchdog import AgentWatchdog, WatchdogHalt

    watchdog = AgentWatchdog(timeout_seconds=None)
    watch = watchdog.watch("run")
    watch.__enter__()  # the run stays open while on_result (which holds it) lives

    def on_result(i: int, _watch: Any = watch) -> int:
        tool, arguments, output, _ = steps[i]
        return _raised(watchdog.record_tool_call, WatchdogHalt, tool, arguments, output)

    return _no_call, on_result


def aura_guard(steps: list[Step]) -> tuple[Feed, Feed]:
    from aura_guard import AgentGuard

    # shadow mode: every decision is made and counted, the call is let through (our
    # observe policy's counterpart)
    guard = AgentGuard(shadow_mode=True, secret_key=b"benchmark")

    def on_call(i: int) -> int:
        tool, arguments, _, _ = steps[i]
        before = guard.shadow_would_deny
        guard.check_tool(tool, arguments)
        return guard.shadow_would_deny - before

    def on_result(i: int) -> int:
        _, _, output, error = steps[i]
        if error is None:
            guard.record_result(ok=True, payload=output)
        else:
            guard.record_result(ok=False, error_code=error.type)
        return 0

    return on_call, on_result


def agentloopguard(steps: list[Step]) -> tuple[Feed, Feed]:
    from agentloopguard import LoopDetectedError, LoopGuard

    session = LoopGuard().session()

    def on_result(i: int) -> int:
        tool, arguments, output, _ = steps[i]
        step = {"tool_name": tool, "tool_args": arguments, "output": output}
        return _raised(session.record, LoopDetectedError, step)

    return _no_call, on_result


def agent_patrol(steps: list[Step]) -> tuple[Feed, Feed]:
    from agent_patrol import PatrolMonitor

    monitor = PatrolMonitor()

    def on_result(i: int) -> int:
        tool, arguments, output, _ = steps[i]
        return not monitor.observe(f"{tool}({arguments})", output).is_healthy

    return _no_call, on_result


def agentguard47(steps: list[Step]) -> tuple[Feed, Feed]:
    with isolated_import("agentguard47==2.0.0", "agentguard"):
        from agentguard import FuzzyLoopGuard, LoopDetected, LoopGuard

        exact, fuzzy = LoopGuard(), FuzzyLoopGuard()

    def on_call(i: int) -> int:  # calls only: it has no API for a result
        tool, arguments, _, _ = steps[i]
        flagged = _raised(exact.check, LoopDetected, tool, arguments)
        return _raised(fuzzy.check, LoopDetected, tool, arguments) | flagged

    return on_call, _no_call


def agent_budget_guard(steps: list[Step]) -> tuple[Feed, Feed]:
    with isolated_import("agent-budget-guard-py==0.4.0", "agentguard"):
        from agentguard import Guard

        # on_trip="warn": a trip is recorded and the run goes on (our observe policy)
        guard = Guard(on_trip="warn", use_config=False, use_snapshot=False)

    def on_call(i: int) -> int:
        tool, arguments, _, _ = steps[i]
        with guard.tool(tool, arguments):
            pass
        return 0

    def on_result(i: int) -> int:
        guard.progress(steps[i][2])  # the output as its progress marker
        return 0

    return on_call, on_result


def agentguard_kit(steps: list[Step]) -> tuple[Feed, Feed]:
    with isolated_import("agentguard-kit==0.2.0", "agentguard"):
        from agentguard import Guard

        guard = Guard()
        guard.start()

    def on_call(i: int) -> int:
        tool, arguments, _, _ = steps[i]
        guard.track_step(tool, json.dumps(arguments))
        return guard.should_stop()

    return on_call, _no_call


IMPLEMENTATIONS = [
    Implementation(
        "otel-loopguard Monitor",
        "otel-loopguard",
        "12 detectors: exact and near repeats, cycles, repeated outputs and errors, no "
        "progress, retries, budgets; call and output signatures computed per event",
        ours,
    ),
    Implementation(
        "  the same, signatures computed beforehand",
        "otel-loopguard",
        "Monitor.observe alone (monitor_throughput.py's path): not a like-for-like figure",
        ours_presigned,
    ),
    Implementation(
        "agentbelt-loop (agentbelt-suite)",
        "agentbelt-loop",
        "per call+result: sha256 of JSON of call and result, last 20 per session; repeat "
        "and stagnation by token Jaccard on the tail, cycles of 2-4, known shapes",
        agentbelt,
    ),
    Implementation(
        "agent-loop-guard",
        "agent-loop-guard",
        "per call+result: exact repeat, fuzzy repeat (edit distance of args), cycles of "
        "tool names, output stagnation over the last 10",
        agent_loop_guard,
    ),
    Implementation(
        "agent-loop-breaker-py",
        "agent-loop-breaker-py",
        "per call: a stateless scan for a window of 4 tool names seen 3 times, over the "
        "last 12 calls we keep for it; no arguments, no results",
        agent_loop_breaker,
        reads="names",
    ),
    Implementation(
        "agent-loop-detector",
        "agent-loop-detector",
        "per event: Jaccard similarity of the text with each of the last 10 texts",
        agent_loop_detector,
    ),
    Implementation(
        "agent-watchdog",
        "agent-watchdog",
        "per call+result: md5 of str(args); 3 identical in a row, or a repeating pattern "
        "over the last 8",
        agent_watchdog,
        reads="args",
    ),
    Implementation(
        "aura-guard (shadow mode)",
        "aura-guard",
        "per call: HMAC signatures, repeats, query-token similarity, tool sequences, "
        "per-tool counts, cost; per result: error streaks, result cache, progress",
        aura_guard,
    ),
    Implementation(
        "agentloopguard-sdk",
        "agentloopguard-sdk",
        "per call+result: exact repeat, similarity, cost velocity and oscillation over "
        "the session's history",
        agentloopguard,
    ),
    Implementation(
        "agent-patrol",
        "agent-patrol",
        "per call+result: futile cycles, oscillation, stall, drift and abandonment over "
        "all observations",
        agent_patrol,
    ),
    Implementation(
        "agentguard47 (LoopGuard + FuzzyLoopGuard)",
        "agentguard47",
        "per call only (no result API): exact (tool, args) 3 in a row within 6, same "
        "tool 5 times within 10, A-B alternation",
        agentguard47,
        reads="args",
        own="agentguard47==2.0.0",
    ),
    Implementation(
        "agent-budget-guard-py (Guard)",
        "agent-budget-guard-py",
        "per call: repeat, cycle and similarity (difflib) detectors over the last 12; "
        "per result: the same output N times (no progress)",
        agent_budget_guard,
        own="agent-budget-guard-py==0.4.0",
    ),
    Implementation(
        "agentguard-kit (Guard)",
        "agentguard-kit",
        "per call only: re-reads the whole history each step (repeats, periodic patterns, "
        "waste ratio)",
        agentguard_kit,
        reads="args",
        own="agentguard-kit==0.2.0",
    ),
]

#: candidates looked at and not measured, with why (docs/benchmarks.md has the same list)
NOT_MEASURABLE = {
    "agent-vitals 1.19.0": "its step() takes per-step aggregates (findings, coverage, "
    "tokens), not a tool call and its result",
    "agentcircuit 0.5.0": "loop detection is a decorator over a graph node's state "
    "(Fuse.check against a history the caller keeps), no tool-call API",
    "agentbreaker-sdk 2.1.0": "record_tool_call only appends (its rules run per LLM call, "
    "which prints a line per call), record_tool_result prints each result",
    "deadband-loop-detector 0.1.1": "ships only a darwin-arm64 binary",
}


# ---------------------------------------------------------------------------- measuring


@dataclass
class Measured:
    impl: Implementation
    on_call: Feed
    on_result: Feed
    blocks: list[float] = field(default_factory=list)
    wall: float = 0.0
    cpu: float = 0.0
    events: int = 0
    flagged: int = 0
    stopped: str = ""
    held: dict[int, int] = field(default_factory=dict)
    peak: int = 0


def version_of(impl: Implementation) -> str:
    if impl.own:
        path = str(own_dir(impl.own))
        found = metadata.distributions(name=impl.distribution, path=[path])
        return next((d.version for d in found), "?")
    return metadata.version(impl.distribution)


def feed_block(on_call: Feed, on_result: Feed, first: int, count: int) -> tuple[float, float, int]:
    """Feed events ``first`` .. ``first + count`` (event 2i is step i's call, 2i+1 its
    result); (CPU seconds, wall seconds, loops flagged)."""
    flagged = 0
    wall, begin = time.perf_counter(), CLOCK()
    for event in range(first, first + count):
        step = event >> 1
        flagged += on_result(step) if event & 1 else on_call(step)
    return CLOCK() - begin, time.perf_counter() - wall, flagged


def prepare(impls: list[Implementation], steps: list[Step]) -> list[Measured]:
    """Each implementation made ready, or skipped with one line saying why."""
    ready = []
    failures = {}
    if FAILURES.exists():
        for line in FAILURES.read_text().splitlines():
            requirement, _, reason = line.partition("\t")
            failures[requirement.split("==")[0]] = reason
    for impl in impls:
        if impl.distribution in failures:
            print(f"skipped {impl.name}: not installed ({failures[impl.distribution]})")
            continue
        try:
            impl.version = version_of(impl)
            on_call, on_result = impl.make(steps)
            feed_block(*impl.make(steps), 0, 20)  # it can be driven at all
        except metadata.PackageNotFoundError:
            print(f"skipped {impl.name}: not installed in {sys.prefix}")
            continue
        except Exception as error:  # a peer that cannot be imported or driven is skipped
            print(f"skipped {impl.name}: {type(error).__name__}: {str(error)[:120]}")
            continue
        ready.append(Measured(impl, on_call, on_result))
    return ready


def timed_run(measured: list[Measured], events: int, budget: float) -> None:
    """Every implementation fed block by block, in turn (the order rotating)."""
    for number, first in enumerate(range(0, events, BLOCK)):
        live = [m for m in measured if not m.stopped]
        shift = number % len(live) if live else 0
        for m in live[shift:] + live[:shift]:
            try:
                cpu, wall, flagged = feed_block(m.on_call, m.on_result, first, BLOCK)
            except Exception as error:
                m.stopped = f"broke at event {m.events:,}: {type(error).__name__}: {error}"
                continue
            m.blocks.append(cpu)
            m.cpu += cpu
            m.wall += wall
            m.events += BLOCK
            m.flagged += flagged
            if m.cpu > budget and m.events < events:
                m.stopped = f"over the {budget:.0f} s budget at {m.events:,} events"


def traced_run(m: Measured, steps: list[Step]) -> None:
    """tracemalloc's count of what a fresh instance holds at EARLY and at its last event."""
    gc.collect()
    tracemalloc.start()
    try:
        on_call, on_result = m.impl.make(steps)  # its inputs made ready are not counted
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        done = 0
        for mark in sorted({min(EARLY, m.events), m.events}):
            if mark > done:
                feed_block(on_call, on_result, done, mark - done)
                done = mark
            gc.collect()
            m.held[mark] = tracemalloc.get_traced_memory()[0] - base
        m.peak = tracemalloc.get_traced_memory()[1] - base
        del on_call, on_result
    except Exception as error:
        m.stopped = m.stopped or f"broke while traced: {type(error).__name__}: {error}"
    finally:
        tracemalloc.stop()


def bounded(m: Measured) -> bool | None:
    if len(m.held) < 2 or m.events < 2 * EARLY:
        return None
    early, late = m.held[min(m.held)], m.held[max(m.held)]
    return late <= early * GROWTH_FACTOR + GROWTH_SLACK


# ---------------------------------------------------------------------------- report


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.0f} KiB"


def rate(m: Measured) -> float:
    return BLOCK / statistics.median(m.blocks) if m.blocks else 0.0


def render(measured: list[Measured], events: int) -> str:
    ours_rate = rate(measured[0]) if measured and measured[0].impl.make is ours else 0.0
    header = (
        "implementation",
        "version",
        "reads",
        "events/s (CPU)",
        "µs/event",
        "wall events/s",
        f"held @ {EARLY // 1000}k",
        "held at end",
        "peak",
        "bounded",
        "flagged",
        "ours / it",
    )
    rows = [header]
    for m in measured:
        speed = rate(m)
        flat = bounded(m)
        rows.append(
            (
                m.impl.name,
                m.impl.version,
                m.impl.reads,
                f"{speed:,.0f}",
                f"{1e6 / speed:.1f}" if speed else "-",
                f"{m.events / m.wall:,.0f}" if m.wall else "-",
                _size(m.held.get(min(EARLY, m.events)))
                + ("" if m.events >= EARLY else f" @ {m.events // 1000}k"),
                _size(m.held.get(m.events))
                + ("" if m.events == events else f" @ {m.events // 1000}k"),
                _size(m.peak),
                "?" if flat is None else ("yes" if flat else "NO"),
                f"{m.flagged:,}",
                f"{ours_rate / speed:.2f}x" if speed and ours_rate else "-",
            )
        )
    widths = [max(len(row[c]) for row in rows) for c in range(len(header))]
    lines = []
    for index, row in enumerate(rows):
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def verdict(measured: list[Measured], events: int) -> tuple[bool, str]:
    ours_m = next((m for m in measured if m.impl.make is ours), None)
    if ours_m is None or not ours_m.blocks:
        return False, "MISSED: our Monitor was not measured"
    ours_rate = rate(ours_m)
    peers = [m for m in measured if m.impl.distribution != "otel-loopguard"]
    fair = [m for m in peers if bounded(m) and m.events == events and not m.stopped]
    fastest = max(fair, key=rate, default=None)
    alike = max((m for m in fair if m.impl.reads == "args+out"), key=rate, default=None)
    ahead = fastest is None or ours_rate > rate(fastest)
    met = ours_rate >= TARGET_EVENTS_PER_SECOND and ahead

    def name(peer: Measured | None) -> str:
        return f"{peer.impl.name} {rate(peer):,.0f}/s" if peer else "none measured"

    return met, (
        f"target: ours ≥ {TARGET_EVENTS_PER_SECOND:,} events/s and ahead of every bounded "
        f"peer: ours {ours_rate:,.0f}/s, fastest bounded peer {name(fastest)}: "
        f"{'PASS' if met else 'MISSED'}\n"
        f"   fastest bounded peer reading arguments and outputs: {name(alike)}"
        + (f", ours / it {ours_rate / rate(alike):.2f}x" if alike else "")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="tool events (even)")
    parser.add_argument("--budget", type=float, default=20.0, help="CPU seconds per guard")
    parser.add_argument("--json", action="store_true", help="also print a JSON summary line")
    parser.add_argument("--no-venv", action="store_true", help="run in this interpreter")
    args = parser.parse_args(argv)
    if not args.no_venv:
        reexec_in_venv(sys.argv[1:] if argv is None else argv)
    sys.path.insert(0, str(HERE))
    sys.path.append(str(ROOT))  # an installed (perhaps compiled) package first
    from otel_loopguard import COMPILED

    events = max(2 * EARLY, args.events - args.events % BLOCK)
    steps = build_steps(events // 2)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"python {sys.version.split()[0]} in {sys.prefix}; otel-loopguard "
        f"{'compiled' if COMPILED else 'pure Python'}; load average {load}"
    )
    print(
        f"one run of {events:,} tool events ({events // 2:,} calls, each followed by its "
        f"result) per implementation, blocks of {BLOCK:,} fed to each in turn; CPU time of "
        "this thread, median of blocks"
    )
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    with contextlib.redirect_stdout(io.StringIO()) as chatter:  # peers that print
        measured = prepare(IMPLEMENTATIONS, steps)
    skipped = [line for line in chatter.getvalue().splitlines() if line.startswith("skipped")]
    print("\n".join(skipped) or "every implementation installed and driven")
    started = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()):
        timed_run(measured, events, args.budget)
        for m in measured:
            traced_run(m, steps)
    print(f"measured in {time.monotonic() - started:.0f} s\n")
    print(render(measured, events))
    for m in measured:
        if m.stopped:
            print(f"{m.impl.name}: {m.stopped}")
    for name, why in NOT_MEASURABLE.items():
        print(f"not measurable: {name}: {why}")
    met, line = verdict(measured, events)
    print(line)
    if args.json:
        print(
            json.dumps(
                {
                    "met": met,
                    "events": events,
                    "rows": [
                        {
                            "name": m.impl.name,
                            "version": m.impl.version,
                            "events_per_s": rate(m),
                            "bounded": bounded(m),
                            "events": m.events,
                            "stopped": m.stopped,
                        }
                        for m in measured
                    ],
                }
            )
        )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
