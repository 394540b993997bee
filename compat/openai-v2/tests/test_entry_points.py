"""Ours and theirs have entry points of their own (issue 17, point 6): the official
instrumentor is ``openai``, ours ``loopguard_openai``, so ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS``
turns off the one it names under the real ``opentelemetry-instrument``."""

from __future__ import annotations

from pathlib import Path

import pytest
from otel_loopguard_testing.instrument_runner import (
    program_outcome,
    run_under_opentelemetry_instrument,
)

APP = Path(__file__).parent / "apps" / "instrumentors.py"


@pytest.mark.parametrize(
    ("disabled", "expected"),
    [
        ("", {"ours": True, "theirs": True}),
        ("openai", {"ours": True, "theirs": False}),
        ("loopguard_openai", {"ours": False, "theirs": True}),
    ],
)
def test_disabling_one_leaves_the_other(disabled: str, expected: dict) -> None:
    completed = run_under_opentelemetry_instrument(
        APP, env={"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": disabled}
    )
    assert program_outcome(completed) == expected
