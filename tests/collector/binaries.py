"""The Go programs the Collector tests run, built by the repository's own scripts.

``scripts/build-collector.sh`` and ``scripts/build-jaeger.sh`` build into ``.build/`` and
reuse a build of the same inputs, so a test session pays only for what changed; when
``scripts/test.sh`` already started them in the background, the scripts' lock makes this
wait for that build instead of starting a second one. Under CI (``CI=true``) a missing Go
toolchain or a failed build fails the tests: a skip there would hide a broken setup.
Elsewhere a missing toolchain skips them, saying what to install.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: a fresh machine builds the Jaeger binary in about ten minutes, two cores shared
BUILD_TIMEOUT = 45 * 60
#: the build script's exit status when there is no ``go`` command
NO_TOOLCHAIN = 3


def under_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def built(script: str) -> Path:
    """Run ``scripts/<script>`` and return the binary it printed last; skip or fail (CI)
    when it cannot."""
    try:
        done = subprocess.run(
            ["bash", str(ROOT / "scripts" / script)],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"scripts/{script} took more than {BUILD_TIMEOUT // 60} minutes")
    if done.returncode == NO_TOOLCHAIN:
        message = done.stderr.strip().splitlines()[-1]
        if under_ci():
            pytest.fail(f"CI needs the Go toolchain for the Collector tests: {message}")
        pytest.skip(message)
    if done.returncode != 0:
        pytest.fail(f"scripts/{script} failed:\n{done.stderr[-4000:]}")
    binary = Path(done.stdout.strip().splitlines()[-1])
    assert binary.is_file() and os.access(binary, os.X_OK), binary
    return binary
