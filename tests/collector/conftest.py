"""Fixtures of the Collector suite: the built Collector and Jaeger binaries, once per
session (see binaries.py for when they skip and when they fail)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .binaries import built

# the viewing tests reuse the dashboard checks of tests/viewing/ (modules imported by name)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viewing"))


@pytest.fixture(scope="session")
def collector_binary() -> Path:
    return built("build-collector.sh")


@pytest.fixture(scope="session")
def jaeger_binary() -> Path:
    return built("build-jaeger.sh")
