"""The native table moves (``engine/detectors/_native_table.c``, the compiled build only)
answer exactly as ``FingerprintTable``'s Python bodies do, or not at all.

``get``, ``bump``, ``insert`` and ``update`` ask the C function first and run their own
Python body when it answers NotImplemented. Here twin tables take the same long random
sequences of operations, one with the native functions and one with them switched off (the
module globals set to None, as the pure build has them): every answer and every byte of the
two buffers must agree after every operation, for each value format the detectors use, at
several capacities, with keys that collide in their sets and evict each other. Outside the
plain case (a value or key out of range, a value that is not an int) the native side must
leave the table alone and the Python body raise as it always did. The compiled suite
(``LOOPGUARD_EXPECT_COMPILED=1``) requires the module; the source suites have none and
skip what needs it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import random
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.detectors import fingerprint_table
from otel_loopguard.engine.detectors.fingerprint_table import FingerprintTable
from otel_loopguard.engine.events import tool_call, tool_error, tool_result
from otel_loopguard.engine.monitor import Monitor

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

EXPECT_COMPILED = os.environ.get("LOOPGUARD_EXPECT_COMPILED") == "1"
NATIVES = ("_native_get", "_native_bump", "_native_insert", "_native_update")
#: the value formats the detectors' tables use, and one with every code
FORMATS = ("H", "IHI", "IHII", "HIIQ", "QIH")
CAPACITIES = (1, 8, 24, 256)


def _native_module() -> Any:
    try:
        return importlib.import_module("otel_loopguard.engine.detectors._native_table")
    except ImportError:
        return None


NATIVE = _native_module()
needs_native = pytest.mark.skipif(NATIVE is None, reason="the native module is not built here")


@contextlib.contextmanager
def python_only() -> Iterator[None]:
    """The tables' Python bodies alone, as in the pure build."""
    saved = {name: getattr(fingerprint_table, name) for name in NATIVES}
    for name in NATIVES:
        setattr(fingerprint_table, name, None)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(fingerprint_table, name, value)


def test_the_compiled_build_has_the_native_table() -> None:
    if not EXPECT_COMPILED:
        pytest.skip("the source suites run the Python bodies only")
    assert NATIVE is not None, "the compiled wheel lacks engine/detectors/_native_table"
    assert all(getattr(fingerprint_table, name) is not None for name in NATIVES)


def _field_max(code: str) -> int:
    return (1 << (8 * struct.calcsize("<" + code))) - 1


def _values(rng: random.Random, value_format: str) -> tuple[int, ...]:
    """Values in range: often small, sometimes at a field's limit."""
    return tuple(
        rng.choice((0, 1, rng.randrange(1000), _field_max(code), rng.randrange(_field_max(code))))
        for code in value_format
    )


def _operation(
    table: FingerprintTable, name: str, key: int, values: tuple[int, ...]
) -> tuple[str, Any]:
    """What the operation answered, or the type of what it raised."""
    try:
        if name == "get":
            return "ok", table.get(key)
        if name == "bump":
            return "ok", table.bump(key)
        if name == "put":
            return "ok", table.put(key, *values)
        if name == "pop":
            return "ok", table.pop(key)
        return "ok", getattr(table, name)(key, *values)
    except Exception as exc:  # the type is what is compared
        return "raised", type(exc)


@pytest.mark.parametrize("value_format", FORMATS)
@pytest.mark.parametrize("capacity", CAPACITIES)
def test_random_operations_leave_the_same_bytes_and_answers(
    value_format: str, capacity: int
) -> None:
    rng = random.Random(f"{value_format}/{capacity}")
    fast = FingerprintTable(capacity, value_format)
    with python_only():
        slow = FingerprintTable(capacity, value_format)
    # few enough keys to hit, many enough to evict; 0 and the top too
    keys = [0, 1, 0xFFFFFFFF, *(rng.randrange(1, 1 << 32) for _ in range(3 * capacity + 5))]
    names = ["get", "insert", "update", "put", "pop"]
    if value_format == "H":
        names += ["bump"] * 4
    for step in range(3000):
        name = rng.choice(names)
        key = rng.choice(keys)
        values = _values(rng, value_format)
        answer = _operation(fast, name, key, values)
        with python_only():
            expected = _operation(slow, name, key, values)
        assert answer == expected, (step, name, key, values)
        assert fast._buffer == slow._buffer, (step, name, key, values)
    assert len(fast) > 0


@pytest.mark.parametrize(
    ("name", "key", "values"),
    [
        ("insert", 7, (70_000,)),  # over an "H" field
        ("insert", 7, (-1,)),
        ("insert", 7, (1.5,)),
        ("update", 7, (1 << 16,)),
        ("insert", 1 << 32, (1,)),  # a key over 32 bits
        ("insert", -3, (1,)),
        ("get", -3, ()),
        ("bump", 1 << 40, ()),
        ("update", 1 << 40, (3,)),  # update never packs the key: Python takes it
    ],
)
def test_outside_the_plain_case_the_python_body_answers(
    name: str, key: int, values: tuple[Any, ...]
) -> None:
    fast = FingerprintTable(16, "H")
    fast.bump(7)
    with python_only():
        slow = FingerprintTable(16, "H")
        slow.bump(7)
        expected = _operation(slow, name, key, values)
    assert _operation(fast, name, key, values) == expected
    assert fast._buffer == slow._buffer


@needs_native
def test_the_native_functions_answer_the_plain_case() -> None:
    """Not a silent fallback: each function itself answers an in-range call."""
    table = FingerprintTable(16, "IHI")
    parts = (table._buffer, 5, table._sets, table._span, table._codes)
    assert NATIVE.get(*parts) is None
    assert NATIVE.insert(*parts, (1, 2, 3)) is None
    assert NATIVE.get(*parts) == (1, 2, 3)
    assert NATIVE.update(*parts, (4, 5, 6)) is None
    assert table.get(5) == (4, 5, 6)
    counts = FingerprintTable(16, "H")
    bump_parts = (counts._buffer, 9, counts._sets, counts._span, counts._codes)
    assert [NATIVE.bump(*bump_parts, 0xFFFF) for _ in range(3)] == [1, 2, 3]
    assert NATIVE.get(*parts[:4], b"IHX") is NotImplemented
    assert NATIVE.get(bytes(parts[0]), *parts[1:]) is NotImplemented


def _decisions(steps: list[Any]) -> list[tuple[str, float, tuple[str, ...]]]:
    """Each event's action, risk and the signals behind it, for the benchmark's tool calls."""
    monitor = Monitor(LoopGuardConfig(policy="observe"))
    seen = []
    for tool, arguments, output, error in steps:
        for event in (
            tool_call("run", tool, arguments),
            tool_result("run", tool, output) if error is None else tool_error("run", tool, error),
        ):
            decision = monitor.observe(event)
            signals = tuple(f"{s.detector}/{s.kind}" for s in decision.reasons)
            seen.append((decision.action.value, decision.risk, signals))
    return seen


def test_the_monitor_decides_the_same_with_and_without_the_native_table() -> None:
    """What a user would notice: the same warnings and stops at the same events."""
    import peer_monitors

    steps = peer_monitors.build_steps(4000, seed=11)
    native = _decisions(steps)
    with python_only():
        python = _decisions(steps)
    assert native == python
    assert any(signals for _, _, signals in native)
