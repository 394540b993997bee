"""Our framework packages' entry points have names of their own (issue 17, point 6).

Third-party instrumentors register under the bare framework name (``langchain``,
``openai``, ``openai_agents``, ``agno``); ``opentelemetry-instrument`` disables by entry point
name, so one shared name would make ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=langchain`` turn
off both. Ours are ``loopguard_<framework>``, the core's is ``loopguard``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(p.parent for p in (ROOT / "instrumentation").glob("*/pyproject.toml"))


def _instrumentor_names(pyproject: Path) -> list[str]:
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return list(data["project"]["entry-points"]["opentelemetry_instrumentor"])


def test_the_core_keeps_the_loopguard_name() -> None:
    assert _instrumentor_names(ROOT / "pyproject.toml") == ["loopguard"]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_each_framework_package_is_loopguard_framework(package: Path) -> None:
    assert _instrumentor_names(package / "pyproject.toml") == [f"loopguard_{package.name}"]
    readme = (package / "README.md").read_text(encoding="utf-8")
    assert f"the `loopguard_{package.name}` entry point" in readme


def test_every_framework_package_is_checked() -> None:
    assert len(PACKAGES) >= 14
