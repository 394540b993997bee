"""Each wheel holds what its source package has, and says what it is.

A module left out of a wheel, a missing ``py.typed`` (type checkers then ignore every hint),
a file that belongs to no package (a stray compiled module), or metadata without the
license or ``Requires-Python`` reach users only through the built wheel: the editable
installs every other suite uses cannot show them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from archives import wheel_files, wheel_member, wheel_metadata, wheel_text
from conftest import Built
from distributions import CORE, INSTRUMENTATIONS, PROJECTS, Project
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

#: not source: bytecode (.gitignore keeps it out of every build), and what an in-place mypyc
#: build leaves in the tree (a pure wheel that shipped it would break on other platforms)
_NOT_SHIPPED = ("__pycache__", "build")
_NOT_SHIPPED_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd", ".c", ".o")

by_name = pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
instrumentations = pytest.mark.parametrize("project", INSTRUMENTATIONS, ids=lambda p: p.name)


def source_files(package_dir: Path) -> set[str]:
    """The package's files as wheel paths (``pkg/sub/mod.py``)."""
    return {
        path.relative_to(package_dir.parent).as_posix()
        for path in package_dir.rglob("*")
        if path.is_file()
        and not any(part in _NOT_SHIPPED for part in path.parts)
        and path.suffix not in _NOT_SHIPPED_SUFFIXES
    }


@by_name
def test_the_wheel_holds_every_file_of_its_packages_and_nothing_else(
    project: Project, built: dict[str, Built]
) -> None:
    shipped = wheel_files(built[project.name].require().wheel)
    outside_metadata = {n for n in shipped if not n.split("/", 1)[0].endswith(".dist-info")}
    expected: set[str] = set()
    for package_dir in project.package_dirs:
        expected |= source_files(package_dir)
    assert expected, f"{project.name}: no source files found under {project.package_dirs}"
    assert sorted(expected - outside_metadata) == [], "source files missing from the wheel"
    assert sorted(outside_metadata - expected) == [], "wheel files that are not source files"


@by_name
def test_every_package_in_the_wheel_is_marked_typed(
    project: Project, built: dict[str, Built]
) -> None:
    shipped = wheel_files(built[project.name].require().wheel)
    for package_dir in project.package_dirs:
        assert f"{package_dir.name}/py.typed" in shipped
        assert f"{package_dir.name}/__init__.py" in shipped


@by_name
def test_metadata_names_version_license_and_python(
    project: Project, built: dict[str, Built]
) -> None:
    wheel = built[project.name].require().wheel
    metadata = wheel_metadata(wheel)
    assert metadata["Name"] == project.name
    assert metadata["Version"] == project.version
    assert wheel.name.startswith(f"{project.wheel_filename_prefix()}-{project.version}-")
    # PEP 639: an SPDX expression (License-Expression), or the older License field
    assert (metadata["License-Expression"] or metadata["License"]) == project.license
    assert SpecifierSet(metadata["Requires-Python"]) == SpecifierSet(project.requires_python)
    assert metadata["Summary"]


@by_name
def test_the_wheel_carries_the_license_text(project: Project, built: dict[str, Built]) -> None:
    """Apache-2.0 asks that every copy carries the license: the name in the metadata is
    not enough, the text must be in the wheel (PEP 639: ``.dist-info/licenses/``)."""
    wheel = built[project.name].require().wheel
    assert wheel_metadata(wheel).get_all("License-File") == ["LICENSE"]
    text = wheel_text(wheel, "licenses/LICENSE")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert text == (project.directory / "LICENSE").read_text("utf-8")


@instrumentations
def test_an_instrumentation_supports_no_python_its_core_does_not(
    project: Project, built: dict[str, Built]
) -> None:
    """pip would install the framework package on a Python where its core refuses to."""
    core = SpecifierSet(wheel_metadata(built[CORE.name].require().wheel)["Requires-Python"])
    own = SpecifierSet(wheel_metadata(built[project.name].require().wheel)["Requires-Python"])
    # the oldest Python (major.minor) each allows, from 3.0 on
    candidates = [Version(f"3.{minor}") for minor in range(0, 40)]
    assert min(v for v in candidates if v in own) >= min(v for v in candidates if v in core)


def declared_frameworks(project: Project, wheel: Path) -> dict[str, set[str]]:
    """The frameworks the shipped ``package.py`` declares, by the extra that must install
    them: ``_instruments`` (what ``instrumentation_dependencies()`` returns) under
    ``instruments``, each optional ``_supports_<extra>`` under ``<extra>``."""
    (package_dir,) = project.package_dirs
    source = wheel_member(wheel, f"{package_dir.name}/package.py")
    declared: dict[str, set[str]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        extra = "instruments" if name == "_instruments" else name.removeprefix("_supports_")
        if name == "_instruments" or name.startswith("_supports_"):
            declared[extra] = {str(Requirement(text)) for text in ast.literal_eval(node.value)}
    return declared


@instrumentations
def test_an_instrumentation_declares_its_instruments_extra_and_its_core(
    project: Project, built: dict[str, Built]
) -> None:
    """Each extra installs the frameworks ``package.py`` says the package instruments.

    ``opentelemetry-instrument`` loads an instrumentor only when every requirement of its
    ``instruments`` extra is installed (it reads the installed metadata, and says so only
    at debug level): that extra is exactly ``_instruments``, which a manual
    ``instrument()`` checks, and a framework instrumented only when present has an extra
    of its own (``[instruments,langgraph]``), so the loader never waits for it."""
    wheel = built[project.name].require().wheel
    metadata = wheel_metadata(wheel)
    requirements = [Requirement(text) for text in metadata.get_all("Requires-Dist", [])]
    declared = declared_frameworks(project, wheel)
    assert declared.get("instruments"), "package.py declares no _instruments"
    for extra, frameworks in declared.items():
        assert extra in metadata.get_all("Provides-Extra", []), f"no [{extra}] extra"
        installed = {
            str(Requirement(f"{req.name}{req.specifier}"))
            for req in requirements
            if req.marker and req.marker.evaluate({"extra": extra})
        }
        assert installed == frameworks, f"[{extra}] installs {installed}, not {frameworks}"
    assert CORE.name in {req.name for req in requirements if not req.marker}


@by_name
def test_entry_points_txt_matches_the_pyproject(project: Project, built: dict[str, Built]) -> None:
    declared = project.entry_points()
    assert declared, f"{project.name} declares no entry point"
    text = wheel_text(built[project.name].require().wheel, "entry_points.txt")
    shipped: dict[str, dict[str, str]] = {}
    group = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1]
            shipped[group] = {}
        elif "=" in line:
            name, value = (part.strip() for part in line.split("=", 1))
            shipped[group][name] = value
    assert shipped == declared
    if not project.is_core:
        assert list(shipped) == ["opentelemetry_instrumentor"]
