"""The compiled build: the modules pyproject's mypyc hook lists are the extension modules
users get, and they behave as the Python source does (the rest of the suite runs on both).

The ``compiled`` suite of ``scripts/run_tests.py`` installs the wheel built with the hook
and sets ``LOOPGUARD_EXPECT_COMPILED=1``; the ``core`` suite runs on the source.
"""

from __future__ import annotations

import importlib
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

import otel_loopguard
from otel_loopguard.config import LoopGuardConfig
from otel_loopguard.detectors.base import build_default_detectors
from otel_loopguard.detectors.repetition import RepetitionDetector
from otel_loopguard.events import tool_call
from otel_loopguard.monitor import Monitor

ROOT = Path(__file__).resolve().parent.parent
EXPECT_COMPILED = os.environ.get("LOOPGUARD_EXPECT_COMPILED") == "1"


def _hook_modules() -> list[str]:
    """Module names the mypyc hook compiles, read from pyproject.toml."""
    if sys.version_info < (3, 11):
        pytest.skip("tomllib is Python 3.11+")
    import tomllib

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
        "otel_loopguard.monitor",
        "otel_loopguard.signatures",
        "otel_loopguard.span_mapping",
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
