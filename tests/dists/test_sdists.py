"""Each sdist holds what a build from it needs, and its README.

pip builds from the sdist whenever no wheel fits, and PyPI shows the README the metadata
carries: the ``built`` fixture already builds every wheel from its sdist (a file the sdist
lacks is missing from that wheel, which test_wheels sees); these tests check the rest.
"""

from __future__ import annotations

import pytest
from archives import sdist_files, wheel_metadata
from conftest import Built
from distributions import CORE, NATIVE_SOURCES, PROJECTS, ROOT, Project

by_name = pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)


@by_name
def test_the_sdist_holds_pyproject_readme_and_every_package_file(
    project: Project, built: dict[str, Built]
) -> None:
    result = built[project.name].require()
    files = sdist_files(result.sdist)
    assert "pyproject.toml" in files
    assert "PKG-INFO" in files
    readme = project.pyproject["project"].get("readme")
    assert readme, f"{project.name}: pyproject.toml names no readme (PyPI shows an empty page)"
    assert readme in files
    assert "LICENSE" in files, f"{project.name}: the sdist lacks the license text"
    for package_dir in project.package_dirs:
        source = package_dir.relative_to(project.directory).as_posix()
        assert f"{source}/__init__.py" in files
        assert f"{source}/py.typed" in files


def test_the_core_sdist_can_build_the_compiled_wheel(built: dict[str, Built]) -> None:
    """The compiled wheel is built from the sdist too: the native modules' hook and C
    sources must be in it (the mypyc hook's modules are the package's .py files)."""
    files = sdist_files(built[CORE.name].require().sdist)
    assert "hatch_build.py" in files
    assert "otel_loopguard/engine/_native_signatures.c" in NATIVE_SOURCES
    assert sorted(set(NATIVE_SOURCES) - files) == []


def test_the_core_sdist_holds_no_instrumentation_file(built: dict[str, Built]) -> None:
    """The framework packages are distributions of their own; the core's sdist (built from
    the repository's root) must not carry their files or their test support."""
    files = sdist_files(built[CORE.name].require().sdist)
    assert sorted(name for name in files if name.startswith("instrumentation/")) == []


def test_the_test_helpers_are_neither_shipped_nor_in_the_core_sdist(
    built: dict[str, Built],
) -> None:
    """The suites' test helpers (``testing/otel-loopguard-testing/``) are a distribution the
    suite runner installs, not one users get: not built here, not in the core's sdist."""
    testing = ROOT / "testing"
    assert (testing / "otel-loopguard-testing" / "pyproject.toml").is_file()
    assert [p.name for p in PROJECTS if testing in p.directory.parents] == []
    files = sdist_files(built[CORE.name].require().sdist)
    assert sorted(name for name in files if name.startswith("testing/")) == []


@by_name
def test_the_readme_is_the_long_description(project: Project, built: dict[str, Built]) -> None:
    metadata = wheel_metadata(built[project.name].require().wheel)
    readme = project.pyproject["project"].get("readme")
    assert readme, f"{project.name}: pyproject.toml names no readme"
    assert metadata["Description-Content-Type"] == "text/markdown"
    body = metadata.get_payload()
    assert body.strip() == (project.directory / readme).read_text("utf-8").strip()
