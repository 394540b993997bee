"""The ``otel-loopguard`` command's own options and help, as a user runs them."""

from __future__ import annotations

import subprocess
import sys

import otel_loopguard


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "otel_loopguard.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_version_prints_the_version() -> None:
    result = cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"otel-loopguard {otel_loopguard.__version__}"


def test_help_texts_are_plain_text() -> None:
    """argparse prints descriptions as written: no reST markup (````otel-loopguard demo````)."""
    for args in (("--help",), ("demo", "--help"), ("analyze", "--help")):
        result = cli(*args)
        assert result.returncode == 0, result.stderr
        for markup in ("``", ":func:", ":class:", ":data:"):
            assert markup not in result.stdout, (args, result.stdout)
    assert "--keep-exporting" in cli("demo", "--help").stdout
