"""All the wheels installed into one fresh venv, with no agent framework: every entry point
resolves, versions agree, and each instrumentor tells `opentelemetry-instrument` which
framework it needs (so it is skipped, not loaded, where that framework is missing)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Venv, explain
from distributions import CORE, INSTRUMENTATIONS, PROJECTS
from packaging.requirements import Requirement

PROBE = Path(__file__).with_name("probe.py")


@pytest.fixture(scope="module")
def seen(installed: Venv) -> dict[str, Any]:
    done = installed.run(installed.python, PROBE, *(project.name for project in PROJECTS))
    assert done.returncode == 0, explain(done)
    return json.loads(done.stdout)


def test_every_distribution_is_installed_from_its_wheel(
    seen: dict[str, Any], installed: Venv
) -> None:
    assert sorted(seen["distributions"]) == sorted(p.name for p in installed.projects)
    for project in installed.projects:
        packages = seen["distributions"][project.name]["packages"]
        assert sorted(packages) == sorted(path.name for path in project.package_dirs)
        for package in packages.values():
            assert "error" not in package, package.get("error")
            # from the venv's site-packages, not from the source tree
            assert Path(package["file"]).resolve().is_relative_to(installed.path.resolve())


def test_the_package_version_is_the_distribution_version(
    seen: dict[str, Any], installed: Venv
) -> None:
    """``__version__`` (what the instrumentors report as their scope version) agrees with
    the metadata pip shows: two places to bump, one test that notices."""
    for project in installed.projects:
        info = seen["distributions"][project.name]
        assert info["version"] == project.version
        for name, package in info["packages"].items():
            assert package["version"] == info["version"], f"{name}.__version__"


def test_every_declared_entry_point_is_installed_and_loads(
    seen: dict[str, Any], installed: Venv
) -> None:
    installed_points = {
        (point["dist"], point["group"], point["name"]): point for point in seen["entry_points"]
    }
    declared = {
        (project.name, group, name): value
        for project in installed.projects
        for group, names in project.entry_points().items()
        for name, value in names.items()
    }
    assert sorted(installed_points) == sorted(declared)
    for key, value in declared.items():
        point = installed_points[key]
        assert point["value"] == value
        assert "error" not in point, f"{key} does not load:\n{point['error']}"


def test_the_core_provides_the_loopguard_instrumentor_and_its_variables(
    seen: dict[str, Any],
) -> None:
    points = {(p["group"], p["name"]): p for p in seen["entry_points"] if p["dist"] == CORE.name}
    loopguard = points["opentelemetry_instrumentor", "loopguard"]
    assert "error" not in loopguard, loopguard["error"]
    assert loopguard["is_instrumentor"] and loopguard["loaded"] == "LoopGuardInstrumentor"
    # no framework to wait for: opentelemetry-instrument always loads the core's processor
    assert loopguard["conflict"] is None
    assert points["opentelemetry_environment_variables", "loopguard"]["loaded"] == (
        "otel_loopguard.environment_variables"
    )
    assert points["console_scripts", "otel-loopguard"]["loaded"] == "main"


@pytest.mark.parametrize("project", INSTRUMENTATIONS, ids=lambda p: p.name)
def test_an_instrumentor_without_its_framework_is_skipped_not_loaded(
    project: Any, seen: dict[str, Any], installed: Venv
) -> None:
    installed.require(project)
    (point,) = [
        p
        for p in seen["entry_points"]
        if p["dist"] == project.name and p["group"] == "opentelemetry_instrumentor"
    ]
    assert "error" not in point, point["error"]
    assert point["is_instrumentor"]
    # what BaseInstrumentor.instrument() checks is what the instruments extra declares
    declared = {str(Requirement(text)) for text in project.instruments}
    assert {str(Requirement(text)) for text in point["instruments"]} == declared
    # the framework is absent here, and opentelemetry-instrument sees that from the metadata
    assert point["conflict"], "opentelemetry-instrument would load it with no framework"
    for requirement in project.instruments:
        assert Requirement(requirement).name in point["conflict"]


def test_every_core_module_imports_with_only_the_declared_dependencies(
    seen: dict[str, Any],
) -> None:
    """A core module importing a package the core does not depend on works in the test
    venvs (they install extras) and fails for users."""
    assert len(seen["core_modules"]) > 20
    broken = {name: error for name, error in seen["core_modules"].items() if error != "ok"}
    assert broken == {}
