"""The repository's distributions as their pyproject.toml files declare them.

What a test expects of a built wheel or sdist is read from here, never written down twice:
a new ``instrumentation/<framework>/`` package is checked as soon as it exists.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: tomli is the same parser
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
#: the C sources hatch_build.py compiles into the compiled wheel (and only there)
NATIVE_SOURCES = sorted(
    path.relative_to(ROOT).as_posix() for path in (ROOT / "otel_loopguard").rglob("*.c")
)


def native_module(source: str) -> str:
    """A C source's module name: otel_loopguard/engine/_native_signatures.c ->
    otel_loopguard.engine._native_signatures."""
    return source.removesuffix(".c").replace("/", ".")


@dataclass(frozen=True)
class Project:
    directory: Path
    pyproject: dict[str, Any]

    @property
    def name(self) -> str:
        return self.pyproject["project"]["name"]

    @property
    def is_core(self) -> bool:
        return self.directory == ROOT

    @property
    def package_dirs(self) -> list[Path]:
        """The import packages the wheel ships (hatch's ``packages``), in the source tree."""
        packages = self.pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
        return [self.directory / package for package in packages]

    @property
    def version(self) -> str:
        """The version the source declares: static, or hatch's ``__version__`` file."""
        project = self.pyproject["project"]
        if "version" not in project.get("dynamic", []):
            return project["version"]
        path = self.directory / self.pyproject["tool"]["hatch"]["version"]["path"]
        found = re.search(r"""__version__\s*=\s*["']([^"']+)["']""", path.read_text())
        assert found, f"no __version__ in {path}"
        return found.group(1)

    @property
    def requires_python(self) -> str:
        return self.pyproject["project"]["requires-python"]

    @property
    def license(self) -> str:
        return self.pyproject["project"]["license"]

    @property
    def instruments(self) -> list[str]:
        return self.pyproject["project"].get("optional-dependencies", {}).get("instruments", [])

    def entry_points(self) -> dict[str, dict[str, str]]:
        """``{group: {name: "module:object"}}``, console scripts included."""
        project = self.pyproject["project"]
        groups = {group: dict(names) for group, names in project.get("entry-points", {}).items()}
        if project.get("scripts"):
            groups["console_scripts"] = dict(project["scripts"])
        return groups

    def wheel_filename_prefix(self) -> str:
        return re.sub(r"[-_.]+", "_", self.name).lower()


def discover() -> list[Project]:
    """The core, then each ``instrumentation/<framework>/`` with a pyproject.toml. Not the
    suites' test helpers (``testing/otel-loopguard-testing/``): a distribution that is never
    shipped, installed editable by ``scripts/run_tests.py`` only."""
    found = [ROOT / "pyproject.toml"]
    found += sorted((ROOT / "instrumentation").glob("*/pyproject.toml"))
    return [Project(path.parent, tomllib.loads(path.read_text("utf-8"))) for path in found]


PROJECTS = discover()
CORE = next(project for project in PROJECTS if project.is_core)
INSTRUMENTATIONS = [project for project in PROJECTS if not project.is_core]
