"""The compiled build: the modules pyproject's mypyc hook lists are the extension modules
users get, and they behave as the Python source does (the rest of the suite runs on both).

The ``compiled`` suite of ``scripts/run_tests.py`` installs the wheel built with the hook
and sets ``LOOPGUARD_EXPECT_COMPILED=1``; the ``core`` suite runs on the source.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import types
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

import otel_loopguard
from otel_loopguard.analyze.replay import RunRecord
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.detectors.base import build_default_detectors
from otel_loopguard.engine.detectors.budget import BudgetState
from otel_loopguard.engine.detectors.budget_proximity import ProximityState
from otel_loopguard.engine.detectors.counters import RunCounters
from otel_loopguard.engine.detectors.premature_end import PrematureEndState
from otel_loopguard.engine.detectors.read_only_loop import ReadOnlyState
from otel_loopguard.engine.detectors.repetition import RepetitionDetector
from otel_loopguard.engine.detectors.shell_failure import ShellFailureState
from otel_loopguard.engine.detectors.truncation import TruncationState
from otel_loopguard.engine.events import Event, tool_call
from otel_loopguard.engine.monitor import Monitor
from otel_loopguard.engine.policy import PolicyInput
from otel_loopguard.spans.follower import OpenAgent, RunStart, SpanEnd
from otel_loopguard.spans.view import SpanView

ROOT = Path(__file__).resolve().parent.parent
EXPECT_COMPILED = os.environ.get("LOOPGUARD_EXPECT_COMPILED") == "1"


def _hook_modules() -> list[str]:
    """Module names the mypyc hook compiles, read from pyproject.toml."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the same parser, published as tomli
        import tomli as tomllib

    hook = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]
    hook = hook["build"]["targets"]["wheel"]["hooks"]["mypyc"]
    excluded = {ROOT / path for path in hook["exclude"]}
    files: list[Path] = []
    for entry in hook["include"]:
        path = ROOT / entry
        files.extend(sorted(path.glob("*.py")) if path.is_dir() else [path])
    return [
        ".".join(file.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for file in files
        if file not in excluded
    ]


def test_the_hook_compiles_the_hot_path_modules() -> None:
    modules = _hook_modules()
    for hot in (
        "otel_loopguard.engine.monitor",
        "otel_loopguard.engine.signatures",
        "otel_loopguard.spans.classify",
        "otel_loopguard.spans.events",
    ):
        assert hot in modules


def test_the_build_is_the_one_the_suite_installed() -> None:
    """Compiled suite: every listed module is an extension module; source suite: none is."""
    suffixes = tuple(EXTENSION_SUFFIXES)
    compiled = {
        name: (importlib.import_module(name).__file__ or "").endswith(suffixes)
        for name in _hook_modules()
    }
    assert compiled == dict.fromkeys(compiled, EXPECT_COMPILED)
    assert otel_loopguard.COMPILED is EXPECT_COMPILED


def test_a_built_in_detector_can_be_subclassed_in_python() -> None:
    """Users tune a built-in detector by subclassing it, compiled build or not."""

    class Quieter(RepetitionDetector):
        def observe(self, event, state, counters):  # type: ignore[no-untyped-def]
            signal = super().observe(event, state, counters)
            return None if signal is not None and signal.risk < 0.99 else signal

    config = LoopGuardConfig(repetition_threshold=2)
    detectors = [
        Quieter(config) if d.name == "repetition" else d for d in build_default_detectors(config)
    ]
    fired: dict[str, set[str]] = {}
    for label, monitor in (
        ("loud", Monitor(config)),
        ("quiet", Monitor(config, detectors=detectors)),
    ):
        fired[label] = set()
        for _ in range(3):
            fired[label].update(monitor.observe(tool_call("r", "search", {"q": "same"})).detectors)
    assert "repetition" in fired["loud"]
    assert "repetition" not in fired["quiet"]
    assert Quieter.name == "repetition"  # a class attribute, as on the source build


# Made per span, per event or per run: their ``__init__`` is written out, because the one
# ``dataclass`` generates stays interpreted bytecode in the compiled build (about ten times
# the cost of a compiled one for Event's 21 fields).
WRITTEN_OUT_INIT = (
    Event,
    SpanView,
    PolicyInput,
    RunCounters,
    BudgetState,
    ProximityState,
    PrematureEndState,
    ReadOnlyState,
    ShellFailureState,
    TruncationState,
    RunRecord,
    OpenAgent,
    RunStart,
    SpanEnd,
)


@pytest.mark.skipif(
    EXPECT_COMPILED,
    reason="a property of the source, checked on it: compiled classes reject the sentinels",
)
@pytest.mark.parametrize("cls", WRITTEN_OUT_INIT, ids=lambda cls: cls.__name__)
def test_a_written_out_init_matches_the_fields(cls: type) -> None:
    """Each field is a parameter of the same name, in field order, with the field's default
    (a fresh container where the field has a factory): positional and keyword construction
    agree, and omitted arguments give what the dataclass default would."""
    fields = dataclasses.fields(cls)
    values = [object() for _ in fields]
    by_keyword = cls(**{f.name: v for f, v in zip(fields, values, strict=True)})
    by_position = cls(*values)
    for field, value in zip(fields, values, strict=True):
        assert getattr(by_keyword, field.name) is value
        assert getattr(by_position, field.name) is value
    required = [f for f in fields if f.default is dataclasses.MISSING and not _has_factory(f)]
    minimal = cls(*values[: len(required)])
    for field in fields[len(required) :]:
        got = getattr(minimal, field.name)
        if _has_factory(field):
            assert got == field.default_factory()  # type: ignore[misc]
            assert got is not getattr(cls(*values[: len(required)]), field.name)  # fresh
        else:
            assert got == field.default


@pytest.mark.parametrize("cls", WRITTEN_OUT_INIT, ids=lambda cls: cls.__name__)
def test_the_compiled_build_compiles_the_written_out_init(cls: type) -> None:
    init = cls.__dict__["__init__"]
    assert isinstance(init, types.FunctionType) is not EXPECT_COMPILED


def _has_factory(field: dataclasses.Field) -> bool:  # type: ignore[type-arg]
    return field.default_factory is not dataclasses.MISSING


def test_loop_guard_interrupt_can_be_subclassed_with_a_second_base() -> None:
    """Framework packages derive interrupts their runtime lets through (llamaindex fails a
    workflow step only on an ``Exception``); the compiled build must not reject them."""
    from otel_loopguard import Action, Decision, LoopGuardInterrupt

    class WorkflowInterrupt(LoopGuardInterrupt, Exception):
        pass

    decision = Decision(Action.STOP, run_id="run-1")
    with pytest.raises(LoopGuardInterrupt) as raised:
        raise WorkflowInterrupt(decision, "stopped for the workflow")
    assert raised.value.decision is decision
    assert isinstance(raised.value, Exception)
    assert str(raised.value) == "stopped for the workflow"
    assert "run-1" in str(LoopGuardInterrupt(decision))
